// The checkpoint interval and its bounds, with costs derived by hand.
#include "trnsim/core/error.hpp"
#include "trnsim/reliability/checkpoint.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/reliability/theory.hpp"

#include "support/reliability_cases.hpp"

#include <gtest/gtest.h>

namespace trnsim::reliability {
namespace {

// 1 TB checkpoint on 64 chips in 4 instances, async: the snapshot is 1e12 / 64 = 15.6 GB per
// chip at 25 GB/s = 0.625 s of stall; the upload of 1e12 B at a storage bandwidth of 1e10 B/s
// takes 100 s in the background.
CheckpointSpec async_spec() {
    CheckpointSpec s;
    s.mode = CheckpointMode::async;
    s.snapshot_bandwidth = Bandwidth::bytes_per_s(25e9);
    s.storage_bandwidth = Bandwidth::bytes_per_s(1e10);
    return s;
}

CheckpointCosts async_costs() {
    return checkpoint_costs(async_spec(), Bytes(std::int64_t{1'000'000'000'000}), 64, 4, 4,
                            Bandwidth::bytes_per_s(1e11));
}

TEST(CheckpointCosts, AsyncStallAndUploadByHand) {
    const CheckpointCosts c = async_costs();
    EXPECT_EQ(c.stall, Duration::from_ns(625'000'000));
    EXPECT_EQ(c.background, Duration::from_ns(100'000'000'000));
}

TEST(CheckpointInterval, AutoTakesDalysOptimumWhenNoBoundIsHigher) {
    // A job MTBF of 10 days: Daly's optimum for a 0.625 s stall is about sqrt(2 x 0.625 x
    // 864,000) = 1,039 s (its higher-order terms change that by well under 1%), above the
    // 100 s upload and the 1 s step.
    const CheckpointInterval r = checkpoint_interval(async_spec(), async_costs(), 1.0 / 864000.0,
                                                     1.0);
    EXPECT_EQ(r.reason, IntervalReason::daly);
    EXPECT_NEAR(r.every.seconds(), 1039.2, 10.0);
    EXPECT_EQ(r.every, r.daly);
}

TEST(CheckpointInterval, NeverBelowTheBackgroundUpload) {
    // A job MTBF of 1 hour: Daly's optimum is about sqrt(2 x 0.625 x 3600) = 67 s, below the
    // 100 s upload; the next snapshot would overwrite the buffer still being uploaded.
    const CheckpointInterval r = checkpoint_interval(async_spec(), async_costs(), 1.0 / 3600.0,
                                                     1.0);
    EXPECT_EQ(r.reason, IntervalReason::copy_bound);
    EXPECT_EQ(r.every, Duration::from_ns(100'000'000'000));
    EXPECT_NEAR(r.daly.seconds(), 67.0, 2.0);
    // A fixed interval below the upload is raised the same way.
    CheckpointSpec fixed = async_spec();
    fixed.interval = Duration::from_ns(30'000'000'000);
    const CheckpointInterval f = checkpoint_interval(fixed, async_costs(), 1.0 / 3600.0, 1.0);
    EXPECT_EQ(f.every, Duration::from_ns(100'000'000'000));
    EXPECT_EQ(f.reason, IntervalReason::copy_bound);
}

TEST(CheckpointInterval, NeverBelowOneStepAndNoneWithoutFailures) {
    // Steps of 200 s, above the upload and Daly's 67 s.
    const CheckpointInterval r = checkpoint_interval(async_spec(), async_costs(), 1.0 / 3600.0,
                                                     200.0);
    EXPECT_EQ(r.reason, IntervalReason::one_step);
    EXPECT_EQ(r.every, Duration::from_ns(200'000'000'000));
    const CheckpointInterval none = checkpoint_interval(async_spec(), async_costs(), 0.0, 1.0);
    EXPECT_EQ(none.reason, IntervalReason::no_failures);
    EXPECT_TRUE(none.every.is_max());
}

TEST(CheckpointHostMemory, AsyncKeepsTheInstanceShareMemoryTwice) {
    const Bytes size(std::int64_t{1000});
    CheckpointSpec s;
    s.mode = CheckpointMode::sync;
    EXPECT_EQ(checkpoint_host_bytes(s, size, 3), Bytes(0));
    s.mode = CheckpointMode::async;
    EXPECT_EQ(checkpoint_host_bytes(s, size, 3), Bytes(334)); // ceil(1000 / 3)
    s.mode = CheckpointMode::memory;
    EXPECT_EQ(checkpoint_host_bytes(s, size, 3), Bytes(668));
}

TEST(CheckpointHostMemory, ASnapshotLargerThanHostMemoryIsAnInputError) {
    // 4 instances with 1 GiB of host memory each and a 16 GiB async checkpoint: 4 GiB each.
    RunInput in = test::instances_input(4, 0, 3600.0);
    in.hardware.host_memory = Bytes(std::int64_t{1} << 30);
    in.spec.checkpoint.mode = CheckpointMode::async;
    in.job.checkpoint_size = Bytes(std::int64_t{16} << 30);
    try {
        validate(in);
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "reliability.checkpoint.mode");
        EXPECT_NE(e.message().find("4.00 GiB per instance"), std::string::npos) << e.message();
    }
    in.job.checkpoint_size = Bytes(std::int64_t{2} << 30); // 512 MiB each: fits
    EXPECT_NO_THROW(validate(in));
}

} // namespace
} // namespace trnsim::reliability
