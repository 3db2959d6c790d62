// The serving fleet on the engine (sim/serve.hpp describes the model).
#include "trnsim/sim/serve.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/engine/simulator.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/outages.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/scheduler.hpp"
#include "trnsim/topology/fabric.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <string>

#include "serve_failures.hpp"
#include "serve_layout.hpp"
#include "serve_placement.hpp"
#include "serve_records.hpp"
#include "serve_transfers.hpp"

namespace trnsim::sim {

namespace {

using namespace detail; // the fleet's layout and placement, private to the sim module
using serving::Completion;
using serving::ReplicaRole;
using serving::ReplicaScheduler;
using serving::Request;
using serving::RequestRecord;

// ------------------------------------------------------------------------------------------
// The router's view of a pool of replicas

class Pool {
public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    void add(std::uint32_t replica) { members_.push_back(replica); }
    void build() {
        const std::size_t n = members_.size();
        load_.assign(n, 0);
        enabled_.assign(n, 1);
        available_ = n;
        last_.assign(n, 0);
        leaves_ = 1;
        while (leaves_ < n) {
            leaves_ <<= 1;
        }
        tree_.assign(2 * leaves_, kEmpty);
        for (std::size_t i = 0; i < n; ++i) {
            tree_[leaves_ + i] = static_cast<std::uint32_t>(i);
        }
        for (std::size_t v = leaves_ - 1; v >= 1; --v) {
            tree_[v] = better(tree_[2 * v], tree_[2 * v + 1]);
        }
    }
    std::size_t size() const { return members_.size(); }
    std::uint32_t member(std::uint32_t m) const { return members_[m]; }

    /// Picks a member for `policy` (prefix: the request's prefix id, 0 for none) among the
    /// enabled ones and counts it; kNone when every member is disabled.
    std::uint32_t choose(serving::RouterPolicy policy, std::uint32_t prefix, std::int64_t slack) {
        if (available_ == 0) {
            return kNone;
        }
        std::uint32_t m = 0;
        switch (policy) {
        case serving::RouterPolicy::round_robin:
            do {
                m = static_cast<std::uint32_t>(cursor_++ % members_.size());
            } while (enabled_[m] == 0);
            break;
        case serving::RouterPolicy::least_loaded:
            m = tree_[1];
            break;
        case serving::RouterPolicy::prefix_affinity: {
            m = tree_[1];
            if (prefix != 0) {
                const auto pref = static_cast<std::uint32_t>((prefix - 1) % members_.size());
                if (enabled_[pref] != 0 && load_[pref] <= load_[m] + slack) {
                    m = pref;
                }
            }
            break;
        }
        }
        ++load_[m];
        last_[m] = ++clock_;
        update(m);
        return m;
    }
    void done(std::uint32_t m) {
        TRNSIM_CHECK(m < members_.size() && load_[m] > 0,
                     "serve: a report for a replica with no request counted in its pool");
        --load_[m];
        update(m);
    }
    /// A failed member is skipped until enabled again (its load count stays).
    void set_enabled(std::uint32_t m, bool on) {
        if ((enabled_[m] != 0) != on) {
            enabled_[m] = on ? 1 : 0;
            available_ = on ? available_ + 1 : available_ - 1;
            update(m);
        }
    }

private:
    static constexpr std::uint32_t kEmpty = 0xffffffffu;
    std::uint32_t better(std::uint32_t a, std::uint32_t b) const {
        if (a == kEmpty) {
            return b;
        }
        if (b == kEmpty) {
            return a;
        }
        // Only while a member is disabled (a failure): the common path reads no flags.
        if (available_ != members_.size() && enabled_[a] != enabled_[b]) {
            return enabled_[a] != 0 ? a : b;
        }
        if (load_[a] != load_[b]) {
            return load_[a] < load_[b] ? a : b;
        }
        if (last_[a] != last_[b]) {
            return last_[a] < last_[b] ? a : b;
        }
        return a < b ? a : b;
    }
    void update(std::uint32_t m) {
        for (std::size_t v = (leaves_ + m) / 2; v >= 1; v /= 2) {
            tree_[v] = better(tree_[2 * v], tree_[2 * v + 1]);
        }
    }

