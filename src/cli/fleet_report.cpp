#include "fleet_report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace trnsim::cli {

namespace {

/// A duration, "0 s" for none.
std::string span(double s) { return s > 0.0 ? fmt::seconds(s) : std::string("0 s"); }

/// "N UltraServers" (or instances) of pool `pool` of the fleet.
std::string domains_text(const config::ScenarioSpec& spec, std::int64_t n, std::size_t pool = 0) {
    const bool us = pool == 0 ? spec.cluster.counts_ultraservers()
                              : spec.fleet->pools[pool].cluster.counts_ultraservers();
    const char* unit = us ? "UltraServer" : "instance";
    return fmt::integer(n) + " " + unit + (n == 1 ? "" : "s");
}

/// "N of M finished; first start X after submission (mean of K started), done Y after (mean)".
std::string waits(const sim::FleetJobMeans& m) {
    std::string s = fmt::integer(m.finished) + " of " + fmt::integer(m.jobs) + " finished";
    if (m.started > 0) {
        s += "; first start " + span(m.wait.seconds()) + " after submission (mean of " +
             fmt::integer(m.started) + " started)";
    }
    if (m.finished > 0) {
        s += ", done " + fmt::seconds(m.completion.seconds()) + " after (mean)";
    }
    return s;
}

/// ", N missed the deadline of D" for a class with one (`deadline`: its text; "" for all jobs).
std::string misses(const sim::FleetJobMeans& m, const std::string& deadline) {
    return "; " + fmt::integer(m.deadlines_missed) +
           (deadline.empty() ? " missed their deadlines" : " missed the deadline of " + deadline);
}

} // namespace

