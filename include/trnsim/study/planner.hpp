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
#include "trnsim/core/units.hpp"
#include "trnsim/sim/run.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::study {

/// One point of the search space (values as the scenario holds them).
struct Candidate {
    std::int64_t domains = 0;   ///< UltraServers or instances, as the base scenario counts
    std::int64_t global_batch = 0; ///< sequences per step
    int tp = 1, cp = 1, pp = 1, dp = 0, ep = 1, zero = 1, microbatch = 1;
    workload::Recompute recompute = workload::Recompute::selective;
    workload::MasterWeights master_weights = workload::MasterWeights::fp32;
    Duration checkpoint_interval; ///< zero: auto
    std::int64_t spares = 0;      ///< spare domains
};

/// Why a candidate was rejected (the first failing check, in this order), or ok. slo is for
/// serving plans: the fleet's simulated SLO attainment is below the objective's.
enum class Verdict { ok, invalid, hbm, chips, ettr, deadline, budget, slo };
constexpr std::array<EnumName<Verdict>, 8> enum_names(Verdict) {
    return {{
        {Verdict::ok, "ok"},
        {Verdict::invalid, "invalid"},
        {Verdict::hbm, "hbm"},
        {Verdict::chips, "chips"},
        {Verdict::ettr, "ettr"},
        {Verdict::deadline, "deadline"},
        {Verdict::budget, "budget"},
        {Verdict::slo, "slo"},
    }};
}
inline const char* to_string(Verdict v) { return enum_name(v); }

