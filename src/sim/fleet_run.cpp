#include "trnsim/sim/fleet_run.hpp"

#include "entry_error.hpp"
#include "fleet_services.hpp"
#include "fleet_window.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/reliability/expectation.hpp"
#include "trnsim/reliability/outages.hpp"
#include "trnsim/serving/trace.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>

namespace trnsim::sim {

namespace {

using detail::check_service;
using detail::pool_keyed;
using detail::prepare_services;
using detail::service_error;

/// The longest job a fleet runs: its segment ends stay far inside simulated time's range.
const Seconds kLongestJob = Seconds::of(100.0 * units::kSecondsPerYear);

/// An error of job class i's scenario, located in the file and keyed under fleet.jobs[i].
InputError class_error(const InputError& e, const config::ScenarioSpec& c, std::size_t i) {
    return detail::entry_error(e, c, "fleet.jobs[" + std::to_string(i) + "]", "job class");
}

/// A class's plan, step time and checkpoint costs on the cluster of `s` (its scenario on its
/// gang, or on one of an elastic class's larger gangs).
FleetClassRun prepare_class(const config::FleetJobClass& c, const config::ScenarioSpec& s) {
    FleetClassRun r;
    r.name = c.name;
    r.tenant = c.tenant;
    r.gang = c.gang;
    r.count = c.count;
    r.priority = c.priority;
    r.deadline = c.deadline;
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
///
/// The schedule depends on the scenario only, so its transitions up to a time can be drawn
/// before the scheduler runs (run_fleet draws them beside the services' measurements); the
/// source gives those, then draws on: the same sequence either way.
/// Pool k of a fleet: the scenario's own hardware, cluster, cost and spares for the first,
/// else fleet.pools'.
struct PoolView {
    const config::HardwareSpec* hardware = nullptr;
    cluster::ClusterSpec cluster;
    const config::CostSpec* cost = nullptr;
    std::int64_t spares = 0;
    std::string name;
};

std::size_t pool_count(const config::ScenarioSpec& spec) {
    return std::max<std::size_t>(1, spec.fleet->pools.size());
}

PoolView pool_view(const config::ScenarioSpec& spec, std::size_t k) {
    if (k == 0) {
        return {&spec.hardware, spec.cluster, &spec.cost, spec.fleet->spares, "main"};
    }
    const config::FleetPool& p = spec.fleet->pools[k];
    return {&p.hardware, p.cluster, &p.cost, p.spares, p.name};
}

struct FailureDraws {
    std::shared_ptr<reliability::Layout> layout;
    std::shared_ptr<reliability::OutageSchedule> schedule;
    std::vector<fleet::DomainTransition> ahead; ///< in order, through the first after `until`
    std::size_t given = 0;                      ///< of `ahead`, by the source
};

/// Most transitions drawn ahead (about 24 MiB); the rest are drawn as the run asks.
constexpr std::size_t kMaxDrawnAhead = 1U << 20U;

/// The failure process of `spec`'s pool with its transitions through `until` drawn (and the
/// first one after it), at most kMaxDrawnAhead.
std::shared_ptr<FailureDraws> draw_failures(const config::ScenarioSpec& spec, std::size_t pool,
                                            SimTime until) {
    const reliability::ReliabilitySpec& rs = spec.reliability;
    const PoolView p = pool_view(spec, pool);
    const cluster::ClusterShape shape = cluster::Hierarchy::shape_of(p.hardware->chip, p.cluster);
    const reliability::FailureModel probe(rs.failures, rs.trace);
    auto d = std::make_shared<FailureDraws>();
    d->layout = std::make_shared<reliability::Layout>(
        shape, hardware_facts(p.hardware->chip), rs.fabric, 0, probe.present_classes());
    // The first pool draws with the scenario's seed; pool k with that seed plus k times a
    // fixed odd constant (its draws independent of the others').
    d->schedule = std::make_shared<reliability::OutageSchedule>(
        rs, *d->layout, shape.domains(),
        static_cast<std::uint64_t>(spec.seed) + 0x9E3779B97F4A7C15ULL * pool);
    while (d->ahead.size() < kMaxDrawnAhead &&
           (d->ahead.empty() || d->ahead.back().at <= until)) {
        const std::optional<reliability::UnitTransition> t = d->schedule->next();
        if (!t) {
            break;
        }
        d->ahead.push_back({t->time, static_cast<std::int64_t>(t->unit), t->up});
    }
    return d;
}

/// The scheduler's outage source over `d`.
fleet::OutageSource failure_source(std::shared_ptr<FailureDraws> d) {
    return [d]() -> std::optional<fleet::DomainTransition> {
        if (d->given < d->ahead.size()) {
            return d->ahead[d->given++];
        }
        const std::optional<reliability::UnitTransition> t = d->schedule->next();
        if (!t) {
            return std::nullopt;
        }
        return fleet::DomainTransition{t->time, static_cast<std::int64_t>(t->unit), t->up};
    };
}

/// The scheduler's horizon in `fs`: its end, else never.
SimTime fleet_horizon(const config::FleetSpec& fs) {
    return fs.horizon > Duration::zero() ? SimTime::zero() + fs.horizon : SimTime::max();
}

std::vector<FleetClassRun> prepare(const config::ScenarioSpec& spec, int threads) {
    const auto& jobs = spec.fleet->jobs;
    std::vector<FleetClassRun> classes(jobs.size());
    parallel_for(jobs.size(), threads, [&](std::size_t i, int) {
        try {
            classes[i] = prepare_class(jobs[i], *jobs[i].scenario);
        } catch (const InputError& e) {
            throw class_error(pool_keyed(e, *jobs[i].scenario, *spec.fleet, jobs[i].pool),
                              *jobs[i].scenario, i);
        }
        // An elastic class's larger gangs: its scenario on each, the same steps.
        const std::string key = "fleet.jobs[" + std::to_string(i) + "].gang";
        for (std::size_t k = 1; k < jobs[i].gangs.size(); ++k) {
            const std::int64_t g = jobs[i].gangs[k];
            config::ScenarioSpec on = *jobs[i].scenario;
            on.cluster = cluster::ClusterSpec::of_domains(on.cluster.counts_ultraservers(), g);
            const std::string where =
                "on " + std::to_string(g) + " " + on.cluster.domain_name() + ": ";
            FleetClassRun w;
            try {
                w = prepare_class(jobs[i], on);
            } catch (const InputError& e) {
                throw InputError(key, where + e.key_path() + ": " + e.message(),
                                 spec.sources.find(key));
            }
            if (w.steps != classes[i].steps) {
                throw InputError(key,
                                 where + "a job would run " + std::to_string(w.steps) +
                                     " steps, not " + std::to_string(classes[i].steps) +
                                     ": an elastic class keeps its steps on every gang",
                                 spec.sources.find(key));
            }
            w.gang = g;
            classes[i].wider.push_back(std::move(w));
        }
    });
    return classes;
}

} // namespace

bool missed_deadline(const FleetRun& run, std::size_t job) {
    const Duration deadline =
        run.classes[static_cast<std::size_t>(run.class_of_job[job])].deadline;
    if (deadline <= Duration::zero()) {
        return false;
    }
    const fleet::JobRecord& x = run.result.jobs[job];
    const SimTime due = x.submit + deadline;
    if (x.finished()) {
        return x.end > due;
    }
    // Not ended: late if even running from the run's end without a stop it could not make it
    // (the steps it has not made durable, less the work since its last checkpoint).
    // An elastic job at the step time of the gang it last started on.
    const fleet::JobSpec& j = run.input.jobs[job];
    Duration step = j.step;
    for (const fleet::JobShape& h : j.shapes) {
        if (h.domains == x.gang) {
            step = h.step;
        }
    }
    const Duration left = step * (j.steps - x.steps_done) - x.unsaved;
    const SimTime end = run.pools.empty()
                            ? run.result.end
                            : run.pools[static_cast<std::size_t>(run.pool_of_job[job])].result.end;
    return end + std::max(left, Duration::zero()) > due;
}

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
        m.deadlines_missed += missed_deadline(run, j) ? 1 : 0;
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
    for (std::size_t k = 0; spec.reliability.enabled && k < pool_count(spec); ++k) {
        const PoolView p = pool_view(spec, k);
        try {
            const cluster::ClusterShape shape =
                cluster::Hierarchy::shape_of(p.hardware->chip, p.cluster);
            reliability::validate_fleet(spec.reliability, shape,
                                        hardware_facts(p.hardware->chip));
        } catch (const InputError& e) {
            if (k == 0) {
                throw e.located(spec.sources);
            }
            const InputError located = e.located(spec.sources);
            throw InputError(located.key_path(), located.message() + " (in pool " + p.name + ")",
                             located.location());
        }
    }
}

} // namespace

