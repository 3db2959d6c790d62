#include "trnsim/reliability/checkpoint.hpp"

#include "trnsim/reliability/theory.hpp"

#include <algorithm>

namespace trnsim::reliability {

namespace {

Duration time_for(double bytes, Bandwidth bw) {
    if (bytes <= 0.0) {
        return Duration::zero();
    }
    return Duration::from_seconds_ceil(transfer_seconds(bytes, bw));
}

} // namespace

CheckpointCosts checkpoint_costs(const CheckpointSpec& spec, Bytes size, std::int64_t chips,
                                 std::int64_t instances, std::int64_t domains,
                                 Bandwidth efa_per_instance) {
    const double s = size.as_double();
    const Bandwidth restore_bw = spec.restore_bandwidth.bytes_per_s() > 0.0
                                     ? spec.restore_bandwidth
                                     : spec.storage_bandwidth;
    const double per_chip = s / static_cast<double>(std::max<std::int64_t>(chips, 1));
    const double per_instance = s / static_cast<double>(std::max<std::int64_t>(instances, 1));
    const double per_domain = s / static_cast<double>(std::max<std::int64_t>(domains, 1));
    const double instances_per_domain =
        static_cast<double>(instances) / static_cast<double>(std::max<std::int64_t>(domains, 1));
    CheckpointCosts c;
    switch (spec.mode) {
    case CheckpointMode::sync:
        c.stall = time_for(s, spec.storage_bandwidth);
        c.restore = time_for(s, restore_bw);
        break;
    case CheckpointMode::async:
        c.stall = time_for(per_chip, spec.snapshot_bandwidth);
        c.background = time_for(s, spec.storage_bandwidth);
        c.restore = time_for(s, restore_bw);
        break;
    case CheckpointMode::memory:
        c.stall = time_for(per_chip, spec.snapshot_bandwidth);
        c.background = time_for(per_instance, efa_per_instance);
        c.restore = std::max(c.stall, c.background);
        break;
    }
    c.replica_restore = time_for(per_domain, efa_per_instance * instances_per_domain);
    return c;
}

CheckpointInterval checkpoint_interval(const CheckpointSpec& spec, const CheckpointCosts& costs,
                                       double job_failure_rate, double step_s) {
    CheckpointInterval r;
    if (spec.interval > Duration::zero()) {
        r.every = spec.interval;
        r.reason = IntervalReason::fixed;
    } else if (!(job_failure_rate > 0.0)) {
        r.every = Duration::max();
        r.reason = IntervalReason::no_failures;
        return r;
    } else {
        r.daly = Duration::from_seconds_ceil(
            theory::daly_interval(costs.stall.seconds(), 1.0 / job_failure_rate));
        r.every = r.daly;
        r.reason = IntervalReason::daly;
    }
    // The bounds, in the order that explains the result best: the larger one wins.
    const Duration step = Duration::from_seconds_ceil(step_s);
    const Duration copy = costs.background;
    if (copy > r.every && copy >= step) {
        r.every = copy;
        r.reason = IntervalReason::copy_bound;
    }
    if (step > r.every) {
        r.every = step;
        r.reason = IntervalReason::one_step;
    }
    return r;
}

Bytes checkpoint_host_bytes(const CheckpointSpec& spec, Bytes size, std::int64_t instances) {
    if (spec.mode == CheckpointMode::sync) {
        return Bytes(0);
    }
    const std::int64_t n = std::max<std::int64_t>(instances, 1);
    const std::int64_t share = (size.count() + n - 1) / n;
    return Bytes(spec.mode == CheckpointMode::memory ? 2 * share : share);
}

} // namespace trnsim::reliability
