// Several models on one engine: a TenantSet runs tenants (each a model with its own entities,
// partitions, lookahead and clock) in one Simulator (ADR 0002, "Tenants on one engine").
//
// Each tenant numbers its entities and partitions from 0, as it would alone; the set gives it
// a contiguous range of the engine's entities and of its partitions, in the order the tenants
// were added, and translates on the way in and out (Context::self(), Context::schedule, the
// window-edge hook), so a tenant's code is the code it runs alone. A partition belongs to one
// tenant, so the set finds the tenant of an event from its partition in O(1); the price of
// composing is one virtual call per event.
//
// Lookahead: the engine's is the smallest of the tenants'. A tenant's lookahead only promises
// the shortest delay of what it sends to another of its partitions; a smaller window changes
// nothing a tenant computes unless it resolves shared state at window edges (the hook runs
// at the set's windows, which are at most as long as its own).
//
// Clocks: a tenant that models "B runs a fixed delay behind A" keeps that delay in the events
// it sends (its own clock), never in the engine's lookahead. A tenant may also need the run to
// pause at a time of its own (pause_at) to do work between runs (resume), as the reliability
// run simulation queues each chunk's failures; the set stops the engine at the earliest pause
// of any tenant and resumes only the tenants due then. Once a tenant says it is done, the set
// drops its later events: its results are those of its own run, whatever the others do after.
//
// Results: each tenant's events are handled in the order they would be alone (entity order
// within a tenant is kept, and tenants send nothing to each other), so a tenant's results in
// a set equal its results alone, for any thread count (tests/unit/engine/tenants_test.cpp).
#pragma once

#include "trnsim/engine/simulator.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace trnsim::engine {

/// Puts a tenant's events into the engine before a run or between runs (outside handlers):
/// entity ids are the tenant's own.
template <class Queue>
class Injector {
public:
    Injector(SimulatorCore<Queue>& core, EntityId base) : core_(core), base_(base) {}
    /// An event for `target` at `time` (its source is the target itself).
    void at(EntityId target, std::int64_t time, EventType type, std::uint64_t payload = 0,
            std::uint16_t aux = 0, std::uint32_t priority = 0) {
        core_.inject(base_ + target, base_ + target, time, type, payload, aux, priority);
    }

private:
    SimulatorCore<Queue>& core_;
    EntityId base_;
};

/// One model of a TenantSet.
template <class Queue>
class Tenant {
public:
    static constexpr std::int64_t kNoPause = std::numeric_limits<std::int64_t>::max();

    virtual ~Tenant() = default;
    /// Its entities and their partitions, numbered from 0.
    virtual PartitionMap partition_map() const = 0;
    /// The smallest delay of an event it sends to another of its partitions.
    virtual Duration lookahead() const = 0;
    /// Its first events.
    virtual void start(Injector<Queue>& in) = 0;
    virtual void handle(Context<Queue>& ctx, const Event& e) = 0;
    /// The engine is about to handle an event of entity `e` (its own id): prefetch its state.
    virtual void prefetch(EntityId e) const { (void)e; }
    /// Whether it has a window-edge hook (the set calls window_edge only then).
    virtual bool has_window_edge() const { return false; }
    virtual void window_edge(WindowEdge<Queue>& edge) { (void)edge; }
    /// The time the engine must stop before, for its work between runs (kNoPause: none).
    virtual std::int64_t pause_at() const { return kNoPause; }
    /// At its pause (no event at or after pause_at() handled yet): its work between runs; it
    /// may inject events at or after the pause.
    virtual void resume(Injector<Queue>& in) { (void)in; }
    /// Finished: its later events are dropped.
    virtual bool done() const { return false; }
};

template <class Queue>
class TenantSet {
public:
    /// Adds a tenant (it must outlive the set); returns its index.
    std::size_t add(Tenant<Queue>& tenant) {
        const PartitionMap map = tenant.partition_map();
        Slot s;
        s.tenant = &tenant;
        s.first_entity = entities_;
        s.first_partition = partitions_;
        s.partitions = map.partitions();
        entities_ += map.entities();
        partitions_ += map.partitions();
        for (EntityId e = 0; e < map.entities(); ++e) {
            owner_.push_back(s.first_partition + map.partition_of(e));
        }
        for (std::uint32_t p = 0; p < map.partitions(); ++p) {
            tenant_of_partition_.push_back(static_cast<std::uint32_t>(slots_.size()));
        }
        lookahead_ = slots_.empty() ? tenant.lookahead() : std::min(lookahead_, tenant.lookahead());
        edges_ = edges_ || tenant.has_window_edge();
        slots_.push_back(s);
        return slots_.size() - 1;
    }

