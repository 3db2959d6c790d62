// FlowNetwork: the public interface and the window edge (resolve), which composes the parts:
// the groups and their completion events (flow_groups.hpp), the routing (flow_router.hpp),
// the placement on shards (flow_placement.hpp) and the shards' updates (flow_shard.hpp).
#include "flow_placement.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
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
      owners_(std::make_unique<LinkOwners>(fabric.capacity().size())),
      groups_(std::make_unique<FlowGroups>(partitions)), wake_entity_(wake_entity),
      wake_type_(wake_type) {
    if (shards == 0 || shards >= LinkOwners::kFree) {
        throw std::invalid_argument("flow network: between 1 and 65534 shards");
    }
    for (std::uint32_t k = 0; k < shards; ++k) {
        shards_.push_back(std::make_unique<FlowShard>(links_, k, shards));
    }
    router_ = std::make_unique<FlowRouter>(fabric, *groups_, *owners_, shards);
    placer_ = std::make_unique<ShardPlacer>(fabric, shards_, *owners_, *groups_, *router_,
                                            on_chip.bytes_per_s(), on_chip_latency.ns());
}

FlowNetwork::~FlowNetwork() = default;

void FlowNetwork::start_group(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                              engine::EventType done_type, std::uint64_t tag,
                              std::vector<FlowSpec> flows) {
    groups_->start(partition, now, owner, done_type, tag, std::move(flows));
}

void FlowNetwork::cancel(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                         std::uint64_t tag, engine::EventType cancelled_type) {
    groups_->cancel(partition, now, owner, tag, cancelled_type);
}

void FlowNetwork::start_group_view(std::uint32_t partition, std::int64_t now,
                                   engine::EntityId owner, engine::EventType done_type,
                                   std::uint64_t tag, std::span<const FlowSpec> flows) {
    groups_->start_view(partition, now, owner, done_type, tag, flows);
}

std::uint64_t FlowNetwork::groups_cancelled() const { return groups_->cancelled(); }
std::uint64_t FlowNetwork::migrations() const { return placer_->migrations(); }
std::uint64_t FlowNetwork::migrated_flows() const { return placer_->migrated_flows(); }

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

bool FlowNetwork::idle() const { return active_flows() == 0 && groups_->nothing_buffered(); }

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
    cancel_scan_ = groups_->has_cancels() && groups_->apply_cancels(now, note);
    const auto busy = [&](const FlowShard& s) { return s.busy(now, cancel_scan_); };
    update_s_.assign(shards_.size(), 0.0);
    const auto resolve_shard = [&](std::uint32_t k) {
        const Clock::time_point start = Clock::now();
        shards_[k]->resolve(now, cancel_scan_, *groups_, *fabric_, *owners_);
        update_s_[k] = seconds(start, Clock::now()); // each shard's own slot
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
    FlowRouter& router = *router_;
    const auto touched = [&](std::uint32_t k) { return router.noted(k); };
    const Clock::time_point t0 = Clock::now();
    const std::uint32_t chunks = router.prepare();
    if (cancel_scan_) {
        // The shards read groups_ beside placement, which adds to it: no reallocation.
        groups_->reserve(router.edge_groups().size());
    }
    const bool placing = !router.edge_groups().empty();
    const bool quiet = std::none_of(shards_.begin(), shards_.end(),
                                    [&](const std::unique_ptr<FlowShard>& s) { return busy(*s); });
    Clock::time_point t1 = t0;
    if (placing && quiet && parallel && router.total() >= kParallelRouting) {
        // No shard has work yet: placement starts at once and follows the routing threads
        // chunk by chunk. Every shard counts as noted.
        run(chunks + 1, [&](std::uint32_t i) {
            if (i == 0) {
                placer_->place_all(now, true);
            } else {
                router.claim_chunk(i - 1);
            }
        });
        router.merge(chunks, link_bytes_);
        router.note_all();
    } else {
        // Routes first, noting the shards placement may touch; then placement on one thread
        // beside the busy shards it cannot touch.
        const auto route_piece = [&](std::uint32_t c) { router.route_chunk(c, true); };
        if (router.total() >= kParallelRouting) {
            run(chunks, route_piece);
        } else {
            for (std::uint32_t c = 0; c < chunks; ++c) {
                route_piece(c);
            }
        }
        router.merge(chunks, link_bytes_);
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
                placer_->place_all(now, false);
            } else {
                resolve_shard(beside_[i - first]);
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
                for (const FlowArrival& a : shards_[k]->arrivals) {
                    groups_->arrive(a.group, a.when, now, note);
                }
                shards_[k]->arrivals.clear();
            }
        }
    };
    run(static_cast<std::uint32_t>(active_.size()) + 1, [&](std::uint32_t i) {
        if (i == 0) {
            std::vector<FlowArrival>& admitted = placer_->arrivals();
            for (const FlowArrival& a : admitted) {
                groups_->arrive(a.group, a.when, now, note);
            }
            admitted.clear();
            arrivals_of(false);
        } else {
            resolve_shard(active_[i - 1]);
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
    edge_times_.route += Seconds::of(seconds(t0, t1));
    edge_times_.place += Seconds::of(seconds(t1, t2));
    edge_times_.other_shards += Seconds::of(seconds(t2, t3));
    edge_times_.arrivals += Seconds::of(seconds(t3, t4));
    const double all = std::accumulate(update_s_.begin(), update_s_.end(), 0.0);
    const double largest = std::accumulate(update_s_.begin(), update_s_.end(), 0.0,
                                           [](double a, double b) { return std::max(a, b); });
    edge_times_.shard_updates += Seconds::of(all);
    edge_times_.largest_update += Seconds::of(largest);
    edge_times_.two_thread_bound += Seconds::of(std::max(largest, all / 2.0));
    return scheduled;
}

} // namespace trnsim::network
