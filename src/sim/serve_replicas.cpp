// The serving fleet's replicas (serve_replicas.hpp).
#include "serve_replicas.hpp"

#include <algorithm>

#include "trnsim/core/assert.hpp"

namespace trnsim::sim::detail {

using serving::Completion;
using serving::ReplicaRole;
using serving::ReplicaScheduler;

ServeReplicas::ServeReplicas(const ServeInput& in, const Placement& pl, FleetRecords& records,
                             KvTransfers* transfers, bool reports)
    : in_(in), pl_(pl), records_(records), transfers_(transfers), hop_(hop_ns(in)),
      off_(hop_ - std::max<std::int64_t>(in.spec.serving.router_latency.ns(), 1)),
      sample_ns_(in.options.kv_sample.ns()) {
    const serving::ServingSpec& sv = in.spec.serving;
    disaggregated_ = sv.disaggregated.prefill_replicas > 0;
    reports_ = reports;
    prefix_tokens_ = in.spec.requests.prefix.tokens;
    const ReplicaKind pre = in.prefill.cost ? in.prefill : in.replica;
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    // A sixteenth of the budget: the vectors' growth and the fleet series come on top.
    max_samples_ = static_cast<std::size_t>(
        static_cast<double>(in.options.max_memory.count()) / 16.0 /
        (4.0 * static_cast<double>(replicas) + 16.0));
    reps_.reserve(pl.replicas.size());
    router_of_.resize(pl.replicas.size());
    for (std::size_t r = 0; r < pl.replicas.size(); ++r) {
        const bool is_prefill = pl.replicas[r].prefill;
        const ReplicaKind& kind = is_prefill ? pre : in.replica;
        const ReplicaRole role = !disaggregated_ ? ReplicaRole::unified
                                 : is_prefill    ? ReplicaRole::prefill
                                                 : ReplicaRole::decode;
        reps_.emplace_back(sv, *kind.cost, kind.kv_blocks, in.seed, role,
                           in.options.fast_forward);
        router_of_[r] = router_entity(pl.shard_of_domain[pl.replicas[r].domain], replicas);
    }
}

std::int64_t ServeReplicas::last_event() const {
    std::int64_t t = 0;
    for (const Replica& rep : reps_) {
        t = std::max(t, rep.last_event);
    }
    return t;
}

void ServeReplicas::finish(std::int64_t end, ServingRun& out,
                           std::vector<serving::TokenGap>& gaps) {
    std::int64_t capacity = 0;
    out.replica_kv_peak_fraction.resize(reps_.size());
    for (std::size_t r = 0; r < reps_.size(); ++r) {
        Replica& rep = reps_[r];
        sample_until(rep, end + 1);
        const ReplicaScheduler& s = rep.sched;
        capacity += s.capacity_blocks();
        const serving::SchedulerStats& st = s.stats();
        out.replica_kv_peak_fraction[r] = static_cast<double>(st.peak_used_blocks) /
                                          static_cast<double>(s.capacity_blocks());
        out.kv_cache_peak_fraction =
            std::max(out.kv_cache_peak_fraction, out.replica_kv_peak_fraction[r]);
        out.stats.steps += st.steps;
        out.stats.iterations += st.iterations;
        out.stats.preemptions += st.preemptions;
        const std::vector<serving::TokenGap> g = s.token_gaps();
        gaps.insert(gaps.end(), g.begin(), g.end());
        out.stats.prefix_hits += st.prefix_hits;
        out.stats.prefix_hit_tokens += st.prefix_hit_tokens;
        out.stats.busy += Seconds::of(st.busy.seconds());
        out.stats.prefill_tokens += st.prefill_tokens;
        out.stats.decode_tokens += st.decode_tokens;
        out.stats.kv_tokens_touched += st.kv_tokens_touched;
        out.stats.kv_transfers += rep.transfers;
        out.stats.kv_transfer_bytes += rep.transfer_bytes;
    }
    if (transfers_ != nullptr) {
        out.stats.kv_transfers_cancelled = transfers_->cancelled();
    }
    if (sample_ns_ > 0 && !reps_.empty()) {
        const std::size_t n = reps_.front().samples.size();
        out.kv_series.resize(n);
        for (std::size_t k = 0; k < n; ++k) {
            std::int64_t used = 0;
            for (const Replica& rep : reps_) {
                used += rep.samples[k];
            }
            out.kv_series[k].time =
                Seconds::of(static_cast<double>(k) * in_.options.kv_sample.seconds());
            out.kv_series[k].used_fraction =
                static_cast<double>(used) / static_cast<double>(capacity);
        }
    }
}

void ServeReplicas::sample_until(Replica& rep, std::int64_t t) {
    if (sample_ns_ <= 0) {
        return;
    }
    while (rep.next_sample < t && rep.samples.size() < max_samples_) {
        rep.samples.push_back(static_cast<std::int32_t>(rep.sched.used_blocks_at(rep.next_sample)));
        rep.next_sample += sample_ns_;
    }
}

void ServeReplicas::handle(ServeContext& ctx, std::uint32_t r, const engine::Event& e) {
    Replica& rep = reps_[r];
    const std::int64_t now = ctx.now_ns() - off_; // the replicas' time (see hop_ns)
    sample_until(rep, now);
    if (e.type == kDown) {
        fail(ctx, r, now);
        return;
    }
    if (e.type == kUp) {
        rep.down = false;
        return;
    }
    rep.last_event = now;
    switch (e.type) {
    case kRequest: {
        Slot& s = records_.slot(e.payload);
        s.rec.prefill_replica = r;
        if (rep.down) {
            drop(ctx, r, e.payload, kAtPrefill, r);
            break;
        }
        rep.sched.add(request_of(s, prefix_tokens_));
        poke(ctx, r, now);
        break;
    }
    case kKvArrived:
    case kKvCancelled:
        transfer_ended(ctx, r, e, now);
        break;
    case kKvLost:
        // The transfer's flows stop (it may have arrived already: then nothing matches).
        transfers_->lose(ctx.partition(), ctx.now_ns(), r, e.payload, e.aux);
        break;
    case kRelease: {
        const auto handoff = static_cast<std::uint32_t>(e.payload);
        if (e.payload >> 32 != rep.epoch) {
            break; // the hand-off was lost with a failure since
        }
        rep.sched.release(handoff);
        transfers_->released(r, handoff);
        poke(ctx, r, now);
        break;
    }
    case kStep:
        if (e.payload != rep.generation) {
            return; // superseded by a shorter step
        }
        rep.pending = -1;
        if (rep.sched.busy()) {
            for (const Completion& c : rep.sched.end()) {
                completed(ctx, r, c);
            }
        }
        if (const std::int64_t end = rep.sched.begin(now); end >= 0) {
            schedule_step(ctx, r, end);
        }
        break;
    default:
        break;
    }
}

void ServeReplicas::fail(ServeContext& ctx, std::uint32_t r, std::int64_t now) {
    Replica& rep = reps_[r];
    rep.down = true;
    ++rep.epoch;
    rep.down_ns = now;
    ++rep.generation; // its pending step never ends
    rep.pending = -1;
    if (transfers_ != nullptr) {
        // The KV caches it held for decode replicas are gone: they learn it one router
        // latency later (the lookahead), and drop a transfer that has not arrived by then.
        for (const KvTransfers::Outgoing& o : transfers_->outgoing(r)) {
            if (o.live) {
                ctx.schedule_at_ns(replica_entity(o.decode), ctx.now_ns() + hop_, kKvLost,
                                   o.request, o.attempt);
            }
        }
        transfers_->clear_outgoing(r);
    }
    const bool decode = pl_.replicas[r].prefill == false && disaggregated_;
    if (decode) {
        // The KV caches on their way here will not land: their flows stop now and
        // kKvCancelled drops each.
        transfers_->cancel_incoming(ctx.partition(), ctx.now_ns(), r);
    }
    for (std::uint64_t id : rep.sched.fail()) {
        drop(ctx, r, id, decode ? kAtDecode : kAtPrefill, r);
    }
}

void ServeReplicas::transfer_ended(ServeContext& ctx, std::uint32_t r, const engine::Event& e,
                                   std::int64_t now) {
    Replica& rep = reps_[r];
    const std::uint64_t id = tag_request(e.payload);
    Slot& s = records_.slot(id);
    if (transfers_->take_lost(r, id, tag_attempt(e.payload))) {
        // Its source failed before it arrived: the source's copy is gone with it.
        drop(ctx, r, id, kAtDecode, s.rec.prefill_replica);
        return;
    }
    const std::uint64_t release =
        (std::uint64_t{s.handoff_epoch} << 32) | std::uint64_t{s.handoff};
    ctx.schedule_at_ns(replica_entity(s.rec.prefill_replica), ctx.now_ns() + hop_, kRelease,
                       release);
    if (e.type == kKvCancelled || rep.down || s.rec.first_token.ns() <= rep.down_ns) {
        // This replica failed after the transfer started: the cache never landed.
        drop(ctx, r, id, kAtDecode, r);
        return;
    }
    rep.sched.add_transferred(request_of(s, prefix_tokens_), s.rec.first_token.ns(),
                              s.rec.preemptions);
    ++rep.transfers;
    rep.transfer_bytes += transfers_->bytes_of(s.rec.input_tokens);
    poke(ctx, r, now);
}

void ServeReplicas::drop(ServeContext& ctx, std::uint32_t r, std::uint64_t id,
                         std::uint16_t where, std::uint32_t failed) {
    Slot& s = records_.slot(id);
    ++s.rec.retries;
    if (where == kAtDecode) {
        s.rec.replica = failed;
    }
    ctx.schedule_at_ns(router_of_[r], ctx.now_ns() + hop_, kRetry, id, where);
}

void ServeReplicas::schedule_step(ServeContext& ctx, std::uint32_t r, std::int64_t at) {
    Replica& rep = reps_[r];
    ++rep.generation;
    rep.pending = at;
    ctx.schedule_at_ns(replica_entity(r), at + off_, kStep, rep.generation, 0, kStepPriority);
}

void ServeReplicas::poke(ServeContext& ctx, std::uint32_t r, std::int64_t now) {
    Replica& rep = reps_[r];
    if (rep.sched.busy()) {
        const std::int64_t end = rep.sched.interrupt(now);
        if (end != rep.pending) {
            schedule_step(ctx, r, end);
        }
    } else if (rep.pending < 0) {
        schedule_step(ctx, r, now);
    }
}

void ServeReplicas::completed(ServeContext& ctx, std::uint32_t r, const Completion& c) {
    Slot& s = records_.slot(c.request);
    s.rec.first_token = c.first_token;
    s.rec.preemptions = c.preemptions;
    if (c.kind == Completion::Kind::finished) {
        s.rec.finish = c.time;
        s.rec.replica = r;
        if (reports_) {
            ctx.schedule_at_ns(router_of_[r], ctx.now_ns() + hop_, kReport, r, kFinished);
        }
        return;
    }
    // Prefilled: the KV cache goes to the decode replica, one flow per chip pair.
    TRNSIM_CHECK(s.decode_replica != kNoReplica,
                 "serve: a prefilled request has no decode replica");
    s.handoff = c.handoff;
    s.handoff_epoch = reps_[r].epoch;
    transfers_->send(ctx.partition(), ctx.now_ns(), r, pl_.replicas[r], s.decode_replica,
                     pl_.replicas[s.decode_replica], c.handoff, c.request,
                     static_cast<std::uint16_t>(s.rec.retries),
                     transfers_->bytes_of(s.rec.input_tokens));
    ctx.schedule_at_ns(router_of_[r], ctx.now_ns() + hop_, kReport, r, kPrefilled);
}

} // namespace trnsim::sim::detail
