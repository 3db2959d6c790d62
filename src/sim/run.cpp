#include "trnsim/sim/run.hpp"

#include "trnsim/engine/window_driver.hpp"

namespace trnsim::sim {

workload::Plan make_plan(const config::ScenarioSpec& spec) {
    return workload::build_plan(spec.training, spec.hardware.chip, spec.hardware.lnc, spec.cluster,
                                spec.hardware.hbm_reserve);
}

Bytes checkpoint_bytes(const workload::Plan& plan) {
    const bool fp32 = plan.training.precision == compute::Precision::fp32;
    const std::int64_t per_parameter = fp32 ? 4 + 8 : 2 + 12;
    return Bytes(plan.stats.total * per_parameter);
}

reliability::RunInput reliability_input(const config::ScenarioSpec& spec,
                                        const workload::Plan& plan, const StepEstimate& step) {
    reliability::RunInput in;
    in.spec = spec.reliability;
    in.cluster = plan.cluster;
    const auto& chip = spec.hardware.chip;
    in.hardware.instance_torus = chip.instance.torus;
    in.hardware.efa_interfaces = chip.instance.efa_interfaces;
    in.hardware.efa_bandwidth_per_instance = chip.instance.efa_bandwidth;
    reliability::JobModel& job = in.job;
    job.steps = plan.steps;
    job.step_s = step.step_s;
    job.tokens_per_step = plan.tokens_per_step;
    job.tp = plan.tp;
    job.dp = plan.dp;
    job.ranks_per_domain = plan.ranks_per_chip * plan.cluster.chips_per_instance *
                           (plan.cluster.ultraservers > 0 ? plan.cluster.instances_per_ultraserver
                                                          : 1);
    job.checkpoint_size = spec.reliability.checkpoint.size.value_or(checkpoint_bytes(plan));
    job.instance_hour_usd = spec.cost.instance_hour.usd();
    const bool ultraservers = plan.cluster.ultraservers > 0;
    job.step_time = [&spec, ultraservers](std::int64_t domains,
                                          double efa_factor) -> std::optional<double> {
        topology::ClusterSpec cluster;
        (ultraservers ? cluster.ultraservers : cluster.instances) = domains;
        workload::TrainingSpec training = spec.training;
        training.parallelism.dp = 0; // re-derived for the new size
        compute::ChipSpec slower = spec.hardware.chip;
        slower.instance.efa_bandwidth = slower.instance.efa_bandwidth * efa_factor;
        try {
            return estimate_step(workload::build_plan(training, slower, spec.hardware.lnc, cluster,
                                                      spec.hardware.hbm_reserve))
                .step_s;
        } catch (const InputError&) {
            return std::nullopt; // the job does not fit or divide on that many domains
        }
    };
    return in;
}

TrainingRun run_training(const config::ScenarioSpec& spec, const RunOptions& options) {
    TrainingRun run;
    run.plan = make_plan(spec);
    switch (spec.simulation.fidelity) {
    case config::Fidelity::analytic:
        run.step = estimate_step(run.plan);
        break;
    }
    run.ideal_time_to_train_s = static_cast<double>(run.plan.steps) * run.step.step_s;
    run.time_to_train_s = run.ideal_time_to_train_s;
    run.instance_hours = static_cast<double>(run.plan.cluster.instances) * run.time_to_train_s /
                         units::kSecondsPerHour;
    if (spec.reliability.enabled) {
        reliability::RunControl control;
        control.duration = spec.simulation.duration;
        control.time_limit = spec.simulation.time_limit;
        control.replications = spec.simulation.replications;
        control.threads = spec.simulation.threads > 0 ? spec.simulation.threads
                                                      : engine::default_thread_count();
        control.seed = static_cast<std::uint64_t>(spec.seed);
        control.record = options.record;
        run.reliability = reliability::simulate(reliability_input(spec, run.plan, run.step), control);
        const reliability::RunSummary& r = *run.reliability;
        run.time_to_train_s = r.estimate("time_to_train_s").mean;
        run.instance_hours = static_cast<double>((r.facts.job_domains + r.facts.spare_domains) *
                                                 r.facts.instances_per_domain) *
                             run.time_to_train_s / units::kSecondsPerHour;
    }
    run.cost_usd = run.instance_hours * spec.cost.instance_hour.usd();
    return run;
}

} // namespace trnsim::sim
