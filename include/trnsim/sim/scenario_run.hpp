// Running any scenario by its workload type: the one dispatch that `trnsim run`, the Python
// module and studies share. A training scenario runs through run_training (run.hpp), a
// collective one through the collective benchmark (collective_bench.hpp).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/collective_bench.hpp"
#include "trnsim/sim/run.hpp"

#include <functional>
#include <variant>

namespace trnsim::sim {

/// What running a scenario produced; the alternative follows spec.workload_type.
using ScenarioOutcome = std::variant<TrainingRun, CollectiveBenchResult>;

/// Optional observers of a running scenario (empty: none).
struct ScenarioObservers {
    /// workload.type: collective: each message size's row as it is done.
    std::function<void(const CollectiveRow&)> collective_row;
};

/// The collective benchmark a collective scenario describes, on `threads` threads.
CollectiveBenchSpec collective_bench_spec(const config::ScenarioSpec& spec, int threads);

/// Runs the scenario (its simulation.threads resolved by the engine's default when auto).
/// Throws InputError located in the scenario's file for what only the run can check.
ScenarioOutcome run_scenario(const config::ScenarioSpec& spec,
                             const ScenarioObservers& observers = {});

} // namespace trnsim::sim
