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
// Threading: start_group() may be called from handlers of different partitions concurrently
// (each partition has its own buffer); resolve() runs at a window edge with every partition
// stopped, the shards on the threads `parallel` offers.
#pragma once

#include "trnsim/engine/event.hpp"
#include "trnsim/network/maxmin.hpp"
#include "trnsim/topology/fabric.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
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
    /// `shards` (>= 1) splits the solver's work (see above).
    FlowNetwork(const topology::Fabric& fabric, std::uint32_t partitions,
                engine::EntityId wake_entity, engine::EventType wake_type, Bandwidth on_chip,
                Duration on_chip_latency, std::uint32_t shards = 1);
    ~FlowNetwork();

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
    std::uint64_t groups_cancelled() const { return groups_cancelled_; }

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
    std::uint64_t migrations() const { return migrations_; }
    std::uint64_t migrated_flows() const { return migrated_flows_; }
    /// Wall-clock seconds spent in resolve(), by part (for benchmarks).
    struct EdgeTimes {
        double route_s = 0.0;    ///< routing the new flows (before placement)
        double place_s = 0.0;    ///< placement, beside the shards it cannot touch or the routing
        double shards_s = 0.0;   ///< the other shards' updates, beside the first arrivals
        double arrivals_s = 0.0; ///< the other arrivals' completion events and the next wake
    };
    const EdgeTimes& edge_times() const { return edge_times_; }
    /// Bytes carried by the links of each kind so far (a flow's bytes count once per link of
    /// its route), indexed by topology::LinkKind.
    const std::array<double, topology::kLinkKinds>& link_bytes() const { return link_bytes_; }
    /// True when no flow is in flight or waiting to start.
    bool idle() const;

