// The serving fleet's routers (serve_router.hpp).
#include "serve_router.hpp"

#include <algorithm>

namespace trnsim::sim::detail {

ServeRouter::ServeRouter(const ServeInput& in, const Placement& pl,
                         const serving::RequestSource& source, FleetRecords& records,
                         ServeFailures& failures)
    : in_(in), pl_(pl), source_(source), records_(records), failures_(failures),
      hop_(hop_ns(in)) {
    const serving::ServingSpec& sv = in.spec.serving;
    disaggregated_ = sv.disaggregated.prefill_replicas > 0;
    policy_ = sv.router;
    slack_ = sv.max_batch;
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    shard_count_ = pl.shards;
    for (std::uint32_t k = 0; k < shard_count_; ++k) {
        auto sh = std::make_unique<RouterShard>();
        sh->index = k;
        sh->entity = router_entity(k, replicas);
        shards_.push_back(std::move(sh));
    }
    pool_of_.resize(pl.replicas.size());
    for (std::size_t r = 0; r < pl.replicas.size(); ++r) {
        RouterShard& sh = *shards_[pl.shard_of_domain[pl.replicas[r].domain]];
        ReplicaPool& pool = pl.replicas[r].prefill ? sh.prefill : sh.main;
        pool_of_[r] = static_cast<std::uint32_t>(pool.size());
        pool.add(static_cast<std::uint32_t>(r));
    }
    for (auto& sh : shards_) {
        sh->main.build();
        sh->prefill.build();
    }
}

std::int64_t ServeRouter::latest_done() const {
    std::int64_t done = 0;
    for (const auto& sh : shards_) {
        done = std::max(done, sh->done_ns);
    }
    return done;
}

SimTime ServeRouter::arrival_after(std::uint64_t id, SimTime t) const {
    for (std::uint64_t j = id + 1; j <= id + shard_count_; ++j) {
        t = source_.next_arrival(j, t);
    }
    return t;
}

void ServeRouter::handle(ServeContext& ctx, std::uint32_t k, const engine::Event& e) {
    RouterShard& sh = *shards_[k];
    const std::int64_t now = ctx.now_ns();
    switch (e.type) {
    case kStart:
        if (source_.closed_loop()) {
            // Client c sits at router c mod K.
            const auto clients =
                static_cast<std::uint32_t>(in_.spec.requests.arrival.concurrency);
            const std::uint32_t mine =
                clients / shard_count_ + (sh.index < clients % shard_count_ ? 1 : 0);
            for (std::uint32_t c = 0; c < mine; ++c) {
                if (!issue(ctx, sh, now)) {
                    sh.arrivals_open = false;
                    break;
                }
            }
        } else {
            // The shard's first request is id `index`.
            SimTime t = source_.next_arrival(0, SimTime::zero());
            for (std::uint64_t j = 1; j <= sh.index; ++j) {
                t = source_.next_arrival(j, t);
            }
            if (source_.issued(sh.index, t)) {
                ctx.schedule_at_ns(sh.entity, t.ns(), kArrival, sh.index);
            } else {
                sh.arrivals_open = false;
            }
        }
        for (const std::uint32_t d : failures_.start(ctx, sh.index)) {
            for (std::uint32_t r : failures_.replicas_of(d)) {
                pool_of(sh, r).set_enabled(pool_of_[r], false);
            }
        }
        break;
    case kArrival: {
        const std::uint64_t id = records_.next_id(sh.index);
        issue(ctx, sh, now);
        const std::uint64_t next = id + shard_count_;
        const SimTime t = arrival_after(id, SimTime::from_ns(now));
        if (source_.issued(next, t)) {
            ctx.schedule_at_ns(sh.entity, t.ns(), kArrival, next);
        } else {
            sh.arrivals_open = false;
        }
        break;
    }
    case kOutage:
        if (!all_done(k)) {
            failures_.on_outage(ctx, sh.index);
        }
        break;
    case kDetect: {
        const auto d = static_cast<std::uint32_t>(e.payload);
        for (std::uint32_t r : failures_.replicas_of(d)) {
            pool_of(sh, r).set_enabled(pool_of_[r], false);
        }
        const std::vector<std::uint64_t> held = failures_.notice_down(d);
        for (std::uint64_t id : held) {
            route(ctx, sh, id, now);
        }
        break;
    }
    case kDrain: {
        const auto d = static_cast<std::uint32_t>(e.payload);
        if (failures_.draining(d)) {
            for (std::uint32_t r : failures_.replicas_of(d)) {
                pool_of(sh, r).set_enabled(pool_of_[r], false);
            }
        }
        break;
    }
    case kEnable: {
        const auto d = static_cast<std::uint32_t>(e.payload);
        if (!failures_.enable(d)) {
            break; // down again at the instant it returned
        }
        for (std::uint32_t r : failures_.replicas_of(d)) {
            pool_of(sh, r).set_enabled(pool_of_[r], true);
        }
        std::deque<std::uint64_t> stranded = std::move(sh.stranded);
        sh.stranded.clear();
        for (std::uint64_t id : stranded) {
            route(ctx, sh, id, now);
        }
        break;
    }
    case kRetry: {
        failures_.count_retry(sh.index);
        const Slot& s = records_.slot(e.payload);
        // The replica whose failure dropped it, and the counts the router made for it.
        std::uint32_t r = s.rec.prefill_replica;
        if (!disaggregated_) {
            sh.main.done(pool_of_[r]);
        } else if (e.aux == kAtPrefill) {
            sh.prefill.done(pool_of_[r]);
            if (s.decode_replica != kNoReplica) {
                sh.main.done(pool_of_[s.decode_replica]);
            }
        } else {
            sh.main.done(pool_of_[s.decode_replica]);
            r = s.rec.replica;
        }
        if (s.rec.retries >= kMaxAttempts) {
            // Failures outpace it (serve_layout.hpp): it stays unfinished; a closed-loop
            // client gives up on it and sends its next request.
            ++sh.abandoned;
            if (source_.closed_loop() && !issue(ctx, sh, now)) {
                sh.arrivals_open = false;
            }
            break;
        }
        const std::uint32_t d = pl_.replicas[r].domain;
        if (failures_.unnoticed(d)) {
            failures_.hold(d, e.payload); // retried when the router notices
        } else {
            route(ctx, sh, e.payload, now);
        }
        break;
    }
    case kReport: {
        const auto r = static_cast<std::uint32_t>(e.payload);
        // pool_of_ indexes the replica's own pool: a prefill replica's finish (a one-token
        // request) frees it in the prefill pool.
        if (e.aux == kPrefilled) {
            sh.prefill.done(pool_of_[r]);
        } else {
            (pl_.replicas[r].prefill ? sh.prefill : sh.main).done(pool_of_[r]);
            ++sh.finished;
            if (source_.closed_loop() && !issue(ctx, sh, now)) {
                sh.arrivals_open = false;
            }
        }
        break;
    }
    default:
        break;
    }
    if (sh.done_ns < 0 && all_done(k)) {
        sh.done_ns = now;
    }
}

bool ServeRouter::issue(ServeContext& ctx, RouterShard& sh, std::int64_t now) {
    const std::uint64_t id = records_.next_id(sh.index);
    if (!source_.issued(id, SimTime::from_ns(now))) {
        return false;
    }
    Slot& s = records_.add(sh.index);
    const serving::Request r = source_.request(id, SimTime::from_ns(now));
    s.rec.id = id;
    s.rec.arrival = SimTime::from_ns(now);
    s.rec.input_tokens = static_cast<std::int32_t>(r.input_tokens);
    s.rec.output_tokens = static_cast<std::int32_t>(r.output_tokens);
    s.prefix_id = r.prefix_id;
    route(ctx, sh, id, now);
    return true;
}

void ServeRouter::route(ServeContext& ctx, RouterShard& sh, std::uint64_t id, std::int64_t now) {
    if (disaggregated_) {
        Slot& s = records_.slot(id);
        const std::uint32_t p = sh.prefill.choose(policy_, s.prefix_id, slack_);
        if (p == ReplicaPool::kNone) {
            sh.stranded.push_back(id);
            return;
        }
        // A request of one output token finishes at the end of its prefill (the scheduler's
        // finish_prefill): no decode replica, no transfer.
        s.decode_replica = kNoReplica;
        if (s.rec.output_tokens > 1) {
            const serving::RouterPolicy decode_policy =
                policy_ == serving::RouterPolicy::round_robin
                    ? policy_
                    : serving::RouterPolicy::least_loaded;
            const std::uint32_t m = sh.main.choose(decode_policy, 0, slack_);
            if (m == ReplicaPool::kNone) {
                sh.prefill.done(p);
                sh.stranded.push_back(id);
                return;
            }
            s.decode_replica = sh.main.member(m);
        }
        ctx.schedule_at_ns(replica_entity(sh.prefill.member(p)), now + hop_, kRequest, id);
        return;
    }
    const std::uint32_t m = sh.main.choose(policy_, records_.slot(id).prefix_id, slack_);
    if (m == ReplicaPool::kNone) {
        sh.stranded.push_back(id);
        return;
    }
    ctx.schedule_at_ns(replica_entity(sh.main.member(m)), now + hop_, kRequest, id);
}

} // namespace trnsim::sim::detail