/// The analytic estimate of a candidate.
struct CandidateEstimate {
    Verdict verdict = Verdict::ok;
    std::string reason;           ///< the rejection message (invalid and hbm)
    std::int64_t chips = 0;       ///< job and spare chips
    int dp = 0;                   ///< resolved data-parallel degree (0: not resolved)
    Seconds step_time = Seconds::of(NAN); ///< NaN when not estimated (here and below)
    double memory_fraction = NAN; ///< of each rank's HBM the busiest rank needs
    double ettr = NAN;
    Seconds time_to_train = Seconds::of(NAN); ///< expected (inf: never done)
    double cost_usd = NAN;
    double goodput = NAN;         ///< tokens kept per second
    Seconds checkpoint_interval = Seconds::of(NAN); ///< resolved (inf: none)
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

// ---------------------------------------------------------------------------------------------
// Serving plans (a base scenario with workload.type: inference)
//
// 1. Candidates are every combination of the search values: chip outermost, then the cluster
//    (the instance counts, then the UltraServer counts), tp, max_batch, replicas and
//    prefill_replicas innermost. Each is the base scenario with the candidate's keys as
//    overrides (built through the config module, as `trnsim run --set` would), its request
//    stream cut to `requests` requests and its arrivals set to the objective's rate.
// 2. A candidate that cannot be built (tp does not divide the heads, the model or its minimum
//    KV cache does not fit in HBM, the replicas do not fit the cluster, no UltraServer for
//    the chip) is rejected with the reason (invalid or hbm), as is one above
//    constraints.max_chips; nothing of it is simulated.
// 3. min_cost: the others are simulated with sim::run_serving at the objective's rate (or the
//    trace at its speed-up); a fleet meets the objective when its SLO attainment is at least
//    slo_attainment. The feasible ones rank by cost per hour (instances x the instance
//    price), ties by the simulated cost per million output tokens.
//    max_rate: for each candidate, the rate is bisected geometrically between the range's
//    ends (the high end first: a fleet that meets it is reported at it with no upper
//    bracket; then the low end: one that misses it is rejected as slo), keeping
//    low = meets, high = misses, until high / low <= 1 + tolerance. rate_found is low; the
//    fleets rank by it, highest first, ties by cost per hour.
// 4. The Pareto frontier of (cost per million output tokens, TTFT p99), both minimised, over
//    the simulated candidates (at the objective's rate, or at rate_found) is marked.
//
// Every run uses the plan's (or the base's) seed: Poisson arrivals at rate r are the same
// draws scaled by 1 / r, so the bisection compares one request stream at different speeds.
// Candidates run side by side on the threads, each on one thread; results do not depend on
// the thread count.

/// One point of a serving plan's search space.
struct ServingCandidate {
    std::string chip;              ///< hardware.chip as written (preset or file)
    bool ultraservers = false;     ///< the cluster counts UltraServers (else instances)
    std::int64_t domains = 0;      ///< UltraServers or instances
    int tp = 1;
    int max_batch = 1;
    int replicas = 0;              ///< 0: auto
    int prefill_replicas = 0;
    std::string weights;  ///< workload.serving.weights when searched, else the base's
    std::string sparsity; ///< workload.serving.sparsity when searched, else the base's
    int ep = 1;           ///< workload.serving.ep when searched, else the base's
};

/// What evaluating a serving candidate found. Figures are NaN when not simulated.
struct ServingEvaluation {
    Verdict verdict = Verdict::ok;  ///< ok, invalid, hbm, chips or slo
    std::string reason;             ///< the rejection message (invalid, hbm, chips, slo)
    std::int64_t chips = 0, instances = 0;
    std::int64_t replicas = 0, prefill_replicas = 0; ///< resolved (0: not built)
    double cost_per_hour_usd = NAN;  ///< instances x cost.instance_hour
    /// The rate of the figures below: min_cost the objective's; max_rate rate_found. Arrivals
    /// per second, or the trace's speed-up for a trace base.
    double rate = NAN;
    double slo_attainment = NAN;
    Seconds ttft_p99 = Seconds::of(NAN), tpot_p99 = Seconds::of(NAN);
    double output_tokens_per_s = NAN;
    double cost_per_million_output_tokens_usd = NAN; ///< simulated span (docs/serving.md)
    double rate_low = NAN, rate_high = NAN; ///< max_rate's bracket (high inf: met at the top)
    double attainment_high = NAN;            ///< max_rate: the attainment at rate_high
    int simulations = 0;                     ///< serving runs this candidate took
    bool pareto = false;
    int rank = 0;                            ///< 1 = best among the feasible (0: infeasible)
};

struct ServingPlanResult {
    std::vector<ServingCandidate> candidates;
    std::vector<ServingEvaluation> evaluations; ///< by candidate
    std::vector<std::int64_t> ranking;          ///< feasible candidates, best first
    bool trace = false;          ///< rates are speed-ups of the base's trace
    std::int64_t simulations = 0;
    double seconds = 0.0;        ///< host time of the evaluations
};

/// The serving search space of `plan` over an inference `base`. Throws InputError (before
/// anything is simulated) for plan keys the base cannot take: a training search key, a
/// rate for a trace base or a speed-up for one without, search.chip with an explicit
/// cost.instance_hour or cluster.fabric in the base.
std::vector<ServingCandidate> enumerate_serving(const config::PlanSpec& plan,
                                                const config::ScenarioSpec& base);

/// Also refused there: requests that at the plan's slowest rate (objective.rate, or the
/// bottom of rate_range) would not arrive within simulated time or whose KV series on one
/// replica would exceed the base's simulation.max_memory (docs/serving.md "Bounds").

/// Warnings of a serving plan (none for a training base): a max_rate plan whose requests
/// arrive at the top of rate_range within less than one request's time alone on the base's
/// replica (sim::mean_request_alone_seconds) measures a burst there, not a sustained rate.
std::vector<config::Warning> serving_plan_warnings(const config::PlanSpec& plan,
                                                   const config::ScenarioSpec& base);

/// The overrides that turn the base scenario into the candidate's at `rate` (arrivals per
/// second, or the trace's speed-up): what `trnsim run --set` takes to reproduce a row.
std::vector<config::Override> serving_overrides(const config::PlanSpec& plan,
                                                const config::ScenarioSpec& base,
                                                const ServingCandidate& c, double rate);

/// Candidates of the plan (training or serving, by the base); the checks of enumerate or
/// enumerate_serving.
std::size_t candidate_count(const config::PlanSpec& plan, const config::ScenarioSpec& base);

/// A fleet plan's candidate (a base with `fleet:`, docs/fleet.md "Sizing a fleet"): the pool's
/// domains (UltraServers or instances, as the base counts them), spares among them.
struct FleetCandidate {
    std::int64_t domains = 0;
    std::int64_t spares = 0;
    bool refined = false; ///< added by the bisection between two searched sizes
};

/// What running a fleet candidate found. Figures are NaN when it did not run.
struct FleetEvaluation {
    Verdict verdict = Verdict::ok; ///< ok, invalid, chips, deadline or slo
    std::string reason;            ///< the rejection (the first miss for deadline and slo)
    std::int64_t chips = 0;
    double cost_per_hour_usd = NAN; ///< the pool's: domains at the domain-hour price
    std::int64_t jobs = 0, finished = 0, deadlines_missed = 0;
    Seconds mean_wait = Seconds::of(NAN);
    Seconds end = Seconds::of(NAN);
    /// The lowest SLO attainment of the services and which one (NaN, "": no services).
    double worst_attainment = NAN;
    std::string worst_service;
    std::int64_t slo_missed = 0;   ///< services below their fleet.services[i].attainment
    double busy_fraction = NAN, fragmented_fraction = NAN;
    int rank = 0;                  ///< 1 = the fewest domains that meet everything
};

struct FleetPlanResult {
    /// The searched sizes (domains x spares), then the bisection's, in evaluation order.
    std::vector<FleetCandidate> candidates;
    std::vector<FleetEvaluation> evaluations; ///< by candidate
    std::vector<std::int64_t> ranking;        ///< feasible, fewest domains first
    /// For each searched spares value: the fewest feasible domains (-1: none in the range),
    /// and whether the range's smallest size already met everything (fewer may too).
    struct Fewest {
        std::int64_t spares = 0, domains = -1;
        bool at_low_end = false;
    };
    std::vector<Fewest> fewest;
    double prepare_seconds = 0.0; ///< host time of the classes' plans and services' capacity
    double seconds = 0.0;         ///< host time of the fleet runs
};

struct PlanResult {
    /// Set for a serving base (then the training fields below are empty).
    std::optional<ServingPlanResult> serving;
    /// Set for a fleet base (likewise).
    std::optional<FleetPlanResult> fleet;
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

/// The searched sizes of a fleet plan over a `fleet:` base. Throws InputError (before anything
/// runs) for plan keys a fleet plan does not take: every search key but ultraservers or
/// instances (as the base counts them) and spares, an objective other than min_cost, and the
/// constraints but deadline and max_chips.
std::vector<FleetCandidate> enumerate_fleet(const config::PlanSpec& plan,
                                            const config::ScenarioSpec& base);

/// The overrides that turn the base into the candidate's scenario: the pool's size and spares,
/// the plan's deadline for each class without its own, the plan's seed.
std::vector<config::Override> fleet_overrides(const config::PlanSpec& plan,
                                              const config::ScenarioSpec& base,
                                              const FleetCandidate& c);

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

/// Steps 1 to 4 above on `threads` threads (a serving base: the serving plan's steps). `progress` receives short phase messages.
PlanResult run_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base, int threads,
                    const std::function<void(const std::string&)>& progress = {});

} // namespace trnsim::study