    std::vector<std::uint32_t> members_;
    std::vector<std::int64_t> load_;
    std::vector<std::uint8_t> enabled_;
    std::size_t available_ = 0;
    std::vector<std::uint64_t> last_;
    std::vector<std::uint32_t> tree_;
    std::size_t leaves_ = 1;
    std::uint64_t cursor_ = 0;
    std::uint64_t clock_ = 0;
};

/// One router of `serving.router_shards`: it owns the replicas of a block of NeuronLink
/// domains and the requests whose id is its index modulo the shard count, and lives in the
/// partition of its replicas (one router: partition 0, apart from its replicas').
struct Shard {
    engine::EntityId entity = 0;
    std::uint32_t index = 0;
    Pool main;    ///< unified or decode replicas
    Pool prefill;
    std::uint64_t finished = 0; ///< reports of finished requests
    bool arrivals_open = true;
    std::deque<std::uint64_t> stranded; ///< no replica serves
    std::int64_t done_ns = -1; ///< when all its requests were first done
};

// ------------------------------------------------------------------------------------------
// The engine model

class ServeModel {
public:
    ServeModel(const ServeInput& in, const Placement& pl, const serving::RequestSource& source,
               const topology::Fabric* fabric, std::uint32_t partitions)
        : in_(in), pl_(pl), source_(source), hop_(hop_ns(in)),
          off_(hop_ - std::max<std::int64_t>(in.spec.serving.router_latency.ns(), 1)),
          sample_ns_(in.options.kv_sample.ns()), records_(pl.shards), failures_(in, pl) {
        const serving::ServingSpec& sv = in.spec.serving;
        disaggregated_ = sv.disaggregated.prefill_replicas > 0;
        policy_ = sv.router;
        slack_ = sv.max_batch;
        reports_ = policy_ != serving::RouterPolicy::round_robin || source.closed_loop() ||
                   disaggregated_;
        prefix_tokens_ = in.spec.requests.prefix.tokens;
        const ReplicaKind pre = in.prefill.cost ? in.prefill : in.replica;
        const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
        shard_count_ = pl.shards;
        for (std::uint32_t k = 0; k < shard_count_; ++k) {
            auto sh = std::make_unique<Shard>();
            sh->index = k;
            sh->entity = router_entity(k, replicas);
            shards_.push_back(std::move(sh));
        }
        shard_of_domain_ = pl.shard_of_domain;
        reps_.reserve(pl.replicas.size());
        pool_of_.resize(pl.replicas.size());
        router_of_.resize(pl.replicas.size());
        for (std::size_t r = 0; r < pl.replicas.size(); ++r) {
            const bool is_prefill = pl.replicas[r].prefill;
            const ReplicaKind& kind = is_prefill ? pre : in.replica;
            const ReplicaRole role = !disaggregated_ ? ReplicaRole::unified
                                     : is_prefill    ? ReplicaRole::prefill
                                                     : ReplicaRole::decode;
            reps_.emplace_back(sv, *kind.cost, kind.kv_blocks, in.seed, role,
                               in.options.fast_forward);
            Shard& sh = *shards_[shard_of_domain_[pl.replicas[r].domain]];
            router_of_[r] = sh.entity;
            Pool& pool = is_prefill ? sh.prefill : sh.main;
            pool_of_[r] = static_cast<std::uint32_t>(pool.size());
            pool.add(static_cast<std::uint32_t>(r));
        }
        for (auto& sh : shards_) {
            sh->main.build();
            sh->prefill.build();
        }
        if (in.reliability.enabled) {
            reports_ = true; // the router must know when every request has finished
        }
        if (disaggregated_) {
            transfers_ =
                std::make_unique<KvTransfers>(in, *fabric, partitions, pl.replicas.size());
        }
    }

