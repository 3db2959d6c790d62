// The results file of a `fleet:` scenario (docs/results-schema.md, "Fleet"): /summary (one
// row), /fleet/classes (one row per job class), /fleet/jobs (one row per job), /fleet/pool
// (the domains in each use after every change), /fleet/services (one row per service) and
// /fleet/service_samples (each service's state at every autoscaler decision), and with
// fleet.request_level /fleet/service_windows (each service's window at request level).
#include "trnsim/fleet/fleet.hpp"
#include "trnsim/report/run_results.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace trnsim::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_or_nan(SimTime t) { return t == SimTime::max() ? kNaN : t.seconds(); }

/// Service i's cost: the domain time it held at its pool's price.
double service_cost(const sim::FleetRun& run, std::size_t i) {
    const sim::FleetPoolRun& p = run.pools[static_cast<std::size_t>(run.pool_of_service[i])];
    return run.result.services[i].held.seconds() / 3600.0 * p.domain_hour.usd();
}

/// Job j's cost: the domain time it held at its pool's price.
double job_cost(const sim::FleetRun& run, std::size_t j) {
    const sim::FleetPoolRun& p = run.pools[static_cast<std::size_t>(run.pool_of_job[j])];
    const auto& k = run.classes[static_cast<std::size_t>(run.class_of_job[j])];
    if (!k.wider.empty()) { // an elastic job: each start's time on its own gang
        return run.result.jobs[j].domain_seconds / 3600.0 * p.domain_hour.usd();
    }
    return run.result.jobs[j].held.seconds() / 3600.0 * static_cast<double>(k.gang) *
           p.domain_hour.usd();
}

/// A pool's domain time (domains x its run's end) and its uses' sums.
struct PoolSums {
    double pool_s = 0.0;
    std::array<double, fleet::kDomainUses> use_s{};
    double fragmented_s = 0.0;
    double cost = 0.0, busy_cost = 0.0;
    std::int64_t domains = 0, chips = 0, spares = 0;
};

PoolSums sums_of(const sim::FleetPoolRun& p) {
    PoolSums x;
    x.domains = p.input.domains;
    x.chips = p.input.domains * p.input.chips_per_domain;
    x.spares = p.input.spares;
    x.pool_s = static_cast<double>(p.input.domains) * p.result.end.seconds();
    for (std::size_t u = 0; u < fleet::kDomainUses; ++u) {
        x.use_s[u] = p.result.pool.domain_time[u].seconds();
    }
    x.fragmented_s = p.result.pool.fragmented_time.seconds();
    x.cost = x.pool_s / 3600.0 * p.domain_hour.usd();
    x.busy_cost = x.use_s[static_cast<std::size_t>(fleet::DomainUse::busy)] / 3600.0 *
                  p.domain_hour.usd();
    return x;
}

std::vector<results::NamedValue> fleet_summary(const config::ScenarioSpec& spec,
                                               const sim::FleetRun& run) {
    const fleet::FleetResult& r = run.result;
    const sim::FleetJobMeans m = sim::fleet_means(run);
    // Over every pool: their domain time, and each use's share of it.
    PoolSums all;
    for (const sim::FleetPoolRun& p : run.pools) {
        const PoolSums x = sums_of(p);
        all.pool_s += x.pool_s;
        for (std::size_t u = 0; u < fleet::kDomainUses; ++u) {
            all.use_s[u] += x.use_s[u];
        }
        all.fragmented_s += x.fragmented_s;
        all.cost += x.cost;
        all.busy_cost += x.busy_cost;
        all.domains += x.domains;
        all.chips += x.chips;
        all.spares += x.spares;
    }
    const double pool_s = all.pool_s;
    double services_cost = 0.0;
    for (std::size_t i = 0; i < run.services.size(); ++i) {
        services_cost += service_cost(run, i);
    }
    const auto share = [&](fleet::DomainUse u) {
        return pool_s > 0.0 ? all.use_s[static_cast<std::size_t>(u)] / pool_s : kNaN;
    };
    return {
        {"policy", std::string(fleet::to_string(run.input.scheduler.policy))},
        {"unit", std::string(spec.cluster.domain_name())},
        {"pools", static_cast<std::int64_t>(run.pools.size())},
        {"domains", all.domains},
        {"chips", all.chips},
        {"spares", all.spares},
        {"classes", static_cast<std::int64_t>(run.classes.size())},
        {"jobs", m.jobs},
        {"jobs_started", m.started},
        {"jobs_finished", m.finished},
        {"end_s", r.end.seconds()},
        {"mean_wait_s", m.wait.seconds()},
        {"mean_completion_s", m.completion.seconds()},
        {"preemptions", m.preemptions},
        {"deadlines_missed", m.deadlines_missed},
        {"failures", m.failures},
        {"lost_s", m.lost.seconds()},
        {"busy_fraction", share(fleet::DomainUse::busy)},
        {"idle_fraction", share(fleet::DomainUse::idle)},
        {"fragmented_fraction", pool_s > 0.0 ? all.fragmented_s / pool_s : kNaN},
        {"spare_fraction", share(fleet::DomainUse::spare)},
        {"down_fraction", share(fleet::DomainUse::down)},
        {"engine_events", static_cast<std::int64_t>(r.events)},
        {"cost_usd", all.cost},
        {"busy_cost_usd", all.busy_cost},
        {"services", static_cast<std::int64_t>(run.services.size())},
        {"services_cost_usd", services_cost},
    };
}

} // namespace

