#include "trnsim/network/flow_network.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace trnsim::network {

namespace {
constexpr std::uint32_t kQueued = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kNoFinish = std::numeric_limits<std::int64_t>::max();
} // namespace

struct FlowNetwork::Shard {
    Shard(std::shared_ptr<MaxMinSolver::LinkTable> links, std::uint32_t phase,
          std::uint32_t stride)
        : solver(std::move(links), phase, stride) {}

    struct Flow {
        std::uint32_t group;
        MaxMinSolver::FlowId solver_id; ///< kQueued until the shard admits it
        std::int64_t latency;
        std::int64_t last;     ///< time `remaining` refers to
        double remaining;      ///< bytes still to send at `last`
        double rate;           ///< bytes/s since `last`
        std::uint32_t version; ///< bumped when the finish time changes

        /// End of transmission at the current rate (which must be positive).
        std::int64_t finish() const {
            return last + Duration::from_seconds_ceil(remaining / rate).ns();
        }
        /// Counts the bytes sent at the current rate until `now`. A new flow has no rate yet:
        /// it keeps its start, from which its first rate applies.
        void advance(std::int64_t now) {
            if (rate > 0.0) {
                remaining = std::max(0.0, remaining - rate * static_cast<double>(now - last) * 1e-9);
                last = now;
            }
        }
    };
    struct Finish {
        std::int64_t time;
        std::uint32_t flow;
        std::uint32_t version;
        bool operator>(const Finish& o) const {
            return time > o.time || (time == o.time && flow > o.flow);
        }
    };
    /// A flow placed on this shard at the edge, not yet in its solver.
    struct Queued {
        std::uint32_t slot;
        std::uint32_t offset; ///< into queued_links
        std::uint32_t count;
        double weight;
        bool counted; ///< its links' users_ include it already (a flow moved from a shard)
    };

    std::uint32_t new_slot() {
        if (!free_flows.empty()) {
            const std::uint32_t f = free_flows.back();
            free_flows.pop_back();
            return f;
        }
        flows.push_back({});
        return static_cast<std::uint32_t>(flows.size() - 1);
    }
    /// Queues a flow for the solver (its slot keeps its version: stale finishes of the slot's
    /// earlier flows carry older ones). `counted`: its links' users_ include it already.
    void enqueue(std::uint32_t group, std::int64_t latency, std::int64_t last, double remaining,
                 std::span<const std::uint32_t> links, double weight, bool counted) {
        const std::uint32_t slot = new_slot();
        Flow& f = flows[slot];
        f.group = group;
        f.solver_id = kQueued;
        f.latency = latency;
        f.last = last;
        f.remaining = remaining;
        f.rate = 0.0;
        queued.push_back({slot, static_cast<std::uint32_t>(queued_links.size()),
                          static_cast<std::uint32_t>(links.size()), weight, counted});
        queued_links.insert(queued_links.end(), links.begin(), links.end());
    }
    /// Puts the queued flows into the solver, counting them as users of their links.
    void flush(std::vector<std::uint32_t>& users) {
        for (const Queued& q : queued) {
            if (!q.counted) {
                for (std::uint32_t k = q.offset; k < q.offset + q.count; ++k) {
                    ++users[queued_links[k]];
                }
            }
            const MaxMinSolver::FlowId sid =
                solver.add(std::span(queued_links.data() + q.offset, q.count), q.weight);
            if (flow_of_solver_id.size() <= sid) {
                flow_of_solver_id.resize(sid + 1);
            }
            flow_of_solver_id[sid] = q.slot;
            flows[q.slot].solver_id = sid;
            dirty = true;
        }
        queued.clear();
        queued_links.clear();
    }
    std::size_t load() const { return solver.active_flows() + queued.size(); }