    template <class Q>
    void handle(engine::Context<Q>& ctx, const engine::Event& e) {
        const engine::EntityId self = ctx.self();
        if (self >= kFirstReplica) {
            const std::uint32_t r = self - kFirstReplica;
            if (r < reps_.size()) {
                replica(ctx, r, e);
            } else {
                router(ctx, *shards_[r - reps_.size() + 1], e);
            }
        } else if (self == kRouter) {
            router(ctx, *shards_[0], e);
        }
    }

    /// The engine calls this for the entity of the next event: its replica's state.
    void prefetch(engine::EntityId e) const {
        if (e >= kFirstReplica) {
            // The replica's scheduler object (about 1 KiB; its vectors' contents are one more
            // load away and are left to the handler).
            const char* p = reinterpret_cast<const char*>(&reps_[e - kFirstReplica]);
            for (std::size_t off = 0; off < sizeof(Replica); off += 64) {
                __builtin_prefetch(p + off, 1);
            }
        }
    }

    template <class Q>
    void window_edge(engine::WindowEdge<Q>& edge) {
        if (transfers_) {
            transfers_->window_edge(edge);
        }
    }

    /// The router entity of shard k (shard 0: entity 0; the others after the replicas).
    static engine::EntityId router_entity(std::uint32_t k, std::uint32_t replicas) {
        return k == 0 ? kRouter : kFirstReplica + replicas + (k - 1);
    }

    /// After the run: every request's record, by id, freeing the tables as it goes.
    std::vector<RequestRecord> take_records() { return records_.take(source_.closed_loop()); }

    /// After the run, with router shards: a shard whose requests were all done stopped
    /// following the outages, while one router follows them until the fleet's last request is
    /// done. Each shard's transitions before that time (the latest shard's done time) are
    /// counted here: they touch no request, only the failure figures.
    void catch_up_outages() {
        std::int64_t done = 0;
        for (const auto& sh : shards_) {
            done = std::max(done, sh->done_ns);
        }
        failures_.catch_up(done);
    }

    /// After the run: the failure figures up to `end` (router time).
    void failure_stats(std::int64_t end, ServingRunStats& st) const {
        failures_.add_stats(end, reps_.size(), st);
    }
    /// The last event any replica handled.
    std::int64_t last_event() const {
        std::int64_t t = 0;
        for (const Replica& rep : reps_) {
            t = std::max(t, rep.last_event);
        }
        return t;
    }

    /// After the run: the KV samples up to `end` and the per-replica figures.
    void finish(std::int64_t end, ServingRun& out, std::vector<serving::TokenGap>& gaps) {
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
            out.stats.kv_transfers += rep.transfers;
            out.stats.kv_transfer_bytes += rep.transfer_bytes;
        }
        if (transfers_) {
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
                out.kv_series[k].time_s = static_cast<double>(k) * in_.options.kv_sample.seconds();
                out.kv_series[k].used_fraction =
                    static_cast<double>(used) / static_cast<double>(capacity);
            }
        }
    }

private:
    struct Replica {
        Replica(const serving::ServingSpec& sv, const serving::IterationCost& cost,
                std::int64_t blocks, std::uint64_t seed, ReplicaRole role, bool fast)
            : sched(sv, cost, blocks, seed, role, fast) {}
        ReplicaScheduler sched;
        std::uint64_t generation = 0;
        std::int64_t pending = -1; ///< time of the valid step event, -1 when none
        std::int64_t next_sample = 0;
        std::vector<std::int32_t> samples; ///< blocks in use every sample_ns_
        std::int64_t last_event = 0;
        std::uint64_t transfers = 0;       ///< KV caches received
        double transfer_bytes = 0.0;
        bool down = false;                 ///< its domain failed; requests bounce
        std::uint32_t epoch = 0;           ///< failures so far
        std::int64_t down_ns = -1;         ///< replica time of the last failure
    };

