#include "trnsim/fleet/fleet.hpp"

#include "trnsim/engine/simulator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trnsim::fleet {

namespace {

// Event kinds, also their priority classes: at one instant ends (and services' drained
// domains) come first, then repairs, then failures, then domains becoming ready, then
// submissions, then the services' decisions, and last the scheduler's one decision for the
// instant.
constexpr engine::EventType kEnd = 0;
constexpr engine::EventType kDrained = 1;
constexpr engine::EventType kUp = 2;
constexpr engine::EventType kDown = 3;
constexpr engine::EventType kReady = 4;
constexpr engine::EventType kSubmit = 5;
constexpr engine::EventType kTick = 6;
constexpr engine::EventType kSchedule = 7;
constexpr engine::EntityId kScheduler = 0;
constexpr std::uint16_t kDrawn = 1; ///< aux of a transition from the failure process

std::uint64_t end_payload(const Start& s) {
    return static_cast<std::uint64_t>(s.job) | (std::uint64_t{s.epoch} << 32);
}

std::uint64_t pair_payload(std::int64_t service, std::int64_t domain) {
    return static_cast<std::uint64_t>(domain) | (static_cast<std::uint64_t>(service) << 32);
}
std::int64_t low(std::uint64_t p) { return static_cast<std::int64_t>(p & 0xffffffffu); }
std::int64_t high(std::uint64_t p) { return static_cast<std::int64_t>(p >> 32); }

class FleetModel {
public:
    FleetModel(Scheduler& scheduler, std::vector<Service>& services, OutageSource source,
               SimTime horizon, Duration detection)
        : scheduler_(scheduler), services_(services), source_(std::move(source)),
          horizon_(horizon), detection_(detection) {}

    template <class Queue>
    void handle(engine::Context<Queue>& ctx, const engine::Event& e) {
        const SimTime t = e.at();
        const bool outage = e.type == kUp || e.type == kDown;
        if (outage && scheduler_.all_done() && services_.empty()) {
            return; // the run is over: failures after the last job change nothing
        }
        last_ = t;
        std::vector<Start> starts;
        // A domain becoming ready, and a service's decision that changes no domain's holder,
        // change nothing the queue waits for (Scheduler::version): no job could start that
        // could not before.
        const std::uint64_t version = scheduler_.version();
        if (e.type != kSchedule && e.type != kReady && e.type != kTick) {
            decide_at(ctx, t);
        }
        switch (e.type) {
        case kEnd:
            if (scheduler_.end(t, static_cast<std::int64_t>(e.payload & 0xffffffffu),
                               static_cast<std::uint32_t>(e.payload >> 32))) {
                last_end_ = t;
            }
            break;
        case kUp:
            scheduler_.domain_up(t, static_cast<std::int64_t>(e.payload));
            break;
        case kDown: {
            Scheduler::Down down = scheduler_.domain_down(t, static_cast<std::int64_t>(e.payload));
            starts = std::move(down.starts);
            if (down.service >= 0) {
                Service& s = services_[static_cast<std::size_t>(down.service)];
                s.advance(t);
                s.lost(t, static_cast<std::int64_t>(e.payload));
                if (down.replacement >= 0) { // noticed, then provisioned and loaded
                    ready_at(ctx, down.service, down.replacement,
                             s.grant(t, down.replacement, detection_));
                }
            }
            break;
        }
        case kReady: {
            Service& s = services_[static_cast<std::size_t>(high(e.payload))];
            s.advance(t);
            (void)s.ready(t, low(e.payload));
            break;
        }
        case kDrained: {
            Service& s = services_[static_cast<std::size_t>(high(e.payload))];
            s.advance(t);
            if (s.drained(t, low(e.payload))) {
                scheduler_.release(t, high(e.payload), {low(e.payload)});
            }
            break;
        }
        case kTick:
            tick(ctx, t, static_cast<std::int64_t>(e.payload));
            if (scheduler_.version() != version) {
                decide_at(ctx, t);
            }
            break;
        case kSubmit:
            scheduler_.submit(t, static_cast<std::int64_t>(e.payload));
            break;
        case kSchedule:
            deciding_ = false;
            starts = scheduler_.schedule(t);
            break;
        default:
            break;
        }
        for (const Start& s : starts) {
            if (s.end < horizon_) { // a segment ending past the run (or never) has no event
                ctx.schedule_at(kScheduler, s.end, kEnd, end_payload(s), 0, kEnd);
            }
        }
        if (outage && e.aux == kDrawn) {
            pull(ctx);
        }
    }

    /// Schedules the failure process's next transition (one at a time, in its order).
    template <class Sink>
    void pull(Sink& sink) {
        if (!source_) {
            return;
        }
        const std::optional<DomainTransition> next = source_();
        if (!next || next->at >= horizon_) {
            return;
        }
        const engine::EventType type = next->up ? kUp : kDown;
        sink.schedule_at(kScheduler, next->at, type, static_cast<std::uint64_t>(next->domain),
                         kDrawn, type);
    }

