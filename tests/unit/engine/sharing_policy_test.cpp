// The window driver's sharing policy (sharing_policy.hpp) fed synthetic window times: a
// window costs `inline_s` on one thread and `shared_s` with the helpers. The counts below are
// derived by hand from the rules in the header (kTrialWindows = 8, kTrialMin = 16,
// kTrialMax = 4096, kAverageWindows = 64).
#include "trnsim/engine/sharing_policy.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trnsim::engine {
namespace {

struct Tally {
    int shared = 0;
    double seconds = 0.0;
};

/// Runs `windows` windows through the policy; returns how many were shared and their time.
Tally run(SharingPolicy& p, int windows, double inline_s, double shared_s) {
    Tally t;
    for (int w = 0; w < windows; ++w) {
        const bool shared = p.share();
        const double s = shared ? shared_s : inline_s;
        p.record(s);
        t.shared += shared ? 1 : 0;
        t.seconds += s;
    }
    return t;
}

TEST(SharingPolicy, ClassesArePowersOfTwoFrom8us) {
    EXPECT_EQ(SharingPolicy::class_of(0.0), -1);
    EXPECT_EQ(SharingPolicy::class_of(7.9e-6), -1);
    EXPECT_EQ(SharingPolicy::class_of(8e-6), 0);
    EXPECT_EQ(SharingPolicy::class_of(15.9e-6), 0);
    EXPECT_EQ(SharingPolicy::class_of(16e-6), 1);
    EXPECT_EQ(SharingPolicy::class_of(100e-6), 3); // [64, 128) us
    EXPECT_EQ(SharingPolicy::class_of(1e9), SharingPolicy::kClasses - 1);
}

TEST(SharingPolicy, OneThreadAndShortWindowsRunInline) {
    SharingPolicy one(1);
    EXPECT_EQ(run(one, 1000, 1e-3, 1e-6).shared, 0);
    // Windows of 5 us never reach the first class, however fast sharing would be.
    SharingPolicy two(2);
    EXPECT_EQ(run(two, 1000, 5e-6, 1e-9).shared, 0);
}

// Sharing faster (60 us against 100 us, class 3). Window 1 runs inline (nothing expected
// yet); then class 3 measures inline for 8 windows, shared for 8 (the expected one-thread time
// stays 100 us: no speed-up measured yet; afterwards 60 us x 100/60), and shares from then
// on. Inline gets a trial of 8 windows after 16, 32, ..., 4096 shared windows (each trial
// loses and doubles the interval): 9 trials in the next 8,176 + 72 windows. Of 10,000 windows:
// inline 1 + 8 + 9 x 8 = 81; the remaining 1,735 shared windows see no trial (the next is due
// after 4,096). Shared: 10,000 - 81 = 9,919.
TEST(SharingPolicy, SharesWhenSharingIsFaster) {
    SharingPolicy p(2);
    const Tally t = run(p, 10'000, 100e-6, 60e-6);
    EXPECT_EQ(t.shared, 9'919);
    EXPECT_EQ(p.verdict(3), 1);
    EXPECT_DOUBLE_EQ(p.cost(3, false), 100e-6);
    EXPECT_NEAR(p.cost(3, true), 60e-6, 1e-12);
}

// Sharing slower (150 us against 100 us): the mirror image. Shared: the first measurement (8)
// and 9 trials of 8 after 16, 32, ..., 4096 inline windows = 80; their extra time is
// 80 x 50 us = 4 ms, 0.4% of the 1.0 s all-inline time.
TEST(SharingPolicy, RunsInlineWhenSharingIsSlower) {
    SharingPolicy p(2);
    const Tally t = run(p, 10'000, 100e-6, 150e-6);
    EXPECT_EQ(t.shared, 80);
    EXPECT_EQ(p.verdict(3), -1);
    EXPECT_NEAR(t.seconds, 10'000 * 100e-6 + 80 * 50e-6, 1e-9);
}

// A change of load: 20,000 windows with sharing faster, then the helpers slow (300 us shared,
// as when they are descheduled), then fast again.
TEST(SharingPolicy, FollowsAChangeOfLoad) {
    SharingPolicy p(2);
    EXPECT_GT(run(p, 20'000, 100e-6, 60e-6).shared, 19'800);
    // The shared average climbs from 60 us by (300 - avg) / 64 a window: above the inline cost
    // (100 us) after n windows with 300 - 240 (63/64)^n > 100, n = 12 (11.6). Then inline gets
    // its trial (8 windows), wins, and the class runs inline; sharing gets trials of 8 after
    // 16, 32, 64, 128, 256 and 512 inline windows, which all lose: within 1,000 windows,
    // 12 + 6 x 8 = 60 shared.
    EXPECT_EQ(run(p, 1'000, 100e-6, 300e-6).shared, 60);
    EXPECT_EQ(p.verdict(3), -1);
    // Fast again: the next trial (after 1,024 inline windows, at most 4,096) wins and the
    // class shares from then on.
    run(p, 4'200, 100e-6, 60e-6);
    EXPECT_EQ(p.verdict(3), 1);
    EXPECT_GE(run(p, 100, 100e-6, 60e-6).shared, 100 - 8);
}

// Classes learn separately: short windows (20 us, class 1) where sharing loses and long ones
// (1 ms, class 6: [512, 1024) us) where it pays, in alternating stretches of 500. The first window of a
// stretch is expected in the other class (the last window's); that costs a misplaced window
// per stretch and, when it falls in a trial, a detour of a few dozen windows, no more.
TEST(SharingPolicy, ClassesLearnSeparately) {
    SharingPolicy p(2);
    int long_shared = 0, short_shared = 0, longs = 0, shorts = 0;
    for (int w = 0; w < 20'000; ++w) {
        const bool is_long = (w / 500) % 2 == 0;
        const bool shared = p.share();
        p.record(is_long ? (shared ? 0.6e-3 : 1e-3) : (shared ? 30e-6 : 20e-6));
        (is_long ? long_shared : short_shared) += shared ? 1 : 0;
        (is_long ? longs : shorts) += 1;
    }
    EXPECT_EQ(p.verdict(6), 1);
    EXPECT_EQ(p.verdict(1), -1);
    EXPECT_GT(long_shared, longs * 9 / 10);
    EXPECT_LT(short_shared, shorts / 10);
}

} // namespace
} // namespace trnsim::engine
