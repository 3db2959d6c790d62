// FlowNetwork at a window edge, before the shards run: the buffered groups' flows are routed
// in chunks (on all threads), then placed on shards one by one in the order of the groups,
// components moving between shards when a route bridges them (flow_network.hpp, "Shards").
#include "flow_shard.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

namespace trnsim::network {

namespace {
/// Placement prefetches the link owners of the flow this many ahead.
constexpr std::size_t kPlaceAhead = 8;
} // namespace

std::uint32_t FlowNetwork::new_group(const Pending& p) {
    std::uint32_t gid;
    if (!free_groups_.empty()) {
        gid = free_groups_.back();
        free_groups_.pop_back();
    } else {
        gid = static_cast<std::uint32_t>(groups_.size());
        groups_.push_back({});
    }
    // One outstanding arrival per flow, plus the group's admission token (released once every
    // flow is admitted, so that even an empty group completes).
    groups_[gid] = {p.owner, p.done_type, p.tag, static_cast<std::uint32_t>(p.flows.size()) + 1,
                    p.start, kNotCancelled, 0, false};
    return gid;
}

std::uint32_t FlowNetwork::home(const Pending& p, std::span<const std::uint32_t> route,
                                std::uint32_t src) const {
    // Over EFA, every flow of a group starts in the block of the group's first source. A
    // ring that runs both directions shares each member's host and NIC links between its two
    // directions, so its flows form one component across the fabric; homed by their own
    // sources, the members of each block would start in its shard and each flow crossing
    // into the next block would move one of them over at placement (on the 98,304-chip step:
    // 810,000 moves, one flow each, serial). Over NeuronLink (no link in common with EFA
    // routes) a flow starts in its own source's block.
    const bool efa = !route.empty() && fabric_->kind()[route.front()] == topology::LinkKind::host;
    const std::uint32_t chip = efa ? p.flows.front().src : src;
    return static_cast<std::uint32_t>(std::uint64_t{chip} * shards_.size() / fabric_->chips());
}

std::uint32_t FlowNetwork::place(const Pending& p, std::uint32_t src, std::int64_t now) {
    owners_seen_.clear();
    for (const std::uint32_t l : route_) {
        const std::uint16_t o = owner_[l];
        if (o != kFree && std::find(owners_seen_.begin(), owners_seen_.end(), o) == owners_seen_.end()) {
            owners_seen_.push_back(o);
        }
    }
    if (owners_seen_.empty()) {
        return home(p, route_, src);
    }
    if (owners_seen_.size() == 1) {
        return owners_seen_.front();
    }
    // The route bridges shards: gather the components it touches in the shard that holds the
    // most flows (fewest moves when one shard has a large component).
    std::uint32_t to = owners_seen_.front();
    for (const std::uint16_t o : owners_seen_) {
        const std::size_t a = shards_[o]->load(), b = shards_[to]->load();
        if (a > b || (a == b && o < to)) {
            to = o;
        }
    }
    for (const std::uint16_t o : owners_seen_) {
        if (o != to) {
            migrate(o, to, now);
        }
    }
    return to;
}

void FlowNetwork::migrate(std::uint32_t from, std::uint32_t to, std::int64_t now) {
    Shard& a = *shards_[from];
    Shard& b = *shards_[to];
    a.lost = true;
    if (a.moving.size() < a.flow_of_solver_id.size()) {
        a.moving.resize(a.flow_of_solver_id.size(), 0);
    }
    // The component: every flow of `a` reachable from the route's links through shared links,
    // among its solver's flows and the flows queued for it this edge (these stay out of the
    // solver: adding them is the shard's work, on all threads, not placement's). A link is
    // handed to `to` when first reached (its users all move), which also marks it.
    bfs_links_.clear();
    for (const std::uint32_t l : route_) {
        if (owner_[l] == from) {
            bfs_links_.push_back(l);
        }
    }
    bfs_flows_.clear();
    queued_moving_.assign(a.queued.size(), 0);
    bool queued_joined = true;
    while (queued_joined) {
        while (!bfs_links_.empty()) {
            const std::uint32_t l = bfs_links_.back();
            bfs_links_.pop_back();
            if (owner_[l] != from) {
                continue;
            }
            owner_[l] = static_cast<std::uint16_t>(to);
            a.solver.for_each_flow_on(l, [&](MaxMinSolver::FlowId sid) {
                if (a.moving[sid] == 0) {
                    a.moving[sid] = 1;
                    bfs_flows_.push_back(sid);
                    for (const std::uint32_t next : a.solver.links(sid)) {
                        if (owner_[next] == from) {
                            bfs_links_.push_back(next);
                        }
                    }
                }
            });
        }
        // Queued flows crossing a link just handed over join, and so do their other links.
        queued_joined = false;
        for (std::size_t q = 0; q < a.queued.size(); ++q) {
            if (queued_moving_[q] != 0) {
                continue;
            }
            const Shard::Queued& e = a.queued[q];
            const std::uint32_t* links = a.queued_links.data() + e.offset;
            if (std::none_of(links, links + e.count,
                             [&](std::uint32_t l) { return owner_[l] == to; })) {
                continue;
            }
            queued_moving_[q] = 1;
            queued_joined = true;
            for (std::uint32_t j = 0; j < e.count; ++j) {
                if (owner_[links[j]] == from) {
                    bfs_links_.push_back(links[j]);
                }
            }
        }
    }
    // The queued flows of the component go over as they are (not yet counted on their links
    // if they were not before).
    std::size_t kept = 0;
    for (std::size_t q = 0; q < a.queued.size(); ++q) {
        const Shard::Queued e = a.queued[q];
        if (queued_moving_[q] == 0) {
            a.queued[kept++] = e;
            continue;
        }
        const Shard::Flow& f = a.flows[e.slot];
        b.enqueue(f.group, f.latency, f.last, f.remaining,
                  std::span(a.queued_links.data() + e.offset, e.count), e.weight, e.counted);
        a.free_flows.push_back(e.slot);
    }
    migrated_flows_ += a.queued.size() - kept;
    a.queued.resize(kept);
    ++migrations_;
    migrated_flows_ += bfs_flows_.size();
    for (const MaxMinSolver::FlowId sid : bfs_flows_) {
        a.moving[sid] = 0;
        const std::uint32_t slot = a.flow_of_solver_id[sid];
        Shard::Flow f = a.flows[slot];
        ++a.flows[slot].version; // its finish in `a` is void
        a.free_flows.push_back(slot);
        const std::span<const std::uint32_t> links = a.solver.links(sid);
        if (f.rate > 0.0 && f.finish() <= now) {
            // Its last byte left before this edge: it arrives as it would have in `a`. Its
            // links stay with `to` even if it was their last user: flows queued this edge may
            // cross them without being counted yet.
            arrivals_.push_back({f.group, f.finish() + f.latency});
            for (const std::uint32_t l : links) {
                --users_[l];
            }
            a.solver.detach(sid);
            continue;
        }
        f.advance(now);
        b.enqueue(f.group, f.latency, f.last, f.remaining, links, a.solver.weight(sid), true);
        a.solver.detach(sid);
    }
}

// Routing of an edge's buffered groups, in chunks of kRouteChunk flows. Unless placement
// runs at the same time, each chunk also notes the shards its flows' placement may involve:
// the owners of their links and, when a link is free, the source's shard (its "home").
// Placement (place_all) then reads and changes no other shard.
std::uint32_t FlowNetwork::prepare_routes() {
    edge_groups_.clear();
    std::size_t total = 0;
    for (std::uint32_t part = 0; part < pending_.size(); ++part) {
        for (std::uint32_t g = 0; g < pending_[part].size(); ++g) {
            edge_groups_.push_back({part, g, total});
            total += pending_[part][g].flows.size();
        }
    }
    edge_total_ = total;
    touched_.assign((shards_.size() + 63) / 64, 0);
    if (items_.size() < total) {
        items_.resize(total);
    }
    const auto chunks = static_cast<std::uint32_t>((total + kRouteChunk - 1) / kRouteChunk);
    if (chunks_.size() < chunks) {
        chunks_.resize(chunks);
    }
    if (chunk_capacity_ < chunks) {
        chunk_state_ = std::make_unique<std::atomic<std::uint8_t>[]>(chunks);
        chunk_capacity_ = chunks;
    }
    for (std::uint32_t c = 0; c < chunks; ++c) {
        chunk_state_[c].store(kChunkTodo, std::memory_order_relaxed);
    }
    return chunks;
}

void FlowNetwork::route_chunk(std::uint32_t c, bool note_owners) {
    RouteChunk& chunk = chunks_[c];
    chunk.links.clear();
    chunk.bytes.fill(0.0);
    chunk.touched.assign(touched_.size(), 0);
    const auto mark = [&chunk](std::uint32_t k) {
        chunk.touched[k / 64] |= std::uint64_t{1} << (k % 64);
    };
    const std::size_t begin = std::size_t{c} * kRouteChunk;
    const std::size_t end = std::min(edge_total_, begin + kRouteChunk);
    auto g = std::upper_bound(edge_groups_.begin(), edge_groups_.end(), begin,
                              [](std::size_t i, const EdgeGroup& e) { return i < e.first; }) - 1;
    std::vector<std::uint32_t>& hops = chunk.hops;
    for (std::size_t k = begin; k < end; ++k) {
        while (k >= g->first + pending_[g->partition][g->index].flows.size()) {
            ++g;
        }
        const auto i = static_cast<std::uint32_t>(k - g->first);
        const FlowSpec& spec = pending_[g->partition][g->index].flows[i];
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
                const std::uint16_t o = owner_[l]; // placement has not started: no writer
                if (o == kFree) {
                    free = true;
                } else {
                    mark(o);
                }
            }
        }
        if (free) {
            mark(home(pending_[g->partition][g->index], hops, spec.src));
        }
        chunk.links.insert(chunk.links.end(), hops.begin(), hops.end());
    }
}

