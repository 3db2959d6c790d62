// Running a scenario: build the plan, estimate the step at the requested fidelity, and extend
// it to the whole training job (steps, time to train, cost).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/workload/plan.hpp"

namespace trnsim::sim {

struct TrainingRun {
    workload::Plan plan;
    StepEstimate step;
    double time_to_train_s = 0.0; ///< steps x step time (no failures modelled yet)
    double instance_hours = 0.0;
    double cost_usd = 0.0;
};

/// Validates the scenario's plan (InputError with a key path, not yet located in the file).
workload::Plan make_plan(const config::ScenarioSpec& spec);

/// Runs the scenario.
TrainingRun run_training(const config::ScenarioSpec& spec);

} // namespace trnsim::sim