    /// Service `s`'s autoscaler decides at `t` and schedules its next decision.
    template <class Sink>
    void tick(Sink& ctx, SimTime t, std::int64_t index) {
        Service& s = services_[static_cast<std::size_t>(index)];
        s.advance(t);
        const std::int64_t want = s.decide(t);
        const std::int64_t have = s.active();
        if (want > have) {
            for (const std::int64_t d : scheduler_.acquire(t, index, want - have)) {
                const SimTime at = s.grant(t, d);
                if (t == SimTime::zero()) {
                    (void)s.ready(t, d); // deployed before the run
                } else {
                    ready_at(ctx, index, d, at);
                }
            }
        } else if (want < have) {
            const Service::Shrink out = s.shrink(t, have - want);
            scheduler_.release(t, index, out.now);
            for (const std::int64_t d : out.draining) {
                if (out.drain_end < horizon_) {
                    ctx.schedule_at(kScheduler, out.drain_end, kDrained, pair_payload(index, d), 0,
                                    kDrained);
                }
            }
        }
        const SimTime next = t + s.spec().scale.interval;
        if (next < horizon_) {
            ctx.schedule_at(kScheduler, next, kTick, static_cast<std::uint64_t>(index), 0, kTick);
        }
    }

    /// One decision an instant, after everything that happens at it (another one if something
    /// still happens at the instant after it).
    template <class Sink>
    void decide_at(Sink& ctx, SimTime t) {
        if (!deciding_) {
            ctx.schedule_at(kScheduler, t, kSchedule, 0, 0, kSchedule);
            deciding_ = true;
        }
    }

    template <class Sink>
    void ready_at(Sink& ctx, std::int64_t service, std::int64_t domain, SimTime at) {
        if (at < horizon_) {
            ctx.schedule_at(kScheduler, at, kReady, pair_payload(service, domain), 0, kReady);
        }
    }

    SimTime last() const { return last_; }
    SimTime last_end() const { return last_end_; }

private:
    Scheduler& scheduler_;
    std::vector<Service>& services_;
    OutageSource source_;
    SimTime horizon_;
    Duration detection_;
    SimTime last_;
    SimTime last_end_;
    bool deciding_ = false; ///< a decision is scheduled (at the current instant)
};

void check_outages(const FleetInput& in) {
    std::vector<DomainOutage> o = in.outages;
    std::sort(o.begin(), o.end(), [](const DomainOutage& a, const DomainOutage& b) {
        return a.domain != b.domain ? a.domain < b.domain : a.down < b.down;
    });
    for (std::size_t i = 0; i < o.size(); ++i) {
        if (o[i].domain < 0 || o[i].domain >= in.domains || o[i].up <= o[i].down) {
            throw std::invalid_argument("fleet: an outage of domain " +
                                        std::to_string(o[i].domain) +
                                        " is outside the pool or does not end after it starts");
        }
        if (i > 0 && o[i].domain == o[i - 1].domain && o[i].down < o[i - 1].up) {
            throw std::invalid_argument("fleet: two outages of domain " +
                                        std::to_string(o[i].domain) + " overlap");
        }
    }
}

/// The simulator's own initial events, as FleetModel::pull schedules them from a handler.
template <class Sim>
struct InitialSink {
    Sim& sim;
    void schedule_at(engine::EntityId target, SimTime at, engine::EventType type,
                     std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) {
        sim.schedule(target, at, type, payload, aux, priority);
    }
};

} // namespace

FleetResult simulate_fleet(const FleetInput& in) {
    check_outages(in);
    if (in.outage_source && !in.outages.empty()) {
        throw std::invalid_argument("fleet: give outages or a failure process, not both");
    }
    if (!in.services.empty() && in.horizon == SimTime::max()) {
        throw std::invalid_argument("fleet: a fleet with services needs a horizon");
    }
    Pool pool(in.domains, in.chips_per_domain, in.groups, in.spares);
    SchedulerSpec spec = in.scheduler;
    spec.detection = in.detection;
    spec.services.clear();
    std::vector<Service> services;
    for (const ServiceSpec& s : in.services) {
        spec.services.push_back({s.tenant, s.priority, s.borrow});
        services.emplace_back(s);
    }
    Scheduler scheduler(pool, in.jobs, spec);
    FleetModel model(scheduler, services, in.outage_source, in.horizon, in.detection);
    const engine::PartitionMap map = engine::PartitionMap::blocks(1, 1);
    // One entity in one partition: the lookahead only sets how far a window reaches.
    using Sim = engine::Simulator<FleetModel, engine::QuaternaryHeap>;
    Sim sim(model, map, Duration::from_seconds_ceil(units::kSecondsPerHour));
    for (std::size_t j = 0; j < in.jobs.size(); ++j) {
        sim.schedule(kScheduler, in.jobs[j].submit, kSubmit, j, 0, kSubmit);
    }
    for (const DomainOutage& o : in.outages) {
        const auto d = static_cast<std::uint64_t>(o.domain);
        sim.schedule(kScheduler, o.down, kDown, d, 0, kDown);
        sim.schedule(kScheduler, o.up, kUp, d, 0, kUp);
    }
    for (std::size_t s = 0; s < services.size(); ++s) {
        sim.schedule(kScheduler, SimTime::zero(), kTick, s, 0, kTick);
    }
    InitialSink<Sim> initial{sim};
    model.pull(initial);
    const engine::RunStats stats = sim.run(in.horizon, 1);
    FleetResult out;
    if (in.horizon != SimTime::max()) {
        out.end = in.horizon;
    } else {
        out.end = scheduler.all_done() ? model.last_end() : model.last();
    }
    scheduler.close(out.end);
    out.pool = pool.close(out.end);
    out.jobs = scheduler.records();
    for (Service& s : services) {
        s.close(out.end);
        out.services.push_back(s.record());
        out.service_samples.push_back(s.samples());
        out.service_changes.push_back(s.changes());
    }
    out.events = stats.events;
    return out;
}

} // namespace trnsim::fleet