    MaxMinSolver solver;
    std::vector<Flow> flows;
    std::vector<std::uint32_t> free_flows;
    std::vector<std::uint32_t> flow_of_solver_id;
    std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
    std::int64_t max_finish = 0; ///< latest finish time pushed (bulk release test)
    std::vector<Queued> queued;
    std::vector<std::uint32_t> queued_links;
    bool dirty = false; ///< the solver has flows added since its last update
    /// Flows left for another shard at this edge: next_finish may be one of theirs, so the
    /// shard runs at this edge to find its own (a stale one would wake the fabric for nothing
    /// and make an edge that one solver does not have).
    bool lost = false;
    std::vector<Arrival> arrivals;
    std::vector<MaxMinSolver::FlowId> leaving;
    std::vector<std::uint8_t> moving; ///< per solver flow: found by migrate()'s search
    /// Bytes of flows stopped by cancel() that were never sent, by link kind (per link).
    std::array<double, topology::kLinkKinds> unsent{};
    std::uint64_t solves = 0;
    std::uint64_t started = 0;
    std::int64_t next_finish = kNoFinish;
};

FlowNetwork::FlowNetwork(const topology::Fabric& fabric, std::uint32_t partitions,
                         engine::EntityId wake_entity, engine::EventType wake_type,
                         Bandwidth on_chip, Duration on_chip_latency, std::uint32_t shards)
    : fabric_(&fabric), links_(MaxMinSolver::make_links(fabric.capacity())),
      owner_(fabric.capacity().size(), kFree), users_(fabric.capacity().size(), 0),
      wake_entity_(wake_entity), wake_type_(wake_type), on_chip_bps_(on_chip.bytes_per_s()),
      on_chip_latency_(on_chip_latency.ns()), pending_(partitions), cancels_(partitions) {
    if (shards == 0 || shards >= kFree) {
        throw std::invalid_argument("flow network: between 1 and 65534 shards");
    }
    for (std::uint32_t k = 0; k < shards; ++k) {
        shards_.push_back(std::make_unique<Shard>(links_, k, shards));
    }
}

FlowNetwork::~FlowNetwork() = default;

void FlowNetwork::start_group(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                              engine::EventType done_type, std::uint64_t tag,
                              std::vector<FlowSpec> flows) {
    auto& list = pending_[partition];
    list.push_back({now, owner, done_type, tag, std::move(flows), {}});
    list.back().flows = list.back().owned;
}

void FlowNetwork::cancel(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                         std::uint64_t tag, engine::EventType cancelled_type) {
    cancels_[partition].push_back({now, owner, tag, cancelled_type, pending_[partition].size()});
}

void FlowNetwork::start_group_view(std::uint32_t partition, std::int64_t now,
                                   engine::EntityId owner, engine::EventType done_type,
                                   std::uint64_t tag, std::span<const FlowSpec> flows) {
    pending_[partition].push_back({now, owner, done_type, tag, {}, flows});
}

std::size_t FlowNetwork::active_flows() const {
    std::size_t n = 0;
    for (const auto& s : shards_) {
        n += s->load();
    }
    return n;
}

std::uint64_t FlowNetwork::flows_started() const {
    std::uint64_t n = 0;
    for (const auto& s : shards_) {
        n += s->started;
    }
    return n;
}

std::uint64_t FlowNetwork::solves() const {
    std::uint64_t n = 0;
    for (const auto& s : shards_) {
        n += s->solves;
    }
    return n;
}

bool FlowNetwork::idle() const {
    if (active_flows() > 0) {
        return false;
    }
    return std::all_of(pending_.begin(), pending_.end(),
                       [](const std::vector<Pending>& p) { return p.empty(); }) &&
           std::all_of(cancels_.begin(), cancels_.end(),
                       [](const std::vector<Cancel>& c) { return c.empty(); });
}

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

void FlowNetwork::arrive(std::uint32_t gid, std::int64_t when, std::int64_t now,
                         const Schedule& schedule) {
    Group& g = groups_[gid];
    if (when == kStopped) {
        g.stopped = true;
    } else {
        g.arrival = std::max(g.arrival, when);
    }
    if (--g.outstanding == 0) {
        if (g.stopped) {
            schedule(g.owner, now, g.cancelled_type, g.tag);
            ++groups_cancelled_;
        } else {
            schedule(g.owner, std::max(now, g.arrival), g.done_type, g.tag);
        }
        free_groups_.push_back(gid);
    }
}

