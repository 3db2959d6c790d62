// Closed forms of checkpoint/restart under Poisson failures (reliability.md §5).
//
// Notation (all in seconds): M = 1/lambda the system MTBF, delta the checkpoint cost (time the
// job stalls to write it), R the restart cost (time from a failure until work resumes: detection,
// restart, checkpoint load), tau the compute time between checkpoints, T_s the failure-free
// compute time. Failures can strike at any time, also during checkpoints and restarts; a failure
// loses the work since the last completed checkpoint.
//
//   Young (1974)           tau_Y = sqrt(2 delta M)
//   Daly (2006), 1st order tau = sqrt(2 delta (M + R))
//   Daly (2006), higher    tau_D = sqrt(2 delta M) [1 + 1/3 sqrt(delta/(2M)) + 1/9 delta/(2M)] - delta
//                          for delta < 2M, else tau_D = M
//   exact minimiser        tau* = M (1 + W0(-exp(-(1 + delta/M))))      (W0: Lambert W, principal)
//   expected wall time     T_w(tau) = M e^{R/M} (e^{(tau+delta)/M} - 1) T_s / tau     (Daly 2006)
//
// T_w follows from renewal arguments: a segment of tau + delta completes on its first
// failure-free attempt; the expected time spent until then is (e^{lambda(tau+delta)} - 1)/lambda
// plus, per failure (e^{lambda(tau+delta)} - 1 of them on average), a restart that itself takes
// (e^{lambda R} - 1)/lambda + ... ; the sum collapses to the product above. The effective
// training time ratio of that model is ETTR = T_s / T_w.
//
// Daly's own checks (T_s = 500 h, R = 10 min, delta = 5 min) give tau_D = 117 / 57 / 9.1 min for
// M = 24 h / 6 h / 15 min; the exact minimiser gives 116.69 / 56.71 / 9.17 min (reliability.md §8).
#pragma once

namespace trnsim::reliability::theory {

/// Young's first-order optimum interval.
double young_interval(double delta, double mtbf);

/// Daly's higher-order optimum interval (the formula above; M when delta >= 2M).
double daly_interval(double delta, double mtbf);

/// The exact minimiser of T_w over tau (independent of R and T_s).
double optimal_interval(double delta, double mtbf);

/// Daly's expected wall time to complete `work` seconds of compute.
double expected_wall_time(double work, double tau, double delta, double restart, double mtbf);

/// ETTR of the same model: work / expected_wall_time (independent of the work).
double expected_ettr(double tau, double delta, double restart, double mtbf);

/// Meta's first-order approximation (Kokolis et al., reliability.md §2):
/// E[ETTR] ~ (1 - (u0 + dt/2)/M) / (1 + w/dt) with u0 the restart overhead, dt the interval
/// and w the blocking checkpoint write.
double meta_ettr(double interval, double write, double restart, double mtbf);

/// The principal branch W0 of the Lambert W function for x >= -1/e (Halley iteration).
double lambert_w0(double x);

} // namespace trnsim::reliability::theory
