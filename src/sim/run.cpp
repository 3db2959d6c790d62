#include "trnsim/sim/run.hpp"

namespace trnsim::sim {

workload::Plan make_plan(const config::ScenarioSpec& spec) {
    return workload::build_plan(spec.training, spec.hardware.chip, spec.hardware.lnc, spec.cluster,
                                spec.hardware.hbm_reserve);
}

TrainingRun run_training(const config::ScenarioSpec& spec) {
    TrainingRun run;
    run.plan = make_plan(spec);
    switch (spec.simulation.fidelity) {
    case config::Fidelity::analytic:
        run.step = estimate_step(run.plan);
        break;
    }
    run.time_to_train_s = static_cast<double>(run.plan.steps) * run.step.step_s;
    run.instance_hours = static_cast<double>(run.plan.cluster.instances) * run.time_to_train_s /
                         units::kSecondsPerHour;
    run.cost_usd = run.instance_hours * spec.cost.instance_hour.usd();
    return run;
}

} // namespace trnsim::sim
