// The registry of workload kinds: for each `workload.type` of a scenario, how it is checked and
// run. `trnsim run` and `validate`, the runs of `trnsim batch` and the Python module all
// dispatch through it, so a new kind of workload is added here once.
//
//   training    run_training (run.hpp): the analytic step or the step simulation, and with a
//               reliability section the run simulation; checks everything before it simulates
//   inference   run_serving (serve_scenario.hpp): a serving fleet on the engine; check_serving
//               builds the fleet without running it
//   collective  run_collective_bench (collective_bench.hpp): one collective per message size
//               on the simulated fabric; not a workload for sweeps and plans
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/collective_bench.hpp"
#include "trnsim/sim/fleet_run.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/sim/tenants.hpp"

#include <functional>
#include <span>
#include <string_view>
#include <variant>

namespace trnsim::sim {

/// What running a scenario produced; the alternative follows spec.workload_type, or is
/// TenantsRun for a `tenants:` scenario and FleetRun for a `fleet:` one.
using ScenarioOutcome =
    std::variant<TrainingRun, CollectiveBenchResult, ServingScenarioRun, TenantsRun, FleetRun>;

/// How a run is made, beyond its scenario.
struct RunSettings {
    /// Engine threads; 0: the scenario's simulation.threads, auto the engine's default.
    int threads = 0;
    /// Training: keep the events and timeline of the run simulation (RunOptions::record).
    bool record = true;
    /// Collective: each message size's row as it is done (empty: none).
    std::function<void(const CollectiveRow&)> collective_row;
};

struct WorkloadKind {
    config::WorkloadType type;
    std::string_view name;
    /// `trnsim batch` and `trnsim plan` may run it.
    bool in_studies = false;
    /// Its run makes every check before it simulates, so `check` before `run` adds nothing.
    bool run_checks_first = false;
    /// Every check a run makes before it simulates; InputError with a key path (unlocated).
    void (*check)(const config::ScenarioSpec& spec) = nullptr;
    /// Runs the scenario; InputError (unlocated) for what only the run can check.
    ScenarioOutcome (*run)(const config::ScenarioSpec& spec, const RunSettings& settings) =
        nullptr;
};

/// Every kind, in WorkloadType order.
std::span<const WorkloadKind> workload_kinds();
/// The kind of a scenario's workload.
const WorkloadKind& workload_kind(config::WorkloadType type);

/// The engine threads of a run: `requested` when positive, else simulation.threads, else the
/// engine's default team.
int run_threads(const config::ScenarioSpec& spec, int requested = 0);

/// The collective benchmark a collective scenario describes, on `threads` threads.
CollectiveBenchSpec collective_bench_spec(const config::ScenarioSpec& spec, int threads);

/// Checks the scenario (unless its kind's run does so first), then runs it; a `tenants:`
/// scenario runs its tenants together (tenants.hpp), a `fleet:` scenario its jobs under the
/// fleet's scheduler (fleet_run.hpp). Throws InputError located in the
/// scenario's file.
ScenarioOutcome run_scenario(const config::ScenarioSpec& spec, const RunSettings& settings = {});

/// Every check that running the scenario makes before it simulates, located in its file.
void check_scenario(const config::ScenarioSpec& spec);

} // namespace trnsim::sim
