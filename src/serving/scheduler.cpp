// ReplicaScheduler: the steps (begin, interrupt, end) and what their iterations produced,
// composed from the parts (scheduler.hpp describes the policy and names them).
#include "trnsim/serving/scheduler.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <limits>

namespace trnsim::serving {

namespace {

/// Cap on the iterations of one step (keeps n x d far from overflow).
constexpr std::int64_t kMaxStepIterations = std::int64_t{1} << 30;

/// The most iterations the coming decode-only step (shape sh, iterations of d) can run as one,
/// at least 1: up to the next finish, the end of the longest context's bucket and the last
/// iteration whose blocks fit. (A free function called once: inlined into begin().)
std::int64_t fast_forward(const IterationCost& cost, Batcher& batch, const IterationShape& sh,
                          std::int64_t d) {
    DecodeBook& dec = batch.decode();
    const std::int64_t block = batch.kv().block();
    const std::int64_t n_finish = dec.next_finish(batch.seqs()) - dec.iteration() + 1;
    const std::int64_t ctx = sh.decode_max_context;
    const std::int64_t n_bucket = std::max<std::int64_t>(cost.bucket_end(ctx) - ctx + 1, 1);
    std::int64_t n = std::min({n_finish, n_bucket, kMaxStepIterations,
                               std::numeric_limits<std::int64_t>::max() / 4 / d});
    const std::int64_t avail = batch.kv().free_blocks();
    if (((n + block - 1) / block) * dec.count() > avail) {
        n = std::min(n, dec.iterations_fitting(avail)); // the blocks may not last
    }
    return std::max<std::int64_t>(n, 1);
}

} // namespace

// ------------------------------------------------------------------------------------------
// Construction, requests in, failure

const ServingSpec& ReplicaScheduler::checked(const ServingSpec& spec) {
    if (spec.max_batch < 1) {
        throw InputError("workload.serving.max_batch", "must be at least 1");
    }
    if (spec.kv_block < 1) {
        throw InputError("workload.serving.kv_block", "must be at least 1 token");
    }
    if (spec.max_context < 1) {
        throw InputError("workload.serving.max_context", "must be at least 1 token");
    }
    if (spec.prefill_chunk < 0) {
        throw InputError("workload.serving.prefill_chunk", "must not be negative");
    }
    if (spec.prefill_batch < 0) {
        throw InputError("workload.serving.prefill_batch", "must not be negative");
    }
    return spec;
}

// The spec's own checks, then the speculation's (Speculator), then the KV cache's size
// (Batcher): the members in that order.
ReplicaScheduler::ReplicaScheduler(const ServingSpec& spec, const IterationCost& cost,
                                   std::int64_t kv_blocks, std::uint64_t seed, ReplicaRole role,
                                   bool fast_forward)
    : cost_(cost), role_(role), fast_forward_(fast_forward), spec_(checked(spec), seed),
      batch_(spec, kv_blocks, spec_.k()) {}

void ReplicaScheduler::add(const Request& r) {
    SequenceTable& seqs = batch_.seqs();
    const std::uint32_t s = seqs.add(r);
    Seq& q = seqs[s];
    q.state = SeqState::waiting;
    q.target = r.input_tokens;
    seqs.waiting().push_back(s);
}

void ReplicaScheduler::add_transferred(const Request& r, std::int64_t first_token_ns,
                                       std::uint32_t preemptions) {
    TRNSIM_CHECK(role_ == ReplicaRole::decode,
                 "serving: a transferred sequence needs a decode replica");
    SequenceTable& seqs = batch_.seqs();
    const std::uint32_t s = seqs.add(r);
    Seq& q = seqs[s];
    q.state = SeqState::waiting;
    q.transferred = true;
    q.first_token = SimTime::from_ns(first_token_ns);
    q.preemptions = preemptions;
    q.generated = 1;
    q.kv = r.input_tokens;
    q.target = r.input_tokens + 1;
    gaps_.stamp(q, first_token_ns); // its first token, on the prefill replica
    seqs.ready().push_back(s);
}

std::vector<std::uint64_t> ReplicaScheduler::fail() {
    std::vector<std::uint64_t> ids = batch_.clear();
    gaps_.drop_fresh();
    step_ = Step{};
    out_.clear();
    return ids;
}

// ------------------------------------------------------------------------------------------
// Steps

std::int64_t ReplicaScheduler::begin(std::int64_t now) {
    TRNSIM_CHECK(!step_.active, "serving: a step is already running");
    step_ = Step{};
    step_.start = now;
    const Batcher::Plan p = batch_.form(gaps_, step_.shape);
    const IterationShape& sh = step_.shape;
    if (sh.empty()) {
        step_ = Step{};
        return -1;
    }
    const std::int64_t d = cost_.time(sh).ns();
    TRNSIM_CHECK(d > 0, "serving: an iteration must take time");

    std::int64_t n = 1;
    if (fast_forward_ && spec_.k() == 0 && !p.prefill_only && !p.preempted &&
        sh.prefill_sequences == 0 && batch_.seqs().joining().empty() &&
        batch_.decode().count() > 0) {
        n = fast_forward(cost_, batch_, sh, d);
    }
    step_.active = true;
    step_.fast = spec_.k() == 0;
    step_.d = d;
    step_.n = n;
    stats_.peak_used_blocks = std::max(stats_.peak_used_blocks, used_blocks());
    return now + n * d;
}

std::int64_t ReplicaScheduler::interrupt(std::int64_t at) {
    TRNSIM_CHECK(step_.active, "serving: no step to interrupt");
    if (step_.n > 1 && at < step_end()) {
        const std::int64_t k =
            std::max<std::int64_t>((at - step_.start + step_.d - 1) / step_.d, 1);
        step_.n = std::min(step_.n, k);
    }
    return step_end();
}

std::int64_t ReplicaScheduler::used_blocks_at(std::int64_t t) const {
    if (!step_.active || t < step_.start || t >= step_end()) {
        return used_blocks();
    }
    if (step_.fast && step_.shape.decode_sequences > 0) {
        // The blocks the iterations started by t take (at the step's end, in the books).
        const std::int64_t k = std::min(step_.n, (t - step_.start) / step_.d + 1);
        return used_blocks() + batch_.decode().demand(k);
    }
    return used_blocks();
}

const std::vector<Completion>& ReplicaScheduler::end() {
    TRNSIM_CHECK(step_.active, "serving: no step to end");
    out_.clear();
    SequenceTable& seqs = batch_.seqs();
    DecodeBook& dec = batch_.decode();
    const std::int64_t t = step_end();
    const std::int64_t n = step_.n;
    const IterationShape& sh = step_.shape;
    ++stats_.steps;
    stats_.iterations += static_cast<std::uint64_t>(n);
    stats_.busy += Duration::from_ns(n * step_.d);
    if (sh.prefill_sequences > 0) {
        ++stats_.prefill_iterations;
    }
    // The KV cache the iterations touched: n decode iterations read the contexts, each one
    // token longer per sequence than the last (n > 1 only for decode-only steps).
    const auto nd = static_cast<double>(n);
    stats_.kv_tokens_touched += nd * static_cast<double>(sh.decode_context_tokens) +
                                static_cast<double>(sh.decode_sequences) * nd * (nd - 1.0) / 2.0 +
                                static_cast<double>(sh.prefill_tokens);

    // Decode: the blocks of the iterations that ran, then the tokens.
    std::vector<std::uint32_t>& spec_done = scratch_[0];
    spec_done.clear();
    if (sh.decode_sequences > 0) {
        if (spec_.k() == 0) {
            gaps_.decoded(seqs, step_.start, step_.d, n, dec.count(), sh.decode_sequences);
            batch_.kv().take(dec.demand(n));
            dec.advance(n);
            stats_.decode_tokens += static_cast<std::uint64_t>(n * sh.decode_sequences);
        } else {
            for (std::uint32_t s = seqs.head(); s != kNone; s = seqs.next(s)) {
                if (seqs[s].state == SeqState::decode) {
                    speculate(s);
                    if (seqs[s].generated >= seqs[s].req.output_tokens) {
                        spec_done.push_back(s);
                    }
                }
            }
        }
        gaps_.decode_step_ended(t);
    }
    stats_.peak_used_blocks = std::max(stats_.peak_used_blocks, used_blocks());

    // Prefill progress (chunks, or whole prompts).
    if (!seqs.prefilling().empty()) {
        std::vector<std::uint32_t>& done_now = scratch_[2];
        stats_.prefill_tokens +=
            static_cast<std::uint64_t>(batch_.progress_prefill(scratch_[1], done_now));
        for (std::uint32_t s : done_now) {
            finish_prefill(s, t);
        }
    }

    // Transferred sequences that joined this iteration enter the decode form.
    for (std::uint32_t s : seqs.joining()) {
        Seq& q = seqs[s];
        gaps_.token(q, t); // since its first token, on the prefill replica
        q.kv += 1;
        q.generated += 1;
        if (q.generated >= q.req.output_tokens) {
            finish(s, t);
        } else {
            enter_decode(s);
        }
    }
    seqs.joining().clear();

    // Finishes.
    if (spec_.k() == 0) {
        while (dec.count() > 0 && dec.next_finish(seqs) < dec.iteration()) {
            finish(dec.finish_slot(), t);
        }
        dec.compact(seqs);
    } else {
        for (std::uint32_t s : spec_done) {
            finish(s, t);
        }
    }
    step_.active = false;
    return out_;
}

// ------------------------------------------------------------------------------------------
// What the iterations produced

void ReplicaScheduler::enter_decode(std::uint32_t s) {
    Seq& q = batch_.seqs()[s];
    q.state = SeqState::decode;
    if (spec_.k() == 0) {
        batch_.decode().enter(s, q); // else explicit form: kv as it is
    }
}

void ReplicaScheduler::finish(std::uint32_t s, std::int64_t t) {
    SequenceTable& seqs = batch_.seqs();
    KvCache& kv = batch_.kv();
    Seq& q = seqs[s];
    if (q.state == SeqState::decode && spec_.k() == 0) {
        const std::int64_t tokens = q.kv + batch_.decode().iteration();
        q.own = kv.blocks_for(tokens) - kv.shared_blocks(q.entry);
        batch_.decode().leave(q);
    }
    kv.give(q.own);
    q.own = 0;
    if (q.entry != kNone) {
        kv.unref(q.entry);
        q.entry = kNone;
    }
    out_.push_back(completion(Completion::Kind::finished, q, t));
    seqs.unlink(s);
    seqs.free(s);
}

Completion ReplicaScheduler::completion(Completion::Kind kind, const Seq& q, std::int64_t t) {
    Completion c;
    c.kind = kind;
    c.request = q.req.id;
    c.first_token = q.first_token;
    c.time = SimTime::from_ns(t);
    c.preemptions = q.preemptions;
    return c;
}

void ReplicaScheduler::finish_prefill(std::uint32_t s, std::int64_t t) {
    SequenceTable& seqs = batch_.seqs();
    Seq& q = seqs[s];
    if (q.first_token.ns() < 0) {
        q.first_token = SimTime::from_ns(t);
    } else if (q.generated > 0) {
        gaps_.record(t - q.tok.ns(), 1); // a recompute's token, after a preemption
    }
    gaps_.stamp(q, t);
    ++q.generated;
    q.kv = q.target;
    if (q.generated >= q.req.output_tokens) {
        finish(s, t);
        return;
    }
    if (role_ == ReplicaRole::prefill) {
        Completion c = completion(Completion::Kind::prefilled, q, t);
        c.handoff = batch_.kv().hold(q.own, q.entry);
        out_.push_back(c);
        q.own = 0;
        q.entry = kNone;
        seqs.unlink(s);
        seqs.free(s);
        return;
    }
    enter_decode(s);
    gaps_.fresh(s, q.version);
}

void ReplicaScheduler::speculate(std::uint32_t s) {
    Seq& q = batch_.seqs()[s];
    const std::int64_t gain = spec_.gain(q);
    gaps_.token(q, step_end());
    q.kv += gain;
    q.generated += gain;
    stats_.decode_tokens += static_cast<std::uint64_t>(gain);
}

// ------------------------------------------------------------------------------------------
// Statistics and checks

SchedulerStats ReplicaScheduler::stats() const {
    SchedulerStats s = stats_;
    s.preemptions = batch_.preemptions();
    s.prefix_hits = batch_.kv().hits();
    s.prefix_hit_tokens = batch_.kv().hit_tokens();
    s.prefix_evictions = batch_.kv().evictions();
    s.speculative_steps = spec_.steps();
    s.speculative_accepted = spec_.accepted_total();
    return s;
}

void ReplicaScheduler::check_invariants() const {
    TRNSIM_CHECK(!step_.active, "serving: invariants are checked between steps");
    batch_.check_invariants();
}

} // namespace trnsim::serving
