// The detailed NeuronCore model on programs small enough to time by hand.
#include "trnsim/compute/core_model.hpp"
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/compute/lowering.hpp"
#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace trnsim::compute {
namespace {

class CoreModelTest : public ::testing::Test {
protected:
    void SetUp() override {
        chip_ = config::load_chip("trn2");
        // Most cases switch the warm-up throttle off to keep the arithmetic exact.
        cold_ = chip_;
        chip_.core.tensor.warmup_fraction = 1.0;
    }
    /// TensorE cycles to seconds (2.4 GHz).
    double pe(double cycles) const { return cycles / chip_.core.tensor.clock.hz(); }

    ChipSpec chip_;
    ChipSpec cold_;
};

TEST_F(CoreModelTest, OneTileIsLoadThenMultiply) {
    ProgramBuilder b(chip_);
    const auto sbuf = b.sbuf_pool(1024, 2);
    const auto psum = b.psum_pool(1);
    const auto w = b.alloc(sbuf);
    const auto x = b.alloc(sbuf);
    const auto acc = b.alloc(psum);
    const auto ls = b.load_stationary(128, Precision::bf16, w);
    b.multiply_moving(512, Precision::bf16, ls, x, acc);
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, "one tile"));
    // LoadStationary of 128 columns: ceil(128 / 4) = 32 cycles; MultiplyMoving of 512 moving
    // columns: max(512, 64) = 512 cycles; the multiply waits for its weights.
    EXPECT_NEAR(r.seconds, pe(32 + 512), 1e-15);
    EXPECT_NEAR(r.busy_seconds[0], pe(512), 1e-15);
    EXPECT_EQ(r.instructions[static_cast<std::size_t>(Unit::tensor_load)], 1);
    EXPECT_EQ(r.instructions[static_cast<std::size_t>(Unit::tensor_array)], 1);
}

TEST_F(CoreModelTest, WeightLoadsOverlapThePreviousMultiply) {
    ProgramBuilder b(chip_);
    const auto sbuf = b.sbuf_pool(1024, 8);
    const auto psum = b.psum_pool(4);
    for (int i = 0; i < 4; ++i) {
        const auto ls = b.load_stationary(128, Precision::bf16, b.alloc(sbuf));
        b.multiply_moving(512, Precision::bf16, ls, b.alloc(sbuf), b.alloc(psum));
    }
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, "four tiles"));
    // Only the first load is exposed: 32 + 4 x 512 cycles.
    EXPECT_NEAR(r.seconds, pe(32 + 4 * 512), 1e-15);
}

TEST_F(CoreModelTest, ADependentChainDoesNotOverlap) {
    // Each tile's weights are the previous tile's result, copied out of PSUM by VectorE, so
    // load, multiply and copy run back to back.
    ProgramBuilder b(chip_);
    const auto sbuf = b.sbuf_pool(1024, 2);
    const auto psum = b.psum_pool(2);
    auto weights = b.alloc(sbuf);
    const auto moving = b.alloc(sbuf);
    const int tiles = 3;
    for (int i = 0; i < tiles; ++i) {
        const auto acc = b.alloc(psum);
        const auto ls = b.load_stationary(128, Precision::bf16, weights);
        b.multiply_moving(512, Precision::bf16, ls, moving, acc);
        weights = b.alloc(sbuf);
        b.engine(Queue::vector, 512, 1, {acc}, {weights});
    }
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, "chain"));
    // VectorE copy of 512 elements per partition: 100 + 512 / (256 / 128) = 356 cycles at
    // 0.96 GHz.
    const double copy = 356.0 / chip_.core.vector.clock.hz();
    EXPECT_NEAR(r.seconds, tiles * (pe(32 + 512) + copy), 1e-14);
}

TEST_F(CoreModelTest, Fp8DoubleRowAndFp32QuarterRate) {
    for (const auto& [p, cycles] : {std::pair{Precision::fp8, 512.0}, {Precision::bf16, 512.0},
                                    {Precision::fp32, 4.0 * 512.0}}) {
        ProgramBuilder b(chip_);
        const auto sbuf = b.sbuf_pool(1024, 2);
        const auto acc = b.alloc(b.psum_pool(1));
        const auto ls = b.load_stationary(128, p, b.alloc(sbuf));
        b.multiply_moving(512, p, ls, b.alloc(sbuf), acc);
        const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, ""));
        EXPECT_NEAR(r.busy_seconds[0], pe(cycles), 1e-15) << to_string(p);
    }
}