bool FlowNetwork::apply_cancels(std::int64_t now, const Schedule& schedule) {
    const auto matches = [](const Cancel& c, engine::EntityId owner, std::uint64_t tag) {
        return c.owner == owner && (c.tag == kAnyTag || c.tag == tag);
    };
    bool admitted = false;
    std::vector<std::vector<std::uint8_t>> drop(pending_.size());
    for (std::uint32_t p = 0; p < cancels_.size(); ++p) {
        for (const Cancel& c : cancels_[p]) {
            // Groups started in this window and not yet admitted: those before the cancel
            // (in its own partition, by order; in the others, by time) never start.
            for (std::uint32_t q = 0; q < pending_.size(); ++q) {
                drop[q].resize(pending_[q].size(), 0);
                for (std::size_t i = 0; i < pending_[q].size(); ++i) {
                    const Pending& g = pending_[q][i];
                    const bool before = q == p ? i < c.started : g.start <= c.at;
                    if (drop[q][i] == 0 && before && matches(c, g.owner, g.tag)) {
                        drop[q][i] = 1;
                        schedule(g.owner, now, c.cancelled_type, g.tag);
                        ++groups_cancelled_;
                    }
                }
            }
            // Admitted groups in flight: their shards stop the flows still transmitting.
            for (Group& g : groups_) {
                if (g.outstanding > 0 && g.cancel_at == kNotCancelled &&
                    matches(c, g.owner, g.tag)) {
                    g.cancel_at = c.at;
                    g.cancelled_type = c.cancelled_type;
                    admitted = true;
                }
            }
        }
        cancels_[p].clear();
    }
    for (std::uint32_t q = 0; q < pending_.size(); ++q) {
        std::size_t kept = 0;
        for (std::size_t i = 0; i < pending_[q].size(); ++i) {
            if (i >= drop[q].size() || drop[q][i] == 0) {
                if (kept != i) {
                    Pending& to = pending_[q][kept];
                    to = std::move(pending_[q][i]);
                    if (!to.owned.empty()) {
                        to.flows = to.owned; // the moved vector keeps its buffer
                    }
                }
                ++kept;
            }
        }
        pending_[q].resize(kept);
    }
    return admitted;
}

