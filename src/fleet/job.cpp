#include "trnsim/fleet/job.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>

namespace trnsim::fleet {

namespace {

/// Checkpoints a segment of `steps` steps takes: one after every c steps but the last.
std::int64_t checkpoints(const JobSpec& j, std::int64_t steps) {
    return steps <= 0 ? 0 : (steps - 1) / std::max<std::int64_t>(j.checkpoint_steps, 1);
}

} // namespace

SimTime Segment::end(const JobSpec& j) const {
    // Saturating: a segment that would end past the range of simulated time never ends.
    std::int64_t run = 0, saving = 0, total = 0;
    if (__builtin_mul_overflow(j.step.ns(), steps, &run) ||
        __builtin_mul_overflow(j.save.ns(), checkpoints(j, steps), &saving) ||
        __builtin_add_overflow(run, saving, &total) ||
        __builtin_add_overflow(total, setup.ns(), &total) ||
        __builtin_add_overflow(total, granted.ns(), &total)) {
        return SimTime::max();
    }
    return SimTime::from_ns(total);
}

Segment::Cut Segment::cut(const JobSpec& j, SimTime t) const {
    TRNSIM_CHECK(t >= granted && t <= end(j), "fleet: a segment cut outside its span");
    const Duration held = t - granted;
    Cut c;
    if (held <= setup) {
        c.overhead = held;
        c.lost = Duration::zero();
        return c;
    }
    const Duration running = held - setup;
    const std::int64_t every = std::max<std::int64_t>(j.checkpoint_steps, 1);
    std::int64_t k = checkpoints(j, steps);
    if (k > 0) {
        const std::int64_t cycle = (j.step * every + j.save).ns();
        k = std::min(k, cycle > 0 ? running.ns() / cycle : k);
    }
    c.durable_steps = k * every;
    c.overhead = setup + j.save * k;
    c.lost = held - c.overhead - j.step * c.durable_steps;
    return c;
}

} // namespace trnsim::fleet