TEST_F(CoreModelTest, ShortMovingTilesCostTheInitiationInterval) {
    ProgramBuilder b(chip_);
    const auto sbuf = b.sbuf_pool(1024, 2);
    const auto acc = b.alloc(b.psum_pool(1));
    const auto ls = b.load_stationary(128, Precision::bf16, b.alloc(sbuf));
    b.multiply_moving(1, Precision::bf16, ls, b.alloc(sbuf), acc);
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, ""));
    EXPECT_NEAR(r.busy_seconds[0], pe(64), 1e-15); // max(1, MM_INIT_LATENCY)
}

TEST_F(CoreModelTest, ADmaOfKnownSize) {
    ProgramBuilder b(chip_);
    const auto slot = b.alloc(b.sbuf_pool(4096, 1));
    b.dma(0, 128.0 * 4096.0, 128, Direction::hbm_to_sbuf, {}, {slot});
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, "dma"));
    // Issue (600 ns on a descriptor generator), setup latency (1,300 ns), then 128 descriptors
    // of 4 KiB: each 16 ns + 4096 B / 23 GB/s of one engine's time, over the engines a core may
    // use at once: min(16, 2.9 TB/s / 8 cores / 23 GB/s) = 15.76.
    const double engine_ns = 128.0 * (16.0 + 4096.0 / 23.0);
    const double engines = 2.9e12 / 8.0 / 23e9;
    EXPECT_NEAR(r.seconds, (600.0 + 1300.0 + engine_ns / engines) * 1e-9, 1e-15);
    EXPECT_DOUBLE_EQ(r.hbm_bytes, 128.0 * 4096.0);
    // The DMA engines were saturated for the transfer only.
    EXPECT_NEAR(r.busy_seconds[4], engine_ns / engines * 1e-9, 1e-15);
}

TEST_F(CoreModelTest, NarrowTransfersUseOneEnginePerDescriptor) {
    ProgramBuilder b(chip_);
    const auto slot = b.alloc(b.sbuf_pool(4096, 1));
    b.dma(0, 4096.0, 1, Direction::hbm_to_sbuf, {}, {slot});
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, ""));
    EXPECT_NEAR(r.seconds, (600.0 + 1300.0 + 16.0 + 4096.0 / 23.0) * 1e-9, 1e-15);
}

TEST_F(CoreModelTest, ConcurrentTransfersShareTheEngines) {
    // Two equal transfers on two queues issue on the two generators at once and split the
    // engines: together they take as long as one of twice the size.
    ProgramBuilder b(chip_);
    const auto pool = b.sbuf_pool(4096, 2);
    b.dma(0, 128.0 * 4096.0, 128, Direction::hbm_to_sbuf, {}, {b.alloc(pool)});
    b.dma(1, 128.0 * 4096.0, 128, Direction::hbm_to_sbuf, {}, {b.alloc(pool)});
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, ""));
    const double engines = 2.9e12 / 8.0 / 23e9;
    EXPECT_NEAR(r.seconds, (600.0 + 1300.0 + 2.0 * 128.0 * (16.0 + 4096.0 / 23.0) / engines) * 1e-9,
                1e-15);
}

TEST_F(CoreModelTest, IssueIsSerialOnTwoGenerators) {
    // Three tiny transfers on three queues: the third waits for a generator.
    ProgramBuilder b(chip_);
    const auto pool = b.sbuf_pool(64, 3);
    for (int q = 0; q < 3; ++q) {
        b.dma(q, 64.0, 1, Direction::hbm_to_sbuf, {}, {b.alloc(pool)});
    }
    const CoreRun r = CoreSimulator(chip_).run(b.finish(0.0, ""));
    EXPECT_NEAR(r.seconds, (2.0 * 600.0 + 1300.0 + 16.0 + 64.0 / 23.0) * 1e-9, 1e-15);
}

