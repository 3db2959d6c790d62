// The backward kernels on the detailed core model: engine cycles of small shapes derived by
// hand from the lowerings (lowering_common.hpp, lower_stream.cpp), the analytic closed forms'
// totals against the simulation, and the FLOP and traffic conventions.
#include "closed_forms.hpp"
#include "lowering_common.hpp"

#include "trnsim/compute/core_model.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/compute/lowering.hpp"
#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

namespace trnsim::compute {
namespace {

class BackwardTest : public ::testing::Test {
protected:
    void SetUp() override {
        chip_ = config::load_chip("trn2");
        chip_.core.tensor.warmup_fraction = 1.0; // exact TensorE arithmetic
    }
    /// Busy seconds of `cycles` on an engine of the chip.
    double pe(double cycles) const { return cycles / chip_.core.tensor.clock.hz(); }
    double ve(double cycles) const { return cycles / chip_.core.vector.clock.hz(); }
    double se(double cycles) const { return cycles / chip_.core.scalar.clock.hz(); }
    double ge(double cycles) const { return cycles / chip_.core.gpsimd.clock.hz(); }
    CoreRun run(const Kernel& k) const { return CoreSimulator(chip_).run(lower(k, chip_)); }
    static double busy(const CoreRun& r, EngineKind e) {
        return r.busy_seconds[static_cast<std::size_t>(e)];
    }
    StreamShape rows(StreamKind kind, std::int64_t n, std::int64_t row, int eb = 2) const {
        StreamShape s;
        s.kind = kind;
        s.elements = n * row;
        s.row = row;
        s.element_bytes = eb;
        return s;
    }

