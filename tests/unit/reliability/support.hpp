// Small run-simulation inputs for the reliability tests: a cluster of plain trn1-like instances
// (16 chips in a 4x4 torus, one EFA interface) or of trn2-like UltraServers, a job whose step
// takes one second, and helpers to add failure processes.
#pragma once

#include "trnsim/reliability/run.hpp"
#include "trnsim/topology/cluster.hpp"

namespace trnsim::reliability::test {

inline Duration seconds(double s) { return Duration::from_seconds_ceil(s); }
inline constexpr double kMin = 60.0;
inline constexpr double kHour = 3600.0;
inline constexpr double kDay = 86400.0;

/// `instances` plain instances of 16 chips, `spares` spare instances that repair instantly,
/// no failures yet, free checkpoints every 6 hours, no detection or restart delay, 1-second
/// steps. (An automatic interval would checkpoint free checkpoints at every step.)
inline RunInput instances_input(std::int64_t instances, std::int64_t spares, double work_s) {
    RunInput in;
    in.cluster = topology::make_cluster_shape({0, instances}, 16, 0);
    in.hardware.instance_torus = {4, 4};
    in.hardware.efa_interfaces = 1;
    in.hardware.efa_bandwidth_per_instance = Bandwidth::bytes_per_s(100e9);
    ReliabilitySpec& s = in.spec;
    s.enabled = true;
    s.spares.instances = spares;
    s.recovery.detection = Duration::zero();
    s.recovery.restart = Duration::zero();
    s.repair.automatic = Duration::zero();
    s.repair.manual_fraction = 0.0;
    s.checkpoint.mode = CheckpointMode::sync;
    s.checkpoint.size = Bytes(0);
    s.checkpoint.interval = seconds(6 * kHour);
    s.checkpoint.storage_bandwidth = Bandwidth::bytes_per_s(1e9);
    in.job.step_s = 1.0;
    in.job.steps = static_cast<std::int64_t>(work_s);
    in.job.tokens_per_step = 1000;
    in.job.checkpoint_size = Bytes(0);
    in.job.instance_hour_usd = 10.0;
    in.job.ranks_per_domain = 32;
    return in;
}

/// `ultraservers` trn2-like UltraServers (4 instances of 16 chips, 16 EFA rails each).
inline RunInput ultraservers_input(std::int64_t ultraservers, std::int64_t spares,
                                   double work_s) {
    RunInput in = instances_input(1, 0, work_s);
    in.cluster = topology::make_cluster_shape({ultraservers, 0}, 16, 4);
    in.hardware.efa_interfaces = 16;
    in.hardware.efa_bandwidth_per_instance = Bandwidth::bits_per_s(3200e9);
    in.spec.spares.instances = 0;
    in.spec.spares.ultraservers = spares;
    in.job.ranks_per_domain = 256;
    return in;
}

inline FailureSpec failure(ComponentClass c, double mtbf_s, const char* cause = "") {
    FailureSpec f;
    f.component = c;
    f.mtbf_s = mtbf_s;
    f.cause = cause;
    return f;
}

} // namespace trnsim::reliability::test
