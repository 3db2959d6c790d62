// Flows over a fabric, with max-min fair rates, for models that run on the event engine.
//
// A model starts groups of flows from its handlers (a collective phase is one group) and gets
// one event when the whole group has arrived. The rates are resolved at window edges, where all
// partitions are stopped (docs/adr/0001-fabric-at-window-edges.md):
//
//   - flows started during the window join the max-min solver; the solver re-fills what the
//     changes can affect (MaxMinSolver::update); a new flow's rate applies from its start time;
//   - each flow's transmission ends at t_tx = last update + remaining bytes / rate; its last byte
//     arrives at t_tx + latency (the sum of the link latencies of its route, NIC overhead
//     included);
//   - a wake event is scheduled for the earliest t_tx, so the window that follows it releases
//     the flow's bandwidth at its edge: a rate change reaches the other flows at most one
//     window (the engine's lookahead) late. With a 1 ns lookahead (exact mode) the error is
//     1 ns per change.
//
// Flows between ranks of one chip use no fabric link: they take latency + bytes / on-chip
// bandwidth and share nothing.
//
// Threading: start_group() may be called from handlers of different partitions concurrently
// (each partition has its own buffer); resolve() runs on one thread at a window edge.
#pragma once

#include "trnsim/engine/event.hpp"
#include "trnsim/network/maxmin.hpp"
#include "trnsim/topology/fabric.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <queue>
#include <span>
#include <vector>

namespace trnsim::network {

struct FlowSpec {
    std::uint32_t src = 0; ///< chip
    std::uint32_t dst = 0; ///< chip
    double bytes = 0.0;
    /// The flow stands for `weight` equal flows on the same route, `bytes / weight` each (the
    /// ranks of a chip, merged): it gets `weight` shares of max-min fair bandwidth. An on-chip
    /// copy (src == dst) ignores it: its parts share the chip's HBM, so it moves all its bytes
    /// at the on-chip bandwidth.
    double weight = 1.0;
};

class FlowNetwork {
public:
    /// `wake_entity` is an entity of the model whose handler ignores events of type `wake_type`
    /// (they only make a window edge happen). `on_chip` is the bandwidth of a copy between
    /// ranks of one chip, `on_chip_latency` its fixed cost.
    FlowNetwork(const topology::Fabric& fabric, std::uint32_t partitions,
                engine::EntityId wake_entity, engine::EventType wake_type, Bandwidth on_chip,
                Duration on_chip_latency);

    /// Starts `flows` at `now` from a handler of `partition`. When every flow has arrived,
    /// `owner` gets an event of type `done_type` with payload `tag`.
    void start_group(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                     engine::EventType done_type, std::uint64_t tag, std::vector<FlowSpec> flows);
    /// The same without a copy: `flows` must stay alive and unchanged until the next resolve()
    /// (a collective plan held by the model, for example).
    void start_group_view(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                          engine::EventType done_type, std::uint64_t tag,
                          std::span<const FlowSpec> flows);

    /// Schedules an event: (target, time, type, payload). Used by resolve().
    using Schedule = std::function<void(engine::EntityId, std::int64_t, engine::EventType,
                                        std::uint64_t)>;

    /// At a window edge `now`: release finished flows, admit new ones, re-solve, schedule the
    /// next wake and the groups' completion events (all at or after `now`). Returns true when
    /// it scheduled anything.
    bool resolve(std::int64_t now, const Schedule& schedule);

    std::size_t active_flows() const { return solver_.active_flows(); }
    std::uint64_t flows_started() const { return flows_started_; }
    std::uint64_t solves() const { return solves_; }
    /// Bytes carried by the links of each kind so far (a flow's bytes count once per link of
    /// its route), indexed by topology::LinkKind.
    const std::array<double, topology::kLinkKinds>& link_bytes() const { return link_bytes_; }
    /// True when no flow is in flight or waiting to start.
    bool idle() const;
    const MaxMinSolver& solver() const { return solver_; }

private:
    struct Group {
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::uint32_t outstanding;
        std::int64_t arrival; ///< latest arrival so far
    };
    struct Pending {
        std::int64_t start;
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::vector<FlowSpec> owned;
        std::span<const FlowSpec> flows; ///< `owned`, or the caller's data
    };
    struct Flow {
        std::uint32_t group;
        MaxMinSolver::FlowId solver_id;
        std::int64_t latency;
        std::int64_t last;      ///< time `remaining` refers to
        double remaining;       ///< bytes still to send at `last`
        double rate;            ///< bytes/s since `last`
        std::uint32_t version;  ///< bumped when the finish time changes
    };
    struct Finish {
        std::int64_t time;
        std::uint32_t flow;
        std::uint32_t version;
        bool operator>(const Finish& o) const {
            return time > o.time || (time == o.time && flow > o.flow);
        }
    };

    std::uint32_t new_flow_slot();
    std::uint32_t new_group(const Pending& p);
    /// One flow (or the group's own admission token) of group `gid` has arrived at `when`.
    void arrive(std::uint32_t gid, std::int64_t when, std::int64_t now, const Schedule& schedule);
    /// Admits a buffered group: routes its flows into the solver. Returns true if any flow
    /// entered the solver.
    bool admit(const Pending& p, std::int64_t now, const Schedule& schedule);
    /// Sets the finish times of the flows the solver just re-filled.
    void reschedule_refilled(std::int64_t now);

    const topology::Fabric* fabric_;
    MaxMinSolver solver_;
    engine::EntityId wake_entity_;
    engine::EventType wake_type_;
    double on_chip_bps_;
    std::int64_t on_chip_latency_;
    std::vector<std::vector<Pending>> pending_; ///< per partition
    std::vector<Group> groups_;
    std::vector<std::uint32_t> free_groups_;
    std::vector<Flow> flows_;
    std::vector<std::uint32_t> free_flows_;
    std::vector<std::uint32_t> flow_of_solver_id_;
    std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes_;
    std::int64_t wake_at_ = -1;
    std::int64_t max_finish_ = 0; ///< latest finish time pushed (bulk release test)
    std::uint64_t flows_started_ = 0;
    std::uint64_t solves_ = 0;
    std::array<double, topology::kLinkKinds> link_bytes_{};
    std::vector<std::uint32_t> route_;
    std::vector<MaxMinSolver::FlowId> leaving_;
};

} // namespace trnsim::network
