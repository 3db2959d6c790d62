// The discrete-event simulator: a model's entities, partitioned, run by the window driver.
//
// A model is a class with one handler, called for every event of its entities:
//
//     struct MyModel {
//         void handle(engine::Context<Queue>& ctx, const engine::Event& e);  // switch on e.type
//         // optional, between windows, single-threaded:
//         void window_edge(engine::WindowEdge<Queue>& edge);
//         // optional: prefetch the state the next handled entity will touch
//         void prefetch(engine::EntityId e) const;
//     };
//
// While an event is handled, the engine prefetches the state of the entity of the next event
// (its own slot and, through the model's prefetch hook, the model's): at millions of entities
// the handler's first access to an entity is a cache miss, and this overlaps it with the
// current handler.
//
// The simulator is a template on the model and the queue, so the handler is called directly
// (no virtual call per event); entity state lives in the model's own flat arrays indexed by
// EntityId. Entities are assigned to partitions by a PartitionMap fixed by the model (one
// UltraServer, one instance, one block of entities), never by the thread count.
//
// Engine state per entity: one 16-byte slot with the time of its last handled event (checks
// causality on every event), its scheduling sequence number and its partition. The fields a
// handled event touches share one cache line, which matters at millions of entities.
//
// Guarantees: each entity handles its events in (time, priority, source, sequence) order; no
// entity handles an event earlier than one it already handled (else CausalityError); an event
// for another partition earlier than the current window's end is a LookaheadError (the model
// promised a lookahead it does not keep). Both are std::logic_error and stop the run.
#pragma once