void check_fleet(const config::ScenarioSpec& spec) {
    check_fleet_inputs(spec);
    (void)prepare(spec, run_threads(spec));
    const auto& services = spec.fleet->services;
    for (std::size_t i = 0; i < services.size(); ++i) {
        try {
            (void)check_service(services[i]);
        } catch (const InputError& e) {
            throw service_error(pool_keyed(e, *services[i].scenario, *spec.fleet, services[i].pool),
                                *services[i].scenario, i);
        }
    }
}

namespace {

/// prepare_fleet, with `alongside` run beside the services' measurements.
FleetRun prepare_with(const config::ScenarioSpec& spec, int threads,
                      const std::function<void()>& alongside) {
    check_fleet_inputs(spec);
    FleetRun out;
    out.threads = run_threads(spec, threads);
    const auto t0 = std::chrono::steady_clock::now();
    out.classes = prepare(spec, out.threads);
    out.services = prepare_services(spec, out.threads, alongside);
    out.plans_wall = Seconds::of(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return out;
}

} // namespace

FleetRun prepare_fleet(const config::ScenarioSpec& spec, int threads) {
    return prepare_with(spec, threads, {});
}

namespace {

/// The pool of `spec`, its jobs and services (from the prepared classes and services of
/// `out`) and the scheduler's run.
void simulate_prepared(const config::ScenarioSpec& spec, FleetRun& out,
                       std::vector<std::shared_ptr<FailureDraws>> drawn = {}) {
    const config::FleetSpec& fs = *spec.fleet;
    const auto t1 = std::chrono::steady_clock::now();

    // Each pool's domains, groups, spares and price.
    // The Clos's radix: the failure layout's when the fleet draws failures, else the default.
    const int radix = spec.reliability.enabled ? spec.reliability.fabric.switch_radix
                                               : reliability::FabricSpec{}.switch_radix;
    out.pools.assign(pool_count(spec), FleetPoolRun{});
    for (std::size_t k = 0; k < out.pools.size(); ++k) {
        const PoolView p = pool_view(spec, k);
        const compute::ChipSpec& chip = p.hardware->chip;
        const cluster::ClusterShape shape = cluster::Hierarchy::shape_of(chip, p.cluster);
        FleetPoolRun& pr = out.pools[k];
        pr.name = p.name;
        pr.chip = chip.name;
        pr.ultraservers = p.cluster.counts_ultraservers();
        pr.origin = p.cost->origin;
        pr.domain_hour =
            p.cost->instance_hour * static_cast<double>(shape.instances_per_domain());
        pr.input.domains = shape.domains();
        pr.input.chips_per_domain = shape.chips_per_domain();
        pr.input.groups = cluster::domain_groups(shape, chip.instance.efa_interfaces, radix);
        pr.input.spares = p.spares;
    }
    fleet::FleetInput& in = out.input; // every job and service; the pools' own hold the rest
    in.scheduler.policy = fs.policy;
    in.horizon = fleet_horizon(fs);
    std::map<std::string, std::int64_t> tenant_index;
    const auto add_tenant = [&](const std::string& t) {
        if (tenant_index.emplace(t, static_cast<std::int64_t>(out.tenants.size())).second) {
            out.tenants.push_back(t);
        }
    };
    for (const FleetClassRun& c : out.classes) {
        add_tenant(c.tenant);
    }
    for (const FleetServiceRun& v : out.services) {
        add_tenant(v.tenant);
    }
    in.scheduler.quotas.assign(out.tenants.size(), 0);
    for (const auto& [tenant, quota] : fs.quotas) {
        in.scheduler.quotas[static_cast<std::size_t>(tenant_index.at(tenant))] = quota;
    }
    // A class's jobs as its plan runs them on its gang.
    // A class's plan on a gang as the scheduler runs it (times rounded up to whole ticks).
    const auto shape_of = [](const FleetClassRun& x) {
        fleet::JobShape h;
        h.domains = x.gang;
        h.step = Duration::from_seconds_ceil(x.step.seconds());
        if (x.checkpoint_steps > 0) {
            h.checkpoint_steps = x.checkpoint_steps;
        }
        h.save = Duration::from_seconds_ceil(x.save.seconds());
        h.restore = Duration::from_seconds_ceil(x.restore.seconds());
        h.launch = Duration::from_seconds_ceil(x.launch.seconds());
        return h;
    };
    const auto job_of = [&](std::size_t i) {
        const FleetClassRun& c = out.classes[i];
        fleet::JobSpec j;
        j.name = c.name;
        j.tenant = tenant_index.at(c.tenant);
        j.steps = c.steps;
        j.priority = c.priority;
        j.set_shape(shape_of(c));
        if (!c.wider.empty()) { // an elastic class: every gang it may start on
            j.shapes.push_back(shape_of(c));
            for (const FleetClassRun& w : c.wider) {
                j.shapes.push_back(shape_of(w));
            }
        }
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
        const double step_s = out.classes[t.job_class].step.seconds();
        // A duration is the job's running time without interruptions: the steps that fill it
        // at its class's step time, at least one.
        const std::int64_t steps =
            t.duration > Duration::zero()
                ? std::max<std::int64_t>(
                      1, static_cast<std::int64_t>(std::ceil(t.duration.seconds() / step_s)))
                : t.steps;
        if (step_s * static_cast<double>(steps) > kLongestJob.seconds()) {
            throw InputError("fleet.trace", "this job would run for more than 100 years",
                             SourceLocation{fs.trace_file, t.line, 1});
        }
        j.submit = SimTime::zero() + t.submit;
        j.steps = steps > 0 ? steps : j.steps;
        j.priority = t.priority >= 0 ? t.priority : j.priority;
        add(t.job_class, j);
    }
    for (std::size_t i = 0; i < out.services.size(); ++i) {
        const FleetServiceRun& r = out.services[i];
        const config::FleetService& v = fs.services[i];
        fleet::ServiceSpec x;
        x.name = r.name;
        x.tenant = tenant_index.at(r.tenant);
        x.priority = r.priority;
        x.borrow = r.borrow;
        x.capacity = r.capacity;
        x.throughput = r.throughput;
        x.slack = Duration::from_seconds_ceil(r.slack.seconds());
        for (const FleetServiceRun::Point& p : r.points) {
            x.curve_rate.push_back(p.rate);
            x.curve_attainment.push_back(p.attainment);
        }
        x.load = fleet::diurnal(v.load.rate, v.load.peak, v.load.peak_at, v.load.period,
                                v.load.step, in.horizon);
        x.scale = v.autoscale;
        x.scale.load = Duration::from_seconds_ceil(r.model_load.seconds());
        if (fs.window_to > Duration::zero()) {
            x.window_from = SimTime::zero() + fs.window_from;
            x.window_to = SimTime::zero() + fs.window_to;
        }
        in.services.push_back(std::move(x));
    }
    if (spec.reliability.enabled) {
        in.detection = spec.reliability.recovery.detection;
    }
    // Each pool runs on its own: its jobs and services, its scheduler, its failure process.
    for (std::size_t i = 0; i < in.jobs.size(); ++i) {
        const std::size_t k = fs.jobs[static_cast<std::size_t>(out.class_of_job[i])].pool;
        out.pool_of_job.push_back(static_cast<std::int32_t>(k));
        out.pools[k].jobs.push_back(static_cast<std::int64_t>(i));
        out.pools[k].input.jobs.push_back(in.jobs[i]);
    }
    for (std::size_t i = 0; i < in.services.size(); ++i) {
        const std::size_t k = fs.services[i].pool;
        out.pool_of_service.push_back(static_cast<std::int32_t>(k));
        out.pools[k].services.push_back(static_cast<std::int64_t>(i));
        out.pools[k].input.services.push_back(in.services[i]);
    }
    drawn.resize(out.pools.size());
    parallel_for(out.pools.size(), out.threads, [&](std::size_t k, int) {
        fleet::FleetInput& pin = out.pools[k].input;
        pin.scheduler = in.scheduler;
        pin.horizon = in.horizon;
        pin.detection = in.detection;
        if (spec.reliability.enabled) {
            pin.outage_source = failure_source(drawn[k] != nullptr
                                                   ? std::move(drawn[k])
                                                   : draw_failures(spec, k, SimTime::zero()));
        }
        out.pools[k].result = fleet::simulate_fleet(pin);
    });
    // The fleet's records in its order.
    fleet::FleetResult& r = out.result;
    r = fleet::FleetResult{};
    r.jobs.resize(in.jobs.size());
    r.services.resize(in.services.size());
    r.service_samples.resize(in.services.size());
    r.service_changes.resize(in.services.size());
    r.pool = out.pools[0].result.pool;
    for (FleetPoolRun& pr : out.pools) { // its records move; its account, end and events stay
        fleet::FleetResult& x = pr.result;
        for (std::size_t i = 0; i < pr.jobs.size(); ++i) {
            r.jobs[static_cast<std::size_t>(pr.jobs[i])] = x.jobs[i];
        }
        for (std::size_t i = 0; i < pr.services.size(); ++i) {
            const auto g = static_cast<std::size_t>(pr.services[i]);
            r.services[g] = x.services[i];
            if (i < x.service_samples.size()) {
                r.service_samples[g] = std::move(x.service_samples[i]);
            }
            if (i < x.service_changes.size()) {
                r.service_changes[g] = std::move(x.service_changes[i]);
            }
        }
        x.jobs.clear();
        x.services.clear();
        x.service_samples.clear();
        x.service_changes.clear();
        r.end = std::max(r.end, x.end);
        r.events += x.events;
    }
    const auto t2 = std::chrono::steady_clock::now();
    out.fleet_wall = Seconds::of(std::chrono::duration<double>(t2 - t1).count());
    if (fs.window_to > Duration::zero()) {
        out.windows = detail::replay_windows(spec, out, out.threads);
    }
}

} // namespace

FleetRun run_fleet(const config::ScenarioSpec& spec, int threads) {
    // The failures up to the horizon are drawn beside the measurements (a second thread takes
    // them off the scheduler's run). If that fails, they are drawn again where they were
    // before, so any error comes in the sequential order.
    std::vector<std::shared_ptr<FailureDraws>> drawn(pool_count(spec));
    const SimTime until = fleet_horizon(*spec.fleet);
    std::function<void()> draw;
    if (spec.reliability.enabled && until < SimTime::max()) {
        draw = [&] {
            for (std::size_t k = 0; k < drawn.size(); ++k) {
                try {
                    drawn[k] = draw_failures(spec, k, until);
                } catch (...) {
                    drawn[k] = nullptr;
                }
            }
        };
    }
    FleetRun out = prepare_with(spec, threads, draw);
    out.failures_ahead = drawn.front() != nullptr;
    simulate_prepared(spec, out, std::move(drawn));
    return out;
}

FleetRun run_fleet(const config::ScenarioSpec& spec, const FleetRun& prepared) {
    check_fleet_inputs(spec);
    TRNSIM_CHECK(prepared.classes.size() == spec.fleet->jobs.size() &&
                     prepared.services.size() == spec.fleet->services.size(),
                 "fleet: prepared classes and services of another fleet");
    FleetRun out;
    out.threads = prepared.threads;
    out.classes = prepared.classes;
    out.services = prepared.services;
    for (std::size_t i = 0; i < out.classes.size(); ++i) {
        out.classes[i].deadline = spec.fleet->jobs[i].deadline; // the only key a plan may set
    }
    simulate_prepared(spec, out);
    return out;
}

} // namespace trnsim::sim