void print_fleet_header(std::ostream& out, const config::ScenarioSpec& spec) {
    const config::FleetSpec& f = *spec.fleet;
    std::int64_t jobs = 0;
    for (const config::FleetJobClass& c : f.jobs) {
        jobs += c.count;
    }
    jobs += static_cast<std::int64_t>(f.trace.size());
    out << "trnsim: " << spec.name << " (" << spec.source_file << "): a fleet of ";
    if (!f.jobs.empty()) {
        out << fmt::integer(jobs) << (jobs == 1 ? " training job" : " training jobs") << " in "
            << f.jobs.size() << (f.jobs.size() == 1 ? " class" : " classes");
    }
    if (!f.services.empty()) {
        out << (f.jobs.empty() ? "" : " and ") << f.services.size()
            << (f.services.size() == 1 ? " service" : " services");
    }
    out << " on " << domains_text(spec, spec.cluster.domains()) << " of "
        << spec.hardware.chip.name;
    for (std::size_t k = 1; k < f.pools.size(); ++k) { // the other pools
        const config::FleetPool& p = f.pools[k];
        const std::int64_t n = p.cluster.domains();
        out << (k + 1 == f.pools.size() ? " and " : ", ") << fmt::integer(n) << " "
            << (p.cluster.counts_ultraservers() ? "UltraServer" : "instance")
            << (n == 1 ? "" : "s") << " of " << p.hardware.chip.name << " (pool " << p.name
            << ", " << fmt::integer(p.spares) << (p.spares == 1 ? " spare" : " spares") << ")";
    }
    out << "\n";
    out << "  scheduler  " << fleet::to_string(f.policy) << "; "
        << fmt::integer(f.spares) << (f.spares == 1 ? " spare" : " spares");
    for (const auto& [tenant, quota] : f.quotas) {
        out << "; " << tenant << " at most " << domains_text(spec, quota);
    }
    if (f.horizon > Duration::zero()) {
        out << "; stops at " << fmt::duration(f.horizon);
    }
    out << "\n";
    if (spec.reliability.enabled) {
        const reliability::ReliabilitySpec& r = spec.reliability;
        out << "  failures   "
            << (r.preset.empty() ? std::string("the reliability section's")
                                 : "preset " + r.preset)
            << " over every "
            << (f.pools.size() > 1 ? "pool's domains"
                : spec.cluster.counts_ultraservers() ? "UltraServer" : "instance")
            << ", spares included; detection " << fmt::duration(r.recovery.detection)
            << ", repair " << fmt::duration(r.repair.automatic) << " (automatic)\n";
    }
    if (!f.trace_file.empty()) {
        out << "  trace      " << fmt::integer(static_cast<std::int64_t>(f.trace.size()))
            << (f.trace.size() == 1 ? " job" : " jobs") << " from " << f.trace_file << "\n";
    }
    for (const config::FleetJobClass& c : f.jobs) {
        if (c.count == 0) {
            out << "  class      " << c.name << ": tenant " << c.tenant << ", "
                << domains_text(spec, c.gang, c.pool) << " a job, priority " << c.priority
                << "; its jobs come from the trace\n";
            continue;
        }
        out << "  class      " << c.name << ": " << fmt::integer(c.count)
            << (c.count == 1 ? " job" : " jobs") << " of tenant " << c.tenant << " on "
            << (c.gangs.empty() ? domains_text(spec, c.gang, c.pool) + " each"
                                : fmt::integer(c.gang) + " to " +
                                      domains_text(spec, c.gangs.back(), c.pool) +
                                      " (elastic)")
            << (c.pool > 0 ? " (pool " + f.pools[c.pool].name + ")" : "") << ", priority "
            << c.priority
            << ", submitted "
            << (c.submit > Duration::zero() ? "from " + fmt::duration(c.submit) : "from the start");
        if (c.count > 1) {
            out << (c.every > Duration::zero() ? " every " + fmt::duration(c.every)
                                               : " all at once");
        }
        out << "\n";
    }
    for (const config::FleetService& v : f.services) {
        const fleet::AutoscalerSpec& a = v.autoscale;
        out << "  service    " << v.name << ": tenant " << v.tenant << ", priority " << v.priority
            << (v.borrow ? " (borrows from jobs below it)" : "") << "; " << fmt::fixed(v.load.rate, 1)
            << " requests/s at the low";
        if (v.load.peak > 1.0) {
            out << ", " << fmt::fixed(v.load.peak, 1) << "x at " << fmt::duration(v.load.peak_at)
                << " every " << fmt::duration(v.load.period);
        }
        out << "; autoscaled on " << fleet::to_string(a.signal) << " ("
            << (a.signal == fleet::Signal::queue ? fmt::seconds(a.target) + " of backlog"
                                                 : fmt::percent(a.target))
            << "), " << fmt::integer(a.min) << " to " << domains_text(spec, a.max, v.pool)
            << (v.pool > 0 ? " (pool " + f.pools[v.pool].name + ")" : "") << ", every "
            << fmt::duration(a.interval) << ", lag " << fmt::duration(a.lag) << ", provisioning "
            << fmt::duration(a.provisioning) << "\n";
    }
}