results::ResultsFile fleet_results(const config::ScenarioSpec& spec, const sim::FleetRun& run,
                                   const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(spec, writer);
    add_warnings(f, spec);
    f.summary = results::table_from_rows({fleet_summary(spec, run)});
    const fleet::FleetResult& r = run.result;

    results::Table classes;
    classes.add_string("class", 64);
    classes.add_string("tenant", 64);
    classes.add_int("gang");
    classes.add_int("count");
    classes.add_int("jobs");
    classes.add_int("priority");
    classes.add_int("tp");
    classes.add_int("pp");
    classes.add_int("dp");
    classes.add_float("step_s");
    classes.add_int("steps");
    classes.add_int("checkpoint_steps");
    classes.add_float("save_s");
    classes.add_float("restore_s");
    classes.add_float("launch_s");
    classes.add_int("finished");
    classes.add_float("mean_wait_s");
    classes.add_float("mean_completion_s");
    classes.add_float("deadline_s");
    classes.add_int("deadlines_missed");
    classes.add_int("max_gang");
    for (std::size_t c = 0; c < run.classes.size(); ++c) {
        const sim::FleetClassRun& k = run.classes[c];
        const sim::FleetJobMeans m = sim::fleet_means(run, static_cast<std::int32_t>(c));
        classes.add_row({k.name, k.tenant, k.gang, k.count, m.jobs, std::int64_t{k.priority},
                         std::int64_t{k.plan.tp}, std::int64_t{k.plan.pp},
                         std::int64_t{k.plan.dp}, k.step.seconds(), k.steps, k.checkpoint_steps,
                         k.save.seconds(), k.restore.seconds(), k.launch.seconds(), m.finished,
                         m.wait.seconds(), m.completion.seconds(),
                         k.deadline > Duration::zero() ? k.deadline.seconds() : kNaN,
                         m.deadlines_missed, k.wider.empty() ? k.gang : k.wider.back().gang});
    }
    f.tables.emplace_back("/fleet/classes", std::move(classes));

    results::Table jobs;
    jobs.add_string("class", 64);
    jobs.add_int("index");
    jobs.add_string("tenant", 64);
    jobs.add_int("gang");
    jobs.add_int("priority");
    jobs.add_float("submit_s");
    jobs.add_float("first_start_s");
    jobs.add_float("end_s");
    jobs.add_float("waiting_s");
    jobs.add_int("starts");
    jobs.add_int("preemptions");
    jobs.add_int("failures");
    jobs.add_int("steps_done");
    jobs.add_float("held_s");
    jobs.add_float("overhead_s");
    jobs.add_float("lost_s");
    jobs.add_float("unsaved_s");
    jobs.add_float("cost_usd");
    jobs.add_string("pool", 64);
    jobs.add_int("last_gang");
    jobs.add_int("resizes");
    for (std::size_t j = 0; j < r.jobs.size(); ++j) {
        const fleet::JobRecord& x = r.jobs[j];
        const sim::FleetClassRun& k = run.classes[static_cast<std::size_t>(run.class_of_job[j])];
        jobs.add_row({k.name, run.index_in_class[j], k.tenant, k.gang, std::int64_t{k.priority},
                      x.submit.seconds(), seconds_or_nan(x.first_start), seconds_or_nan(x.end),
                      x.waiting.seconds(), x.starts, x.preemptions, x.failures, x.steps_done,
                      x.held.seconds(), x.overhead.seconds(), x.lost.seconds(),
                      x.unsaved.seconds(), job_cost(run, j),
                      run.pools[static_cast<std::size_t>(run.pool_of_job[j])].name, x.gang,
                      x.resizes});
    }
    f.tables.emplace_back("/fleet/jobs", std::move(jobs));

    results::Table pool;
    pool.add_float("time_s");
    pool.add_int("busy");
    pool.add_int("idle");
    pool.add_int("spare");
    pool.add_int("down");
    pool.add_int("fragmented");
    pool.add_string("pool", 64);
    for (const sim::FleetPoolRun& pr : run.pools) {
        for (const fleet::PoolAccount::Point& p : pr.result.pool.timeline) {
            pool.add_row({p.at.seconds(), p.domains[0], p.domains[1], p.domains[2],
                          p.domains[3], p.fragmented, pr.name});
        }
    }
    f.tables.emplace_back("/fleet/pool", std::move(pool));

    results::Table pools;
    pools.add_string("pool", 64);
    pools.add_string("chip", 64);
    pools.add_string("unit", 16);
    pools.add_int("domains");
    pools.add_int("chips");
    pools.add_int("spares");
    pools.add_float("domain_hour_usd");
    pools.add_int("jobs");
    pools.add_int("services");
    pools.add_float("end_s");
    pools.add_float("busy_fraction");
    pools.add_float("idle_fraction");
    pools.add_float("fragmented_fraction");
    pools.add_float("spare_fraction");
    pools.add_float("down_fraction");
    pools.add_float("cost_usd");
    pools.add_float("busy_cost_usd");
    pools.add_float("services_cost_usd");
    for (const sim::FleetPoolRun& pr : run.pools) {
        const PoolSums x = sums_of(pr);
        const auto frac = [&](double v) { return x.pool_s > 0.0 ? v / x.pool_s : kNaN; };
        double services_cost = 0.0;
        for (const std::int64_t i : pr.services) {
            services_cost += service_cost(run, static_cast<std::size_t>(i));
        }
        pools.add_row({pr.name, pr.chip,
                       std::string(pr.ultraservers ? "ultraservers" : "instances"), x.domains,
                       x.chips, x.spares, pr.domain_hour.usd(),
                       static_cast<std::int64_t>(pr.jobs.size()),
                       static_cast<std::int64_t>(pr.services.size()), pr.result.end.seconds(),
                       frac(x.use_s[0]), frac(x.use_s[1]), frac(x.fragmented_s),
                       frac(x.use_s[2]), frac(x.use_s[3]), x.cost, x.busy_cost,
                       services_cost});
    }
    f.tables.emplace_back("/fleet/pools", std::move(pools));
    if (run.services.empty()) {
        return f;
    }

    results::Table services;
    services.add_string("service", 64);
    services.add_string("tenant", 64);
    services.add_int("priority");
    services.add_int("borrow");
    services.add_int("tp");
    services.add_int("replicas_per_domain");
    services.add_float("capacity_per_s");
    services.add_float("throughput_per_s");
    services.add_float("slack_s");
    services.add_float("model_load_s");
    services.add_int("simulations");
    services.add_float("requests");
    services.add_float("met_slo");
    services.add_float("slo_attainment");
    services.add_float("served");
    services.add_float("backlog_end");
    services.add_float("held_s");
    services.add_float("ready_s");
    services.add_int("grants");
    services.add_int("releases");
    services.add_int("failures");
    services.add_int("peak_domains");
    services.add_float("cost_usd");
    services.add_float("cost_per_million_output_tokens_usd");
    services.add_string("pool", 64);
    for (std::size_t i = 0; i < run.services.size(); ++i) {
        const sim::FleetServiceRun& v = run.services[i];
        const fleet::ServiceRecord& x = r.services[i];
        const double cost = service_cost(run, i);
        const double tokens = x.served * v.output_tokens;
        services.add_row({v.name, v.tenant, std::int64_t{v.priority}, std::int64_t{v.borrow},
                          std::int64_t{v.tp}, v.replicas_per_domain, v.capacity, v.throughput,
                          v.slack.seconds(), v.model_load.seconds(),
                          std::int64_t{v.simulations}, x.arrived, x.met, x.attainment(),
                          x.served, x.backlog_end, x.held.seconds(), x.ready.seconds(),
                          x.grants, x.releases, x.failures, x.peak_domains, cost,
                          tokens > 0.0 ? cost / tokens * 1e6 : kNaN,
                          run.pools[static_cast<std::size_t>(run.pool_of_service[i])].name});
    }
    f.tables.emplace_back("/fleet/services", std::move(services));

    results::Table samples;
    samples.add_string("service", 64);
    samples.add_float("time_s");
    samples.add_float("load_per_s");
    samples.add_int("ready");
    samples.add_int("pending");
    samples.add_int("draining");
    samples.add_int("wanted");
    samples.add_float("backlog");
    samples.add_float("attainment");
    for (std::size_t i = 0; i < run.services.size(); ++i) {
        for (const fleet::ServiceSample& p : r.service_samples[i]) {
            samples.add_row({run.services[i].name, p.at.seconds(), p.load, p.ready, p.pending,
                             p.draining, p.wanted, p.backlog, p.attainment});
        }
    }
    f.tables.emplace_back("/fleet/service_samples", std::move(samples));
    if (run.windows.empty()) {
        return f;
    }
    results::Table windows;
    windows.add_string("service", 64);
    for (const char* c : {"from_s", "to_s", "rate_per_s"}) {
        windows.add_float(c);
    }
    windows.add_int("domains");
    windows.add_int("changes");
    windows.add_float("rate_level_attainment");
    windows.add_int("requests");
    windows.add_int("unfinished");
    windows.add_float("slo_attainment");
    for (const char* c : {"ttft_p50_s", "ttft_p99_s", "tpot_p99_s"}) {
        windows.add_float(c);
    }
    windows.add_int("retried");
    for (const sim::FleetServiceWindow& w : run.windows) {
        windows.add_row({w.name, w.from.seconds(), w.to.seconds(), w.rate, w.domains, w.changes,
                         w.rate_level_attainment, w.requests, w.unfinished, w.attainment,
                         w.ttft_p50.seconds(), w.ttft_p99.seconds(), w.tpot_p99.seconds(),
                         w.retried});
    }
    f.tables.emplace_back("/fleet/service_windows", std::move(windows));
    return f;
}

} // namespace trnsim::report
