#include "trnsim/fleet/fleet.hpp"

#include "trnsim/engine/simulator.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace trnsim::fleet {

namespace {

// Event kinds, also their priority classes: at one instant ends come first, then repairs, then
// failures, then submissions.
constexpr engine::EventType kEnd = 0;
constexpr engine::EventType kUp = 1;
constexpr engine::EventType kDown = 2;
constexpr engine::EventType kSubmit = 3;
constexpr engine::EntityId kScheduler = 0;

std::uint64_t end_payload(const Start& s) {
    return static_cast<std::uint64_t>(s.job) | (std::uint64_t{s.epoch} << 32);
}

class FleetModel {
public:
    explicit FleetModel(Scheduler& scheduler) : scheduler_(scheduler) {}

    template <class Queue>
    void handle(engine::Context<Queue>& ctx, const engine::Event& e) {
        const SimTime t = e.at();
        last_ = t;
        std::vector<Start> starts;
        switch (e.type) {
        case kEnd:
            (void)scheduler_.end(t, static_cast<std::int64_t>(e.payload & 0xffffffffu),
                                 static_cast<std::uint32_t>(e.payload >> 32));
            break;
        case kUp:
            scheduler_.domain_up(t, static_cast<std::int64_t>(e.payload));
            break;
        case kDown:
            starts = scheduler_.domain_down(t, static_cast<std::int64_t>(e.payload));
            break;
        case kSubmit:
            scheduler_.submit(t, static_cast<std::int64_t>(e.payload));
            break;
        default:
            break;
        }
        const std::vector<Start> more = scheduler_.schedule(t);
        starts.insert(starts.end(), more.begin(), more.end());
        for (const Start& s : starts) {
            ctx.schedule_at(kScheduler, s.end, kEnd, end_payload(s), 0, kEnd);
        }
    }

    SimTime last() const { return last_; }

private:
    Scheduler& scheduler_;
    SimTime last_;
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

} // namespace

FleetResult simulate_fleet(const FleetInput& in) {
    check_outages(in);
    Pool pool(in.domains, in.chips_per_domain, in.groups, in.spares);
    Scheduler scheduler(pool, in.jobs, in.scheduler);
    FleetModel model(scheduler);
    const engine::PartitionMap map = engine::PartitionMap::blocks(1, 1);
    // One entity in one partition: the lookahead only sets how far a window reaches.
    engine::Simulator<FleetModel, engine::QuaternaryHeap> sim(
        model, map, Duration::from_seconds_ceil(units::kSecondsPerHour));
    for (std::size_t j = 0; j < in.jobs.size(); ++j) {
        sim.schedule(kScheduler, in.jobs[j].submit, kSubmit, j, 0, kSubmit);
    }
    for (const DomainOutage& o : in.outages) {
        const auto d = static_cast<std::uint64_t>(o.domain);
        sim.schedule(kScheduler, o.down, kDown, d, 0, kDown);
        sim.schedule(kScheduler, o.up, kUp, d, 0, kUp);
    }
    const engine::RunStats stats = sim.run(in.horizon, 1);
    FleetResult out;
    out.end = in.horizon == SimTime::max() ? model.last() : in.horizon;
    scheduler.close(out.end);
    out.pool = pool.close(out.end);
    out.jobs = scheduler.records();
    out.events = stats.events;
    return out;
}

} // namespace trnsim::fleet
