// The planner behind `trnsim plan`: search a space of cluster sizes, global batches, parallelism,
// checkpoint intervals and spares for the plan that best meets an objective under constraints.
//
// 1. Candidates are every combination of the plan file's search values (config/study.hpp),
//    enumerated in a fixed order (cluster size outermost, then global batch, tp, cp, pp, ...,
//    spares innermost).
// 2. Each candidate is estimated analytically: workload::build_plan (parallelism and memory;
//    a plan that does not divide or fit is rejected), sim::estimate_step (the analytic step
//    model, computed once per cluster, global batch and parallelism and shared by the
//    candidates that only differ in checkpoint interval or spares), and with a reliability
//    section reliability::expect (closed forms: Daly with restarts, spare waits, lost
//    uploads). The constraints are checked on these estimates: chips, HBM headroom, ETTR,
//    deadline, budget.
// 3. The best `finalists` feasible candidates by the objective, and up to `frontier` more
//    feasible points of the estimated Pareto frontier of cost against time to train, are built
//    as scenarios through the config module (the base scenario with the candidate's keys as
//    overrides) and run through sim::run_training, the entry point of `trnsim run`: the step
//    at the scenario's simulation.fidelity and the run simulation with failures.
// 4. Finalists are ranked on their simulated figures: those meeting every constraint first,
//    by the objective; each is marked when it is on the Pareto frontier of the finalists.
//
// Results depend on the plan file and the base scenario only: not on the thread count.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/sim/run.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::study {

/// One point of the search space (values as the scenario holds them).
struct Candidate {
    std::int64_t domains = 0;   ///< UltraServers or instances, as the base scenario counts
    std::int64_t global_batch = 0; ///< sequences per step
    int tp = 1, cp = 1, pp = 1, dp = 0, ep = 1, zero = 1, microbatch = 1;
    workload::Recompute recompute = workload::Recompute::selective;
    Duration checkpoint_interval; ///< zero: auto
    std::int64_t spares = 0;      ///< spare domains
};

/// Why a candidate was rejected (the first failing check, in this order), or ok.
enum class Verdict { ok, invalid, hbm, chips, ettr, deadline, budget };
constexpr std::array<EnumName<Verdict>, 7> enum_names(Verdict) {
    return {{
        {Verdict::ok, "ok"},
        {Verdict::invalid, "invalid"},
        {Verdict::hbm, "hbm"},
        {Verdict::chips, "chips"},
        {Verdict::ettr, "ettr"},
        {Verdict::deadline, "deadline"},
        {Verdict::budget, "budget"},
    }};
}
inline const char* to_string(Verdict v) { return enum_name(v); }

/// The analytic estimate of a candidate.
struct CandidateEstimate {
    Verdict verdict = Verdict::ok;
    std::string reason;           ///< the rejection message (invalid and hbm)
    std::int64_t chips = 0;       ///< job and spare chips
    int dp = 0;                   ///< resolved data-parallel degree (0: not resolved)
    double step_s = NAN;          ///< NaN when not estimated (here and below)
    double memory_fraction = NAN; ///< of each rank's HBM the busiest rank needs
    double ettr = NAN;
    double time_to_train_s = NAN; ///< expected, seconds (inf: never done)
    double cost_usd = NAN;
    double goodput = NAN;         ///< tokens kept per second
    double checkpoint_interval_s = NAN; ///< resolved (inf: none)
    bool frontier = false;        ///< on the estimated cost/time Pareto frontier
    bool finalist = false;
};

/// A candidate simulated in full.
struct Finalist {
    std::int64_t candidate = 0;   ///< index into PlanResult::candidates
    config::ScenarioSpec spec;    ///< the candidate's scenario, as run
    sim::TrainingRun run;
    double ettr = 1.0;            ///< simulated (1 without a reliability section)
    double goodput = 0.0;
    bool meets = false;           ///< every constraint holds on the simulated figures
    std::string misses;           ///< which do not ("deadline, budget")
    bool frontier = false;        ///< on the Pareto frontier of the finalists
    int rank = 0;                 ///< 1 = best
    bool by_objective = false;    ///< chosen as one of the best `finalists` (else frontier)
};

struct PlanResult {
    std::vector<Candidate> candidates;
    std::vector<CandidateEstimate> estimates;
    std::vector<Finalist> finalists; ///< in rank order
    std::int64_t step_estimates = 0; ///< distinct cluster/parallelism estimates computed
    std::int64_t feasible = 0;
    /// The fastest and the cheapest estimate among the candidates that run and meet every
    /// constraint but the deadline and the budget (indexes into candidates; -1: none). With
    /// no feasible candidate they say how close the search came.
    std::int64_t fastest = -1, cheapest = -1;
    double estimate_seconds = 0.0;   ///< host time of the analytic phase
    double simulate_seconds = 0.0;   ///< host time of the finalists' runs
    std::string domain_name;         ///< "UltraServers" or "instances"
};

/// The objective's value of (time, cost, goodput): smaller is better.
double objective_value(config::Objective o, double time_s, double cost_usd, double goodput);

/// The overrides that turn the base scenario into the candidate's (origins: the plan file's
/// values, for error messages).
std::vector<config::Override> candidate_overrides(const config::PlanSpec& plan,
                                                  const config::ScenarioSpec& base,
                                                  const Candidate& c);

/// Enumerates the search space of `plan` over `base` (the values, checked by the config
/// module, are turned into scenario values). Throws InputError for searches the base
/// scenario cannot take (spares without a reliability section, instances for an
/// UltraServer cluster).
std::vector<Candidate> enumerate(const config::PlanSpec& plan, const config::ScenarioSpec& base);

/// Steps 1 to 4 above on `threads` threads. `progress` receives short phase messages.
PlanResult run_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base, int threads,
                    const std::function<void(const std::string&)>& progress = {});

} // namespace trnsim::study
