// FlowNetwork's placement at a window edge (private to the network module; flow_network.hpp,
// "Shards"): the routed flows are placed on shards one by one in the order of their groups:
// on the shard owning their links, on their home shard when the links are free; when a route
// crosses links of several shards, the components it touches move into the one holding the
// most flows. Placement reads and changes only the shards the routes noted.
#pragma once

#include "flow_router.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace trnsim::network {

class ShardPlacer {
public:
    /// `on_chip_bps` and `on_chip_latency_ns` cost a copy between ranks of one chip.
    ShardPlacer(const topology::Fabric& fabric, std::vector<std::unique_ptr<FlowShard>>& shards,
                LinkOwners& owners, FlowGroups& groups, FlowRouter& router, double on_chip_bps,
                std::int64_t on_chip_latency_ns)
        : fabric_(&fabric), shards_(shards), owners_(owners), groups_(groups), router_(router),
          on_chip_bps_(on_chip_bps), on_chip_latency_(on_chip_latency_ns) {}

    /// Admits the buffered groups and places their routed flows on shards, at the edge `now`,
    /// then clears the buffers. `pipelined`: the chunks are being routed meanwhile; it waits for
    /// each or routes it itself.
    void place_all(std::int64_t now, bool pipelined);
    /// Arrivals found while admitting (on-chip copies, admission tokens, flows that had ended
    /// when their component moved), for the edge to turn into events and clear.
    std::vector<FlowArrival>& arrivals() { return arrivals_; }
    /// Components moved from one shard to another, and their flows.
    std::uint64_t migrations() const { return migrations_; }
    std::uint64_t migrated_flows() const { return migrated_flows_; }

private:
    /// The shard a flow of group `p` from chip `src` over `route_` joins (its home when all
    /// its links are free), moving components between shards if it bridges several.
    std::uint32_t place(const FlowGroups::Pending& p, std::uint32_t src, std::int64_t now);
    /// Moves the component of shard `from` that crosses the links of `route_` owned by it into
    /// shard `to`.
    void migrate(std::uint32_t from, std::uint32_t to, std::int64_t now);
    /// Queues flow `item` on shard `k`, which owns or may take all its links.
    void queue_item(std::size_t item, std::uint32_t k);

    const topology::Fabric* fabric_;
    std::vector<std::unique_ptr<FlowShard>>& shards_;
    LinkOwners& owners_;
    FlowGroups& groups_;
    FlowRouter& router_;
    double on_chip_bps_;
    std::int64_t on_chip_latency_;
    std::vector<FlowArrival> arrivals_;
    std::uint64_t migrations_ = 0;
    std::uint64_t migrated_flows_ = 0;
    std::uint32_t routed_ = 0;             ///< chunks placement knows to be routed
    std::span<const std::uint32_t> route_; ///< the flow being placed
    std::vector<std::uint16_t> owners_seen_;
    std::vector<std::uint32_t> bfs_links_;
    std::vector<MaxMinSolver::FlowId> bfs_flows_;
    std::vector<std::uint8_t> queued_moving_; ///< per queued flow of the shard being left
};

} // namespace trnsim::network