TEST_F(CoreModelTest, ColdTensorEngineRampsUp) {
    ProgramBuilder b(cold_);
    const auto sbuf = b.sbuf_pool(1024, 2);
    const auto acc = b.alloc(b.psum_pool(1));
    const auto ls = b.load_stationary(128, Precision::bf16, b.alloc(sbuf));
    b.multiply_moving(512, Precision::bf16, ls, b.alloc(sbuf), acc);
    const CoreRun r = CoreSimulator(cold_).run(b.finish(0.0, ""));
    // The array starts at 50% and ramps linearly over 3 us: W = 512 / 2.4 GHz of full-rate
    // work takes t with 0.5 t + 0.5 t^2 / (2 x 3000 ns) = W.
    const double work = 512.0 / 2.4;
    const double alpha = 0.5 / 6000.0;
    const double t = (-0.5 + std::sqrt(0.25 + 4.0 * alpha * work)) / (2.0 * alpha);
    EXPECT_NEAR(r.busy_seconds[0], t * 1e-9, 1e-15);
    EXPECT_GT(t, 1.8 * work); // nearly half speed at the start
}

TEST_F(CoreModelTest, ThrottleReengagesAfterAnIdleGap) {
    // 40 multiplies (about 9 us), then one more that waits for a DMA of `bytes`.
    const auto busy = [&](double bytes) {
        ProgramBuilder b(cold_);
        const auto sbuf = b.sbuf_pool(4096, 4);
        const auto psum = b.psum_pool(2);
        const auto multiply = [&](ProgramBuilder::Buffer moving) {
            const auto ls = b.load_stationary(128, Precision::bf16, b.alloc(sbuf));
            b.multiply_moving(512, Precision::bf16, ls, moving, b.alloc(psum));
        };
        const auto first = b.alloc(sbuf);
        for (int i = 0; i < 40; ++i) {
            multiply(first);
        }
        const auto late = b.alloc(sbuf);
        b.dma(0, bytes, 128, Direction::hbm_to_sbuf, {}, {late});
        multiply(late);
        return CoreSimulator(cold_).run(b.finish(0.0, "")).busy_seconds[0];
    };
    // A small DMA lands long before the array is done: one ramp, at the start, which loses
    // (1 - 50%) x 3 us / 2 = 750 ns.
    const double full = 41.0 * 512.0 / 2.4e9;
    EXPECT_NEAR(busy(4096.0), full + 750e-9, 1e-12);
    // A 4 MiB DMA (about 13.6 us) leaves the array idle for more than the 3 us window: the
    // last multiply restarts at half rate.
    EXPECT_GT(busy(128.0 * 32768.0), busy(4096.0) + 150e-9);
}

TEST_F(CoreModelTest, VectorPerformanceModeStreamsFourElementsPerPartition) {
    // Trainium2 VectorE (NKI2): 256 elements per cycle, 512 in the performance mode; over 128
    // partitions 2 and 4 per partition per cycle. 1,000 elements per partition, 100 cycles of
    // overhead: standard 100 + 1000 / 2 = 600 cycles, performance mode 100 + 1000 / 4 = 350.
    // ScalarE has no such mode (1.2 GHz, 128 per cycle: 100 + 1000 = 1100 either way), nor has
    // Trainium1's VectorE (128 per cycle: 100 + 1000 = 1100 either way).
    const ChipSpec trn1 = config::load_chip("trn1");
    const auto cycles = [](const ChipSpec& chip, Queue q, VectorMode mode) {
        ProgramBuilder b(chip);
        const auto pool = b.sbuf_pool(2048, 2);
        b.engine(q, 1000, 1, {b.alloc(pool)}, {b.alloc(pool)}, mode);
        return b.finish(0.0, "").instructions.front().amount;
    };
    EXPECT_EQ(cycles(chip_, Queue::vector, VectorMode::standard), 600.0);
    EXPECT_EQ(cycles(chip_, Queue::vector, VectorMode::perf), 350.0);
    EXPECT_EQ(cycles(chip_, Queue::scalar, VectorMode::standard), 1100.0);
    EXPECT_EQ(cycles(chip_, Queue::scalar, VectorMode::perf), 1100.0);
    EXPECT_EQ(cycles(trn1, Queue::vector, VectorMode::standard), 1100.0);
    EXPECT_EQ(cycles(trn1, Queue::vector, VectorMode::perf), 1100.0);
    // Two inputs in the mode: 100 + ceil(2 x 1001 / 4) = 601 (the rounding is per instruction).
    ProgramBuilder b(chip_);
    const auto pool = b.sbuf_pool(2048, 2);
    b.engine(Queue::vector, 1001, 2, {b.alloc(pool)}, {b.alloc(pool)}, VectorMode::perf);
    EXPECT_EQ(b.finish(0.0, "").instructions.front().amount, 601.0);
}

