#include "trnsim/engine/sharing_policy.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::engine {

int SharingPolicy::class_of(double seconds) {
    if (!(seconds >= kShortest)) {
        return -1;
    }
    int k = 0;
    for (double edge = 2 * kShortest; seconds >= edge && k + 1 < kClasses; edge *= 2) {
        ++k;
    }
    return k;
}

int SharingPolicy::verdict(int k) const {
    const Class& c = classes_[static_cast<std::size_t>(k)];
    if (c.cost[0] < 0.0 || c.cost[1] < 0.0) {
        return 0;
    }
    return c.cost[1] < c.cost[0] ? 1 : -1;
}

double SharingPolicy::cost(int k, bool shared) const {
    return classes_[static_cast<std::size_t>(k)].cost[shared ? 1 : 0];
}

bool SharingPolicy::share() {
    class_ = threads_ < 2 ? -1 : class_of(expected_s_);
    shared_ = false;
    if (class_ >= 0) {
        Class& c = classes_[static_cast<std::size_t>(class_)];
        shared_ = decide(c, class_);
    }
    return shared_;
}

/// Starts a trial when one is due; returns the mode of the next window of the class.
bool SharingPolicy::decide(Class& c, int k) const {
    if (c.measuring) {
        return c.measured;
    }
    if (verdict(k) != 0) {
        // Sharing whose average rose above the inline cost (more load) gets its trial at once;
        // inline that got slower does not: load hurts sharing more.
        const bool costlier =
            c.mode && c.since >= kTrialWindows && c.cost[c.mode] > c.cost[!c.mode];
        if (c.since >= c.trial_every || costlier) {
            c.measuring = true;
            c.measured = !c.mode;
            return c.measured;
        }
        return c.mode;
    }
    // Not measured both ways: the missing mode, the guess first when both are.
    bool guess = false;
    for (int j = k - 1; j >= 0 && !guess; --j) {
        guess = verdict(j) > 0; // sharing pays in a shorter class
    }
    for (int j = k + 1; j < kClasses && guess; ++j) {
        guess = verdict(j) >= 0; // ... unless it loses in a longer one
    }
    c.measuring = true;
    c.measured = c.cost[guess ? 1 : 0] < 0.0 ? guess : !guess;
    return c.measured;
}

void SharingPolicy::finish(Class& c) {
    const bool trial = c.cost[0] >= 0.0 && c.cost[1] >= 0.0; // of the other mode
    c.cost[c.measured ? 1 : 0] = c.sum / c.count;
    c.measuring = false;
    c.sum = 0.0;
    c.count = 0;
    c.since = 0;
    const bool cheaper = c.cost[1] < c.cost[0];
    if (!trial) {
        c.mode = cheaper; // first measured both ways (or not yet: then no effect)
        c.trial_every = kTrialMin;
    } else if (cheaper != c.mode) {
        c.mode = cheaper; // the trial won
        c.trial_every = kTrialMin;
    } else {
        // Lost: twice as long to the next trial, and long enough that trials losing as much
        // as this one cost at most kTrialBudget of the class's time.
        const double loss = kTrialWindows * (c.cost[!c.mode] - c.cost[c.mode]);
        const double budget = std::ceil(loss / (kTrialBudget * c.cost[c.mode]));
        c.trial_every = static_cast<int>(std::min<double>(
            kTrialMax, std::max<double>(2.0 * c.trial_every, budget)));
    }
}

double SharingPolicy::speedup(int k) const {
    for (int d = 0; d < kClasses; ++d) {
        for (const int j : {k - d, k + d}) {
            if (j >= 0 && j < kClasses && verdict(j) != 0) {
                const Class& c = classes_[static_cast<std::size_t>(j)];
                return c.cost[0] / c.cost[1];
            }
        }
    }
    return -1.0;
}

void SharingPolicy::record(double seconds) {
    // An inline window that took four times its class or more was expected in the wrong class
    // (the window before was much shorter): it says nothing about its class's inline cost.
    // A shared one always counts: it may be a helper's stall, which is the cost of sharing.
    const bool misplaced = !shared_ && class_of(seconds) > class_ + 1;
    if (class_ >= 0 && !misplaced) {
        Class& c = classes_[static_cast<std::size_t>(class_)];
        if (c.measuring) {
            c.sum += seconds;
            if (++c.count >= kTrialWindows) {
                finish(c);
            }
        } else {
            double& avg = c.cost[c.mode];
            avg += (seconds - avg) / kAverageWindows;
            ++c.since;
        }
    }
    // The next window is expected to take as long as this one would have on one thread. For
    // a shared window: its time times the speed-up of the class its time falls in (not the
    // class it was expected in, which may have been wrong), or as long as expected before
    // when no speed-up is measured yet.
    if (!shared_) {
        expected_s_ = seconds;
    } else if (const double s = speedup(std::max(0, class_of(seconds))); s > 0.0) {
        expected_s_ = seconds * s;
    }
}

} // namespace trnsim::engine