    ChipSpec chip_;
};

TEST_F(BackwardTest, OneTileOfFlashAttentionBackward) {
    // One head, 128 queries, 128 keys, head dim 128, no mask: one (query tile, key tile) item.
    const AttentionShape s{1, 1, 1, 128, 128, 128, 128, false, Precision::bf16, true};
    const CoreRun r = run(s);
    // TensorE: S = Q K^T (128 moving keys), dP = dO V^T (128), dV += P^T dO (128 moving
    // value columns), dK += dS^T Q (128), the transpose of dS (128 moving query columns) and
    // dQ += dS K (128): 6 x max(128, 64) = 768 cycles at 2.4 GHz.
    EXPECT_NEAR(busy(r, EngineKind::tensor), pe(768), 1e-15);
    // VectorE (0.96 GHz, 256 elements per cycle = 2 per partition): D = rowsum(dO O) over 128
    // values of two inputs: 100 + 256 / 2 = 228 cycles; dS = P (dP - D), 128 keys of two
    // inputs: 228; the evacuation of dK, 128 values: 100 + 128 / 2 = 164. 620 cycles.
    EXPECT_NEAR(busy(r, EngineKind::vector), ve(620), 1e-15);
    // ScalarE (1.2 GHz, 1 element per partition and cycle): P = exp(S - LSE) over 128 keys:
    // 228 cycles; the first transpose's evacuation (ScalarE and GpSimdE take turns): 228;
    // dV's evacuation: 228; dQ's cast: 228. 912 cycles.
    EXPECT_NEAR(busy(r, EngineKind::scalar), se(912), 1e-15);
    // GpSimdE (1.2 GHz, 1 per partition and cycle): dQ zeroed (128): 228; dQ += dS K, 128 of
    // two inputs: 100 + 256 = 356. 584 cycles.
    EXPECT_NEAR(busy(r, EngineKind::gpsimd), ge(584), 1e-15);
    // Useful FLOPs: 2 x 128 x 128 pairs x (3 x 128 + 2 x 128) = 2.5 times the forward's.
    const double forward = useful_flops(AttentionShape{1, 1, 1, 128, 128, 128, 128, false});
    EXPECT_DOUBLE_EQ(useful_flops(s), 2.5 * forward);
    EXPECT_DOUBLE_EQ(r.flops, useful_flops(s));
    // HBM: Q, dO and K in both layouts, V^T and O read, dQ, dK, dV written (11 x 128 x 128 x
    // 2 bytes), the log-sum-exp (128 x 4) and the identity of the transposes (128 x 128 x 2);
    // at least Q, K, V, O, dO, dQ, dK and dV once and the log-sum-exp.
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 11.0 * 128 * 128 * 2 + 128 * 4 + 128 * 128 * 2);
    EXPECT_DOUBLE_EQ(minimum_hbm_bytes(s), 8.0 * 128 * 128 * 2 + 128 * 4);
}

TEST_F(BackwardTest, CausalBackwardSkipsTheMaskedTiles) {
    // 256 queries and keys, causal: items (0, 0) and (1, 1) on the diagonal, (1, 0) below it,
    // (0, 1) skipped. TensorE: 3 x 768 cycles; GpSimdE masks the two diagonal items (128 keys,
    // 228 cycles each) besides zeroing two dQ tiles (228 each) and accumulating three dS K
    // products (356 each).
    const AttentionShape s{1, 1, 1, 256, 256, 128, 128, true, Precision::bf16, true};
    const CoreRun r = run(s);
    EXPECT_NEAR(busy(r, EngineKind::tensor), pe(3 * 768), 1e-15);
    // The transposes' evacuations alternate: items 0 and 2 on ScalarE, item 1 on GpSimdE.
    EXPECT_NEAR(busy(r, EngineKind::gpsimd), ge(2 * 228 + 2 * 228 + 3 * 356 + 228), 1e-15);
    // Three quarters of the pairs are computed, the FLOP count sees the 256 x 257 / 2 visible
    // ones.
    EXPECT_DOUBLE_EQ(useful_flops(s), 2.0 * (256.0 * 257.0 / 2.0) * (5.0 * 128.0));
}

TEST_F(BackwardTest, GroupedHeadsAccumulateOneKeyAndValueGradient) {
    // Two query heads sharing one key/value head: the key tiles load once for both heads, so
    // the HBM traffic is that of MHA less one K (both layouts), V^T, dK and dV.
    const AttentionShape gqa{1, 2, 1, 128, 128, 128, 128, false, Precision::bf16, true};
    const AttentionShape mha{1, 2, 2, 128, 128, 128, 128, false, Precision::bf16, true};
    const CoreRun a = run(gqa);
    const CoreRun b = run(mha);
    EXPECT_DOUBLE_EQ(b.hbm_bytes - a.hbm_bytes, 5.0 * 128 * 128 * 2);
    EXPECT_NEAR(busy(a, EngineKind::tensor), busy(b, EngineKind::tensor), 1e-15);
}

TEST_F(BackwardTest, SoftmaxBackwardOneTile) {
    // 128 rows of 512: VectorE sums y dy over the row (two inputs: 100 + 1024 / 2 = 612
    // cycles), negates the sum (100 + 1 = 101) and forms (dy - s) y (612). Loads y and dy,
    // stores dx.
    const CoreRun r = run(rows(StreamKind::softmax_backward, 128, 512));
    EXPECT_NEAR(busy(r, EngineKind::vector), ve(612 + 101 + 612), 1e-15);
    EXPECT_DOUBLE_EQ(busy(r, EngineKind::scalar), 0.0);
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 3.0 * 128 * 512 * 2);
}

TEST_F(BackwardTest, RmsNormBackwardOneTile) {
    // 128 rows of 1024: ScalarE's sum of squares (100 + 1024 = 1124) and the final scale by
    // the inverse RMS (1124); VectorE: 1 / rms (101), dy g (100 + 2048 / 2 = 1124), the row sum
    // of dy g x (1124), its scale (100 + 2 / 2 = 101), x c - dy g (1124), the accumulation of
    // dgamma (three inputs: 100 + 3072 / 2 = 1636). The scale is loaded once; at the end
    // GpSimdE sums dgamma over the partitions (100 + 1024) and it is stored in FP32.
    const CoreRun r = run(rows(StreamKind::rms_norm_backward, 128, 1024));
    EXPECT_NEAR(busy(r, EngineKind::scalar), se(2 * 1124), 1e-15);
    EXPECT_NEAR(busy(r, EngineKind::vector), ve(101 + 1124 + 1124 + 101 + 1124 + 1636), 1e-15);
    EXPECT_NEAR(busy(r, EngineKind::gpsimd), ge(1124), 1e-15);
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 3.0 * 128 * 1024 * 2 + 128 * 1024 * 2 + 1024 * 4);
    EXPECT_GE(r.hbm_bytes, minimum_hbm_bytes(rows(StreamKind::rms_norm_backward, 128, 1024)));
}

