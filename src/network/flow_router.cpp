// FlowNetwork's routing at a window edge (flow_router.hpp).
#include "flow_router.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>

namespace trnsim::network {

std::uint32_t FlowRouter::prepare() {
    edge_groups_.clear();
    const auto& pending = groups_->pending();
    std::size_t total = 0;
    for (std::uint32_t part = 0; part < pending.size(); ++part) {
        for (std::uint32_t g = 0; g < pending[part].size(); ++g) {
            edge_groups_.push_back({part, g, total});
            total += pending[part][g].flows.size();
        }
    }
    total_ = total;
    touched_.assign((shards_ + 63) / 64, 0);
    if (items_.size() < total) {
        items_.resize(total);
    }
    const auto chunks = static_cast<std::uint32_t>((total + kChunk - 1) / kChunk);
    if (chunks_.size() < chunks) {
        chunks_.resize(chunks);
    }
    if (capacity_ < chunks) {
        state_ = std::make_unique<std::atomic<std::uint8_t>[]>(chunks);
        capacity_ = chunks;
    }
    for (std::uint32_t c = 0; c < chunks; ++c) {
        state_[c].store(kTodo, std::memory_order_relaxed);
    }
    return chunks;
}

void FlowRouter::route_chunk(std::uint32_t c, bool note_owners) {
    RouteChunk& chunk = chunks_[c];
    chunk.links.clear();
    chunk.bytes.fill(0.0);
    chunk.touched.assign(touched_.size(), 0);
    const auto mark = [&chunk](std::uint32_t k) {
        chunk.touched[k / 64] |= std::uint64_t{1} << (k % 64);
    };
    const std::size_t begin = std::size_t{c} * kChunk;
    const std::size_t end = std::min(total_, begin + kChunk);
    auto g = std::upper_bound(edge_groups_.begin(), edge_groups_.end(), begin,
                              [](std::size_t i, const EdgeGroup& e) { return i < e.first; }) - 1;
    std::vector<std::uint32_t>& hops = chunk.hops;
    const auto& pending = groups_->pending();
    for (std::size_t k = begin; k < end; ++k) {
        while (k >= g->first + pending[g->partition][g->index].flows.size()) {
            ++g;
        }
        const auto i = static_cast<std::uint32_t>(k - g->first);
        const FlowSpec& spec = pending[g->partition][g->index].flows[i];
        Item& it = items_[k];
        it.spec = &spec;
        it.count = 0;
        if (spec.src == spec.dst || spec.bytes <= 0.0) {
            continue; // an on-chip copy: no route
        }
        // The salt spreads a group's flows over equal-cost paths. It depends on the flow alone
        // (its index in the group, with source and destination hashed by the router), so the
        // same group of flows always takes the same paths.
        hops.clear();
        topology::route(*fabric_, spec.src, spec.dst, i, hops);
        it.offset = static_cast<std::uint32_t>(chunk.links.size());
        it.count = static_cast<std::uint32_t>(hops.size());
        it.latency = topology::route_latency_ns(*fabric_, hops.data(), hops.size());
        bool free = false;
        for (const std::uint32_t l : hops) {
            chunk.bytes[static_cast<std::size_t>(fabric_->kind()[l])] += spec.bytes;
            if (note_owners) {
                // Placement has not started: no writer.
                const std::uint16_t o = owners_->owner[l];
                if (o == LinkOwners::kFree) {
                    free = true;
                } else {
                    mark(o);
                }
            }
        }
        if (free) {
            mark(home_shard(*fabric_, shards_, pending[g->partition][g->index], hops, spec.src));
        }
        chunk.links.insert(chunk.links.end(), hops.begin(), hops.end());
    }
}

bool FlowRouter::claim_chunk(std::uint32_t c) {
    std::uint8_t todo = kTodo;
    if (!state_[c].compare_exchange_strong(todo, kClaimed, std::memory_order_relaxed)) {
        return false;
    }
    route_chunk(c, false);
    state_[c].store(kRouted, std::memory_order_release);
    return true;
}

void FlowRouter::wait_routed(std::uint32_t c) const {
    while (state_[c].load(std::memory_order_acquire) != kRouted) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

void FlowRouter::merge(std::uint32_t chunks,
                       std::array<double, topology::kLinkKinds>& link_bytes) {
    for (std::uint32_t c = 0; c < chunks; ++c) {
        for (std::size_t k = 0; k < link_bytes.size(); ++k) {
            link_bytes[k] += chunks_[c].bytes[k];
        }
        for (std::size_t w = 0; w < touched_.size(); ++w) {
            touched_[w] |= chunks_[c].touched[w];
        }
    }
}

} // namespace trnsim::network
