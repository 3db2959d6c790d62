#include "trnsim/sim/run.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/engine/rng.hpp"
#include "trnsim/engine/window_driver.hpp"

#include <algorithm>
#include <chrono>

namespace trnsim::sim {

workload::Plan make_plan(const config::ScenarioSpec& spec) {
    return workload::build_plan(spec.training, spec.hardware.chip, spec.hardware.lnc, spec.cluster,
                                spec.hardware.hbm_reserve);
}

Bytes checkpoint_bytes(const workload::Plan& plan) {
    const bool fp32 = plan.training.precision == compute::Precision::fp32;
    const std::int64_t per_parameter = (fp32 ? 4 : 2) +
                                       workload::master_weight_bytes(plan.training) +
                                       2 * workload::moment_bytes(plan.training);
    return Bytes(plan.stats.total * per_parameter);
}

reliability::HardwareFacts hardware_facts(const compute::ChipSpec& chip) {
    reliability::HardwareFacts hw;
    hw.instance_torus = chip.instance.torus;
    if (chip.instance.scale_up == ScaleUpKind::switched) {
        hw.switch_ports = chip.neuronlink_ports;
        hw.instance_switches = chip.instance.neuronswitches;
        hw.ultraserver_switches = chip.ultraserver ? chip.ultraserver->neuronswitches : 0;
    }
    hw.efa_interfaces = chip.instance.efa_interfaces;
    hw.efa_bandwidth_per_instance = chip.instance.efa_bandwidth;
    hw.host_memory = chip.instance.host_memory;
    return hw;
}

reliability::RunInput reliability_input(const config::ScenarioSpec& spec,
                                        const workload::Plan& plan, const StepEstimate& step) {
    reliability::RunInput in;
    in.spec = spec.reliability;
    in.cluster = plan.cluster.shape();
    in.hardware = hardware_facts(spec.hardware.chip);
    reliability::JobModel& job = in.job;
    job.steps = plan.steps;
    job.step = step.step_time;
    job.tokens_per_step = plan.tokens_per_step;
    job.tp = plan.tp * plan.cp; // ranks of a replica per pipeline stage, in rank order
    job.dp = plan.dp;
    job.ranks_per_domain = plan.cluster.shape().ranks_per_domain(plan.ranks_per_chip);
    job.checkpoint_size = spec.reliability.checkpoint.size.value_or(checkpoint_bytes(plan));
    job.instance_hour_usd = spec.cost.instance_hour.usd();
    job.step_time = [&spec, shape = plan.cluster.shape()](
                        std::int64_t domains, double efa_factor) -> std::optional<double> {
        const cluster::ClusterSpec cluster = shape.with_domains(domains);
        workload::TrainingSpec training = spec.training;
        training.parallelism.dp = 0; // re-derived for the new size
        compute::ChipSpec slower = spec.hardware.chip;
        slower.instance.efa_bandwidth = slower.instance.efa_bandwidth * efa_factor;
        try {
            return estimate_step(workload::build_plan(training, slower, spec.hardware.lnc, cluster,
                                                      spec.hardware.hbm_reserve))
                .step_time.seconds();
        } catch (const InputError&) {
            return std::nullopt; // the job does not fit or divide on that many domains
        }
    };
    return in;
}

namespace {

/// The chips [first, last] an entry of hardware.speed.chips selects; InputError (with the
/// selector's key path) when they are not in the cluster.
std::pair<std::int64_t, std::int64_t> selected_chips(const config::ScenarioSpec& spec,
                                                     std::size_t i, std::int64_t chips) {
    const config::ChipSpeed& c = spec.hardware.speed.chips[i];
    const std::string base = "hardware.speed.chips[" + std::to_string(i) + "]";
    const compute::ChipSpec& chip = spec.hardware.chip;
    const std::int64_t per_instance = chip.instance.chips;
    const std::int64_t per_us =
        chip.ultraserver ? cluster::Hierarchy::chips_per_ultraserver(chip) : 0;
    std::string key;
    std::int64_t first = 0, last = 0;
    if (c.chip >= 0) {
        key = base + ".chip";
        first = last = c.chip;
    } else if (!c.chips.empty()) {
        key = base + ".chips";
        if (c.chips.size() != 2 || c.chips[1] < c.chips[0]) {
            throw InputError(key, "expected [first, last] with first <= last",
                             spec.sources.find(key));
        }
        first = c.chips[0];
        last = c.chips[1];
    } else if (c.instance >= 0) {
        key = base + ".instance";
        first = c.instance * per_instance;
        last = first + per_instance - 1;
    } else {
        key = base + ".ultraserver";
        if (per_us == 0 || !spec.cluster.counts_ultraservers()) {
            throw InputError(key, "the cluster has no UltraServers (give an instance or chips)",
                             spec.sources.find(key));
        }
        first = c.ultraserver * per_us;
        last = first + per_us - 1;
    }
    if (last >= chips) {
        throw InputError(key, "selects chip " + std::to_string(last) +
                                  ", which is not in the cluster (" + std::to_string(chips) +
                                  " chips: 0 to " + std::to_string(chips - 1) + ")",
                         spec.sources.find(key));
    }
    return {first, last};
}

} // namespace

void check_chip_speeds(const config::ScenarioSpec& spec, std::int64_t chips) {
    for (std::size_t i = 0; i < spec.hardware.speed.chips.size(); ++i) {
        (void)selected_chips(spec, i, chips);
    }
}

std::vector<double> chip_speeds(const config::ScenarioSpec& spec, std::int64_t chips) {
    check_chip_speeds(spec, chips);
    const config::SpeedSpec& sp = spec.hardware.speed;
    std::vector<double> speed(static_cast<std::size_t>(chips), 1.0);
    // One random stream per chip: a chip's factor does not depend on the cluster size.
    constexpr engine::StreamKind kSpeedStream = 0x5eed;
    if (sp.sd > 0.0 || sp.slow_fraction > 0.0) {
        for (std::int64_t c = 0; c < chips; ++c) {
            engine::RandomStream rng(static_cast<std::uint64_t>(spec.seed), kSpeedStream,
                                     static_cast<std::uint32_t>(c));
            double v = 1.0;
            if (sp.sd > 0.0) {
                v = std::clamp(rng.normal(1.0, sp.sd), 0.05, 2.0);
            }
            if (sp.slow_fraction > 0.0 && rng.uniform() < sp.slow_fraction) {
                v *= sp.slow_factor;
            }
            speed[static_cast<std::size_t>(c)] = v;
        }
    }
    for (std::size_t i = 0; i < sp.chips.size(); ++i) {
        const auto [first, last] = selected_chips(spec, i, chips);
        for (std::int64_t c = first; c <= last; ++c) {
            speed[static_cast<std::size_t>(c)] = sp.chips[i].speed;
        }
    }
    return speed;
}

StepSimOptions step_options(const config::ScenarioSpec& spec, const workload::Plan& plan) {
    StepSimOptions o;
    o.threads = spec.simulation.threads > 0 ? spec.simulation.threads
                                            : engine::default_thread_count();
    o.entities = spec.simulation.step_entities;
    o.collectives = spec.simulation.fabric_collectives;
    o.tp_collectives = spec.simulation.tp_collectives;
    o.grad_bucket = plan.training.parallelism.grad_bucket.as_double();
    if (spec.hardware.speed.any()) {
        o.chip_speed = chip_speeds(spec, plan.cluster.chips());
    }
    if (!spec.output.trace.empty()) {
        for (std::size_t i = 0; i < spec.output.trace_ranks.size(); ++i) {
            const std::int64_t r = spec.output.trace_ranks[i];
            if (r >= plan.ranks) {
                const std::string key = "output.trace_ranks[" + std::to_string(i) + "]";
                throw InputError(key, "rank " + std::to_string(r) + " is not in the job (" +
                                          std::to_string(plan.ranks) + " ranks)",
                                 spec.sources.find(key));
            }
            o.trace_ranks.push_back(r);
        }
    }
    return o;
}

namespace {

/// The fabric of the step simulation, checked to hold exactly the plan's cluster.
topology::Fabric step_fabric(const config::ScenarioSpec& spec, const workload::Plan& plan) {
    if (!spec.has_fabric) {
        throw InputError("cluster.fabric", "the step simulation needs a fabric",
                         spec.sources.find("cluster"));
    }
    topology::Fabric fabric = topology::Fabric::build(spec.fabric, plan.cluster.domains());
    if (static_cast<std::int64_t>(fabric.chips()) != plan.cluster.chips()) {
        throw InputError("cluster.fabric",
                         "fabric " + spec.fabric.name + " holds " +
                             std::to_string(fabric.chips()) + " chips for this cluster, the "
                             "cluster has " + std::to_string(plan.cluster.chips()),
                         spec.sources.find("cluster"));
    }
    return fabric;
}

/// The checks of check_training that need no fabric.
void check_without_fabric(const config::ScenarioSpec& spec, const workload::Plan& plan) {
    check_chip_speeds(spec, plan.cluster.chips());
    if (spec.simulation.fidelity == config::Fidelity::step) {
        (void)step_options(spec, plan); // the trace ranks
    }
    if (spec.reliability.enabled) {
        reliability::validate(reliability_input(spec, plan, {}));
    }
}

} // namespace

workload::Plan check_training(const config::ScenarioSpec& spec) {
    workload::Plan plan = make_plan(spec);
    check_without_fabric(spec, plan);
    if (spec.simulation.fidelity == config::Fidelity::step) {
        (void)step_fabric(spec, plan);
    }
    return plan;
}

TrainingPrep prepare_training(const config::ScenarioSpec& spec, const RunOptions& options) {
    TrainingPrep prep;
    TrainingRun& run = prep.run;
    run.plan = make_plan(spec);
    // Every check before the first simulation (the fabric is built once, below).
    check_without_fabric(spec, run.plan);
    switch (spec.simulation.fidelity) {
    case config::Fidelity::analytic:
        run.step = estimate_step(run.plan);
        break;
    case config::Fidelity::step: {
        const topology::Fabric fabric = step_fabric(spec, run.plan);
        const auto t0 = std::chrono::steady_clock::now();
        run.step_sim = simulate_step(run.plan, fabric, step_options(spec, run.plan));
        run.step_sim_wall = Seconds::of(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        run.step = run.step_sim->estimate;
        break;
    }
    }
    run.ideal_time_to_train =
        Seconds::of(static_cast<double>(run.plan.steps) * run.step.step_time.seconds());
    run.time_to_train = run.ideal_time_to_train;
    run.instance_hours = static_cast<double>(run.plan.cluster.instances()) *
                         run.time_to_train.seconds() / units::kSecondsPerHour;
    run.cost_usd = run.instance_hours * spec.cost.instance_hour.usd();
    if (spec.reliability.enabled) {
        reliability::RunControl& control = prep.control;
        control.duration = spec.simulation.duration;
        control.time_limit = spec.simulation.time_limit;
        control.replications = spec.simulation.replications;
        control.threads = spec.simulation.threads > 0 ? spec.simulation.threads
                                                      : engine::default_thread_count();
        control.seed = static_cast<std::uint64_t>(spec.seed);
        control.record = options.record && spec.output.timeline != config::TimelineOutput::none;
        control.record_checkpoints = spec.output.timeline == config::TimelineOutput::full;
        reliability::RunInput input = reliability_input(spec, run.plan, run.step);
        if (run.step_sim) {
            // Degraded clusters: the analytic step, scaled as the simulation scaled the full one.
            const double scale =
                run.step.step_time.seconds() / estimate_step(run.plan).step_time.seconds();
            auto analytic = input.job.step_time;
            input.job.step_time = [analytic, scale](std::int64_t domains,
                                                    double efa) -> std::optional<double> {
                const auto t = analytic(domains, efa);
                return t ? std::optional<double>(*t * scale) : std::nullopt;
            };
        }
        prep.input = std::move(input);
    }
    return prep;
}

void complete_training(TrainingRun& run, const config::ScenarioSpec& spec,
                       reliability::RunSummary summary) {
    run.reliability = std::move(summary);
    const reliability::RunSummary& r = *run.reliability;
    run.time_to_train = Seconds::of(r.estimate("time_to_train_s").mean);
    run.instance_hours = static_cast<double>((r.facts.job_domains + r.facts.spare_domains) *
                                             r.facts.instances_per_domain) *
                         run.time_to_train.seconds() / units::kSecondsPerHour;
    run.cost_usd = run.instance_hours * spec.cost.instance_hour.usd();
}

TrainingRun run_training(const config::ScenarioSpec& spec, const RunOptions& options) {
    TrainingPrep prep = prepare_training(spec, options);
    if (prep.input) {
        complete_training(prep.run, spec, reliability::simulate(*prep.input, prep.control));
    }
    return std::move(prep.run);
}

} // namespace trnsim::sim
