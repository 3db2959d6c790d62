// The window driver's sharing policy (sharing_policy.hpp) fed synthetic window times: a
// window costs `inline_s` on one thread and `shared_s` with the helpers. The counts below are
// derived by hand from the rules in the header (kTrialWindows = 8, kTrialMin = 16,
// kTrialBudget = 1%, kAverageWindows = 64). After a losing trial the next comes after
// max(2 x trial_every, ceil(8 x (loser - winner) / (1% x winner))) windows.
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
// on. Inline gets trials of 8 windows, each losing 8 x 40 us = 320 us: the first after 16
// shared windows, then after max(32, ceil(320 / 0.6)) = 534, then 1,068, 2,136, 4,272, 8,544.
// Windows: 17 + (16 + 8) + (534 + 8) + (1,068 + 8) + (2,136 + 8) + (4,272 + 8) = 8,083, and
// the next 1,917 see no trial. Inline: 1 + 8 + 5 x 8 = 49; shared 10,000 - 49 = 9,951.
TEST(SharingPolicy, SharesWhenSharingIsFaster) {
    SharingPolicy p(2);
    const Tally t = run(p, 10'000, 100e-6, 60e-6);
    EXPECT_EQ(t.shared, 9'951);
    EXPECT_EQ(p.verdict(3), 1);
    EXPECT_DOUBLE_EQ(p.cost(3, false), 100e-6);
    EXPECT_NEAR(p.cost(3, true), 60e-6, 1e-12);
}

// Sharing slower (150 us against 100 us): the mirror image. Each trial of sharing loses
// 8 x 50 us = 400 us: trials after 16 inline windows, then max(32, ceil(400 / 1.0)) = 400,
// 800, 1,600, 3,200 (windows 17 + 24 + 408 + 808 + 1,608 + 3,208 = 6,073; the next is due after
// 6,400 more). Shared: the first measurement (8) and 5 trials of 8 = 48; their extra time is
// 48 x 50 us = 2.4 ms, 0.24% of the 1.0 s all-inline time.
TEST(SharingPolicy, RunsInlineWhenSharingIsSlower) {
    SharingPolicy p(2);
    const Tally t = run(p, 10'000, 100e-6, 150e-6);
    EXPECT_EQ(t.shared, 48);
    EXPECT_EQ(p.verdict(3), -1);
    EXPECT_NEAR(t.seconds, 10'000 * 100e-6 + 48 * 50e-6, 1e-9);
}

// A change of load: 20,000 windows with sharing faster, then the helpers slow (300 us shared,
// as when they are descheduled), then fast again.
TEST(SharingPolicy, FollowsAChangeOfLoad) {
    SharingPolicy p(2);
    EXPECT_GT(run(p, 20'000, 100e-6, 60e-6).shared, 19'800);
    // Class 3's shared average climbs from 60 us by (300 - avg) / 64 a window: above the
    // inline cost (100 us) after n windows with 300 - 240 (63/64)^n > 100, n = 12 (11.6).
    // Meanwhile the first slow window's one-thread time is estimated with class 3's speed-up,
    // 300 us x 100/60 = 500 us, class 5, which then measures both modes (8 shared windows, as
    // sharing pays in the shorter class 3, and 8 inline, alternating with class 3's windows
    // since each 100 us inline window is expected in class 3 next). Then inline gets its trial
    // in class 3 (8 windows) and wins; sharing gets one trial after 16 inline windows, loses
    // 8 x 200 us, and the next is due after ceil(1,600 / 1.0) = 1,600. Shared within 1,000
    // windows: 12 + 8 + 8 = 28.
    EXPECT_EQ(run(p, 1'000, 100e-6, 300e-6).shared, 28);
    EXPECT_EQ(p.verdict(3), -1);
    // Fast again: the next trial (after 1,600 inline windows) wins and the class shares from
    // then on.
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
