// A serving scenario's fleet input and its outcome (private to the sim module): run_serving
// (serve_scenario.cpp) and a serving tenant (tenants.cpp) build the fleet's input the same way
// and turn the fleet's run into the same ServingScenarioRun.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <memory>

namespace trnsim::sim::detail {

/// What a serving scenario runs with: the cost model and the fleet's input (which refers to
/// the cost model: keep both together).
struct ServingSetup {
    std::unique_ptr<serving::IterationCostModel> cost;
    ServeInput input;
};

/// InputError (unlocated) from the cost model's checks.
ServingSetup serving_setup(const config::ScenarioSpec& spec, int threads);

/// The scenario's figures from the fleet's run (`wall_s`: host seconds it took).
ServingScenarioRun serving_outcome(const config::ScenarioSpec& spec, const ServingSetup& s,
                                   ServingRun run, double wall_s);

} // namespace trnsim::sim::detail