    static engine::EntityId entity(std::uint32_t replica) { return kFirstReplica + replica; }

    /// Whether the shard's arrivals have ended and every request it issued has finished.
    bool all_done(const Shard& sh) const {
        return !sh.arrivals_open && sh.finished == records_.issued(sh.index);
    }

    /// The arrival of request id + K (the shard's next) from that of id at `t`: the gaps of
    /// the requests between are the other shards', drawn here too (a trace's times are direct).
    SimTime arrival_after(std::uint64_t id, SimTime t) const {
        for (std::uint64_t j = id + 1; j <= id + shard_count_; ++j) {
            t = source_.next_arrival(j, t);
        }
        return t;
    }
    // ---------------------------------------------------------------- router
    template <class Q>
    void router(engine::Context<Q>& ctx, Shard& sh, const engine::Event& e) {
        const std::int64_t now = ctx.now_ns();
        switch (e.type) {
        case kStart:
            if (source_.closed_loop()) {
                // Client c sits at router c mod K.
                const auto clients = static_cast<std::uint32_t>(
                    in_.spec.requests.arrival.concurrency);
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
            failures_.start(ctx, sh.index);
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
            if (!all_done(sh)) {
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
        if (sh.done_ns < 0 && all_done(sh)) {
            sh.done_ns = now;
        }
    }

    /// Issues the shard's next request at `now`; false when the limits say no more.
    template <class Q>
    bool issue(engine::Context<Q>& ctx, Shard& sh, std::int64_t now) {
        const std::uint64_t id = records_.next_id(sh.index);
        if (!source_.issued(id, SimTime::from_ns(now))) {
            return false;
        }
        Slot& s = records_.add(sh.index);
        const Request r = source_.request(id, SimTime::from_ns(now));
        s.rec.id = id;
        s.rec.arrival_ns = now;
        s.rec.input_tokens = static_cast<std::int32_t>(r.input_tokens);
        s.rec.output_tokens = static_cast<std::int32_t>(r.output_tokens);
        s.prefix_id = r.prefix_id;
        route(ctx, sh, id, now);
        return true;
    }

    /// The pool of the shard that holds replica r.
    Pool& pool_of(Shard& sh, std::uint32_t r) {
        return pl_.replicas[r].prefill ? sh.prefill : sh.main;
    }

    /// Sends request `id` to a replica by the router's policy (disaggregated: a prefill
    /// replica, with the decode replica it hands the KV cache to), or keeps it until one serves.
    template <class Q>
    void route(engine::Context<Q>& ctx, Shard& sh, std::uint64_t id, std::int64_t now) {
        if (disaggregated_) {
            Slot& s = records_.slot(id);
            const std::uint32_t p = sh.prefill.choose(policy_, s.prefix_id, slack_);
            if (p == Pool::kNone) {
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
                if (m == Pool::kNone) {
                    sh.prefill.done(p);
                    sh.stranded.push_back(id);
                    return;
                }
                s.decode_replica = sh.main.member(m);
            }
            ctx.schedule_at_ns(entity(sh.prefill.member(p)), now + hop_, kRequest, id);
            return;
        }
        const std::uint32_t m = sh.main.choose(policy_, records_.slot(id).prefix_id, slack_);
        if (m == Pool::kNone) {
            sh.stranded.push_back(id);
            return;
        }
        ctx.schedule_at_ns(entity(sh.main.member(m)), now + hop_, kRequest, id);
    }

    // ---------------------------------------------------------------- replicas
    void sample_until(Replica& rep, std::int64_t t) {
        if (sample_ns_ <= 0) {
            return;
        }
        while (rep.next_sample < t) {
            rep.samples.push_back(static_cast<std::int32_t>(rep.sched.used_blocks_at(rep.next_sample)));
            rep.next_sample += sample_ns_;
        }
    }

    template <class Q>
    void replica(engine::Context<Q>& ctx, std::uint32_t r, const engine::Event& e) {
        Replica& rep = reps_[r];
        const std::int64_t now = ctx.now_ns() - off_; // the replicas' time (see hop_ns)
        sample_until(rep, now);
        if (e.type == kDown) {
            rep.down = true;
            ++rep.epoch;
            rep.down_ns = now;
            ++rep.generation; // its pending step never ends
            rep.pending = -1;
            if (transfers_) {
                // The KV caches it held for decode replicas are gone: they learn it one router
                // latency later (the lookahead), and drop a transfer that has not arrived by
                // then.
                for (const KvTransfers::Outgoing& o : transfers_->outgoing(r)) {
                    if (o.live) {
                        ctx.schedule_at_ns(entity(o.decode), ctx.now_ns() + hop_, kKvLost,
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
        case kKvCancelled: {
            const std::uint64_t id = tag_request(e.payload);
            Slot& s = records_.slot(id);
            if (transfers_->take_lost(r, id, tag_attempt(e.payload))) {
                // Its source failed before it arrived: the source's copy is gone with it.
                drop(ctx, r, id, kAtDecode, s.rec.prefill_replica);
                break;
            }
            const std::uint64_t release =
                (std::uint64_t{s.handoff_epoch} << 32) | std::uint64_t{s.handoff};
            ctx.schedule_at_ns(entity(s.rec.prefill_replica), ctx.now_ns() + hop_, kRelease,
                               release);
            if (e.type == kKvCancelled || rep.down || s.rec.first_token_ns <= rep.down_ns) {
                // This replica failed after the transfer started: the cache never landed.
                drop(ctx, r, id, kAtDecode, r);
                break;
            }
            rep.sched.add_transferred(request_of(s, prefix_tokens_), s.rec.first_token_ns,
                                      s.rec.preemptions);
            ++rep.transfers;
            rep.transfer_bytes += transfers_->bytes_of(s.rec.input_tokens);
            poke(ctx, r, now);
            break;
        }
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

    /// A failure of replica `failed` dropped request `id` at replica r (where: kAtPrefill or
    /// kAtDecode): back to its router.
    template <class Q>
    void drop(engine::Context<Q>& ctx, std::uint32_t r, std::uint64_t id, std::uint16_t where,
              std::uint32_t failed) {
        Slot& s = records_.slot(id);
        ++s.rec.retries;
        if (where == kAtDecode) {
            s.rec.replica = failed;
        }
        ctx.schedule_at_ns(router_of_[r], ctx.now_ns() + hop_, kRetry, id, where);
    }

    template <class Q>
    void schedule_step(engine::Context<Q>& ctx, std::uint32_t r, std::int64_t at) {
        Replica& rep = reps_[r];
        ++rep.generation;
        rep.pending = at;
        ctx.schedule_at_ns(entity(r), at + off_, kStep, rep.generation, 0, kStepPriority);
    }

    /// Something arrived: cut a fast-forwarded step at the next boundary, or wake an idle
    /// replica (after the other arrivals of this instant).
    template <class Q>
    void poke(engine::Context<Q>& ctx, std::uint32_t r, std::int64_t now) {
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

    template <class Q>
    void completed(engine::Context<Q>& ctx, std::uint32_t r, const Completion& c) {
        Slot& s = records_.slot(c.request);
        s.rec.first_token_ns = c.first_token_ns;
        s.rec.preemptions = c.preemptions;
        if (c.kind == Completion::Kind::finished) {
            s.rec.finish_ns = c.time_ns;
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

    const ServeInput& in_;
    const Placement& pl_;
    const serving::RequestSource& source_;
    const std::int64_t hop_; ///< engine delay of every router-replica event: the lookahead
    const std::int64_t off_; ///< replica time = engine time - off_ (router: engine time)
    const std::int64_t sample_ns_;
    bool disaggregated_ = false;
    bool reports_ = true;
    serving::RouterPolicy policy_ = serving::RouterPolicy::least_loaded;
    std::int64_t slack_ = 1;
    std::int64_t prefix_tokens_ = 0;

    FleetRecords records_;  ///< the requests' records, by shard
    ServeFailures failures_; ///< the domains' outages (none without reliability)
    std::vector<Replica> reps_;
    std::vector<std::uint32_t> pool_of_; ///< replica -> index in its shard's pool
    std::vector<engine::EntityId> router_of_; ///< replica -> its router shard's entity
    std::vector<std::unique_ptr<Shard>> shards_;
    std::vector<std::uint32_t> shard_of_domain_; ///< domain -> router shard
    std::uint32_t shard_count_ = 1;
    std::unique_ptr<KvTransfers> transfers_; ///< disaggregated only
};

bool needs_trace(const serving::RequestSpec& r) {
    using K = serving::TokenDistribution::Kind;
    return r.arrival.kind == serving::ArrivalSpec::Kind::trace || r.input.kind == K::trace ||
           r.output.kind == K::trace;
}

} // namespace

namespace {

/// What simulate_serving checks and builds before it simulates.
struct Prepared {
    int lnc = 0;
    Placement placement;
    std::optional<topology::Fabric> fabric;
    std::shared_ptr<const serving::AzureTrace> trace;
};

Prepared prepare(const ServeInput& in) {
    Prepared p;
    p.lnc = in.lnc > 0 ? in.lnc : in.chip.lnc_default;
    if (p.lnc < 1 || in.chip.physical_cores % p.lnc != 0) {
        throw InputError("hardware.lnc", "LNC " + std::to_string(p.lnc) +
                                             " does not divide the " +
                                             std::to_string(in.chip.physical_cores) +
                                             " cores of a chip");
    }
    if (!in.replica.cost || in.replica.kv_blocks < 1) {
        throw std::invalid_argument("serve: every replica kind needs a cost and KV blocks");
    }
    p.placement = place(in, p.lnc);
    const Placement& pl = p.placement;
    if (in.reliability.enabled) {
        reliability::validate_fleet(in.reliability, fleet_shape(in), fleet_hardware(in));
    }
    if (in.spec.serving.disaggregated.prefill_replicas > 0) {
        if (!in.fabric) {
            throw InputError("cluster.fabric",
                             "disaggregated serving moves KV caches over the fabric: give one");
        }
        if (in.kv_bytes_per_token.count() <= 0) {
            throw std::invalid_argument("serve: disaggregation needs the KV bytes per token");
        }
        const std::int64_t domains = in.fabric->scale_up.ultraserver_instances > 0
                                         ? pl.instances / in.fabric->scale_up.ultraserver_instances
                                         : pl.instances;
        p.fabric = topology::Fabric::build(*in.fabric, domains);
        if (static_cast<std::int64_t>(p.fabric->chips()) != pl.chips) {
            throw InputError("cluster.fabric", "fabric " + in.fabric->name + " holds " +
                                                   std::to_string(p.fabric->chips()) +
                                                   " chips for this cluster, the cluster has " +
                                                   std::to_string(pl.chips));
        }
    }
    p.trace = in.trace;
    if (!p.trace && needs_trace(in.spec.requests)) {
        p.trace = std::make_shared<serving::AzureTrace>(serving::read_azure_trace(
            in.spec.requests.arrival.trace_file, in.spec.requests.arrival.speedup));
    }
    return p;
}

} // namespace

std::vector<ReplicaPlacement> check_serving_input(const ServeInput& in) {
    const Prepared p = prepare(in);
    const serving::RequestSource source(in.spec.requests, in.spec.serving.max_context, in.seed,
                                        p.trace);
    return p.placement.replicas;
}

ServingRun simulate_serving(const ServeInput& in) {
    Prepared prepared = prepare(in);
    const Placement& pl = prepared.placement;
    std::optional<topology::Fabric>& fabric = prepared.fabric;
    const serving::RequestSource source(in.spec.requests, in.spec.serving.max_context, in.seed,
                                        prepared.trace);

    // One router: partition 0 holds it and the wake entity, then one partition per NeuronLink
    // domain with replicas. K router shards: partition k holds shard k and its replicas
    // (partition 0 also the wake entity); no event crosses partitions.
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    const std::uint32_t entities = kFirstReplica + replicas + (pl.shards - 1);
    engine::PartitionMap map;
    if (pl.shards == 1) {
        std::vector<std::uint32_t> starts = {0};
        for (std::uint32_t r = 0; r < replicas; ++r) {
            if (r == 0 || pl.replicas[r].domain != pl.replicas[r - 1].domain) {
                starts.push_back(kFirstReplica + r);
            }
        }
        map = engine::PartitionMap::from_starts(entities, starts);
    } else {
        std::vector<std::uint32_t> owner(entities, 0);
        for (std::uint32_t r = 0; r < replicas; ++r) {
            owner[kFirstReplica + r] = pl.shard_of_domain[pl.replicas[r].domain];
        }
        for (std::uint32_t k = 1; k < pl.shards; ++k) {
            owner[kFirstReplica + replicas + (k - 1)] = k;
        }
        map = engine::PartitionMap::from_owners(owner, pl.shards);
    }

    ServeModel model(in, pl, source, fabric ? &*fabric : nullptr, map.partitions());
    // Disaggregated, the fabric's flows are resolved at the window edges: the windows stay the
    // router's, whatever the shards.
    const bool fabric_windows = in.spec.serving.disaggregated.prefill_replicas > 0;
    const Duration lookahead = Duration::from_ns(pl.shards == 1 || fabric_windows
                                                     ? hop_ns(in)
                                                     : std::max(hop_ns(in), kShardedWindowNs));
    // Few pending events per partition (a step end per replica, requests in flight): a heap
    // beats the calendar queue's bucket scans here.
    engine::Simulator<ServeModel, engine::QuaternaryHeap> sim(model, map, lookahead);
    for (std::uint32_t k = 0; k < pl.shards; ++k) {
        sim.schedule(ServeModel::router_entity(k, replicas), SimTime::zero(), kStart);
    }
    const int threads = in.threads > 0 ? in.threads : engine::default_thread_count();
    const engine::RunStats run = sim.run(SimTime::max(), threads);

    ServingRun out;
    out.placement = pl.replicas;
    std::vector<RequestRecord> records = model.take_records();
    std::int64_t end = model.last_event();
    for (const RequestRecord& r : records) {
        TRNSIM_CHECK(r.finished(), "serve: a request did not finish");
        end = std::max(end, r.finish_ns);
    }
    std::vector<serving::TokenGap> gaps;
    model.finish(end, out, gaps);
    model.catch_up_outages();
    model.failure_stats(end, out.stats);
    out.summary = serving::summarize(records, in.spec.slo);
    out.slowest = serving::slowest_replica(records);
    serving::add_itl(out.summary, std::move(gaps));
    if (in.options.keep_records) {
        out.requests = std::move(records);
    }
    ServingRunStats& st = out.stats;
    st.replicas = replicas;
    for (const ReplicaPlacement& p : pl.replicas) {
        st.prefill_replicas += p.prefill ? 1 : 0;
    }
    st.replicas_per_unit = pl.per_unit;
    st.router_shards = pl.shards;
    st.unit_is_ultraserver = pl.unit_is_ultraserver;
    st.partitions = map.partitions();
    st.events = run.events;
    st.remote_events = run.remote_events;
    st.windows = run.windows;
    st.shared_windows = run.shared_windows;
    st.lookahead_ns = lookahead.ns();
    st.router_latency_ns = std::max<std::int64_t>(in.spec.serving.router_latency.ns(), 1);
    st.threads = run.threads;
    st.end_s = static_cast<double>(end) * 1e-9;
    return out;
}

} // namespace trnsim::sim