    std::size_t size() const { return slots_.size(); }
    /// The engine's lookahead: the smallest of the tenants'.
    Duration lookahead() const { return lookahead_; }

    /// Runs every tenant to its end on `threads` threads (0: the engine's default).
    RunStats run(int threads) {
        if (slots_.empty()) {
            throw std::invalid_argument("engine: a tenant set needs at least one tenant");
        }
        const PartitionMap map =
            PartitionMap::from_owners(owner_, static_cast<std::uint32_t>(partitions_));
        Simulator<TenantSet, Queue> sim(*this, map, lookahead_);
        for (Slot& s : slots_) {
            Injector<Queue> in(sim, s.first_entity);
            s.tenant->start(in);
            s.done = s.tenant->done();
        }
        RunStats total;
        while (true) {
            std::int64_t pause = Tenant<Queue>::kNoPause;
            bool running = false;
            for (const Slot& s : slots_) {
                if (!s.done) {
                    running = true;
                    pause = std::min(pause, s.tenant->pause_at());
                }
            }
            if (!running) {
                break;
            }
            const SimTime until =
                pause == Tenant<Queue>::kNoPause ? SimTime::max() : SimTime::from_ns(pause);
            const RunStats r = sim.run(until, threads);
            total.windows += r.windows;
            total.shared_windows += r.shared_windows;
            total.threads = r.threads;
            if (pause == Tenant<Queue>::kNoPause) {
                break;
            }
            for (Slot& s : slots_) {
                if (!s.done && s.tenant->pause_at() == pause) {
                    Injector<Queue> in(sim, s.first_entity);
                    s.tenant->resume(in);
                    s.done = s.tenant->done();
                }
            }
        }
        handled_.assign(slots_.size(), 0);
        for (std::uint32_t p = 0; p < partitions_; ++p) {
            handled_[tenant_of_partition_[p]] += sim.handled(p);
        }
        for (const std::uint64_t n : handled_) {
            total.events += n;
        }
        total.pending = sim.pending();
        return total;
    }

    /// After run(): the events the engine handled for tenant i (including any it dropped
    /// after the tenant was done).
    std::uint64_t handled(std::size_t i) const { return handled_.at(i); }

    // The engine's model interface (engine/simulator.hpp).
    void handle(Context<Queue>& ctx, const Event& e) {
        Slot& s = slots_[tenant_of_partition_[ctx.partition_]];
        if (s.done) {
            return;
        }
        Event local = e;
        local.target -= s.first_entity;
        ctx.entity_base_ = s.first_entity;
        ctx.partition_base_ = s.first_partition;
        s.tenant->handle(ctx, local);
    }
    void prefetch(EntityId e) const {
        const Slot& s = slots_[tenant_of_partition_[owner_[e]]];
        s.tenant->prefetch(e - s.first_entity);
    }
    void window_edge(WindowEdge<Queue>& edge) {
        if (!edges_) {
            return;
        }
        for (Slot& s : slots_) {
            if (!s.done && s.tenant->has_window_edge()) {
                edge.entity_base_ = s.first_entity;
                s.tenant->window_edge(edge);
            }
        }
        edge.entity_base_ = 0;
    }

private:
    struct Slot {
        Tenant<Queue>* tenant = nullptr;
        EntityId first_entity = 0;
        std::uint32_t first_partition = 0;
        std::uint32_t partitions = 0;
        bool done = false;
    };
    std::vector<Slot> slots_;
    std::vector<std::uint32_t> owner_;               ///< partition of each entity (the set's)
    std::vector<std::uint32_t> tenant_of_partition_; ///< slot of each partition
    std::uint32_t entities_ = 0;
    std::uint32_t partitions_ = 0;
    Duration lookahead_ = Duration::from_ns(1);
    bool edges_ = false;
    std::vector<std::uint64_t> handled_;
};

} // namespace trnsim::engine