#include "trnsim/engine/event.hpp"
#include "trnsim/engine/metrics.hpp"
#include "trnsim/engine/queue.hpp"
#include "trnsim/engine/window_driver.hpp"

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::engine {

class CausalityError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

class LookaheadError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

/// Which partition owns each entity.
class PartitionMap {
public:
    /// `entities` split into `partitions` contiguous blocks of (almost) equal size.
    static PartitionMap blocks(std::uint32_t entities, std::uint32_t partitions);
    /// Contiguous blocks starting at `first[i]` (first[0] == 0, increasing).
    static PartitionMap from_starts(std::uint32_t entities, const std::vector<std::uint32_t>& first);
    /// Entity e in partition owner[e] (each of 0 .. partitions - 1 owning at least one).
    static PartitionMap from_owners(const std::vector<std::uint32_t>& owner,
                                    std::uint32_t partitions);

    std::uint32_t partition_of(EntityId e) const { return of_[e]; }
    std::uint32_t partitions() const { return partitions_; }
    std::uint32_t entities() const { return static_cast<std::uint32_t>(of_.size()); }

private:
    std::vector<std::uint32_t> of_;
    std::uint32_t partitions_ = 0;
};

inline PartitionMap PartitionMap::blocks(std::uint32_t entities, std::uint32_t partitions) {
    partitions = std::max<std::uint32_t>(1, std::min(partitions, std::max<std::uint32_t>(entities, 1)));
    std::vector<std::uint32_t> first(partitions);
    for (std::uint32_t p = 0; p < partitions; ++p) {
        first[p] = static_cast<std::uint32_t>(std::uint64_t{entities} * p / partitions);
    }
    return from_starts(entities, first);
}

inline PartitionMap PartitionMap::from_starts(std::uint32_t entities,
                                              const std::vector<std::uint32_t>& first) {
    if (entities >= kMaxEntities) {
        throw std::invalid_argument("engine: at most 2^26 entities");
    }
    if (first.empty() || first[0] != 0) {
        throw std::invalid_argument("engine: partition starts must begin at entity 0");
    }
    PartitionMap m;
    m.partitions_ = static_cast<std::uint32_t>(first.size());
    m.of_.resize(entities);
    for (std::uint32_t p = 0; p < m.partitions_; ++p) {
        const std::uint32_t end = p + 1 < m.partitions_ ? first[p + 1] : entities;
        if (end < first[p] || end > entities) {
            throw std::invalid_argument("engine: partition starts must increase");
        }
        std::fill(m.of_.begin() + first[p], m.of_.begin() + end, p);
    }
    return m;
}

inline PartitionMap PartitionMap::from_owners(const std::vector<std::uint32_t>& owner,
                                              std::uint32_t partitions) {
    if (owner.size() >= kMaxEntities) {
        throw std::invalid_argument("engine: at most 2^26 entities");
    }
    std::vector<char> used(partitions, 0);
    for (const std::uint32_t p : owner) {
        if (p >= partitions) {
            throw std::invalid_argument("engine: an entity's partition is out of range");
        }
        used[p] = 1;
    }
    if (partitions == 0 || std::find(used.begin(), used.end(), 0) != used.end()) {
        throw std::invalid_argument("engine: every partition must own an entity");
    }
    PartitionMap m;
    m.partitions_ = partitions;
    m.of_ = owner;
    return m;
}

template <class Queue>
class SimulatorCore;
template <class Model, class Queue = CalendarQueue>
class Simulator;
template <class Queue>
class TenantSet;

/// What a handler sees: the current time and entity, and the means to schedule events and
/// record metrics. Valid only during the handler call.
template <class Queue>
class Context {
public:
    SimTime now() const { return SimTime::from_ns(now_); }
    std::int64_t now_ns() const { return now_; }
    /// The entity handling the event, and its partition, numbered as the model numbers them
    /// (a tenant of a TenantSet numbers its own from 0; engine/tenants.hpp).
    EntityId self() const { return self_ - entity_base_; }
    std::uint32_t partition() const { return partition_ - partition_base_; }

    /// Schedules an event `delay` after now for `target`.
    void schedule(EntityId target, Duration delay, EventType type, std::uint64_t payload = 0,
                  std::uint16_t aux = 0, std::uint32_t priority = 0) {
        schedule_at_ns(target, now_ + delay.ns(), type, payload, aux, priority);
    }
    void schedule_at(EntityId target, SimTime time, EventType type, std::uint64_t payload = 0,
                     std::uint16_t aux = 0, std::uint32_t priority = 0) {
        schedule_at_ns(target, time.ns(), type, payload, aux, priority);
    }
    void schedule_at_ns(EntityId target, std::int64_t time, EventType type,
                        std::uint64_t payload = 0, std::uint16_t aux = 0,
                        std::uint32_t priority = 0) {
        core_->send(*this, target + entity_base_, time, type, payload, aux, priority);
    }

    void record(MetricId metric, double value) {
        core_->record(partition_, self_, metric, now_, value);
    }

private:
    friend class SimulatorCore<Queue>;
    friend class TenantSet<Queue>;
    SimulatorCore<Queue>* core_ = nullptr;
    std::uint32_t partition_ = 0;
    std::int64_t window_end_ = 0;
    std::int64_t now_ = 0;
    EntityId self_ = 0;
    /// The first entity and partition of the tenant being handled (0 outside a TenantSet).
    EntityId entity_base_ = 0;
    std::uint32_t partition_base_ = 0;
};

/// What the window-edge hook sees: all partitions are stopped; it may schedule events at or
/// after the window's end for any entity (as `source`).
template <class Queue>
class WindowEdge {
public:
    SimTime window_end() const { return SimTime::from_ns(end_); }
    /// Runs work(i) for every i in [0, n) on the run's threads (all partitions are stopped),
    /// returning when all are done. The pieces must not touch the engine or each other's data.
    void parallel_for(std::uint32_t n, const std::function<void(std::uint32_t)>& work) {
        if (team_ != nullptr) {
            team_->parallel_for(n, work);
        } else {
            for (std::uint32_t i = 0; i < n; ++i) {
                work(i);
            }
        }
    }
    void schedule_at(EntityId source, EntityId target, SimTime time, EventType type,
                     std::uint64_t payload = 0, std::uint16_t aux = 0,
                     std::uint32_t priority = 0) {
        if (time.ns() < end_) {
            throw LookaheadError("engine: a window-edge hook scheduled an event before the "
                                 "window's end");
        }
        core_->inject(source + entity_base_, target + entity_base_, time.ns(), type, payload,
                      aux, priority);
        scheduled_ = true;
    }

private:
    friend class SimulatorCore<Queue>;
    template <class M, class Q>
    friend class Simulator;
    friend class TenantSet<Queue>;
    SimulatorCore<Queue>* core_ = nullptr;
    EdgeTeam* team_ = nullptr;
    std::int64_t end_ = 0;
    bool scheduled_ = false;
    EntityId entity_base_ = 0; ///< the first entity of the tenant whose hook runs
};

/// Statistics of one run.
struct RunStats {
    std::uint64_t events = 0;       ///< handled
    std::uint64_t remote_events = 0; ///< sent to another partition
    std::uint64_t windows = 0;
    std::uint64_t shared_windows = 0; ///< windows run with the helper threads (timing-dependent)
    int threads = 1;
    std::uint64_t pending = 0; ///< left in the queues (at or after `until`)
};

/// The queue-specific, model-independent part of the simulator.
template <class Queue>
class SimulatorCore {
public:
    SimulatorCore(const PartitionMap& map, Duration lookahead, MetricSink* sink)
        : partitions_(map.partitions()), lookahead_(lookahead.ns()), sink_(sink),
          slots_(map.entities()) {
        if (lookahead_ <= 0) {
            throw std::invalid_argument("engine: the lookahead must be positive");
        }
        for (EntityId e = 0; e < map.entities(); ++e) {
            slots_[e].partition = map.partition_of(e);
        }
        parts_.reserve(partitions_);
        for (std::uint32_t p = 0; p < partitions_; ++p) {
            parts_.push_back(std::make_unique<Part>(make_queue(), partitions_));
        }
        if (sink_) {
            sink_->set_partitions(partitions_);
        }
    }

    std::uint32_t partitions() const { return partitions_; }
    std::uint32_t entities() const { return static_cast<std::uint32_t>(slots_.size()); }
    std::uint32_t partition_of(EntityId e) const { return slots_[e].partition; }
    std::int64_t lookahead_ns() const { return lookahead_; }

    /// An event before the run (its source is the target itself).
    void inject(EntityId source, EntityId target, std::int64_t time, EventType type,
                std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) {
        check_entity(target);
        check_entity(source);
        parts_[slots_[target].partition]->queue.push(
            {time, make_order(priority, source, slots_[source].sequence++), target, type, aux,
             payload});
    }

    void send(const Context<Queue>& ctx, EntityId target, std::int64_t time, EventType type,
              std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) {
        const Event e{time, make_order(priority, ctx.self_, slots_[ctx.self_].sequence++), target,
                      type,  aux,   payload};
        // An entity's own partition is known; only other targets need a lookup.
        const std::uint32_t dst = target == ctx.self_ ? ctx.partition_ : slots_[target].partition;
        Part& part = *parts_[ctx.partition_];
        if (dst == ctx.partition_) {
            if (time < ctx.now_) {
                throw CausalityError("engine: entity " + std::to_string(ctx.self_) +
                                     " scheduled an event in the past");
            }
            part.queue.push(e);
        } else {
            if (time < ctx.window_end_) {
                throw LookaheadError(
                    "engine: entity " + std::to_string(ctx.self_) + " sent an event to entity " +
                    std::to_string(target) + " of another partition " +
                    std::to_string(time - ctx.now_) + " ns ahead, below the lookahead of " +
                    std::to_string(lookahead_) + " ns");
            }
            if (!part.sent_remote) {
                // The first remote event of this partition in this window: list it among the
                // senders, so delivery visits only partitions that sent something.
                part.sent_remote = true;
                senders_[senders_count_.fetch_add(1, std::memory_order_relaxed)] = ctx.partition_;
            }
            part.outbox[dst].push_back(e);
            ++part.remote;
        }
    }

    void record(std::uint32_t partition, EntityId e, MetricId m, std::int64_t t, double v) {
        if (sink_) {
            sink_->record(partition, e, m, t, v);
        }
    }

    /// Events partition p has handled so far (over every run() call).
    std::uint64_t handled(std::uint32_t p) const { return parts_[p]->processed; }

    std::uint64_t pending() const {
        std::uint64_t n = 0;
        for (const auto& p : parts_) {
            n += p->queue.size();
        }
        return n;
    }

    /// Bytes held by queues and outboxes (including spare capacity) and by per-entity state.
    std::size_t queue_bytes() const {
        std::size_t n = 0;
        for (const auto& p : parts_) {
            n += p->queue.memory_bytes() + p->outbox.capacity() * sizeof(std::vector<Event>);
            for (const auto& b : p->outbox) {
                n += b.capacity() * sizeof(Event);
            }
        }
        return n;
    }
    std::size_t entity_state_bytes() const { return slots_.size() * sizeof(Slot); }

protected:
    struct Slot {
        std::int64_t last = 0;       ///< time of the last handled event
        std::uint32_t sequence = 0;  ///< scheduling calls so far (as a source)
        std::uint32_t partition = 0; ///< owning partition
    };
    static_assert(sizeof(Slot) == 16);

    struct Part {
        Part(Queue q, std::uint32_t partitions) : queue(std::move(q)), outbox(partitions) {}
        Queue queue;
        std::vector<std::vector<Event>> outbox; ///< by destination partition
        std::uint64_t processed = 0;
        std::uint64_t remote = 0;
        bool sent_remote = false; ///< listed in senders_ this window
    };

    Queue make_queue() const {
        if constexpr (std::is_same_v<Queue, CalendarQueue>) {
            return CalendarQueue(CalendarQueue::shift_for(lookahead_));
        } else {
            return Queue();
        }
    }

    void check_entity(EntityId e) const {
        if (e >= slots_.size()) {
            throw std::out_of_range("engine: no entity " + std::to_string(e));
        }
    }

    /// Handles partition p's events before window_end with `handle(ctx, event)`, calling
    /// `prefetch(entity)` for the entity of the event after the current one.
    template <class Handler, class Prefetch>
    void run_partition(std::uint32_t p, std::int64_t window_end, Handler&& handle,
                       Prefetch&& prefetch) {
        Part& part = *parts_[p];
        Context<Queue> ctx;
        ctx.core_ = this;
        ctx.partition_ = p;
        ctx.window_end_ = window_end;
        Event e;
        while (part.queue.pop_before(window_end, e)) {
            Slot& slot = slots_[e.target];
            if (e.time < slot.last) {
                throw CausalityError("engine: entity " + std::to_string(e.target) +
                                     " got an event older than its last one");
            }
            slot.last = e.time;
            if (const Event* next = part.queue.peek()) {
                __builtin_prefetch(&slots_[next->target], 1);
                prefetch(next->target);
            }
            ctx.now_ = e.time;
            ctx.self_ = e.target;
            handle(ctx, e);
            ++part.processed;
        }
    }

    /// Moves the events sent to partition p into its queue: O(senders), not O(partitions).
    /// The senders' order does not matter: the queue orders events by key.
    std::int64_t deliver_to(std::uint32_t p) {
        Part& part = *parts_[p];
        const std::uint32_t senders = senders_count_.load(std::memory_order_relaxed);
        for (std::uint32_t i = 0; i < senders; ++i) {
            auto& box = parts_[senders_[i]]->outbox[p];
            for (const Event& e : box) {
                part.queue.push(e);
            }
            box.clear();
        }
        return part.queue.min_time();
    }

    /// Forgets this window's senders (between windows, on one thread).
    void reset_senders() {
        const std::uint32_t senders = senders_count_.load(std::memory_order_relaxed);
        for (std::uint32_t i = 0; i < senders; ++i) {
            parts_[senders_[i]]->sent_remote = false;
        }
        senders_count_.store(0, std::memory_order_relaxed);
    }

    std::uint32_t partitions_;
    std::int64_t lookahead_;
    MetricSink* sink_;
    std::vector<Slot> slots_; ///< per entity
    std::vector<std::unique_ptr<Part>> parts_;
    /// Partitions that sent remote events in the current window, in no particular order.
    std::vector<std::uint32_t> senders_ = std::vector<std::uint32_t>(partitions_);
    std::atomic<std::uint32_t> senders_count_{0};
};

template <class Model, class Queue>
class Simulator final : public SimulatorCore<Queue>, private WindowedModel {
    using Core = SimulatorCore<Queue>;

public:
    Simulator(Model& model, const PartitionMap& map, Duration lookahead,
              MetricSink* sink = nullptr)
        : Core(map, lookahead, sink), model_(model) {}

    /// An initial event for `target` at `time` (before run()).
    void schedule(EntityId target, SimTime time, EventType type, std::uint64_t payload = 0,
                  std::uint16_t aux = 0, std::uint32_t priority = 0) {
        Core::inject(target, target, time.ns(), type, payload, aux, priority);
    }

    /// Runs until no event is due before `until`, on `threads` threads (0: default);
    /// `sharing` decides which windows the helper threads join (never the results).
    RunStats run(SimTime until, int threads = 1, Sharing sharing = Sharing::adaptive) {
        DriverConfig cfg;
        cfg.threads = threads;
        cfg.sharing = sharing;
        cfg.lookahead = Duration::from_ns(this->lookahead_);
        cfg.until = until;
        const DriverStats d = run_windows(*this, cfg);
        RunStats s;
        s.windows = d.windows;
        s.shared_windows = d.shared_windows;
        s.threads = d.threads;
        for (const auto& p : this->parts_) {
            s.events += p->processed;
            s.remote_events += p->remote;
        }
        s.pending = this->pending();
        return s;
    }

private:
    std::uint32_t partition_count() const override { return this->partitions_; }

    std::uint64_t process(std::uint32_t p, std::int64_t window_end) override {
        const std::uint64_t before = this->parts_[p]->processed;
        this->run_partition(
            p, window_end, [this](Context<Queue>& ctx, const Event& e) { model_.handle(ctx, e); },
            [this](EntityId next) { prefetch(next); });
        return this->parts_[p]->processed - before;
    }

    void prefetch(EntityId next) const {
        if constexpr (requires(const Model& m, EntityId x) { m.prefetch(x); }) {
            model_.prefetch(next);
        } else {
            (void)next;
        }
    }

    std::int64_t deliver(std::uint32_t p) override { return this->deliver_to(p); }

    bool sent_remote() const override {
        return this->senders_count_.load(std::memory_order_relaxed) > 0;
    }

    std::int64_t next_time(std::uint32_t p) override { return this->parts_[p]->queue.min_time(); }

    bool window_edge(std::int64_t window_end, EdgeTeam& team) override {
        this->reset_senders();
        if constexpr (requires(Model& m, WindowEdge<Queue>& w) { m.window_edge(w); }) {
            WindowEdge<Queue> edge;
            edge.core_ = this;
            edge.team_ = &team;
            edge.end_ = window_end;
            model_.window_edge(edge);
            return edge.scheduled_;
        } else {
            (void)window_end;
            (void)team;
            return false;
        }
    }

    Model& model_;
};

} // namespace trnsim::engine
