// Run-simulation inputs shared by the reliability tests and benchmark: a cluster of plain
// trn1-like instances (16 chips in a 4x4 torus, one EFA interface) or of trn2-like UltraServers,
// a job whose step takes one second, failure processes, and Daly's worked check
// (reliability.md §8) with the curve fit that locates its optimum.
#pragma once

#include "trnsim/reliability/run.hpp"
#include "trnsim/cluster/shape.hpp"

#include <cmath>
#include <vector>

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
    in.cluster = cluster::make_cluster_shape({0, instances}, 16, 0);
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
    in.job.step = Seconds::of(1.0);
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
    in.cluster = cluster::make_cluster_shape({ultraservers, 0}, 16, 4);
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
    f.mtbf = Seconds::of(mtbf_s);
    f.cause = cause;
    return f;
}

/// Daly's check: T_s = 500 h of work, checkpoints of delta = 5 min, restarts of R = 10 min,
/// Poisson failures of the whole job with MTBF `mtbf`. Set-up: 4 instances x 16 chips, each
/// chip failing exponentially with MTBF 64 x mtbf; a failed instance is replaced at once by a
/// spare (repair takes no time); detection 0, restart 5 min, a checkpoint of 300 GB written
/// and read at 1 GB/s (300 s each way), so delta = 5 min and R = 5 min + 5 min. Failures strike
/// in every state, as in Daly's model.
inline RunInput daly_input(double mtbf, double tau) {
    RunInput in = instances_input(4, 1, 500 * kHour);
    in.spec.failures.push_back(failure(ComponentClass::chip, 64 * mtbf));
    in.spec.recovery.restart = seconds(5 * kMin);
    in.spec.checkpoint.interval = seconds(tau);
    in.spec.checkpoint.size = Bytes(300'000'000'000);
    in.job.checkpoint_size = Bytes(300'000'000'000);
    return in;
}

/// Least-squares fit of y = a / x + b + c x (the first-order shape of the wall time as a
/// function of the interval: delta / tau + tau / 2M + constant); returns the minimiser
/// sqrt(a / c).
inline double fitted_minimum(const std::vector<double>& x, const std::vector<double>& y) {
    // Normal equations of the basis (1/x, 1, x), solved by Cramer's rule.
    double m[3][3] = {};
    double v[3] = {};
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double basis[3] = {1.0 / x[i], 1.0, x[i]};
        for (int r = 0; r < 3; ++r) {
            v[r] += basis[r] * y[i];
            for (int c = 0; c < 3; ++c) {
                m[r][c] += basis[r] * basis[c];
            }
        }
    }
    const auto det = [](const double a[3][3]) {
        return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
               a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
               a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    };
    double coef[3];
    for (int k = 0; k < 3; ++k) {
        double mk[3][3];
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
                mk[r][c] = c == k ? v[r] : m[r][c];
            }
        }
        coef[k] = det(mk) / det(m);
    }
    return std::sqrt(coef[0] / coef[2]);
}

/// The grid of intervals of the fit, as multiples of the optimum.
inline const std::vector<double>& fit_grid() {
    static const std::vector<double> grid = {0.5, 0.6, 0.7, 0.85, 1.0, 1.2, 1.4, 1.7, 2.0};
    return grid;
}

} // namespace trnsim::reliability::test
