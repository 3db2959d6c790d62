// A fleet's services replayed at request level over a window (fleet.request_level;
// docs/fleet.md "A window at request level"): the fleet run at rate level decides when each
// service's domains are ready, drain and leave; the window replays its requests on replicas of
// those domains with the serving simulation (simulate_serving, with the domains' changes as
// its availability).
#include "fleet_window.hpp"

#include "serving_setup.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/serving/trace.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>

namespace trnsim::sim {

std::pair<std::vector<DomainChange>, std::int64_t> window_changes(
    const std::vector<fleet::ServiceChange>& changes, SimTime from, SimTime to) {
    using K = fleet::ServiceChange::Kind;
    // The service's domains at the window's start (after its changes at that instant): ready
    // or draining.
    std::map<std::int64_t, bool> at_start; // domain -> draining
    std::size_t i = 0;
    for (; i < changes.size() && changes[i].at <= from; ++i) {
        const fleet::ServiceChange& c = changes[i];
        if (c.kind == K::down) {
            at_start.erase(c.domain);
        } else {
            at_start[c.domain] = c.kind == K::drain;
        }
    }
    std::vector<bool> used;
    std::map<std::int64_t, std::uint32_t> slot_of;
    const auto take = [&](std::int64_t domain) {
        const auto free = std::find(used.begin(), used.end(), false);
        const auto slot = static_cast<std::uint32_t>(free - used.begin());
        if (free == used.end()) {
            used.push_back(true);
        } else {
            *free = true;
        }
        slot_of[domain] = slot;
        return slot;
    };
    std::vector<DomainChange> out;
    for (const auto& [domain, draining] : at_start) {
        const std::uint32_t slot = take(domain);
        if (draining) {
            out.push_back({SimTime::zero(), slot, DomainChange::Kind::drain});
        }
    }
    const std::size_t initial = used.size();
    std::vector<DomainChange> later;
    for (; i < changes.size() && changes[i].at < to; ++i) {
        const fleet::ServiceChange& c = changes[i];
        const SimTime t = SimTime::zero() + (c.at - from);
        if (c.kind == K::up) {
            later.push_back({t, take(c.domain), DomainChange::Kind::up});
            continue;
        }
        const auto it = slot_of.find(c.domain);
        if (it == slot_of.end()) {
            continue; // not ready in the window (it left while provisioning)
        }
        if (c.kind == K::drain) {
            later.push_back({t, it->second, DomainChange::Kind::drain});
        } else {
            later.push_back({t, it->second, DomainChange::Kind::down});
            used[it->second] = false;
            slot_of.erase(it);
        }
    }
    // Slots first used after the start are down until their domain is ready.
    for (std::size_t s = initial; s < used.size(); ++s) {
        out.push_back({SimTime::zero(), static_cast<std::uint32_t>(s), DomainChange::Kind::down});
    }
    if (used.empty()) {
        // No domain in the whole window: one slot, down throughout (its requests wait).
        out.push_back({SimTime::zero(), 0, DomainChange::Kind::down});
        used.push_back(false);
    }
    out.insert(out.end(), later.begin(), later.end());
    std::stable_sort(out.begin(), out.end(),
                     [](const DomainChange& a, const DomainChange& b) { return a.at < b.at; });
    return {std::move(out), static_cast<std::int64_t>(used.size())};
}

namespace {

/// Arrival times (from the window's start) of a process of unit rate in "operational time"
/// (the workload's own: Poisson, Gamma renewals, or the trace's times at its mean rate 1),
/// carried through the load profile: operational time u is reached at the t where the load's
/// integral from the window's start is u (a time change; rate(t) requests per second).
std::vector<Duration> warp(const std::vector<double>& unit, const fleet::LoadProfile& load,
                           SimTime from, SimTime to) {
    std::vector<Duration> out;
    out.reserve(unit.size());
    std::size_t k = 0; // the load step holding the current time
    while (k + 1 < load.at.size() && load.at[k + 1] <= from) {
        ++k;
    }
    SimTime t = from;
    double reached = 0.0; // the load's integral from `from` to `t`
    for (const double u : unit) {
        while (true) {
            const SimTime end = k + 1 < load.at.size() ? std::min(load.at[k + 1], to) : to;
            const double rate = load.rate[k];
            const double room = rate * (end - t).seconds();
            if (u <= reached + room || end >= to) {
                const double dt = rate > 0.0 ? (u - reached) / rate : 0.0;
                const SimTime at = t + Duration::from_seconds_ceil(std::max(dt, 0.0));
                if (at >= to) {
                    return out;
                }
                out.push_back(at - from);
                break;
            }
            reached += room;
            t = end;
            ++k;
        }
    }
    return out;
}

} // namespace

namespace detail {

std::vector<FleetServiceWindow> replay_windows(const config::ScenarioSpec& spec,
                                               const FleetRun& run, int threads) {
    const config::FleetSpec& fs = *spec.fleet;
    const SimTime from = SimTime::zero() + fs.window_from;
    const SimTime to = SimTime::zero() + fs.window_to;
    const double span_s = (to - from).seconds();
    std::vector<FleetServiceWindow> out(fs.services.size());
    parallel_for(fs.services.size(), threads, [&](std::size_t i, int) {
        const auto started = std::chrono::steady_clock::now();
        const config::FleetService& v = fs.services[i];
        const fleet::ServiceRecord& rec = run.result.services[i];
        FleetServiceWindow& w = out[i];
        w.name = v.name;
        w.from = Seconds::of(from.seconds());
        w.to = Seconds::of(to.seconds());
        w.rate = rec.window_arrived / span_s;
        w.rate_level_attainment =
            rec.window_arrived > 0.0 ? rec.window_met / rec.window_arrived : 1.0;
        auto [changes, slots] = window_changes(run.result.service_changes[i], from, to);
        w.domains = slots;
        for (const DomainChange& c : changes) {
            w.changes += c.at > SimTime::zero() ? 1 : 0;
        }

        config::ScenarioSpec s = *v.scenario;
        serving::RequestSpec& r = s.inference.requests;
        serving::ArrivalSpec& a = r.arrival;
        // The workload's arrival process at rate 1 in operational time, for as many arrivals
        // as the window's load brings (and some: the warp stops at the window's end).
        const std::size_t room = 2 * static_cast<std::size_t>(rec.window_arrived) + 1000;
        std::vector<double> unit;
        unit.reserve(room);
        auto trace = std::make_shared<serving::AzureTrace>();
        if (a.kind == serving::ArrivalSpec::Kind::trace) {
            // The trace's own times at its mean rate 1, looped; its sizes in the same order
            // (the scenario holds it as loaded, at its speed-up: the rate 1 undoes that).
            const std::shared_ptr<const serving::AzureTrace> loaded =
                s.trace ? s.trace
                        : std::make_shared<const serving::AzureTrace>(
                              serving::read_azure_trace(a.trace_file, 1.0));
            const serving::AzureTrace& own = *loaded;
            const std::size_t n = own.size();
            const double span = static_cast<double>(own.span_ns()) * 1e-9;
            const double native = n > 1 && span > 0.0 ? static_cast<double>(n - 1) / span : 1.0;
            const double period = span * native + 1.0; // one mean gap between two passes
            for (std::size_t k = 0; k < room; ++k) {
                const double pass = static_cast<double>(k / n);
                unit.push_back(pass * period + own.arrival[k % n].seconds() * native);
                trace->input_tokens.push_back(own.input_tokens[k % n]);
                trace->output_tokens.push_back(own.output_tokens[k % n]);
            }
        } else {
            // Poisson: exponential gaps; Gamma: its renewal gaps of mean 1 and its CV.
            std::mt19937_64 rng(static_cast<std::uint64_t>(s.seed) * 1000003u + i);
            const bool gamma = a.kind == serving::ArrivalSpec::Kind::gamma;
            const double shape = gamma ? 1.0 / (a.gamma_cv * a.gamma_cv) : 1.0;
            std::gamma_distribution<double> gap(shape, 1.0 / shape);
            double u = 0.0;
            for (std::size_t k = 0; k < room; ++k) {
                u += gap(rng);
                unit.push_back(u);
            }
        }
        trace->file = v.name + " over the window";
        trace->arrival = warp(unit, run.input.services[i].load, from, to);
        TRNSIM_CHECK(trace->arrival.size() < unit.size(),
                     "fleet: a window's arrivals ran past twice its expected count");
        const std::size_t arrivals = std::max<std::size_t>(trace->arrival.size(), 1);
        trace->arrival.resize(arrivals); // at least one request (at the window's start)
        trace->input_tokens.resize(arrivals, 1);
        trace->output_tokens.resize(arrivals, 1);
        a.kind = serving::ArrivalSpec::Kind::trace;
        a.speedup = 1.0;
        s.trace = std::move(trace);
        r.count = static_cast<std::int64_t>(arrivals);
        r.duration = Duration::zero();
        const cluster::ClusterShape one =
            cluster::Hierarchy::shape_of(s.hardware.chip, s.cluster);
        s.cluster = one.with_domains(slots);
        s.output.requests = false;
        s.simulation.kv_sample = Duration::zero();
        s.reliability.enabled = false;
        ServingSetup setup = serving_setup(s, 1);
        setup.input.availability =
            std::make_shared<const std::vector<DomainChange>>(std::move(changes));
        const ServingRun result = simulate_serving(setup.input);
        const serving::ServingSummary& m = result.summary;
        w.requests = static_cast<std::int64_t>(m.requests + m.unfinished);
        w.unfinished = static_cast<std::int64_t>(m.unfinished);
        w.attainment = w.requests > 0 ? static_cast<double>(m.met_slo) /
                                            static_cast<double>(w.requests)
                                      : 1.0;
        w.ttft_p50 = m.ttft_p50;
        w.ttft_p99 = m.ttft_p99;
        w.tpot_p99 = m.tpot_p99;
        w.retried = static_cast<std::int64_t>(m.retried_requests);
        w.wall = Seconds::of(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    });
    return out;
}

} // namespace detail

} // namespace trnsim::sim
