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
    return granted + setup + j.step * steps + j.save * checkpoints(j, steps);
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