void print_fleet(std::ostream& out, const config::ScenarioSpec& spec, const sim::FleetRun& run) {
    print_fleet_header(out, spec);
    const fleet::FleetResult& r = run.result;
    for (std::size_t c = 0; c < run.classes.size(); ++c) {
        const sim::FleetClassRun& k = run.classes[c];
        out << "  plan       " << k.name << ": tp " << k.plan.tp << " pp " << k.plan.pp
            << " dp " << k.plan.dp << ", " << fmt::seconds(k.step.seconds()) << " a step x "
            << fmt::integer(k.steps)
            << " steps = " << fmt::seconds(k.step.seconds() * static_cast<double>(k.steps));
        if (k.checkpoint_steps > 0) {
            out << "; a checkpoint every " << fmt::integer(k.checkpoint_steps) << " steps ("
                << fmt::seconds(k.save.seconds()) << "), restore "
                << fmt::seconds(k.restore.seconds());
        }
        if (k.launch > Seconds{}) {
            out << "; " << fmt::seconds(k.launch.seconds()) << " to start";
        }
        out << "\n";
        for (const sim::FleetClassRun& w : k.wider) { // an elastic class's larger gangs
            out << "  plan       " << k.name << " on "
                << domains_text(spec, w.gang, spec.fleet->jobs[c].pool) << ": tp " << w.plan.tp
                << " pp " << w.plan.pp << " dp " << w.plan.dp << ", "
                << fmt::seconds(w.step.seconds()) << " a step = "
                << fmt::seconds(w.step.seconds() * static_cast<double>(w.steps));
            if (w.checkpoint_steps > 0) {
                out << "; a checkpoint every " << fmt::integer(w.checkpoint_steps) << " steps";
            }
            out << "\n";
        }
        const sim::FleetJobMeans m = sim::fleet_means(run, static_cast<std::int32_t>(c));
        out << "  jobs       " << k.name << ": " << waits(m);
        if (k.deadline > Duration::zero()) {
            out << misses(m, fmt::seconds(k.deadline.seconds()));
        }
        out << "\n";
    }
    std::vector<double> services_held_s(run.pools.size(), 0.0); // by pool
    for (std::size_t i = 0; i < run.services.size(); ++i) {
        const sim::FleetServiceRun& v = run.services[i];
        const fleet::ServiceRecord& x = r.services[i];
        out << "  capacity   " << v.name << ": " << fmt::integer(v.replicas_per_domain)
            << (v.replicas_per_domain == 1 ? " replica" : " replicas") << " of tp " << v.tp
            << " a domain serve " << fmt::fixed(v.capacity, 2)
            << " requests/s within the SLO, " << fmt::fixed(v.throughput, 2)
            << " at most; slack " << fmt::seconds(v.slack.seconds())
            << ", model load " << fmt::seconds(v.model_load.seconds()) << " at "
            << fmt::bandwidth(v.load_bandwidth) << " an instance (";
        if (v.shares_with >= 0) {
            out << "measured for " << run.services[static_cast<std::size_t>(v.shares_with)].name;
        } else {
            out << v.simulations << " request-level runs";
        }
        out << ")\n";
        const auto pool = static_cast<std::size_t>(run.pool_of_service[i]);
        services_held_s[pool] += x.held.seconds();
        const double cost = x.held.seconds() / 3600.0 * run.pools[pool].domain_hour.usd();
        const double tokens = x.served * v.output_tokens;
        double mean_ready = 0.0;
        if (r.end > SimTime::zero()) {
            mean_ready = x.ready.seconds() / r.end.seconds();
        }
        out << "  served     " << v.name << ": " << fmt::count(x.arrived) << " requests, "
            << fmt::percent(x.attainment()) << " within the SLO; " << fmt::fixed(mean_ready, 1)
            << " domains ready on average, at most " << fmt::integer(x.peak_domains) << "; "
            << fmt::integer(x.failures) << (x.failures == 1 ? " failure" : " failures") << "; "
            << fmt::money(Money::usd(cost)) << ", "
            << fmt::money(Money::usd(tokens > 0.0 ? cost / tokens * 1e6 : 0.0))
            << " per million output tokens\n";
        if (i < run.windows.size()) {
            const sim::FleetServiceWindow& w = run.windows[i];
            out << "  window     " << v.name << ": " << span(w.from.seconds()) << " to "
                << span(w.to.seconds()) << " at request level, "
                << fmt::integer(w.requests) << " requests at " << fmt::fixed(w.rate, 2)
                << "/s on up to " << fmt::integer(w.domains)
                << (w.domains == 1 ? " domain" : " domains") << " (" << fmt::integer(w.changes)
                << (w.changes == 1 ? " change" : " changes") << "): "
                << fmt::percent(w.attainment) << " within the SLO (rate level "
                << fmt::percent(w.rate_level_attainment) << "); TTFT p50 "
                << fmt::seconds(w.ttft_p50.seconds()) << ", p99 "
                << fmt::seconds(w.ttft_p99.seconds()) << "; TPOT p99 "
                << fmt::seconds(w.tpot_p99.seconds()) << "; " << fmt::integer(w.retried)
                << " retried, " << fmt::integer(w.unfinished) << " unfinished\n";
        }
    }
    const sim::FleetJobMeans all = sim::fleet_means(run);
    if (!run.classes.empty()) {
    out << "  all jobs   " << waits(all) << "; " << fmt::integer(all.preemptions)
        << (all.preemptions == 1 ? " preemption" : " preemptions") << ", "
        << fmt::integer(all.failures) << (all.failures == 1 ? " failure" : " failures");
    if (all.lost > Seconds{}) {
        out << ", " << fmt::seconds(all.lost.seconds()) << " of work lost";
    }
    if (std::any_of(run.classes.begin(), run.classes.end(),
                    [](const sim::FleetClassRun& k) { return k.deadline > Duration::zero(); })) {
        out << misses(all, "");
    }
    out << "\n";
    }
    // Each pool's uses and cost (named when there are several), then the fleet's cost.
    const bool named = run.pools.size() > 1;
    double total_usd = 0.0;
    for (std::size_t k = 0; k < run.pools.size(); ++k) {
        const sim::FleetPoolRun& p = run.pools[k];
        const fleet::FleetResult& pr = p.result;
        const std::string name = named ? p.name + ": " : "";
        const double pool_s = static_cast<double>(p.input.domains) * pr.end.seconds();
        const auto share = [&](fleet::DomainUse u) {
            const Seconds t = pr.pool.domain_time[static_cast<std::size_t>(u)];
            return fmt::percent(pool_s > 0.0 ? t.seconds() / pool_s : 0.0);
        };
        const std::string unit = p.ultraservers ? "UltraServer" : "instance";
        out << "  pool       " << name << "busy " << share(fleet::DomainUse::busy) << ", idle "
            << share(fleet::DomainUse::idle) << " ("
            << fmt::percent(pool_s > 0.0 ? pr.pool.fragmented_time.seconds() / pool_s : 0.0)
            << " fragmented), spare " << share(fleet::DomainUse::spare) << ", down "
            << share(fleet::DomainUse::down) << " of " << fmt::integer(p.input.domains) << " "
            << unit << (p.input.domains == 1 ? "" : "s") << " over "
            << fmt::seconds(pr.end.seconds()) << "\n";
        const double hours = pool_s / 3600.0;
        const double busy_hours =
            pr.pool.domain_time[static_cast<std::size_t>(fleet::DomainUse::busy)].seconds() /
            3600.0;
        total_usd += (p.domain_hour * hours).usd();
        out << "  cost       " << name << fmt::money(p.domain_hour * hours) << " for the pool ("
            << fmt::money(p.domain_hour) << " a domain-hour, " << p.origin << ")";
        const double jobs_hours = std::max(0.0, busy_hours - services_held_s[k] / 3600.0);
        const bool jobs = !p.jobs.empty();
        if (jobs) {
            out << ", " << fmt::money(p.domain_hour * jobs_hours) << " of it held by jobs";
        }
        if (!p.services.empty()) {
            out << (jobs ? ", " : ", ") << fmt::money(p.domain_hour * (services_held_s[k] / 3600.0))
                << (jobs ? " by services" : " of it held by services");
        }
        out << "\n";
    }
    if (named) {
        out << "  cost       all pools: " << fmt::money(Money::usd(total_usd)) << "\n";
    }
    out << "  engine     " << fmt::integer(static_cast<std::int64_t>(r.events))
        << " events; the plans"
        << (run.services.empty()    ? ""
            : run.failures_ahead ? ", the services' capacities"
                                 : " and the services' capacities")
        << (run.failures_ahead ? " and the failures" : "") << " "
        << fmt::seconds(run.plans_wall.seconds()) << " on "
        << run.threads << (run.threads == 1 ? " thread" : " threads") << ", the scheduler "
        << fmt::seconds(run.fleet_wall.seconds()) << "\n";
}

} // namespace trnsim::cli
