// Running a scenario: build the plan, estimate the step at the requested fidelity, and extend
// it to the whole training job (steps, time to train, cost).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/sim/step_sim.hpp"
#include "trnsim/workload/plan.hpp"

#include <optional>

namespace trnsim::sim {

/// A training run's outcome. Times in real seconds (with failures they are means over
/// replications, +inf when the job never finishes).
struct TrainingRun {
    workload::Plan plan;
    StepEstimate step;
    Seconds ideal_time_to_train; ///< steps x step time: no failures, no checkpoints
    /// The ideal time, or with a reliability section the mean simulated time to train.
    Seconds time_to_train;
    double instance_hours = 0.0; ///< with reliability: job and spare instances
    double cost_usd = 0.0;
    /// The run simulation, when the scenario has a reliability section.
    std::optional<reliability::RunSummary> reliability;
    /// The step simulation (simulation.fidelity: step).
    std::optional<StepSimResult> step_sim;
    Seconds step_sim_wall; ///< host (wall-clock) time the step simulation took
};

/// Speed factor of every chip from hardware.speed and the seed (all 1 without stragglers).
/// InputError (hardware.speed.chips[i].chip) for a chip outside the cluster.
std::vector<double> chip_speeds(const config::ScenarioSpec& spec, std::int64_t chips);

/// The step simulation's options for a scenario.
StepSimOptions step_options(const config::ScenarioSpec& spec, const workload::Plan& plan);

/// The checkpoint size of a plan: one copy of the weights and of the optimizer state,
/// parameters x (weight bytes + 12) (4 bytes of FP32 master weights and 8 of Adam moments;
/// FP32 training and master_weights: none keep no master copy; BF16 moments take 4), as in
/// workload/plan.hpp's memory plan.
Bytes checkpoint_bytes(const workload::Plan& plan);
/// What the reliability model needs of the chip's instance: its NeuronLink torus, EFA
/// interfaces and bandwidth, host memory (a training job's, a serving fleet's and a fleet's
/// failure layout).
reliability::HardwareFacts hardware_facts(const compute::ChipSpec& chip);

/// The run simulation's input for a scenario and its plan (the step model re-plans the job on
/// fewer domains or a slower fabric through workload::build_plan and estimate_step; it refers
/// to `spec`, which must outlive the result).
reliability::RunInput reliability_input(const config::ScenarioSpec& spec,
                                        const workload::Plan& plan, const StepEstimate& step);

/// Validates the scenario's plan (InputError with a key path, not yet located in the file).
workload::Plan make_plan(const config::ScenarioSpec& spec);

/// InputError (hardware.speed.chips[i].chip) for a listed chip outside the cluster, at every
/// fidelity (the analytic estimate ignores the factors, but a chip that does not exist is a
/// mistake in the scenario all the same).
void check_chip_speeds(const config::ScenarioSpec& spec, std::int64_t chips);

/// Every check run_training makes before it simulates, without simulating: the plan, the
/// chips of hardware.speed, at step fidelity the fabric (it must hold exactly the cluster) and
/// the step options (trace ranks), with a reliability section the run simulation's input.
/// `trnsim validate` calls it, so what run refuses, validate refuses; run_training makes the
/// same checks before its first simulation. Returns the plan. InputError with a key path.
workload::Plan check_training(const config::ScenarioSpec& spec);

struct RunOptions {
    /// Keep the events and timeline of the first replication of the run simulation (what
    /// /run/events and /run/timeline hold); sweeps, which store neither, turn it off.
    bool record = true;
};

/// Runs the scenario: the step estimate (analytic, or simulated with fidelity: step, on the
/// fabric of cluster.fabric), and with a reliability section the run simulation on
/// simulation.threads threads (auto: the engine's default). With fidelity step, the run
/// simulation's step times on degraded clusters are the analytic ones scaled by the ratio of
/// simulated to analytic step time on the full cluster. This is the one entry point that runs
/// a scenario: `trnsim run`, every run of `trnsim batch` and the finalists of `trnsim plan` go
/// through it.
TrainingRun run_training(const config::ScenarioSpec& spec, const RunOptions& options = {});

/// run_training in two halves, for a job whose run simulation runs elsewhere (a tenant of a
/// shared engine, sim/tenants.hpp): the plan and the step estimate with every check, and with
/// a reliability section the run simulation's input and control (the input refers to `spec`).
struct TrainingPrep {
    TrainingRun run; ///< without the run simulation's figures
    std::optional<reliability::RunInput> input;
    reliability::RunControl control;
};
TrainingPrep prepare_training(const config::ScenarioSpec& spec, const RunOptions& options = {});
/// The run simulation's summary into the run: its time to train, instance hours and cost.
void complete_training(TrainingRun& run, const config::ScenarioSpec& spec,
                       reliability::RunSummary summary);

} // namespace trnsim::sim
