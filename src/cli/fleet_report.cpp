#include "fleet_report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace trnsim::cli {

namespace {

/// A duration, "0 s" for none.
std::string span(double s) { return s > 0.0 ? fmt::seconds(s) : std::string("0 s"); }

std::string domains_text(const config::ScenarioSpec& spec, std::int64_t n) {
    const char* unit = spec.cluster.counts_ultraservers() ? "UltraServer" : "instance";
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
        << spec.hardware.chip.name << "\n";
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
            << " over every " << (spec.cluster.counts_ultraservers() ? "UltraServer" : "instance")
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
                << domains_text(spec, c.gang) << " a job, priority " << c.priority
                << "; its jobs come from the trace\n";
            continue;
        }
        out << "  class      " << c.name << ": " << fmt::integer(c.count)
            << (c.count == 1 ? " job" : " jobs") << " of tenant " << c.tenant << " on "
            << domains_text(spec, c.gang) << " each, priority " << c.priority
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
            << "), " << fmt::integer(a.min) << " to " << domains_text(spec, a.max) << ", every "
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
        const sim::FleetJobMeans m = sim::fleet_means(run, static_cast<std::int32_t>(c));
        out << "  jobs       " << k.name << ": " << waits(m);
        if (k.deadline > Duration::zero()) {
            out << misses(m, fmt::seconds(k.deadline.seconds()));
        }
        out << "\n";
    }
    const double domain_hour = run.domain_hour.usd();
    double services_held_s = 0.0;
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
        services_held_s += x.held.seconds();
        const double cost = x.held.seconds() / 3600.0 * domain_hour;
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
    const double pool_s = static_cast<double>(run.input.domains) * r.end.seconds();
    const auto share = [&](fleet::DomainUse u) {
        const Seconds t = r.pool.domain_time[static_cast<std::size_t>(u)];
        return fmt::percent(pool_s > 0.0 ? t.seconds() / pool_s : 0.0);
    };
    out << "  pool       busy " << share(fleet::DomainUse::busy) << ", idle "
        << share(fleet::DomainUse::idle) << " ("
        << fmt::percent(pool_s > 0.0 ? r.pool.fragmented_time.seconds() / pool_s : 0.0)
        << " fragmented), spare " << share(fleet::DomainUse::spare)
        << ", down " << share(fleet::DomainUse::down) << " of "
        << domains_text(spec, run.input.domains) << " over " << fmt::seconds(r.end.seconds())
        << "\n";
    const double hours = r.end.seconds() / 3600.0 * static_cast<double>(run.input.domains);
    const double busy_hours =
        r.pool.domain_time[static_cast<std::size_t>(fleet::DomainUse::busy)].seconds() / 3600.0;
    out << "  cost       " << fmt::money(run.domain_hour * hours) << " for the pool ("
        << fmt::money(run.domain_hour) << " a domain-hour, " << spec.cost.origin << "), ";
    const double jobs_hours = std::max(0.0, busy_hours - services_held_s / 3600.0);
    if (!run.classes.empty()) {
        out << fmt::money(run.domain_hour * jobs_hours) << " of it held by jobs";
    }
    if (!run.services.empty()) {
        out << (run.classes.empty() ? "" : ", ")
            << fmt::money(run.domain_hour * (services_held_s / 3600.0))
            << (run.classes.empty() ? " of it held by services" : " by services");
    }
    out << "\n";
    out << "  engine     " << fmt::integer(static_cast<std::int64_t>(r.events))
        << " events; the plans"
        << (run.services.empty() ? "" : run.failures_ahead ? ", the services' capacities" : " and the services' capacities")
        << (run.failures_ahead ? " and the failures" : "") << " "
        << fmt::seconds(run.plans_wall.seconds()) << " on "
        << run.threads << (run.threads == 1 ? " thread" : " threads") << ", the scheduler "
        << fmt::seconds(run.fleet_wall.seconds()) << "\n";
}

} // namespace trnsim::cli