TEST_F(BackwardTest, ScatterAddReadsAndWritesFp32Rows) {
    // 256 token rows of 512: the indexed FP32 rows in and out, the BF16 gradient rows in, the
    // row indices once; VectorE adds (two inputs, 100 + 1024 / 2 = 612 cycles per tile).
    const CoreRun r = run(rows(StreamKind::scatter_add, 256, 512));
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 256.0 * 512 * (4 + 2 + 4) + 256 * 4);
    EXPECT_NEAR(busy(r, EngineKind::vector), ve(2 * 612), 1e-15);
    EXPECT_EQ(class_of(rows(StreamKind::scatter_add, 256, 512)), KernelClass::scatter_add);
}

TEST_F(BackwardTest, CrossEntropyOneTile) {
    // 128 rows of 4096 FP32 logits: VectorE's row max (100 + 4096 / 2 = 2148), -max (101),
    // 1 / sum (101) and the softmax scale (2148); ScalarE's exponentials with sums
    // (100 + 4096); GpSimdE's target pick and one-hot subtraction (2 x (100 + 4096)). The
    // logits in, their gradient out, the target indices once.
    const CoreRun r = run(rows(StreamKind::cross_entropy, 128, 4096, 4));
    EXPECT_NEAR(busy(r, EngineKind::vector), ve(2148 + 101 + 101 + 2148), 1e-15);
    EXPECT_NEAR(busy(r, EngineKind::scalar), se(4196), 1e-15);
    EXPECT_NEAR(busy(r, EngineKind::gpsimd), ge(2 * 4196), 1e-15);
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 2.0 * 128 * 4096 * 4 + 128 * 4);
    EXPECT_DOUBLE_EQ(minimum_hbm_bytes(rows(StreamKind::cross_entropy, 128, 4096, 4)),
                     r.hbm_bytes);
}

TEST_F(BackwardTest, ClosedFormTotalsMatchTheSimulation) {
    // The analytic model's busy times are the lowering's instructions added up (as for the
    // forward kernels, closed_forms_test): within 2% of the detailed model's, TensorE exactly.
    const CostModel analytic(chip_, 1);
    const DetailedModel detailed(chip_, 1);
    for (const Kernel& k : std::vector<Kernel>{
             AttentionShape{1, 4, 1, 1024, 1024, 128, 128, true, Precision::bf16, true},
             AttentionShape{1, 2, 2, 777, 777, 64, 64, false, Precision::bf16, true},
             rows(StreamKind::softmax_backward, 3000, 2048),
             rows(StreamKind::rms_norm_backward, 4096, 4096),
             rows(StreamKind::layer_norm_backward, 2000, 12288),
             rows(StreamKind::cross_entropy, 1024, 32000, 4),
             rows(StreamKind::scatter_add, 8192, 4096)}) {
        const auto nominal = analytic.engine_seconds(k);
        const DetailedResult d = detailed.run(k);
        for (EngineKind e : {EngineKind::tensor, EngineKind::vector, EngineKind::scalar,
                             EngineKind::gpsimd}) {
            const double sim = d.core.busy_seconds[static_cast<std::size_t>(e)];
            EXPECT_NEAR(nominal[static_cast<std::size_t>(e)], sim, 0.02 * sim + 1e-9)
                << describe(k) << " " << to_string(e);
        }
    }
}

TEST_F(BackwardTest, BackwardNeverFasterThanPeakOrBandwidth) {
    const DetailedModel model(chip_, 1);
    const double hbm = chip_.hbm_bandwidth.bytes_per_s() / chip_.physical_cores;
    for (const Kernel& k : std::vector<Kernel>{
             AttentionShape{1, 8, 1, 2048, 2048, 128, 128, true, Precision::bf16, true},
             AttentionShape{1, 2, 2, 300, 900, 64, 64, true, Precision::bf16, true},
             rows(StreamKind::layer_norm_backward, 300, 20000),
             rows(StreamKind::softmax_backward, 1, 65536, 4)}) {
        const DetailedResult r = model.run(k);
        double bound = minimum_hbm_bytes(k) / hbm;
        if (std::holds_alternative<AttentionShape>(k)) {
            bound = std::max(bound,
                             useful_flops(k) / chip_.tensor_peak_per_core(Precision::bf16).per_s());
        }
        EXPECT_GE(r.seconds(), bound) << describe(k);
    }
}

} // namespace
} // namespace trnsim::compute