/// Cycles of the VectorE instructions of a kernel's lowering, in program order.
std::vector<double> vector_cycles(const Kernel& k, const ChipSpec& chip) {
    std::vector<double> out;
    for (const Instruction& ins : lower(k, chip).instructions) {
        if (ins.unit == Unit::vector) {
            out.push_back(ins.amount);
        }
    }
    return out;
}

TEST_F(CoreModelTest, LoweringsUseThePerformanceModeForBf16Maps) {
    // A one-input, one-pass VectorE map of 128 x 1,000 elements is one [128 x 1000] tile
    // (under the 8 KiB per partition tile): one instruction over f = 1,000 elements per
    // partition. Trainium2, BF16 (a tensor_scalar on BF16 SBUF tiles): 100 + ceil(1000 / (512
    // / 128)) = 350 cycles; FP32 and FP8 ("other data types", NKI2): 100 + ceil(1000 / (256 /
    // 128)) = 600. Trainium1 BF16: 100 + 1000 / (128 / 128) = 1100.
    const ChipSpec trn1 = config::load_chip("trn1");
    const auto map = [](int eb) {
        return Kernel{StreamShape{128 * 1000, 1, 1, eb, 1, StreamEngine::vector}};
    };
    EXPECT_EQ(vector_cycles(map(2), chip_), std::vector<double>{350.0});
    EXPECT_EQ(vector_cycles(map(4), chip_), std::vector<double>{600.0});
    EXPECT_EQ(vector_cycles(map(1), chip_), std::vector<double>{600.0});
    EXPECT_EQ(vector_cycles(map(2), trn1), std::vector<double>{1100.0});
    // Two inputs, two passes: the first pass adds the inputs (tensor_tensor: 100 + 2000 / 2 =
    // 1100, NKI2's 2x over NeuronCore-v2 is the standard 256), the second maps the sum (350).
    EXPECT_EQ(vector_cycles(Kernel{StreamShape{128 * 1000, 2, 1, 2, 2, StreamEngine::vector}},
                            chip_),
              (std::vector<double>{1100.0, 350.0}));
    // One-pass BF16 softmax over 128 rows of 1,000: row max (a reduction: 100 + 1000 / 2 =
    // 600), -max and 1 / sum over one element per row (100 + ceil(1 / 2) = 101 each), the
    // scale by 1 / sum (a tensor_scalar: 350).
    EXPECT_EQ(vector_cycles(Kernel{StreamShape{128 * 1000, 1, 1, 2, 1, StreamEngine::vector,
                                               StreamKind::softmax, 1000}},
                            chip_),
              (std::vector<double>{600.0, 101.0, 101.0, 350.0}));
}