bool FlowNetwork::stop_cancelled(Shard& s) {
    s.leaving.clear();
    for (MaxMinSolver::FlowId sid = 0; sid < s.flow_of_solver_id.size(); ++sid) {
        if (!s.solver.alive(sid)) {
            continue;
        }
        const std::uint32_t slot = s.flow_of_solver_id[sid];
        Shard::Flow& f = s.flows[slot];
        const Group& g = groups_[f.group];
        if (f.solver_id != sid || g.cancel_at == kNotCancelled) {
            continue;
        }
        if (f.rate > 0.0 && f.finish() <= g.cancel_at) {
            continue; // it had finished transmitting: it arrives as usual
        }
        f.advance(std::max(g.cancel_at, f.last));
        for (const std::uint32_t l : s.solver.links(sid)) {
            s.unsent[static_cast<std::size_t>(fabric_->kind()[l])] += f.remaining;
            if (--users_[l] == 0) {
                owner_[l] = kFree;
            }
        }
        s.leaving.push_back(sid);
        ++f.version;
        s.arrivals.push_back({f.group, kStopped});
        s.free_flows.push_back(slot);
    }
    if (s.leaving.empty()) {
        return false;
    }
    s.solver.remove_batch(s.leaving);
    s.leaving.clear();
    return true;
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

namespace {
/// Below this many flows an edge routes them on one thread (a parallel step costs two
/// barriers).
constexpr std::size_t kParallelRouting = 128;
/// Placement prefetches the link owners of the flow this many ahead.
constexpr std::size_t kPlaceAhead = 8;
} // namespace

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

void FlowNetwork::resolve_shard(Shard& s, std::int64_t now) {
    s.flush(users_);
    bool changed = s.dirty;
    if (cancel_scan_ && stop_cancelled(s)) {
        changed = true;
    }
    s.dirty = false;
    s.lost = false;
    const auto release = [&](MaxMinSolver::FlowId sid) {
        for (const std::uint32_t l : s.solver.links(sid)) {
            if (--users_[l] == 0) {
                owner_[l] = kFree;
            }
        }
    };
    // Release finished transmissions and re-solve until no transmission ends before `now`
    // (rates can rise when flows leave, moving other finish times earlier).
    while (true) {
        if (!changed && s.finishes.size() == s.solver.active_flows() && !s.finishes.empty() &&
            s.max_finish <= now) {
            // Every flow in flight ends by now and nothing new arrived (the last edge of a
            // phase): release them all at once.
            while (!s.finishes.empty()) {
                const Shard::Finish fin = s.finishes.top();
                s.finishes.pop();
                Shard::Flow& f = s.flows[fin.flow];
                ++f.version;
                release(f.solver_id);
                s.arrivals.push_back({f.group, fin.time + f.latency});
                s.free_flows.push_back(fin.flow);
            }
            s.solver.clear();
            s.max_finish = 0;
            break;
        }
        s.leaving.clear();
        while (!s.finishes.empty() && s.finishes.top().time <= now) {
            const Shard::Finish fin = s.finishes.top();
            s.finishes.pop();
            Shard::Flow& f = s.flows[fin.flow];
            if (fin.version != f.version) {
                continue; // superseded by a later rate change
            }
            s.leaving.push_back(f.solver_id);
            release(f.solver_id);
            ++f.version;
            s.arrivals.push_back({f.group, fin.time + f.latency});
            s.free_flows.push_back(fin.flow);
        }
        if (!s.leaving.empty()) {
            s.solver.remove_batch(s.leaving);
            changed = true;
        }
        if (!changed) {
            break;
        }
        s.solver.update();
        ++s.solves;
        // Finish times of the re-filled flows.
        for (const MaxMinSolver::FlowId sid : s.solver.last_refilled()) {
            const std::uint32_t slot = s.flow_of_solver_id[sid];
            Shard::Flow& f = s.flows[slot];
            f.advance(now); // a new flow's first rate applies from its start
            f.rate = s.solver.rate(sid);
            const std::int64_t t_tx = f.finish();
            s.finishes.push({t_tx, slot, ++f.version});
            s.max_finish = std::max(s.max_finish, t_tx);
        }
        changed = false;
    }
    // The next end of transmission, skipping superseded entries.
    while (!s.finishes.empty() && s.finishes.top().version != s.flows[s.finishes.top().flow].version) {
        s.finishes.pop();
    }
    if (s.finishes.empty()) {
        s.max_finish = 0;
        s.next_finish = kNoFinish;
    } else {
        s.next_finish = s.finishes.top().time;
    }
}

bool FlowNetwork::resolve(std::int64_t now, const Schedule& schedule, const ParallelFor& parallel) {
    bool scheduled = false;
    const Schedule note = [&](engine::EntityId e, std::int64_t t, engine::EventType type,
                              std::uint64_t payload) {
        schedule(e, t, type, payload);
        scheduled = true;
    };
    using Clock = std::chrono::steady_clock;
    const auto seconds = [](Clock::time_point from, Clock::time_point to) {
        return std::chrono::duration<double>(to - from).count();
    };
    // Only shards with something to do run: flows to admit, or a transmission ending by now.
    // Larger loads first, so that the last pieces are small.
    bool has_cancels = false;
    for (const auto& c : cancels_) {
        has_cancels = has_cancels || !c.empty();
    }
    cancel_scan_ = has_cancels && apply_cancels(now, note);
    const auto busy = [&](const Shard& s) {
        return !s.queued.empty() || s.dirty || s.lost || s.next_finish <= now ||
               (cancel_scan_ && s.solver.active_flows() > 0);
    };
    const auto by_load = [&](std::uint32_t a, std::uint32_t b) {
        const std::size_t la = shards_[a]->load(), lb = shards_[b]->load();
        return la > lb || (la == lb && a < b);
    };
    const auto run = [&](std::uint32_t n, const std::function<void(std::uint32_t)>& work) {
        if (parallel && n > 1) {
            parallel(n, work);
        } else {
            for (std::uint32_t i = 0; i < n; ++i) {
                work(i);
            }
        }
    };
    const auto touched = [&](std::uint32_t k) { return (touched_[k / 64] >> (k % 64) & 1U) != 0; };
    const Clock::time_point t0 = Clock::now();
    const std::uint32_t chunks = prepare_routes();
    if (cancel_scan_) {
        // The shards read groups_ beside placement, which adds to it: no reallocation.
        groups_.reserve(groups_.size() + edge_groups_.size());
    }
    const bool placing = !edge_groups_.empty();
    const bool quiet = std::none_of(shards_.begin(), shards_.end(),
                                    [&](const std::unique_ptr<Shard>& s) { return busy(*s); });
    Clock::time_point t1 = t0;
    if (placing && quiet && parallel && edge_total_ >= kParallelRouting) {
        // No shard has work yet: placement starts at once and follows the routing threads
        // chunk by chunk. Every shard counts as noted.
        run(chunks + 1, [&](std::uint32_t i) {
            if (i == 0) {
                place_all(now, true);
            } else {
                claim_chunk(i - 1);
            }
        });
        merge_routes(chunks);
        touched_.assign(touched_.size(), ~std::uint64_t{0});
    } else {
        // Routes first, noting the shards placement may touch; then placement on one thread
        // beside the busy shards it cannot touch.
        const auto route_piece = [&](std::uint32_t c) { route_chunk(c, true); };
        if (edge_total_ >= kParallelRouting) {
            run(chunks, route_piece);
        } else {
            for (std::uint32_t c = 0; c < chunks; ++c) {
                route_piece(c);
            }
        }
        merge_routes(chunks);
        t1 = Clock::now();
        beside_.clear();
        for (std::uint32_t k = 0; k < shards_.size(); ++k) {
            if (!touched(k) && busy(*shards_[k])) {
                beside_.push_back(k);
            }
        }
        std::sort(beside_.begin(), beside_.end(), by_load);
        const std::uint32_t first = placing ? 1 : 0;
        run(static_cast<std::uint32_t>(beside_.size()) + first, [&](std::uint32_t i) {
            if (i < first) {
                place_all(now, false);
            } else {
                resolve_shard(*shards_[beside_[i - first]], now);
            }
        });
    }
    const Clock::time_point t2 = Clock::now();
    active_.clear();
    for (std::uint32_t k = 0; k < shards_.size(); ++k) {
        if (touched(k) && busy(*shards_[k])) {
            active_.push_back(k);
        }
    }
    std::sort(active_.begin(), active_.end(), by_load);
    // Arrivals become completion events in a fixed order: admission's, those of the shards no
    // route noted (shard by shard), then those of the noted shards. The first part runs as one
    // piece beside the noted shards' updates (it touches neither them nor their arrivals).
    const auto arrivals_of = [&](bool noted) {
        for (std::uint32_t k = 0; k < shards_.size(); ++k) {
            if (touched(k) == noted) {
                for (const Arrival& a : shards_[k]->arrivals) {
                    arrive(a.group, a.when, now, note);
                }
                shards_[k]->arrivals.clear();
            }
        }
    };
    run(static_cast<std::uint32_t>(active_.size()) + 1, [&](std::uint32_t i) {
        if (i == 0) {
            for (const Arrival& a : arrivals_) {
                arrive(a.group, a.when, now, note);
            }
            arrivals_.clear();
            arrivals_of(false);
        } else {
            resolve_shard(*shards_[active_[i - 1]], now);
        }
    });
    const Clock::time_point t3 = Clock::now();
    arrivals_of(true);
    if (cancel_scan_) {
        for (const auto& s : shards_) {
            for (std::size_t k = 0; k < link_bytes_.size(); ++k) {
                link_bytes_[k] -= s->unsent[k];
            }
            s->unsent.fill(0.0);
        }
        cancel_scan_ = false;
    }
    std::int64_t next = kNoFinish;
    for (const auto& s : shards_) {
        next = std::min(next, s->next_finish);
    }
    // Wake at the next end of transmission.
    if (next != kNoFinish) {
        const std::int64_t t = std::max(now, next);
        if (wake_at_ < now || t < wake_at_) {
            note(wake_entity_, t, wake_type_, 0);
            wake_at_ = t;
        }
    }
    const Clock::time_point t4 = Clock::now();
    edge_times_.route_s += seconds(t0, t1);
    edge_times_.place_s += seconds(t1, t2);
    edge_times_.shards_s += seconds(t2, t3);
    edge_times_.arrivals_s += seconds(t3, t4);
    return scheduled;
}

} // namespace trnsim::network
