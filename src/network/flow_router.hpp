// FlowNetwork's routing at a window edge (private to the network module): the buffered
// groups' flows are listed in order and routed in chunks of kChunk flows, on all threads.
// Unless placement runs at the same time, each chunk also notes the shards its flows'
// placement may involve: the owners of their links and, when a link is free, the flow's home
// shard. Placement (flow_placement.hpp) then reads and changes no other shard. When placement
// does run at the same time, it claims chunks as it goes (claim_chunk) or waits for the thread
// routing them (wait_routed).
#pragma once

#include "flow_shard.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace trnsim::network {

class FlowRouter {
public:
    static constexpr std::size_t kChunk = 64;

    /// One flow of this edge, once routed.
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

    FlowRouter(const topology::Fabric& fabric, const FlowGroups& groups, const LinkOwners& owners,
               std::size_t shards)
        : fabric_(&fabric), groups_(&groups), owners_(&owners), shards_(shards) {}

    /// Lists the buffered groups and their flows, clears the noted shards; returns the number
    /// of chunks.
    std::uint32_t prepare();
    /// Routes the flows of chunk `c`; with `note_owners`, notes in the chunk every shard their
    /// placement may read or change (placement must not be running).
    void route_chunk(std::uint32_t c, bool note_owners);
    /// Routes chunk `c` unless another thread has started it; true if this call routed it.
    bool claim_chunk(std::uint32_t c);
    /// Returns once chunk `c`, claimed by another thread, is routed.
    void wait_routed(std::uint32_t c) const;
    /// Adds the routed chunks' bytes to `link_bytes` and their noted shards to the edge's.
    void merge(std::uint32_t chunks, std::array<double, topology::kLinkKinds>& link_bytes);
    /// Notes every shard (placement ran beside the routing: nothing was noted).
    void note_all() { touched_.assign(touched_.size(), ~std::uint64_t{0}); }
    /// True when placement at this edge may read or change shard `k`.
    bool noted(std::uint32_t k) const { return (touched_[k / 64] >> (k % 64) & 1U) != 0; }

    const std::vector<EdgeGroup>& edge_groups() const { return edge_groups_; }
    /// Flows routed at this edge.
    std::size_t total() const { return total_; }
    std::uint32_t chunks() const {
        return static_cast<std::uint32_t>((total_ + kChunk - 1) / kChunk);
    }
    Item& item(std::size_t i) { return items_[i]; }
    /// The links of item `i` (routed).
    const std::uint32_t* links(std::size_t i) const {
        return chunks_[i / kChunk].links.data() + items_[i].offset;
    }

private:
    struct RouteChunk {
        std::vector<std::uint32_t> links;
        std::array<double, topology::kLinkKinds> bytes{};
        std::vector<std::uint64_t> touched; ///< bit set of shards, as `touched_`
        std::vector<std::uint32_t> hops;    ///< scratch
    };
    static constexpr std::uint8_t kTodo = 0, kClaimed = 1, kRouted = 2;

    const topology::Fabric* fabric_;
    const FlowGroups* groups_;
    const LinkOwners* owners_;
    std::size_t shards_;
    std::vector<EdgeGroup> edge_groups_;
    std::vector<Item> items_;
    std::vector<RouteChunk> chunks_;
    std::unique_ptr<std::atomic<std::uint8_t>[]> state_; ///< per chunk: kTodo, ...
    std::uint32_t capacity_ = 0;
    std::size_t total_ = 0;
    std::vector<std::uint64_t> touched_; ///< shards placement may touch at this edge (bits)
};

} // namespace trnsim::network
