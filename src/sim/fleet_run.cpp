#include "trnsim/sim/fleet_run.hpp"

#include "entry_error.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/reliability/expectation.hpp"
#include "trnsim/reliability/outages.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

namespace trnsim::sim {

namespace {

/// The longest job a fleet runs: its segment ends stay far inside simulated time's range.
const Seconds kLongestJob = Seconds::of(100.0 * units::kSecondsPerYear);

/// An error of job class i's scenario, located in the file and keyed under fleet.jobs[i].
InputError class_error(const InputError& e, const config::ScenarioSpec& c, std::size_t i) {
    return detail::entry_error(e, c, "fleet.jobs[" + std::to_string(i) + "]", "job class");
}

/// A class's plan, step time and checkpoint costs on its gang.
FleetClassRun prepare_class(const config::FleetJobClass& c) {
    const config::ScenarioSpec& s = *c.scenario;
    FleetClassRun r;
    r.name = c.name;
    r.tenant = c.tenant;
    r.gang = c.gang;
    r.count = c.count;
    r.priority = c.priority;
    r.plan = check_training(s);
    const StepEstimate step = estimate_step(r.plan);
    r.step = step.step_time;
    r.steps = r.plan.steps;
    if (r.step.seconds() * static_cast<double>(r.steps) > kLongestJob.seconds()) {
        throw InputError(s.training.steps > 0 ? "workload.steps" : "workload.tokens",
                         "a job of this class would run " +
                             std::to_string(static_cast<long long>(
                                 r.step.seconds() * static_cast<double>(r.steps) /
                                 units::kSecondsPerYear)) +
                             " years: at most 100");
    }
    if (s.reliability.enabled) {
        const reliability::Expectation x = reliability::expect(reliability_input(s, r.plan, step));
        if (std::isfinite(x.facts.checkpoint_interval.seconds())) {
            r.checkpoint_steps = std::max<std::int64_t>(
                1, static_cast<std::int64_t>(std::ceil(x.facts.checkpoint_interval / r.step)));
        }
        r.save = x.facts.checkpoint_stall;
        r.restore = x.facts.restore;
        r.launch = Seconds::of(s.reliability.recovery.restart.seconds());
    }
    return r;
}

/// The fleet's failure process (its reliability section) over every domain of the pool, spares
/// included: the reliability model's failures, blast radii, detection, restarts and repairs, as
/// the serving fleet draws them (reliability::OutageSchedule, without spares of its own: the
/// pool's replace failed domains). A domain is out of service from its failure until its unit
/// comes back.
fleet::OutageSource failure_process(const config::ScenarioSpec& spec,
                                    const cluster::ClusterShape& shape) {
    const reliability::ReliabilitySpec& rs = spec.reliability;
    const reliability::FailureModel probe(rs.failures, rs.trace);
    auto layout = std::make_shared<reliability::Layout>(
        shape, hardware_facts(spec.hardware.chip), rs.fabric, 0, probe.present_classes());
    auto schedule = std::make_shared<reliability::OutageSchedule>(rs, *layout, shape.domains(),
                                                                  static_cast<std::uint64_t>(
                                                                      spec.seed));
    return [layout, schedule]() -> std::optional<fleet::DomainTransition> {
        const std::optional<reliability::UnitTransition> t = schedule->next();
        if (!t) {
            return std::nullopt;
        }
        return fleet::DomainTransition{t->time, static_cast<std::int64_t>(t->unit), t->up};
    };
}

std::vector<FleetClassRun> prepare(const config::ScenarioSpec& spec, int threads) {
    const auto& jobs = spec.fleet->jobs;
    std::vector<FleetClassRun> classes(jobs.size());
    parallel_for(jobs.size(), threads, [&](std::size_t i, int) {
        try {
            classes[i] = prepare_class(jobs[i]);
        } catch (const InputError& e) {
            throw class_error(e, *jobs[i].scenario, i);
        }
    });
    return classes;
}

} // namespace

FleetJobMeans fleet_means(const FleetRun& run, std::int32_t cls) {
    FleetJobMeans m;
    double wait = 0.0, completion = 0.0;
    for (std::size_t j = 0; j < run.result.jobs.size(); ++j) {
        if (cls >= 0 && run.class_of_job[j] != cls) {
            continue;
        }
        const fleet::JobRecord& x = run.result.jobs[j];
        ++m.jobs;
        m.preemptions += x.preemptions;
        m.failures += x.failures;
        m.lost += Seconds::of(x.lost.seconds());
        if (x.first_start != SimTime::max()) {
            ++m.started;
            wait += (x.first_start - x.submit).seconds();
        }
        if (x.finished()) {
            ++m.finished;
            completion += (x.end - x.submit).seconds();
        }
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    m.wait = Seconds::of(m.started > 0 ? wait / static_cast<double>(m.started) : nan);
    m.completion =
        Seconds::of(m.finished > 0 ? completion / static_cast<double>(m.finished) : nan);
    return m;
}

namespace {

/// The checks of check_fleet beside the classes' plans: no step trace, the failure process's
/// input.
void check_fleet_inputs(const config::ScenarioSpec& spec) {
    if (!spec.output.trace.empty()) {
        throw InputError("output.trace",
                         "a fleet scenario writes no step timeline; run a job class's workload "
                         "as a scenario of its own with --trace",
                         spec.sources.find("output.trace"));
    }
    if (spec.reliability.enabled) {
        try {
            const cluster::ClusterShape shape =
                cluster::Hierarchy::shape_of(spec.hardware.chip, spec.cluster);
            reliability::validate_fleet(spec.reliability, shape,
                                        hardware_facts(spec.hardware.chip));
        } catch (const InputError& e) {
            throw e.located(spec.sources);
        }
    }
}

} // namespace

void check_fleet(const config::ScenarioSpec& spec) {
    check_fleet_inputs(spec);
    (void)prepare(spec, run_threads(spec));
}

FleetRun run_fleet(const config::ScenarioSpec& spec, int threads) {
    const config::FleetSpec& fs = *spec.fleet;
    check_fleet_inputs(spec);
    FleetRun out;
    out.threads = run_threads(spec, threads);
    const auto t0 = std::chrono::steady_clock::now();
    out.classes = prepare(spec, out.threads);
    const auto t1 = std::chrono::steady_clock::now();

    const compute::ChipSpec& chip = spec.hardware.chip;
    const cluster::ClusterShape shape = cluster::Hierarchy::shape_of(chip, spec.cluster);
    fleet::FleetInput& in = out.input;
    in.domains = shape.domains();
    in.chips_per_domain = shape.chips_per_domain();
    out.domain_hour = spec.cost.instance_hour * static_cast<double>(shape.instances_per_domain());
    // The Clos's radix: the failure layout's when the fleet draws failures, else the default.
    const int radix = spec.reliability.enabled ? spec.reliability.fabric.switch_radix
                                               : reliability::FabricSpec{}.switch_radix;
    in.groups = cluster::domain_groups(shape, chip.instance.efa_interfaces, radix);
    in.spares = fs.spares;
    in.scheduler.policy = fs.policy;
    in.horizon =
        fs.horizon > Duration::zero() ? SimTime::zero() + fs.horizon : SimTime::max();
    std::map<std::string, std::int64_t> tenant_index;
    for (const FleetClassRun& c : out.classes) {
        if (tenant_index.emplace(c.tenant, static_cast<std::int64_t>(out.tenants.size())).second) {
            out.tenants.push_back(c.tenant);
        }
    }
    in.scheduler.quotas.assign(out.tenants.size(), 0);
    for (const auto& [tenant, quota] : fs.quotas) {
        in.scheduler.quotas[static_cast<std::size_t>(tenant_index.at(tenant))] = quota;
    }
    // A class's jobs as its plan runs them on its gang.
    const auto job_of = [&](std::size_t i) {
        const FleetClassRun& c = out.classes[i];
        fleet::JobSpec j;
        j.name = c.name;
        j.tenant = tenant_index.at(c.tenant);
        j.domains = c.gang;
        j.steps = c.steps;
        j.step = Duration::from_seconds_ceil(c.step.seconds());
        j.priority = c.priority;
        if (c.checkpoint_steps > 0) {
            j.checkpoint_steps = c.checkpoint_steps;
        }
        j.save = Duration::from_seconds_ceil(c.save.seconds());
        j.restore = Duration::from_seconds_ceil(c.restore.seconds());
        j.launch = Duration::from_seconds_ceil(c.launch.seconds());
        return j;
    };
    std::vector<std::int64_t> next_index(out.classes.size(), 0);
    const auto add = [&](std::size_t i, const fleet::JobSpec& j) {
        in.jobs.push_back(j);
        out.class_of_job.push_back(static_cast<std::int32_t>(i));
        out.index_in_class.push_back(next_index[i]++);
    };
    for (std::size_t i = 0; i < out.classes.size(); ++i) {
        fleet::JobSpec j = job_of(i);
        for (std::int64_t k = 0; k < out.classes[i].count; ++k) {
            j.submit = SimTime::zero() + fs.jobs[i].submit + fs.jobs[i].every * k;
            add(i, j);
        }
    }
    for (const config::FleetTraceJob& t : fs.trace) {
        fleet::JobSpec j = job_of(t.job_class);
        const double run_s =
            out.classes[t.job_class].step.seconds() * static_cast<double>(t.steps);
        if (run_s > kLongestJob.seconds()) {
            throw InputError("fleet.trace", "this job would run for more than 100 years",
                             SourceLocation{fs.trace_file, t.line, 1});
        }
        j.submit = SimTime::zero() + t.submit;
        j.steps = t.steps > 0 ? t.steps : j.steps;
        j.priority = t.priority >= 0 ? t.priority : j.priority;
        add(t.job_class, j);
    }
    if (spec.reliability.enabled) {
        in.outage_source = failure_process(spec, shape);
        in.detection = spec.reliability.recovery.detection;
    }
    out.result = fleet::simulate_fleet(in);
    const auto t2 = std::chrono::steady_clock::now();
    out.plans_wall = Seconds::of(std::chrono::duration<double>(t1 - t0).count());
    out.fleet_wall = Seconds::of(std::chrono::duration<double>(t2 - t1).count());
    return out;
}

} // namespace trnsim::sim
