// The expected outcome of a run from closed forms, without simulating: what the planner
// (trnsim plan) uses to rank thousands of candidates before it simulates the best ones.
//
// With M the job's MTBF (everything that interrupts it, as the simulation counts it), delta
// the checkpoint stall, tau the checkpoint interval and T_s the failure-free training time,
// the expected wall time is Daly's (theory.hpp)
//     T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau
// with a restart cost R of
//     R = detection + restart + restore + phi W + min(upload, tau)
//   - W, the expected wait for a spare after a domain-replacing failure. Failed domains are in
//     repair for E[r] = f_m r_m + (1 - f_m)(r_a + e r_m) on average (manual fraction f_m,
//     automatic and manual times r_a, r_m, escalation e); with repairs arriving at rate
//     Lambda over the job's D and the S spare domains (spares fail too; a power failure sends
//     every domain of its power domain), the number in repair is Poisson with mean
//     m = Lambda E[r] (an M/G/infinity queue). A failure that finds n others in repair leaves
//     n + 1 in repair; the job waits when n + 1 > S until n + 1 - S of them are back. The n
//     others are part way through (their residual times uniform on (0, E[r]) for fixed
//     times), the new one needs all of E[r], so the wait is the (n + 1 - S)-th of those n + 1
//     completion times, E[r] (n + 1 - S) / (n + 1) on average:
//         W = sum over n >= S of P(n; m) E[r] (n + 1 - S) / (n + 1)
//     phi is the share of the job's interruptions that replace domains.
//   - With async or memory checkpoints, a failure during the upload (or peer copy) of the
//     newest checkpoint loses one more interval; over a uniformly placed failure that is
//     min(upload, tau) of extra lost work on average.
// ETTR = T_s / T_w, the time to train is T_w and the cost counts the job's and the spare
// instances over T_w.
//
// What it leaves out: replica-scope recovery (estimated as job scope, pessimistic), running
// degraded instead of waiting, degrading fabric failures, the lost-work detail of Weibull or
// lognormal lifetimes (only their mean rate enters) and traces. It is a pruning estimate; the
// finalists of a plan are simulated in full (tests/unit/reliability/expectation_test.cpp
// compares the two).
#pragma once

#include "trnsim/reliability/run.hpp"

namespace trnsim::reliability {

struct Expectation {
    RunFacts facts;                ///< the run's fixed facts, as simulate() reports them
    Seconds repair_mean;           ///< E[r]
    double domains_in_repair = 0.0; ///< m
    Seconds spare_wait;            ///< W
    double replace_share = 0.0;    ///< phi
    Seconds restart;               ///< R
    double ettr = 1.0;
    Seconds time_to_train;         ///< T_w
    double goodput = 0.0;          ///< tokens kept per second of wall time
    double cost_usd = 0.0;
};

/// The closed-form expectation of the run described by `input` (validated as simulate()
/// validates it; throws InputError).
Expectation expect(const RunInput& input);

} // namespace trnsim::reliability