private:
    struct Group {
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::uint32_t outstanding;
        std::int64_t arrival; ///< latest arrival so far
        /// Time of the cancel() that matched it, kNotCancelled when none.
        std::int64_t cancel_at;
        engine::EventType cancelled_type;
        bool stopped; ///< cancelled with a flow still transmitting: no completion event
    };
    static constexpr std::int64_t kNotCancelled = -1;
    /// An arrival's time for a flow stopped by cancel().
    static constexpr std::int64_t kStopped = -1;
    struct Cancel {
        std::int64_t at;
        engine::EntityId owner;
        std::uint64_t tag;
        engine::EventType cancelled_type;
        std::size_t started; ///< groups its partition had started in this window before it
    };
    struct Pending {
        std::int64_t start;
        engine::EntityId owner;
        engine::EventType done_type;
        std::uint64_t tag;
        std::vector<FlowSpec> owned;
        std::span<const FlowSpec> flows; ///< `owned`, or the caller's data
    };
    struct Arrival {
        std::uint32_t group;
        std::int64_t when;
    };
    struct Shard;

    std::uint32_t new_group(const Pending& p);
    /// One flow (or the group's own admission token) of group `gid` has arrived at `when`.
    void arrive(std::uint32_t gid, std::int64_t when, std::int64_t now, const Schedule& schedule);
    /// Lists the buffered groups and their flows for routing; returns the number of chunks.
    std::uint32_t prepare_routes();
    /// Routes the flows of chunk `c`; with `note_owners`, notes in the chunk every shard their
    /// placement may read or change (placement must not be running).
    void route_chunk(std::uint32_t c, bool note_owners);
    /// Routes chunk `c` unless another thread has started it; true if this call routed it.
    bool claim_chunk(std::uint32_t c);
    /// Adds the routed chunks' bytes to link_bytes_ and their noted shards to `touched_`.
    void merge_routes(std::uint32_t chunks);
    /// Places the routed flows on shards, in the order of the groups. `pipelined`: the chunks
    /// are being routed meanwhile (claim_chunk); it waits for each or routes it itself.
    void place_all(std::int64_t now, bool pipelined);
    /// Queues flow `item` on shard `k`, which owns or may take all its links.
    void queue_item(std::size_t item, std::uint32_t k);
    /// The shard a flow of group `p` from chip `src` over `route` joins when all its links
    /// are free: over EFA, the block of chips of the group's first source; over NeuronLink,
    /// its own source's block.
    std::uint32_t home(const Pending& p, std::span<const std::uint32_t> route,
                       std::uint32_t src) const;
    /// The shard a flow of group `p` from chip `src` over `route_` joins (its home when all
    /// its links are free), moving components between shards if it bridges several.
    std::uint32_t place(const Pending& p, std::uint32_t src, std::int64_t now);
    /// Moves the component of shard `from` that crosses the links of `route_` owned by it into
    /// shard `to`.
    void migrate(std::uint32_t from, std::uint32_t to, std::int64_t now);
    /// A shard's part of resolve(): admit its queued flows, release finished ones, re-solve.
    void resolve_shard(Shard& s, std::int64_t now);
    /// At the start of resolve(): drops the cancelled groups not yet admitted and marks the
    /// others (their flows stop when their shards run). True when some admitted group matched.
    bool apply_cancels(std::int64_t now, const Schedule& schedule);
    /// A shard's part of the cancellations: stops the flows of cancelled groups still
    /// transmitting at the cancel's time. True when it removed any.
    bool stop_cancelled(Shard& s);

    const topology::Fabric* fabric_;
    std::shared_ptr<MaxMinSolver::LinkTable> links_;
    std::vector<std::unique_ptr<Shard>> shards_;
    /// Per link: the shard whose flows cross it (kFree when none), and how many do.
    static constexpr std::uint16_t kFree = 0xffff;
    std::vector<std::uint16_t> owner_;
    std::vector<std::uint32_t> users_;
    engine::EntityId wake_entity_;
    engine::EventType wake_type_;
    double on_chip_bps_;
    std::int64_t on_chip_latency_;
    std::vector<std::vector<Pending>> pending_; ///< per partition
    std::vector<std::vector<Cancel>> cancels_;  ///< per partition
    bool cancel_scan_ = false; ///< this edge: the shards look for flows of cancelled groups
    std::uint64_t groups_cancelled_ = 0;
    std::vector<Group> groups_;
    std::vector<std::uint32_t> free_groups_;
    std::vector<Arrival> arrivals_; ///< found while admitting (on-chip copies, tokens, moves)
    std::int64_t wake_at_ = -1;
    std::uint64_t migrations_ = 0;
    std::uint64_t migrated_flows_ = 0;
    EdgeTimes edge_times_;
    std::array<double, topology::kLinkKinds> link_bytes_{};
    /// This edge's flows to admit, in order, once routed.
    struct Item {
        const FlowSpec* spec = nullptr;
        std::int64_t start = 0;
        std::uint32_t offset = 0, count = 0; ///< into its chunk's links; count 0: on-chip
        std::int64_t latency = 0;
        std::uint32_t group = 0;
    };
    /// This edge's buffered groups, in order, with their first item.
    struct EdgeGroup {
        std::uint32_t partition, index;
        std::size_t first;
    };
    static constexpr std::size_t kRouteChunk = 64;
    struct RouteChunk {
        std::vector<std::uint32_t> links;
        std::array<double, topology::kLinkKinds> bytes{};
        std::vector<std::uint64_t> touched; ///< bit set of shards, as `touched_`
        std::vector<std::uint32_t> hops;    ///< scratch
    };
    static constexpr std::uint8_t kChunkTodo = 0, kChunkClaimed = 1, kChunkRouted = 2;
    std::vector<EdgeGroup> edge_groups_;
    std::vector<Item> items_;
    std::vector<RouteChunk> chunks_;
    std::unique_ptr<std::atomic<std::uint8_t>[]> chunk_state_; ///< per chunk: kChunk*
    std::uint32_t chunk_capacity_ = 0;
    std::uint32_t routed_ = 0; ///< chunks placement knows to be routed
    std::span<const std::uint32_t> route_; ///< the flow being placed
    std::vector<std::uint16_t> owners_seen_;
    std::size_t edge_total_ = 0; ///< flows routed at this edge
    std::vector<std::uint64_t> touched_;  ///< shards placement may touch at this edge (bits)
    std::vector<std::uint32_t> beside_;   ///< shards updated beside placement
    std::vector<std::uint32_t> active_;   ///< shards updated after placement
    std::vector<std::uint32_t> bfs_links_;
    std::vector<MaxMinSolver::FlowId> bfs_flows_;
    std::vector<std::uint8_t> queued_moving_; ///< per queued flow of the shard being left
};

} // namespace trnsim::network
