#include "trnsim/network/collective_sim.hpp"

#include "trnsim/engine/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace trnsim::network {

namespace {

enum Type : engine::EventType { kStart = 0, kFlowsArrived = 1, kPhaseDone = 2, kWake = 3 };

/// The engine model: entities 0..J-1 are the collectives, entity J wakes the fabric.
class Model {
public:
    Model(const topology::Fabric& fabric, std::vector<CollectiveJob> jobs, const LocalCosts& local,
          const CollectiveSimOptions& options, std::uint32_t partitions)
        : jobs_(std::move(jobs)), reuse_(options.reuse_identical_phases && jobs_.size() == 1),
          fabric_(fabric, partitions, static_cast<engine::EntityId>(jobs_.size()), kWake,
                  local.hbm, local.step_latency),
          state_(jobs_.size()) {
        for (std::size_t j = 0; j < jobs_.size(); ++j) {
            state_[j].outcome.start = jobs_[j].start;
            state_[j].outcome.phases = jobs_[j].plan.total_phases();
        }
    }

    std::size_t jobs() const { return jobs_.size(); }
    std::int64_t start_of(std::size_t j) const { return jobs_[j].start.ns(); }
    const FlowNetwork& fabric() const { return fabric_; }

    template <class Q>
    void handle(engine::Context<Q>& ctx, const engine::Event& e) {
        if (e.type == kWake) {
            return; // only makes a window edge happen
        }
        State& s = state_[ctx.self()];
        const CollectivePlan& plan = jobs_[ctx.self()].plan;
        switch (e.type) {
        case kStart:
            start_phase(ctx, s, plan);
            return;
        case kFlowsArrived: {
            // The transfers are done; the phase also waits for its overlapped on-chip work.
            const Phase& p = plan.phases[s.phase];
            if (reuse_) {
                // Alone on the fabric, the same flows take the same time.
                transfers_.emplace(p.signature, ctx.now_ns() - s.phase_start);
            }
            ctx.schedule_at_ns(ctx.self(),
                               std::max(ctx.now_ns() + overhead_ns(p), s.phase_start + local_ns(p)),
                               kPhaseDone);
            return;
        }
        case kPhaseDone: {
            const Phase& p = plan.phases[s.phase];
            ++s.repeat_done;
            if (reuse_) {
                // The remaining repeats are the same phase again: same duration.
                const std::int64_t d = ctx.now_ns() - s.phase_start;
                if (s.repeat_done < p.repeat) {
                    s.repeat_done = p.repeat;
                    ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + d * (p.repeat - 1), kStart);
                    return;
                }
            }
            if (s.repeat_done >= p.repeat) {
                ++s.phase;
                s.repeat_done = 0;
            }
            start_phase(ctx, s, plan);
            return;
        }
        default:
            return;
        }
    }

    template <class Q>
    void window_edge(engine::WindowEdge<Q>& edge) {
        fabric_.resolve_at(edge, static_cast<engine::EntityId>(jobs_.size()));
    }

    std::vector<CollectiveOutcome> outcomes() const {
        std::vector<CollectiveOutcome> out;
        for (const State& s : state_) {
            out.push_back(s.outcome);
        }
        return out;
    }

private:
    struct State {
        std::size_t phase = 0;
        std::uint32_t repeat_done = 0;
        std::int64_t phase_start = 0;
        CollectiveOutcome outcome;
    };

    static std::int64_t local_ns(const Phase& p) {
        return Duration::from_seconds_ceil(p.local_seconds).ns();
    }
    static std::int64_t overhead_ns(const Phase& p) {
        return Duration::from_seconds_ceil(p.overhead_seconds).ns();
    }

public:
    /// When job j's first phase starts: after the collective's launch.
    std::int64_t first_phase_of(std::size_t j) const {
        return jobs_[j].start.ns() + Duration::from_seconds_ceil(jobs_[j].plan.launch_seconds).ns();
    }

private:

    template <class Q>
    void start_phase(engine::Context<Q>& ctx, State& s, const CollectivePlan& plan) {
        if (s.repeat_done > 0 && s.repeat_done >= plan.phases[s.phase].repeat) {
            ++s.phase;
            s.repeat_done = 0;
        }
        if (s.phase >= plan.phases.size()) {
            s.outcome.end = SimTime::from_ns(ctx.now_ns());
            return;
        }
        s.phase_start = ctx.now_ns();
        const Phase& p = plan.phases[s.phase];
        if (reuse_ && s.repeat_done == 0) {
            if (auto it = transfers_.find(p.signature); it != transfers_.end()) {
                // These flows ran before, alone: the transfers take the same time.
                s.repeat_done = p.repeat;
                const std::int64_t d = std::max(it->second + overhead_ns(p), local_ns(p));
                ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + d * p.repeat, kStart);
                return;
            }
        }
        ++s.outcome.simulated_phases;
        fabric_.start_group(ctx.partition(), ctx.now_ns(), ctx.self(), kFlowsArrived, s.phase,
                            p.flows);
    }

    std::vector<CollectiveJob> jobs_;
    bool reuse_;
    FlowNetwork fabric_;
    std::vector<State> state_;
    std::unordered_map<std::uint64_t, std::int64_t> transfers_; ///< by phase signature
};

std::int64_t min_latency(const topology::Fabric& f) {
    std::int64_t m = std::numeric_limits<std::int64_t>::max();
    for (std::int32_t l : f.latency_ns()) {
        if (l > 0) {
            m = std::min<std::int64_t>(m, l);
        }
    }
    return m == std::numeric_limits<std::int64_t>::max() ? 1000 : m;
}

} // namespace

std::vector<CollectiveOutcome> simulate_collectives(const topology::Fabric& fabric,
                                                    std::vector<CollectiveJob> jobs,
                                                    const LocalCosts& local,
                                                    const CollectiveSimOptions& options,
                                                    CollectiveSimStats* stats) {
    if (jobs.empty()) {
        return {};
    }
    // One partition per collective; the fabric's wake entity shares the first.
    const auto entities = static_cast<std::uint32_t>(jobs.size() + 1);
    std::vector<std::uint32_t> starts;
    for (std::uint32_t j = 0; j < jobs.size(); ++j) {
        starts.push_back(j == 0 ? 0 : j + 1);
    }
    const engine::PartitionMap map = engine::PartitionMap::from_starts(entities, starts);
    Model model(fabric, std::move(jobs), local, options, map.partitions());
    const Duration lookahead = Duration::from_ns(options.exact ? 1 : min_latency(fabric));
    engine::Simulator<Model> sim(model, map, lookahead);
    for (std::uint32_t j = 0; j < model.jobs(); ++j) {
        sim.schedule(j, SimTime::from_ns(model.first_phase_of(j)), kStart);
    }
    const engine::RunStats r = sim.run(SimTime::max(), options.threads);
    if (stats) {
        stats->flows = model.fabric().flows_started();
        stats->solves = model.fabric().solves();
        stats->windows = r.windows;
        stats->events = r.events;
    }
    return model.outcomes();
}

} // namespace trnsim::network