bool FlowNetwork::claim_chunk(std::uint32_t c) {
    std::uint8_t todo = kChunkTodo;
    if (!chunk_state_[c].compare_exchange_strong(todo, kChunkClaimed, std::memory_order_relaxed)) {
        return false;
    }
    route_chunk(c, false);
    chunk_state_[c].store(kChunkRouted, std::memory_order_release);
    return true;
}

void FlowNetwork::merge_routes(std::uint32_t chunks) {
    for (std::uint32_t c = 0; c < chunks; ++c) {
        for (std::size_t k = 0; k < link_bytes_.size(); ++k) {
            link_bytes_[k] += chunks_[c].bytes[k];
        }
        for (std::size_t w = 0; w < touched_.size(); ++w) {
            touched_[w] |= chunks_[c].touched[w];
        }
    }
}

// Placement of the routed flows, one by one in the order of the groups: on the shard owning
// their links, on their source's shard when the links are free, components gathered when
// several shards own some. With `pipelined`, the chunks are being routed by other threads:
// placement waits for each (or routes it itself if nobody has started it).
void FlowNetwork::place_all(std::int64_t now, bool pipelined) {
    if (edge_groups_.empty()) {
        return;
    }
    const auto chunks = static_cast<std::uint32_t>((edge_total_ + kRouteChunk - 1) / kRouteChunk);
    routed_ = pipelined ? 0 : chunks;
    const auto ensure_routed = [&](std::size_t item) {
        const auto c = static_cast<std::uint32_t>(item / kRouteChunk);
        while (routed_ <= c) {
            if (!claim_chunk(routed_)) {
                while (chunk_state_[routed_].load(std::memory_order_acquire) != kChunkRouted) {
#if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
#endif
                }
            }
            ++routed_;
        }
    };
    for (const EdgeGroup& e : edge_groups_) {
        const Pending& p = pending_[e.partition][e.index];
        const std::uint32_t gid = new_group(p);
        for (std::size_t i = 0; i < p.flows.size(); ++i) {
            const std::size_t item = e.first + i;
            ensure_routed(item);
            Item& it = items_[item];
            const FlowSpec& spec = p.flows[i];
            if (it.count == 0) {
                // Between ranks of one chip: an on-chip copy, no fabric link.
                const double ns =
                    static_cast<double>(on_chip_latency_) + spec.bytes / on_chip_bps_ * 1e9;
                arrivals_.push_back({gid, p.start + static_cast<std::int64_t>(std::ceil(ns))});
                continue;
            }
            it.group = gid;
            it.start = p.start;
            const std::size_t ahead = item + kPlaceAhead;
            if (ahead < edge_total_ && ahead / kRouteChunk < routed_) {
                // The owners of a flow's links are scattered over the fabric: fetch those of a
                // flow a few ahead so that the misses overlap.
                const std::uint32_t* l =
                    chunks_[ahead / kRouteChunk].links.data() + items_[ahead].offset;
                for (std::uint32_t j = 0; j < items_[ahead].count; ++j) {
                    __builtin_prefetch(&owner_[l[j]], 1);
                }
            }
            route_ = std::span<const std::uint32_t>(
                chunks_[item / kRouteChunk].links.data() + it.offset, it.count);
            queue_item(item, place(p, spec.src, now));
        }
        arrivals_.push_back({gid, p.start}); // the admission token
    }
    if (edge_total_ > 0) {
        ensure_routed(edge_total_ - 1); // every chunk, for merge_routes
    }
    for (auto& part : pending_) {
        part.clear();
    }
}

void FlowNetwork::queue_item(std::size_t item, std::uint32_t k) {
    const Item& it = items_[item];
    const std::uint32_t* links = chunks_[item / kRouteChunk].links.data() + it.offset;
    Shard& s = *shards_[k];
    s.enqueue(it.group, it.latency, it.start, it.spec->bytes, std::span(links, it.count),
              it.spec->weight, false);
    for (std::uint32_t j = 0; j < it.count; ++j) {
        owner_[links[j]] = static_cast<std::uint16_t>(k); // its users_ count when the shard runs
    }
    ++s.started;
}

} // namespace trnsim::network
