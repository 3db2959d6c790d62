// PHOLD (Fujimoto 1990), the standard synthetic benchmark of parallel discrete-event engines,
// as trnsim runs it.
//
// N entities start with E events each. Handling an event at entity i at time t schedules one
// new event: with probability r to a uniformly chosen other entity ("remote"), else to i
// itself, at t + lookahead + Exp(mean). The number of pending events stays N x E.
//
// Every random choice comes from entity i's own counter-based stream (one Philox block per
// handled event), so the events each entity handles, and their order, are a function of the
// parameters alone. The same model therefore runs on the engine (any queue, partitioning and
// thread count) and on the naive baseline (one std::priority_queue, sequential), and every
// run must produce identical per-entity fingerprints: a hash of the (time, type) sequence
// each entity handled.
#pragma once

#include "trnsim/engine/rng.hpp"
#include "trnsim/engine/simulator.hpp"

#include <chrono>
#include <cstdint>
#include <queue>
#include <vector>

namespace trnsim::phold {

struct Config {
    std::uint32_t entities = 1'000'000;
    std::uint32_t events_per_entity = 1;
    double remote = 0.1;
    std::int64_t lookahead_ns = 100;
    std::int64_t mean_ns = 900; ///< of the exponential part; mean delay = lookahead + mean
    std::int64_t end_ns = 20'000;
    std::uint64_t seed = 1;
};

inline constexpr engine::StreamKind kStream = 0x70686f6c; // "phol"

class Model {
public:
    explicit Model(const Config& c) : c_(c), state_(c.entities) {}

    const Config& config() const { return c_; }

    /// Time of initial event k of entity e (uses e's stream).
    std::int64_t initial_time(engine::EntityId e) {
        const auto b = engine::philox_block(c_.seed, kStream, e, state_[e].draws++);
        return delay(b[2], b[3]);
    }

    struct Next {
        engine::EntityId target;
        std::int64_t time;
    };

    /// Handles one event: updates the entity's fingerprint and draws its next event.
    Next react(engine::EntityId self, std::int64_t now, engine::EventType type) {
        State& s = state_[self];
        s.fingerprint = (s.fingerprint ^ static_cast<std::uint64_t>(now)) * 0x100000001b3ull;
        s.fingerprint = (s.fingerprint ^ type) * 0x100000001b3ull;
        ++s.handled;
        const auto b = engine::philox_block(c_.seed, kStream, self, s.draws++);
        engine::EntityId target = self;
        if (c_.entities > 1 && engine::uniform01(b[0], 0) < c_.remote) {
            target = engine::uniform_below(b[1], c_.entities - 1);
            target += target >= self ? 1 : 0; // any entity but self
        }
        return {target, now + delay(b[2], b[3])};
    }

    /// Engine hook: the next event's entity state is fetched while this one is handled.
    void prefetch(engine::EntityId e) const { __builtin_prefetch(&state_[e], 1); }

    /// Engine handler.
    template <class Queue>
    void handle(engine::Context<Queue>& ctx, const engine::Event& e) {
        const Next n = react(ctx.self(), ctx.now_ns(), e.type);
        ctx.schedule_at_ns(n.target, n.time, 0);
    }

    std::vector<std::uint64_t> fingerprints() const {
        std::vector<std::uint64_t> f;
        f.reserve(state_.size());
        for (const auto& s : state_) {
            f.push_back(s.fingerprint);
        }
        return f;
    }
    std::vector<std::uint32_t> handled() const {
        std::vector<std::uint32_t> h;
        h.reserve(state_.size());
        for (const auto& s : state_) {
            h.push_back(s.handled);
        }
        return h;
    }
    std::uint32_t handled(engine::EntityId e) const { return state_[e].handled; }
    std::uint64_t total_handled() const {
        std::uint64_t n = 0;
        for (const auto& s : state_) {
            n += s.handled;
        }
        return n;
    }

    std::size_t state_bytes() const { return state_.size() * sizeof(State); }

private:
    std::int64_t delay(std::uint32_t hi, std::uint32_t lo) const {
        const double x = engine::exponential_from(engine::uniform01(hi, lo),
                                                  static_cast<double>(c_.mean_ns));
        return c_.lookahead_ns + static_cast<std::int64_t>(x);
    }

    /// Per entity; the fields one event touches share a cache line.
    struct State {
        std::uint64_t fingerprint = 0xcbf29ce484222325ull; // FNV offset basis
        std::uint32_t draws = 0;   ///< Philox blocks used
        std::uint32_t handled = 0; ///< events handled
    };

    Config c_;
    std::vector<State> state_;
};

/// Loads the initial events into a simulator.
template <class Sim>
void seed_events(Model& m, Sim& sim) {
    const Config& c = m.config();
    for (engine::EntityId e = 0; e < c.entities; ++e) {
        for (std::uint32_t k = 0; k < c.events_per_entity; ++k) {
            sim.schedule(e, SimTime::from_ns(m.initial_time(e)), 0);
        }
    }
}

/// Runs PHOLD on the engine; returns its statistics.
template <class Queue>
engine::RunStats run_engine(Model& m, std::uint32_t partitions, int threads,
                            engine::Sharing sharing = engine::Sharing::adaptive) {
    const Config& c = m.config();
    engine::Simulator<Model, Queue> sim(m, engine::PartitionMap::blocks(c.entities, partitions),
                                        Duration::from_ns(c.lookahead_ns));
    seed_events(m, sim);
    return sim.run(SimTime::from_ns(c.end_ns), threads, sharing);
}

/// The naive baseline: one std::priority_queue for all entities, one thread, the same event
/// keys (time, priority, source, per-source sequence) and the same model. Returns events
/// handled; `loop_seconds`, when given, receives the time of the event loop alone.
inline std::uint64_t run_baseline(Model& m, double* loop_seconds = nullptr) {
    const Config& c = m.config();
    struct Later {
        bool operator()(const engine::Event& a, const engine::Event& b) const {
            return engine::before(b, a);
        }
    };
    std::priority_queue<engine::Event, std::vector<engine::Event>, Later> queue;
    std::vector<std::uint32_t> sequence(c.entities, 0);
    for (engine::EntityId e = 0; e < c.entities; ++e) {
        for (std::uint32_t k = 0; k < c.events_per_entity; ++k) {
            queue.push({m.initial_time(e), engine::make_order(0, e, sequence[e]++), e, 0, 0, 0});
        }
    }
    std::uint64_t handled = 0;
    const auto start = std::chrono::steady_clock::now();
    while (!queue.empty() && queue.top().time < c.end_ns) {
        const engine::Event e = queue.top();
        queue.pop();
        const Model::Next n = m.react(e.target, e.time, e.type);
        queue.push({n.time, engine::make_order(0, e.target, sequence[e.target]++), n.target, 0, 0,
                    0});
        ++handled;
    }
    if (loop_seconds) {
        *loop_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return handled;
}

} // namespace trnsim::phold
