#include "trnsim/core/units.hpp"

#include <gtest/gtest.h>

namespace trnsim {
namespace {

TEST(Duration, FromSecondsRoundsUp) {
    EXPECT_EQ(Duration::from_seconds_ceil(1e-9).ns(), 1);
    EXPECT_EQ(Duration::from_seconds_ceil(1.5e-9).ns(), 2);
    EXPECT_EQ(Duration::from_seconds_ceil(2.0).ns(), 2'000'000'000);
    EXPECT_EQ(Duration::from_seconds_ceil(0.0).ns(), 0);
}

TEST(Duration, SaturatesInsteadOfOverflowing) {
    EXPECT_TRUE(Duration::from_seconds_ceil(1e12).is_max()); // ~31,700 years
    EXPECT_TRUE(Duration::from_seconds_ceil(std::numeric_limits<double>::infinity()).is_max());
    EXPECT_TRUE(Duration::from_seconds_ceil(std::nan("")).is_max());
}

TEST(Duration, RangeCoversCenturies) {
    // 292 years of nanoseconds fit: a multi-month reliability run is far inside.
    const double seconds = 290.0 * units::kSecondsPerYear;
    EXPECT_FALSE(Duration::from_seconds_ceil(seconds).is_max());
}

TEST(Duration, Arithmetic) {
    const Duration a = Duration::from_ns(1500);
    const Duration b = Duration::from_ns(500);
    EXPECT_EQ((a + b).ns(), 2000);
    EXPECT_EQ((a - b).ns(), 1000);
    EXPECT_EQ((b * 3).ns(), 1500);
    EXPECT_LT(b, a);
    EXPECT_DOUBLE_EQ(a.seconds(), 1.5e-6);
}

TEST(Seconds, KeepsTheDoubleExactly) {
    // No rounding to ticks: a value between two nanoseconds, and the closed forms' specials.
    for (const double x : {1.5e-10, 0.1, 1.0 / 3.0, 6.403e-3, 1e300, -2.5}) {
        EXPECT_EQ(Seconds::of(x).seconds(), x);
    }
    EXPECT_TRUE(std::isinf(Seconds::of(std::numeric_limits<double>::infinity()).seconds()));
    EXPECT_TRUE(std::isnan(Seconds::of(std::nan("")).seconds()));
    EXPECT_EQ(Seconds().seconds(), 0.0);
}

TEST(Seconds, Arithmetic) {
    const Seconds a = Seconds::of(0.75);
    const Seconds b = Seconds::of(0.25);
    EXPECT_EQ((a + b).seconds(), 1.0);
    EXPECT_EQ((a - b).seconds(), 0.5);
    EXPECT_EQ((b * 3.0).seconds(), 0.75);
    EXPECT_EQ((a / 3.0).seconds(), 0.25);
    EXPECT_EQ(a / b, 3.0);
    Seconds c = a;
    c += b;
    EXPECT_EQ(c.seconds(), 1.0);
    c -= a;
    EXPECT_EQ(c.seconds(), 0.25);
    EXPECT_LT(b, a);
    EXPECT_EQ(c, b);
    // The same double operations as on the bare values, so results stay bit-identical.
    const double x = 0.1, y = 0.2;
    EXPECT_EQ((Seconds::of(x) + Seconds::of(y)).seconds(), x + y);
    EXPECT_EQ((Seconds::of(x) / 7.0).seconds(), x / 7.0);
}

TEST(Units, TransferAndComputeTime) {
    // 25 GB at 25 GB/s is one second; 200 Gbps is 25 GB/s.
    EXPECT_DOUBLE_EQ(transfer_seconds(Bytes(25'000'000'000), Bandwidth::bytes_per_s(25e9)), 1.0);
    EXPECT_DOUBLE_EQ(Bandwidth::bits_per_s(200e9).bytes_per_s(), 25e9);
    EXPECT_DOUBLE_EQ(compute_seconds(FlopCount(667e12), FlopRate::per_s(667e12)), 1.0);
}

TEST(Units, BytesAreExact) {
    const Bytes a(std::int64_t{96} * units::kGiB);
    EXPECT_EQ(a.count(), 103'079'215'104);
    EXPECT_EQ((a + Bytes(1)).count(), 103'079'215'105);
    EXPECT_EQ((a * 4).count(), 412'316'860'416);
}

} // namespace
} // namespace trnsim