TEST_F(CoreModelTest, OnlyQualifyingKernelsUseThePerformanceMode) {
    // Matmuls and attention (PSUM evacuations, reductions, two-input updates), the norms
    // (two-input scale maps), AdamW and FP32 maps (FP32 data) have no VectorE instruction that
    // qualifies: the same time with the mode switched off. BF16 one-input maps and the BF16
    // softmax keep VectorE busy for less.
    ChipSpec without = chip_;
    without.core.vector.perf_mode_elements_per_cycle = 0;
    const DetailedModel with_mode(chip_, 1);
    const DetailedModel no_mode(without, 1);
    const std::vector<Kernel> same{
        MatmulShape{1024, 1024, 1024, 1, Precision::bf16},
        AttentionShape{2, 8, 8, 1024, 1024, 128, 128, true, Precision::bf16},
        AttentionShape{2, 8, 8, 1024, 1024, 128, 128, true, Precision::bf16, true},
        StreamShape{512 * 4096, 1, 1, 2, 1, StreamEngine::vector, StreamKind::rms_norm, 4096},
        StreamShape{512 * 4096, 1, 1, 2, 1, StreamEngine::vector, StreamKind::layer_norm, 4096},
        StreamShape{4000000, 1, 1, 4, 2, StreamEngine::vector},
        StreamShape{4000000, 2, 1, 2, 1, StreamEngine::vector},
        OptimizerShape{4000000, 2, 2},
    };
    for (const Kernel& k : same) {
        EXPECT_EQ(with_mode.run(k).seconds(), no_mode.run(k).seconds()) << describe(k);
    }
    const std::vector<Kernel> faster{
        StreamShape{4000000, 1, 1, 2, 2, StreamEngine::vector},
        StreamShape{512 * 4096, 1, 1, 2, 1, StreamEngine::vector, StreamKind::softmax, 4096},
    };
    // Their VectorE work shrinks (these shapes are HBM-bound, so their time need not).
    const auto vector_busy = [](const DetailedResult& r) {
        return r.core.busy_seconds[static_cast<std::size_t>(EngineKind::vector)];
    };
    for (const Kernel& k : faster) {
        EXPECT_LT(vector_busy(with_mode.run(k)), 0.9 * vector_busy(no_mode.run(k))) << describe(k);
    }
}

TEST_F(CoreModelTest, SameProgramSameResult) {
    ProgramBuilder b(cold_);
    const auto pool = b.sbuf_pool(4096, 4);
    const auto psum = b.psum_pool(2);
    for (int i = 0; i < 20; ++i) {
        const auto in = b.alloc(pool);
        b.dma(i % 3, 128.0 * (1000 + 37 * i), 128, Direction::hbm_to_sbuf, {}, {in});
        const auto acc = b.alloc(psum);
        const auto ls = b.load_stationary(128, Precision::bf16, in);
        b.multiply_moving(100 + i, Precision::bf16, ls, in, acc);
        const auto out = b.alloc(pool);
        b.engine(i % 2 == 0 ? Queue::vector : Queue::scalar, 200 + i, 1, {acc}, {out});
        b.dma(3, 128.0 * 512, 128, Direction::sbuf_to_hbm, {out}, {});
    }
    const Program p = b.finish(0.0, "");
    const CoreRun a = CoreSimulator(cold_).run(p);
    const CoreRun c = CoreSimulator(cold_).run(p);
    EXPECT_EQ(a.seconds, c.seconds);
    EXPECT_EQ(a.busy_seconds, c.busy_seconds);
    EXPECT_EQ(a.events, c.events);
}

TEST_F(CoreModelTest, PoolsAreCheckedAgainstTheCore) {
    ProgramBuilder b(chip_);
    b.sbuf_pool(chip_.core.sbuf_partition_bytes() / 2, 2);
    EXPECT_TRUE(b.fits());
    b.sbuf_pool(1, 1);
    EXPECT_FALSE(b.fits());
    ProgramBuilder c(chip_);
    c.psum_pool(chip_.core.psum_banks + 1);
    EXPECT_FALSE(c.fits());
}

TEST_F(CoreModelTest, DependenciesFollowTheBuffers) {
    ProgramBuilder b(chip_);
    const auto pool = b.sbuf_pool(64, 1); // one slot: every reuse waits for its readers
    const auto slot = b.alloc(pool);
    const auto load = b.dma(0, 64.0, 1, Direction::hbm_to_sbuf, {}, {slot});
    const auto read = b.engine(Queue::vector, 16, 1, {slot}, {});
    const auto again = b.dma(1, 64.0, 1, Direction::hbm_to_sbuf, {}, {b.alloc(pool)});
    const Program p = b.finish(0.0, "");
    // The read waits for the load (read after write); the second load for the read (write
    // after read) and the first load (write after write).
    const auto deps = [&](ProgramBuilder::Id i) {
        const Instruction& ins = p.instructions[i];
        return std::vector<std::uint32_t>(p.deps.begin() + ins.dep_begin,
                                          p.deps.begin() + ins.dep_begin + ins.dep_count);
    };
    EXPECT_EQ(deps(read), std::vector<std::uint32_t>{load});
    std::vector<std::uint32_t> want{load, read};
    std::vector<std::uint32_t> got = deps(again);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
}

} // namespace
} // namespace trnsim::compute
