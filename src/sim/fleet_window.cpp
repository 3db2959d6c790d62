// A fleet's services replayed at request level over a window (fleet.request_level;
// docs/fleet.md "A window at request level"): the fleet run at rate level decides when each
// service's domains are ready, drain and leave; the window replays its requests on replicas of
// those domains with the serving simulation (simulate_serving, with the domains' changes as
// its availability).
#include "fleet_window.hpp"

#include "serving_setup.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/serving/trace.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

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
        if (a.kind == serving::ArrivalSpec::Kind::trace) {
            // The trace at the speed-up that offers the window's mean load.
            auto trace = std::make_shared<serving::AzureTrace>(
                serving::read_azure_trace(a.trace_file, 1.0));
            const std::size_t n = trace->size();
            const double native =
                n > 1 ? static_cast<double>(n - 1) / (static_cast<double>(trace->span_ns()) * 1e-9)
                      : 1.0;
            const double speedup = std::max(w.rate, 1e-9) / native;
            for (Duration& d : trace->arrival) {
                d = Duration::from_ns(std::llround(static_cast<double>(d.ns()) / speedup));
            }
            a.speedup = speedup;
            s.trace = std::move(trace);
        } else {
            a.rate_per_s = std::max(w.rate, 1e-9);
        }
        r.count = 0;
        r.duration = to - from;
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
