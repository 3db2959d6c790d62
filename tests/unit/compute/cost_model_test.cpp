#include "trnsim/compute/cost_model.hpp"
#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

#include <random>

namespace trnsim::compute {
namespace {

class CostModelTest : public ::testing::Test {
protected:
    void SetUp() override { chip_ = config::load_chip("trn2"); }
    ChipSpec chip_;
};

TEST_F(CostModelTest, OneFullTileIsMovingColumnsCycles) {
    const CostModel m(chip_, 2);
    // One 128x128 stationary tile, 512 moving columns: max(512, 64) cycles.
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 128, 512, Precision::bf16), 512.0);
    // 64 columns: exactly the initiation interval.
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 128, 64, Precision::bf16), 64.0);
    // 32 columns still cost the 64-cycle minimum.
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 128, 32, Precision::bf16), 64.0);
}

TEST_F(CostModelTest, TilesQuantiseAndOrientationIsChosen) {
    const CostModel m(chip_, 2);
    // 1024 x 4096 x 1024: 32 contraction tiles x 8 stationary tiles x 1024 moving columns.
    EXPECT_DOUBLE_EQ(m.matmul_cycles(1024, 4096, 1024, Precision::bf16), 32.0 * 8.0 * 1024.0);
    // K = 129 needs two contraction tiles.
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 129, 512, Precision::bf16), 2.0 * 512.0);
    // Matrix-vector: the vector as the moving operand (1 column, 64 cycles per tile) beats the
    // vector as stationary (4096 columns streamed per contraction tile).
    EXPECT_DOUBLE_EQ(m.matmul_cycles(1, 4096, 4096, Precision::bf16), 32.0 * 32.0 * 64.0);
}

TEST_F(CostModelTest, Fp8DoubleRowAndFp32QuarterRate) {
    const CostModel m(chip_, 2);
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 256, 512, Precision::fp8), 512.0);
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 256, 512, Precision::bf16), 1024.0);
    EXPECT_DOUBLE_EQ(m.matmul_cycles(128, 128, 512, Precision::fp32), 2048.0);
}

TEST_F(CostModelTest, LargeMatmulRunsAtTensorPeakPerRank) {
    const CostModel m(chip_, 2);
    const KernelCost c = m.matmul({4096, 8192, 8192, 1, Precision::bf16});
    // Compute-bound at 2 cores x 78.6 TFLOPS.
    const double peak = m.tensor_peak_per_rank(Precision::bf16).per_s();
    EXPECT_NEAR(peak, 2.0 * 2.0 * 128 * 128 * 2.4e9, 1.0);
    EXPECT_NEAR(c.flops / c.seconds / peak, 1.0, 1e-12);
}

TEST_F(CostModelTest, MatrixVectorIsBandwidthBound) {
    const CostModel m(chip_, 2);
    const KernelCost c = m.matmul({1, 4096, 4096, 1, Precision::bf16});
    const double bytes = (4096.0 + 4096.0 * 4096.0 + 4096.0) * 2.0;
    EXPECT_DOUBLE_EQ(c.hbm_bytes, bytes);
    // HBM per rank: 2.9 TB/s over 4 ranks.
    EXPECT_DOUBLE_EQ(c.seconds, bytes / (2.9e12 / 4.0));
}

TEST_F(CostModelTest, StreamOpsAreMemoryOrEngineBound) {
    const CostModel m(chip_, 2);
    // 1M BF16 elements in and out: 4 MB of HBM traffic (5.5 us) vs 1M / (0.96 GHz x 256 x 2).
    const KernelCost mem = m.stream({1'000'000, 1, 1, 2, 1, StreamEngine::vector});
    EXPECT_DOUBLE_EQ(mem.seconds, 4e6 / (2.9e12 / 4.0));
    // 20 passes make VectorE the bottleneck.
    const KernelCost eng = m.stream({1'000'000, 1, 1, 2, 20, StreamEngine::vector});
    EXPECT_DOUBLE_EQ(eng.seconds, 20e6 / (0.96e9 * 256 * 2));
}

TEST_F(CostModelTest, CausalAttentionSkipsMaskedBlocks) {
    const CostModel m(chip_, 2);
    AttentionShape s{1, 8, 8, 8192, 8192, 128, 128, false, Precision::bf16};
    const KernelCost full = m.attention(s);
    s.causal = true;
    const KernelCost causal = m.attention(s);
    // 64 query blocks: (64 + 1) / (2 x 64) of the work.
    EXPECT_NEAR(causal.flops / full.flops, 65.0 / 128.0, 1e-12);
    EXPECT_LT(causal.seconds, full.seconds);
    // A single block is the whole diagonal: nothing to skip.
    s.q_len = s.kv_len = 128;
    const KernelCost one = m.attention(s);
    s.causal = false;
    EXPECT_DOUBLE_EQ(one.seconds, m.attention(s).seconds);
}

TEST_F(CostModelTest, NeverFasterThanPeakComputeOrBandwidth) {
    const CostModel m(chip_, 2);
    std::mt19937_64 rng(1);
    for (int i = 0; i < 2000; ++i) {
        const std::int64_t a = 1 + static_cast<std::int64_t>(rng() % 5000);
        const std::int64_t b = 1 + static_cast<std::int64_t>(rng() % 5000);
        const std::int64_t c = 1 + static_cast<std::int64_t>(rng() % 5000);
        const Precision p = static_cast<Precision>(rng() % 3);
        const KernelCost k = m.matmul({a, b, c, 1, p});
        const double peak = m.tensor_peak_per_rank(p).per_s();
        EXPECT_GE(k.seconds * (1 + 1e-12), k.flops / peak);
        EXPECT_GE(k.seconds * (1 + 1e-12), k.hbm_bytes / m.hbm_bandwidth_per_rank().bytes_per_s());
    }
}

TEST_F(CostModelTest, MoreWorkNeverCostsLess) {
    const CostModel m(chip_, 2);
    std::mt19937_64 rng(2);
    for (int i = 0; i < 1000; ++i) {
        std::int64_t d[3];
        for (auto& x : d) {
            x = 1 + static_cast<std::int64_t>(rng() % 3000);
        }
        const double base = m.matmul({d[0], d[1], d[2], 1, Precision::bf16}).seconds;
        for (int axis = 0; axis < 3; ++axis) {
            std::int64_t e[3] = {d[0], d[1], d[2]};
            e[axis] += 1 + static_cast<std::int64_t>(rng() % 500);
            EXPECT_LE(base, m.matmul({e[0], e[1], e[2], 1, Precision::bf16}).seconds);
        }
    }
}

TEST_F(CostModelTest, OptimizerTrafficPerParameter) {
    const CostModel m(chip_, 2);
    const KernelCost c = m.optimizer({1'000'000, 2, 2});
    // FP32 master, m, v read and written (24 B), BF16 gradient read and weight written (4 B).
    EXPECT_DOUBLE_EQ(c.hbm_bytes, 28e6);
}

} // namespace
} // namespace trnsim::compute
