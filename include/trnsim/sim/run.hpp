// Running a scenario: build the plan, estimate the step at the requested fidelity, and extend
// it to the whole training job (steps, time to train, cost).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/workload/plan.hpp"

#include <optional>

namespace trnsim::sim {

struct TrainingRun {
    workload::Plan plan;
    StepEstimate step;
    double ideal_time_to_train_s = 0.0; ///< steps x step time: no failures, no checkpoints
    /// The ideal time, or with a reliability section the mean simulated time to train.
    double time_to_train_s = 0.0;
    double instance_hours = 0.0; ///< with reliability: job and spare instances
    double cost_usd = 0.0;
    /// The run simulation, when the scenario has a reliability section.
    std::optional<reliability::RunSummary> reliability;
};

/// The checkpoint size of a plan: one copy of the weights and of the optimizer state,
/// parameters x (weight bytes + 12) (4 bytes of FP32 master weights and 8 of Adam moments;
/// FP32 training keeps no master copy: + 8), as in workload/plan.hpp's memory plan.
Bytes checkpoint_bytes(const workload::Plan& plan);

/// The run simulation's input for a scenario and its plan (the step model re-plans the job on
/// fewer domains or a slower fabric through workload::build_plan and estimate_step; it refers
/// to `spec`, which must outlive the result).
reliability::RunInput reliability_input(const config::ScenarioSpec& spec,
                                        const workload::Plan& plan, const StepEstimate& step);

/// Validates the scenario's plan (InputError with a key path, not yet located in the file).
workload::Plan make_plan(const config::ScenarioSpec& spec);

struct RunOptions {
    /// Keep the events and timeline of the first replication of the run simulation (what
    /// /run/events and /run/timeline hold); sweeps, which store neither, turn it off.
    bool record = true;
};

/// Runs the scenario: the step estimate at simulation.fidelity, and with a reliability section
/// the run simulation on simulation.threads threads (auto: the engine's default). This is the
/// one entry point that runs a scenario: `trnsim run`, every point of `trnsim batch` and the
/// finalists of `trnsim plan` go through it.
TrainingRun run_training(const config::ScenarioSpec& spec, const RunOptions& options = {});

} // namespace trnsim::sim
