// The kernel lowerings on the detailed core model: the figures of the issue, roofline bounds,
// monotonicity, and every lowering within the core's SBUF and PSUM.
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/compute/lowering.hpp"
#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

namespace trnsim::compute {
namespace {

class DetailedModelTest : public ::testing::Test {
protected:
    void SetUp() override { chip_ = config::load_chip("trn2"); }

    /// A lower bound of any kernel on one core: its useful FLOPs at TensorE peak (matmul,
    /// attention) and its minimum HBM traffic at the core's share of HBM bandwidth.
    double bound(const Kernel& k) const {
        double b = minimum_hbm_bytes(k) / (chip_.hbm_bandwidth.bytes_per_s() / chip_.physical_cores);
        if (const auto* m = std::get_if<MatmulShape>(&k)) {
            b = std::max(b, useful_flops(k) / chip_.tensor_peak_per_core(m->precision).per_s());
        }
        if (const auto* a = std::get_if<AttentionShape>(&k)) {
            b = std::max(b, useful_flops(k) / chip_.tensor_peak_per_core(a->precision).per_s());
        }
        return b;
    }

    StreamShape stream(StreamKind kind, std::int64_t rows, std::int64_t row, int eb = 2) const {
        StreamShape s;
        s.kind = kind;
        s.elements = rows * row;
        s.row = row;
        s.element_bytes = eb;
        return s;
    }

