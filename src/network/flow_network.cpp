// FlowNetwork: groups, cancellations and the window edge (resolve): the shards' updates and
// the arrivals' completion events. Routing and placement are in flow_placement.cpp, the shards
// in flow_shard.hpp.
#include "flow_shard.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace trnsim::network {

namespace {
/// Below this many flows an edge routes them on one thread (a parallel step costs two
/// barriers).
constexpr std::size_t kParallelRouting = 128;
} // namespace

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
