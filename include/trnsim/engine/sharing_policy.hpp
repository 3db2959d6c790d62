// Which windows the window driver shares with its helper threads (window_driver.hpp).
//
// Sharing a window costs a wake-up, a few atomics per partition and the cache misses of
// moving partitions between cores; on a loaded machine it also costs the time a helper that
// was descheduled in the middle of a partition holds the window up. A window of little work
// does not repay that. The policy measures instead of guessing:
//
//   - Windows are classed by their expected one-thread time, in powers of two from kShortest
//     (8 us): the last window's wall time, times the speed-up measured in the class of that
//     time when the window was shared. Windows expected shorter than kShortest run inline.
//   - Per class, each mode has a cost, the wall time of one window: for the class's current
//     mode, a moving average over its windows (weight 1/kAverageWindows to the newest, so a
//     stall of a descheduled helper counts in proportion to how often it happens); for the
//     other mode, the mean of its last trial, kTrialWindows consecutive windows of the class.
//   - The current mode of a class is the cheaper one. The other gets a trial after
//     `trial_every` windows of the class in the current mode, and, when the class shares, at
//     once when the shared average rises above the inline cost (more load; inline that gets
//     slower triggers nothing, as load hurts sharing more). A trial that wins switches the
//     class and resets `trial_every` to kTrialMin; one that loses at least doubles it, and
//     makes it long enough that trials losing as much cost at most kTrialBudget (1%) of the
//     class's time (up to kTrialMax windows).
//   - An inline window that took four times its class or more was misplaced (expected in the
//     wrong class) and is left out of the costs; a shared one counts whatever it took, since
//     a helper's stall is part of the cost of sharing. Uncertainty thus leans to inline.
//   - A class not yet measured both ways measures both, kTrialWindows windows each; which goes
//     first is borrowed from the other classes: sharing that pays in a shorter class pays in a
//     longer one, sharing that loses in a longer class loses in a shorter one, else inline.
//
// Only who runs what depends on this, never the results. Not thread-safe: the driver's leader
// alone calls it.
#pragma once

#include <array>
#include <cstdint>

namespace trnsim::engine {

class SharingPolicy {
public:
    static constexpr double kShortest = 8e-6; ///< seconds; shorter windows always run inline
    static constexpr int kClasses = 24;        ///< kShortest x 2^k, up to about 67 s
    static constexpr int kTrialWindows = 8;
    static constexpr int kTrialMin = 16;   ///< windows of a class between trials, at first
    static constexpr int kTrialMax = 65536; ///< ... and at most
    static constexpr double kTrialBudget = 0.01;
    static constexpr int kAverageWindows = 64;

    /// `threads` < 2: every window inline.
    explicit SharingPolicy(int threads) : threads_(threads) {}

    /// The mode of the next window: true to share it with the helpers.
    bool share();
    /// The window just chosen by share() took `seconds` of wall time.
    void record(double seconds);
    /// True when the next window is expected shorter than kShortest (share() would run it
    /// inline without measuring both ways); the driver may then skip timing it.
    bool expects_inline() const { return threads_ < 2 || class_of(expected_s_) < 0; }

    /// The class of a window expected to take `seconds` on one thread (-1: below kShortest).
    static int class_of(double seconds);
    /// +1: sharing is faster in class k, -1: slower, 0: not measured both ways yet.
    int verdict(int k) const;
    /// The cost of a window of class k in a mode, seconds (-1: not measured).
    double cost(int k, bool shared) const;

private:
    struct Class {
        std::array<double, 2> cost{-1.0, -1.0}; ///< inline, shared
        bool mode = false;       ///< the current mode (once both are measured)
        bool measuring = false;  ///< a measurement of `measured` (a trial) is under way
        bool measured = false;   ///< ... of this mode
        double sum = 0.0;        ///< its seconds so far ...
        int count = 0;           ///< ... over this many windows
        int since = 0;           ///< windows in the current mode since the last trial
        int trial_every = kTrialMin;
    };
    bool decide(Class& c, int k) const;
    void finish(Class& c);
    /// One-thread time over shared time in class k or the nearest class measured (-1: none).
    double speedup(int k) const;

    int threads_;
    std::array<Class, kClasses> classes_{};
    double expected_s_ = 0.0;
    int class_ = -1;
    bool shared_ = false;
};

} // namespace trnsim::engine
