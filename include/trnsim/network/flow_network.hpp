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
// Shards. The solver's work splits into shards that run on all threads at the window edge.
// Max-min rates couple only flows that share links (a connected component of the flow-link
// graph), so every link with flows in flight belongs to one shard, and each shard has its own
// solver (on one shared link table), flow records and finish heap. A new flow joins the shard
// of the links it crosses (when they are free, its home: over NeuronLink its source chip's
// block of the fabric, over EFA the block of its group's first source, so that a ring over
// EFA starts in one shard); a flow whose route bridges the links of two shards moves the
// component it touches in one of them into the other (its bytes so far, at the old rates, go
// with it). The rates are the
// max-min rates whatever the shards; the floating-point path depends on the shard count,
// which the model fixes, never the thread count: results are the same on any number of
// threads.
//
// A window edge runs in three steps: the new flows are routed (in chunks, on all threads),
// noting the shards that own their links or would take them (their home when a link is
// free); then one thread places the flows on shards, in order, while the other threads
// update the shards that placement cannot touch; then the remaining shards update on all
// threads, beside one piece that turns the first arrivals into events. Placement only reads
// and writes the links and flows of the shards the routes noted, so the two never share state.
// When no shard has work before placement (the start of a collective phase everywhere), the
// first two steps overlap instead: placement follows the routing threads chunk by chunk.
//
// Parts (private headers in src/network): FlowGroups buffers the groups and cancels of a
// window, admits groups and sends their completion events; FlowRouter routes an edge's new
// flows in chunks and notes the shards placement may touch; ShardPlacer places them on shards
// and moves components; FlowShard is one shard's solver, flows and finish heap, with its part
// of the edge; LinkOwners records which shard holds each link. FlowNetwork keeps the
// interface and the window edge itself (resolve), which runs the parts in the order above.
//
// Threading: start_group() may be called from handlers of different partitions concurrently
// (each partition has its own buffer); resolve() runs at a window edge with every partition
// stopped, the shards on the threads `parallel` offers.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/engine/event.hpp"
#include "trnsim/network/maxmin.hpp"
#include "trnsim/topology/fabric.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
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

class FlowGroups;
class FlowRouter;
struct FlowShard;
struct LinkOwners;
class ShardPlacer;

class FlowNetwork {
public:
    /// `wake_entity` is an entity of the model whose handler ignores events of type `wake_type`
    /// (they only make a window edge happen). `on_chip` is the bandwidth of a copy between
    /// ranks of one chip, `on_chip_latency` its fixed cost.
    /// `shards` (>= 1) splits the solver's work (see above).
    FlowNetwork(const topology::Fabric& fabric, std::uint32_t partitions,
                engine::EntityId wake_entity, engine::EventType wake_type, Bandwidth on_chip,
                Duration on_chip_latency, std::uint32_t shards = 1);
    ~FlowNetwork();
    /// Not copied or moved: its parts refer to each other.
    FlowNetwork(const FlowNetwork&) = delete;
    FlowNetwork& operator=(const FlowNetwork&) = delete;

    /// Starts `flows` at `now` from a handler of `partition`. When every flow has arrived,
    /// `owner` gets an event of type `done_type` with payload `tag`.
    void start_group(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                     engine::EventType done_type, std::uint64_t tag, std::vector<FlowSpec> flows);
    /// The same without a copy: `flows` must stay alive and unchanged until the next resolve()
    /// (a collective plan held by the model, for example).
    void start_group_view(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                          engine::EventType done_type, std::uint64_t tag,
                          std::span<const FlowSpec> flows);

    /// Matches every tag in cancel().
    static constexpr std::uint64_t kAnyTag = ~std::uint64_t{0};
    /// Cancels, from a handler of `partition` at `now`, the groups of `owner` with payload
    /// `tag` (every tag with kAnyTag) started before this call and not yet completed: a group
    /// cancelled while one of its flows is still transmitting at `now` never sends its
    /// completion event; `owner` gets an event of type `cancelled_type` with the group's tag
    /// instead, at the next window edge. Its flows stop at `now` (their unsent bytes leave
    /// link_bytes()), and the bandwidth they held goes to the others from that edge, as when a
    /// flow ends (at most one window late). A group whose flows had all finished transmitting
    /// by `now` completes as usual, and so does a group that completed before: its owner must
    /// expect either event.
    void cancel(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                std::uint64_t tag, engine::EventType cancelled_type);
    /// Groups cancelled so far (those that had a flow still transmitting).
    std::uint64_t groups_cancelled() const;

