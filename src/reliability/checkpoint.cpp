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

Duration checkpoint_interval(const CheckpointSpec& spec, const CheckpointCosts& costs,
                             double job_failure_rate, double step_s) {
    const Duration step = Duration::from_seconds_ceil(step_s);
    if (spec.interval > Duration::zero()) {
        return std::max(spec.interval, step);
    }
    if (!(job_failure_rate > 0.0)) {
        return Duration::max();
    }
    const double tau = theory::daly_interval(costs.stall.seconds(), 1.0 / job_failure_rate);
    return std::max(Duration::from_seconds_ceil(tau), step);
}

} // namespace trnsim::reliability
