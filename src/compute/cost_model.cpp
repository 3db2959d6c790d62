#include "trnsim/compute/cost_model.hpp"

#include <algorithm>

namespace trnsim::compute {

namespace {
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
} // namespace

CostModel::CostModel(const ChipSpec& chip, int lnc)
    : chip_(&chip), lnc_(lnc),
      hbm_per_rank_(chip.hbm_bandwidth / static_cast<double>(chip.ranks_per_chip(lnc))) {}

FlopRate CostModel::tensor_peak_per_rank(Precision p) const {
    return chip_->tensor_peak_per_core(p) * static_cast<double>(lnc_);
}

double CostModel::matmul_cycles(std::int64_t m, std::int64_t k, std::int64_t n,
                                Precision p) const {
    const auto& t = chip_->core.tensor;
    const std::int64_t contraction =
        p == Precision::fp8 ? std::int64_t{t.rows} * t.fp8_rate_multiplier : t.rows;
    const std::int64_t k_tiles = ceil_div(k, contraction);
    // Cycles of streaming `moving` columns through one stationary tile.
    const auto moving_cycles = [&](std::int64_t moving) {
        const std::int64_t full = moving / t.moving_free_max;
        const std::int64_t rest = moving % t.moving_free_max;
        double c = static_cast<double>(full) *
                   static_cast<double>(std::max(t.moving_free_max, t.min_matmul_cycles));
        if (rest > 0) {
            c += static_cast<double>(std::max<std::int64_t>(rest, t.min_matmul_cycles));
        }
        return c;
    };
    const double a = static_cast<double>(k_tiles * ceil_div(m, t.cols)) * moving_cycles(n);
    const double b = static_cast<double>(k_tiles * ceil_div(n, t.cols)) * moving_cycles(m);
    const double divisor = p == Precision::fp32 ? static_cast<double>(t.fp32_rate_divisor) : 1.0;
    return std::min(a, b) * divisor;
}

KernelCost CostModel::matmul(const MatmulShape& s) const {
    KernelCost c;
    if (s.m <= 0 || s.k <= 0 || s.n <= 0 || s.batch <= 0) {
        return c;
    }
    const auto& t = chip_->core.tensor;
    const double cycles = matmul_cycles(s.m, s.k, s.n, s.precision) * static_cast<double>(s.batch);
    const double tensor_s = cycles / (t.clock.hz() * lnc_);
    const double eb = element_bytes(s.precision);
    const double elems = static_cast<double>(s.m * s.k + s.k * s.n + s.m * s.n);
    c.hbm_bytes = elems * eb * static_cast<double>(s.batch);
    c.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) *
              static_cast<double>(s.n) * static_cast<double>(s.batch);
    c.seconds = std::max(tensor_s, transfer_seconds(c.hbm_bytes, hbm_per_rank_));
    return c;
}

double CostModel::stream_seconds(double elements, StreamEngine e) const {
    const auto& eng = e == StreamEngine::scalar ? chip_->core.scalar : chip_->core.vector;
    return elements / (eng.clock.hz() * eng.elements_per_cycle * lnc_);
}

KernelCost CostModel::attention(const AttentionShape& s) const {
    KernelCost c;
    if (s.batch <= 0 || s.heads <= 0 || s.q_len <= 0 || s.kv_len <= 0) {
        return c;
    }
    const auto& t = chip_->core.tensor;
    // With a causal mask, flash attention skips key blocks wholly above the diagonal: with
    // q blocks of `cols` rows, the computed fraction is (blocks + 1) / (2 blocks).
    double fraction = 1.0;
    if (s.causal) {
        const double blocks = static_cast<double>(ceil_div(s.q_len, t.cols));
        fraction = (blocks + 1.0) / (2.0 * blocks);
    }
    const double heads = static_cast<double>(s.batch * s.heads);
    const double score_cycles = matmul_cycles(s.q_len, s.qk_dim, s.kv_len, s.precision);
    const double value_cycles = matmul_cycles(s.q_len, s.kv_len, s.v_dim, s.precision);
    const double tensor_s =
        heads * fraction * (score_cycles + value_cycles) / (t.clock.hz() * lnc_);
    const double scores = heads * fraction * static_cast<double>(s.q_len * s.kv_len);
    // Softmax: exp on ScalarE (one pass), running max and sum on VectorE (two passes).
    const double scalar_s = stream_seconds(scores, StreamEngine::scalar);
    const double vector_s = stream_seconds(2.0 * scores, StreamEngine::vector);
    const double eb = element_bytes(s.precision);
    c.hbm_bytes = eb * static_cast<double>(s.batch) *
                  (static_cast<double>(s.heads * s.q_len * (s.qk_dim + s.v_dim)) +
                   static_cast<double>(s.kv_heads * s.kv_len * (s.qk_dim + s.v_dim)));
    c.flops = 2.0 * scores * static_cast<double>(s.qk_dim + s.v_dim);
    c.seconds = std::max({tensor_s, scalar_s, vector_s, transfer_seconds(c.hbm_bytes, hbm_per_rank_)});
    return c;
}

KernelCost CostModel::stream(const StreamShape& s) const {
    KernelCost c;
    if (s.elements <= 0) {
        return c;
    }
    const double n = static_cast<double>(s.elements);
    c.hbm_bytes = n * (s.inputs + s.outputs) * s.element_bytes;
    c.flops = n * s.passes;
    c.seconds = std::max(stream_seconds(n * s.passes, s.engine),
                         transfer_seconds(c.hbm_bytes, hbm_per_rank_));
    return c;
}

KernelCost CostModel::optimizer(const OptimizerShape& s) const {
    KernelCost c;
    if (s.params <= 0) {
        return c;
    }
    const double n = static_cast<double>(s.params);
    // Read master, m, v (FP32) and the gradient; write master, m, v and the working weights.
    const double per_param = 3.0 * 4.0 + s.grad_bytes + 3.0 * 4.0 + s.weight_bytes;
    c.hbm_bytes = n * per_param;
    // AdamW is about a dozen vector operations per parameter.
    constexpr double kVectorOpsPerParam = 12.0;
    c.flops = n * kVectorOpsPerParam;
    c.seconds = std::max(stream_seconds(n * kVectorOpsPerParam, StreamEngine::vector),
                         transfer_seconds(c.hbm_bytes, hbm_per_rank_));
    return c;
}

} // namespace trnsim::compute
