// FlowNetwork's placement of routed flows on shards, components moving between shards when a
// route bridges them (flow_placement.hpp; flow_network.hpp, "Shards").
#include "flow_placement.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

namespace trnsim::network {

namespace {
/// Placement prefetches the link owners of the flow this many ahead.
constexpr std::size_t kPlaceAhead = 8;
} // namespace

std::uint32_t ShardPlacer::place(const FlowGroups::Pending& p, std::uint32_t src,
                                 std::int64_t now) {
    owners_seen_.clear();
    for (const std::uint32_t l : route_) {
        const std::uint16_t o = owners_.owner[l];
        if (o != LinkOwners::kFree &&
            std::find(owners_seen_.begin(), owners_seen_.end(), o) == owners_seen_.end()) {
            owners_seen_.push_back(o);
        }
    }
    if (owners_seen_.empty()) {
        return home_shard(*fabric_, shards_.size(), p, route_, src);
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

void ShardPlacer::migrate(std::uint32_t from, std::uint32_t to, std::int64_t now) {
    FlowShard& a = *shards_[from];
    FlowShard& b = *shards_[to];
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
        if (owners_.owner[l] == from) {
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
            if (owners_.owner[l] != from) {
                continue;
            }
            owners_.owner[l] = static_cast<std::uint16_t>(to);
            a.solver.for_each_flow_on(l, [&](MaxMinSolver::FlowId sid) {
                if (a.moving[sid] == 0) {
                    a.moving[sid] = 1;
                    bfs_flows_.push_back(sid);
                    for (const std::uint32_t next : a.solver.links(sid)) {
                        if (owners_.owner[next] == from) {
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
            const FlowShard::Queued& e = a.queued[q];
            const std::uint32_t* links = a.queued_links.data() + e.offset;
            if (std::none_of(links, links + e.count,
                             [&](std::uint32_t l) { return owners_.owner[l] == to; })) {
                continue;
            }
            queued_moving_[q] = 1;
            queued_joined = true;
            for (std::uint32_t j = 0; j < e.count; ++j) {
                if (owners_.owner[links[j]] == from) {
                    bfs_links_.push_back(links[j]);
                }
            }
        }
    }
    // The queued flows of the component go over as they are (not yet counted on their links
    // if they were not before).
    std::size_t kept = 0;
    for (std::size_t q = 0; q < a.queued.size(); ++q) {
        const FlowShard::Queued e = a.queued[q];
        if (queued_moving_[q] == 0) {
            a.queued[kept++] = e;
            continue;
        }
        const FlowShard::Flow& f = a.flows[e.slot];
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
        FlowShard::Flow f = a.flows[slot];
        ++a.flows[slot].version; // its finish in `a` is void
        a.free_flows.push_back(slot);
        const std::span<const std::uint32_t> links = a.solver.links(sid);
        if (f.rate > 0.0 && f.finish() <= now) {
            // Its last byte left before this edge: it arrives as it would have in `a`. Its
            // links stay with `to` even if it was their last user: flows queued this edge may
            // cross them without being counted yet.
            arrivals_.push_back({f.group, f.finish() + f.latency});
            for (const std::uint32_t l : links) {
                --owners_.users[l];
            }
            a.solver.detach(sid);
            continue;
        }
        f.advance(now);
        b.enqueue(f.group, f.latency, f.last, f.remaining, links, a.solver.weight(sid), true);
        a.solver.detach(sid);
    }
}

// Placement of the routed flows, one by one in the order of the groups: on the shard owning
// their links, on their home shard when the links are free, components gathered when several
// shards own some. With `pipelined`, the chunks are being routed by other threads: placement
// waits for each (or routes it itself if nobody has started it).
void ShardPlacer::place_all(std::int64_t now, bool pipelined) {
    FlowRouter& router = router_;
    if (router.edge_groups().empty()) {
        return;
    }
    const std::size_t total = router.total();
    routed_ = pipelined ? 0 : router.chunks();
    const auto ensure_routed = [&](std::size_t item) {
        const auto c = static_cast<std::uint32_t>(item / FlowRouter::kChunk);
        while (routed_ <= c) {
            if (!router.claim_chunk(routed_)) {
                router.wait_routed(routed_);
            }
            ++routed_;
        }
    };
    const auto& pending = groups_.pending();
    for (const FlowRouter::EdgeGroup& e : router.edge_groups()) {
        const FlowGroups::Pending& p = pending[e.partition][e.index];
        const std::uint32_t gid = groups_.admit(p);
        for (std::size_t i = 0; i < p.flows.size(); ++i) {
            const std::size_t item = e.first + i;
            ensure_routed(item);
            FlowRouter::Item& it = router.item(item);
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
            if (ahead < total && ahead / FlowRouter::kChunk < routed_) {
                // The owners of a flow's links are scattered over the fabric: fetch those of a
                // flow a few ahead so that the misses overlap.
                const std::uint32_t* l = router.links(ahead);
                for (std::uint32_t j = 0; j < router.item(ahead).count; ++j) {
                    __builtin_prefetch(&owners_.owner[l[j]], 1);
                }
            }
            route_ = std::span<const std::uint32_t>(router.links(item), it.count);
            queue_item(item, place(p, spec.src, now));
        }
        arrivals_.push_back({gid, p.start}); // the admission token
    }
    if (total > 0) {
        ensure_routed(total - 1); // every chunk, for FlowRouter::merge
    }
    groups_.clear_pending();
}

void ShardPlacer::queue_item(std::size_t item, std::uint32_t k) {
    const FlowRouter::Item& it = router_.item(item);
    const std::uint32_t* links = router_.links(item);
    FlowShard& s = *shards_[k];
    s.enqueue(it.group, it.latency, it.start, it.spec->bytes, std::span(links, it.count),
              it.spec->weight, false);
    for (std::uint32_t j = 0; j < it.count; ++j) {
        owners_.owner[links[j]] = static_cast<std::uint16_t>(k); // users count when it runs
    }
    ++s.started;
}

} // namespace trnsim::network