    ChipSpec chip_;
};

TEST_F(DetailedModelTest, LargeMatmulNearTensorPeak) {
    // One rank of two cores runs the 4096x8192x8192 BF16 matmul split in halves.
    const DetailedModel model(chip_, 2);
    const DetailedResult r = model.run(MatmulShape{4096, 8192, 8192, 1, Precision::bf16});
    const double peak = 2.0 * chip_.tensor_peak_per_core(Precision::bf16).per_s();
    const double fraction = r.flops() / r.seconds() / peak;
    EXPECT_GT(fraction, 0.80);
    EXPECT_LT(fraction, 1.0);
    EXPECT_EQ(r.core.bottleneck(), EngineKind::tensor);
    EXPECT_GE(r.simulated, 1);
}

TEST_F(DetailedModelTest, MatrixVectorIsBandwidthBound) {
    const DetailedModel model(chip_, 1);
    for (const MatmulShape s : {MatmulShape{1, 8192, 8192, 1, Precision::bf16},
                                MatmulShape{8192, 8192, 1, 1, Precision::bf16}}) {
        const DetailedResult r = model.run(s);
        EXPECT_EQ(r.core.bottleneck(), EngineKind::dma) << describe(s);
        EXPECT_GT(r.core.busy_fraction(EngineKind::dma), 0.9) << describe(s);
        // Within 25% of streaming the 128 MiB matrix at the core's HBM share (rows of 1024
        // columns move in 2 KiB descriptors, 85% efficient).
        EXPECT_LT(r.seconds(), 1.25 * bound(s)) << describe(s);
    }
}

TEST_F(DetailedModelTest, SmallMatmulsPayFixedLatencies) {
    const DetailedModel model(chip_, 1);
    const DetailedResult r = model.run(MatmulShape{128, 128, 128, 1, Precision::bf16});
    // Two DMA latencies (issue + setup = 1.9 us) at least: load, then store.
    EXPECT_GT(r.seconds(), 2.0 * 1.9e-6);
    EXPECT_LT(r.seconds(), 10e-6);
}

TEST_F(DetailedModelTest, NeverFasterThanPeakComputeOrBandwidth) {
    const DetailedModel model(chip_, 1);
    const std::vector<Kernel> kernels{
        MatmulShape{1000, 3000, 700, 1, Precision::bf16},
        MatmulShape{4096, 2048, 4096, 1, Precision::fp8},
        MatmulShape{300, 500, 2000, 3, Precision::fp32},
        MatmulShape{64, 8192, 8192, 1, Precision::bf16},
        AttentionShape{1, 4, 1, 2048, 2048, 128, 128, true, Precision::bf16},
        AttentionShape{2, 2, 2, 700, 1400, 64, 64, false, Precision::bf16},
        stream(StreamKind::softmax, 1000, 32000, 4),
        stream(StreamKind::rms_norm, 4096, 8192),
        stream(StreamKind::layer_norm, 300, 12000),
        stream(StreamKind::gather, 8192, 4096),
        StreamShape{1 << 24, 2, 1, 2, 1, StreamEngine::vector},
        StreamShape{3000000, 1, 1, 2, 1, StreamEngine::scalar},
        OptimizerShape{20000000, 4, 2},
        OptimizerShape{20000000, 2, 2, 0, 2}, // no master copy, BF16 moments
    };
    for (const Kernel& k : kernels) {
        const DetailedResult r = model.run(k);
        EXPECT_GE(r.seconds(), bound(k)) << describe(k);
        EXPECT_GE(r.hbm_bytes(), minimum_hbm_bytes(k) * (1.0 - 1e-12)) << describe(k);
    }
}

TEST(OptimizerBytes, ByHand) {
    // Read the gradient, both moments and the master copy, write them back with the working
    // weights: 1,000 x (2 + 2 x 12 + 2). Without a master copy the BF16 weights are read and
    // written instead: 1,000 x (2 + 2 x 4 + 2 x 2) with BF16 moments.
    EXPECT_DOUBLE_EQ(minimum_hbm_bytes(OptimizerShape{1000, 2, 2, 4, 4}), 28000.0);
    EXPECT_DOUBLE_EQ(minimum_hbm_bytes(OptimizerShape{1000, 2, 2}), 28000.0);
    EXPECT_DOUBLE_EQ(minimum_hbm_bytes(OptimizerShape{1000, 2, 2, 0, 2}), 14000.0);
}

TEST_F(DetailedModelTest, MoreWorkNeverCostsLess) {
    const DetailedModel model(chip_, 1);
    const auto time = [&](const Kernel& k) { return model.run(k).seconds(); };
    for (std::int64_t m : {64, 300, 2048}) {
        for (std::int64_t k : {128, 1000, 4096}) {
            const double base = time(MatmulShape{m, k, 1024, 1, Precision::bf16});
            EXPECT_LE(base, time(MatmulShape{2 * m, k, 1024, 1, Precision::bf16}));
            EXPECT_LE(base, time(MatmulShape{m, 2 * k, 1024, 1, Precision::bf16}));
            EXPECT_LE(base, time(MatmulShape{m, k, 2048, 1, Precision::bf16}));
        }
    }
    for (std::int64_t s : {256, 1024}) {
        const double base = time(AttentionShape{1, 4, 1, s, s, 128, 128, true, Precision::bf16});
        EXPECT_LE(base, time(AttentionShape{1, 4, 1, 2 * s, 2 * s, 128, 128, true, Precision::bf16}));
        EXPECT_LE(base, time(AttentionShape{1, 8, 2, s, s, 128, 128, true, Precision::bf16}));
    }
    for (StreamKind kind : {StreamKind::softmax, StreamKind::rms_norm, StreamKind::layer_norm,
                            StreamKind::gather}) {
        for (std::int64_t rows : {1, 200, 2000}) {
            for (std::int64_t row : {512, 6000}) {
                const double base = time(stream(kind, rows, row));
                EXPECT_LE(base, time(stream(kind, 2 * rows, row)));
                EXPECT_LE(base, time(stream(kind, rows, 2 * row)));
            }
        }
    }
    for (std::int64_t n : {10000, 1000000}) {
        EXPECT_LE(time(OptimizerShape{n, 2, 2}), time(OptimizerShape{3 * n, 2, 2}));
        // Less optimizer state to read and write never costs more.
        EXPECT_LE(time(OptimizerShape{n, 2, 2, 0, 4}), time(OptimizerShape{n, 2, 2, 4, 4}));
        EXPECT_LE(time(OptimizerShape{n, 2, 2, 0, 2}), time(OptimizerShape{n, 2, 2, 0, 4}));
        EXPECT_LE(time(StreamShape{n, 2, 1, 2, 1, StreamEngine::vector}),
                  time(StreamShape{3 * n, 2, 1, 2, 1, StreamEngine::vector}));
    }
}

TEST_F(DetailedModelTest, CausalAttentionSkipsMaskedTiles) {
    const DetailedModel model(chip_, 1);
    AttentionShape s{1, 4, 1, 4096, 4096, 128, 128, false, Precision::bf16};
    const double full = model.run(s).seconds();
    s.causal = true;
    const double causal = model.run(s).seconds();
    EXPECT_LT(causal, 0.65 * full);
    EXPECT_GT(causal, 0.45 * full);
}

TEST_F(DetailedModelTest, GroupedQueryHeadsShareKeysAndValues) {
    const DetailedModel model(chip_, 1);
    const DetailedResult gqa = model.run(AttentionShape{1, 8, 1, 2048, 2048, 128, 128, true, Precision::bf16});
    const DetailedResult mha = model.run(AttentionShape{1, 8, 8, 2048, 2048, 128, 128, true, Precision::bf16});
    EXPECT_LT(gqa.hbm_bytes(), mha.hbm_bytes());
}

TEST_F(DetailedModelTest, EveryLoweringFitsTheCore) {
    // Tilings either fit SBUF and PSUM or are rejected; the lowerings of the other kernels
    // always fit (ProgramBuilder::fits is checked when they are built).
    const MatmulShape m{3000, 5000, 7000, 1, Precision::fp32};
    int feasible = 0;
    for (const MatmulTiling& t : matmul_tilings(m, chip_)) {
        if (const auto p = lower_matmul(m, t, chip_)) {
            ++feasible;
            EXPECT_LE(p->sbuf_bytes, chip_.core.sbuf_partition_bytes()) << t.describe();
            EXPECT_LE(p->psum_banks, chip_.core.psum_banks) << t.describe();
        }
    }
    EXPECT_GT(feasible, 0);
    for (const Kernel& k : std::vector<Kernel>{
             AttentionShape{1, 2, 1, 16384, 16384, 128, 128, true, Precision::bf16},
             stream(StreamKind::softmax, 128, 262144, 4), stream(StreamKind::layer_norm, 1, 100000),
             StreamShape{1000000, 8, 2, 8, 1, StreamEngine::vector}}) {
        const Program p = lower(k, chip_);
        EXPECT_LE(p.sbuf_bytes, chip_.core.sbuf_partition_bytes()) << describe(k);
        EXPECT_LE(p.psum_banks, chip_.core.psum_banks) << describe(k);
    }
}

TEST_F(DetailedModelTest, RanksSplitKernelsOverTheirCores) {
    const MatmulShape s{4096, 4096, 4096, 1, Precision::bf16};
    const DetailedResult one = DetailedModel(chip_, 1).run(s);
    const DetailedResult two = DetailedModel(chip_, 2).run(s);
    EXPECT_EQ(two.cores, 2);
    EXPECT_NEAR(two.seconds() / one.seconds(), 0.5, 0.03);
    EXPECT_DOUBLE_EQ(two.flops(), one.flops());
}

TEST_F(DetailedModelTest, Trn1RunsTheSameLowerings) {
    const ChipSpec trn1 = config::load_chip("trn1");
    const DetailedModel model(trn1, 1);
    const DetailedResult r = model.run(MatmulShape{4096, 4096, 4096, 1, Precision::bf16});
    const double fraction =
        r.flops() / r.seconds() / trn1.tensor_peak_per_core(Precision::bf16).per_s();
    EXPECT_GT(fraction, 0.8);
    EXPECT_LE(fraction, 1.0);
}

} // namespace
} // namespace trnsim::compute