    /// Schedules an event: (target, time, type, payload). Used by resolve().
    using Schedule = std::function<void(engine::EntityId, std::int64_t, engine::EventType,
                                        std::uint64_t)>;

    /// Runs work(i) for every i in [0, n), possibly on several threads, and returns when all
    /// are done (engine::WindowEdge::parallel_for).
    using ParallelFor =
        std::function<void(std::uint32_t n, const std::function<void(std::uint32_t)>& work)>;

    /// At a window edge `now`: release finished flows, admit new ones, re-solve, schedule the
    /// next wake and the groups' completion events (all at or after `now`). Returns true when
    /// it scheduled anything. The shards run through `parallel` (one after another without).
    bool resolve(std::int64_t now, const Schedule& schedule, const ParallelFor& parallel = {});
    /// The same from a model's window-edge hook (an engine::WindowEdge): at its window's end,
    /// with its threads, the events scheduled from `wake` (the model's wake entity).
    template <class Edge>
    bool resolve_at(Edge& edge, engine::EntityId wake) {
        return resolve(
            edge.window_end().ns(),
            [&](engine::EntityId target, std::int64_t t, engine::EventType type,
                std::uint64_t payload) {
                edge.schedule_at(wake, target, SimTime::from_ns(t), type, payload);
            },
            [&](std::uint32_t n, const std::function<void(std::uint32_t)>& work) {
                edge.parallel_for(n, work);
            });
    }

    std::size_t active_flows() const;
    std::uint64_t flows_started() const;
    /// Solver updates, over all shards.
    std::uint64_t solves() const;
    /// Components moved from one shard to another (a flow bridged them), and their flows.
    std::uint64_t migrations() const;
    std::uint64_t migrated_flows() const;
    /// Wall-clock seconds spent in resolve(), by part (for benchmarks).
    struct EdgeTimes {
        Seconds route;    ///< routing the new flows (before placement)
        Seconds place;    ///< placement, beside the shards it cannot touch or the routing
        Seconds other_shards; ///< the other shards' updates, beside the first arrivals
        Seconds arrivals; ///< the other arrivals' completion events and the next wake
        /// Every shard update timed alone, summed over the edges: all of them, the largest of
        /// each edge, and max(largest, all / 2) per edge, the least two threads can take for
        /// an edge's updates however they are handed out.
        Seconds shard_updates;
        Seconds largest_update;
        Seconds two_thread_bound;
    };
    const EdgeTimes& edge_times() const { return edge_times_; }
    /// Bytes carried by the links of each kind so far (a flow's bytes count once per link of
    /// its route), indexed by topology::LinkKind.
    const std::array<double, topology::kLinkKinds>& link_bytes() const { return link_bytes_; }
    /// True when no flow is in flight or waiting to start.
    bool idle() const;

private:
    const topology::Fabric* fabric_;
    std::shared_ptr<MaxMinSolver::LinkTable> links_;
    std::unique_ptr<LinkOwners> owners_;
    std::vector<std::unique_ptr<FlowShard>> shards_;
    std::unique_ptr<FlowGroups> groups_;
    std::unique_ptr<FlowRouter> router_;
    std::unique_ptr<ShardPlacer> placer_;
    engine::EntityId wake_entity_;
    engine::EventType wake_type_;
    bool cancel_scan_ = false; ///< this edge: the shards look for flows of cancelled groups
    std::int64_t wake_at_ = -1;
    EdgeTimes edge_times_;
    std::vector<double> update_s_; ///< this edge's update time of each shard (0: none)
    std::array<double, topology::kLinkKinds> link_bytes_{};
    std::vector<std::uint32_t> beside_; ///< shards updated beside placement
    std::vector<std::uint32_t> active_; ///< shards updated after placement
};

} // namespace trnsim::network
