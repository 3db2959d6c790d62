// ReplicaScheduler's construction (the spec's checks and the KV cache's size), fail() (every
// sequence dropped) and check_invariants() (the books recounted from scratch). The rest is in
// scheduler.cpp and scheduler_admission.cpp.
#include "trnsim/serving/scheduler.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <string>

namespace trnsim::serving {

ReplicaScheduler::ReplicaScheduler(const ServingSpec& spec, const IterationCost& cost,
                                   std::int64_t kv_blocks, std::uint64_t seed, ReplicaRole role,
                                   bool fast_forward)
    : cost_(cost), role_(role), fast_forward_(fast_forward), seed_(seed) {
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
    max_batch_ = spec.max_batch;
    chunk_ = spec.prefill_chunk;
    // 0: the whole compiled batch in one context-encoding graph (ServingSpec::prefill_batch).
    prefill_batch_ = spec.prefill_batch == 0 ? spec.max_batch : spec.prefill_batch;
    block_ = spec.kv_block;
    max_context_ = spec.max_context;
    prefix_caching_ = spec.prefix_caching;
    if (spec.speculative && spec.speculative->k > 0) {
        const SpeculativeSpec& sp = *spec.speculative;
        if (sp.acceptance.size() != static_cast<std::size_t>(sp.k)) {
            throw InputError("workload.serving.speculative.acceptance",
                             "needs one value per draft token (k = " + std::to_string(sp.k) + ")");
        }
        for (std::size_t i = 0; i < sp.acceptance.size(); ++i) {
            const double a = sp.acceptance[i];
            if (!(a >= 0.0 && a <= 1.0)) {
                throw InputError("workload.serving.speculative.acceptance",
                                 "values must be in [0, 1]");
            }
            if (i > 0 && a > sp.acceptance[i - 1]) {
                throw InputError("workload.serving.speculative.acceptance",
                                 "position " + std::to_string(i) + " cannot be accepted more "
                                 "often than position " + std::to_string(i - 1) +
                                 " (a draft is only accepted after every earlier one): the "
                                 "values must not increase");
            }
        }
        spec_k_ = sp.k;
        acceptance_ = sp.acceptance;
    }
    capacity_ = kv_blocks;
    watermark_ = capacity_ / 100;
    const std::int64_t one = blocks_for(max_context_ + spec_k_ + 1);
    if (capacity_ < one + watermark_) {
        throw InputError("workload.serving.max_context",
                         "the KV cache holds " + std::to_string(capacity_) + " blocks of " +
                             std::to_string(block_) + " tokens; one sequence of max_context " +
                             std::to_string(max_context_) + " tokens needs " +
                             std::to_string(one) + " plus a watermark of " +
                             std::to_string(watermark_));
    }
    pool_ = capacity_;
    by_key_.assign(static_cast<std::size_t>(block_), 0);
}

std::vector<std::uint64_t> ReplicaScheduler::fail() {
    std::vector<std::uint64_t> ids;
    for (const Seq& q : seqs_) {
        if (q.state != State::free) {
            ids.push_back(q.req.id);
        }
    }
    std::sort(ids.begin(), ids.end());
    pool_ = capacity_;
    idle_cached_ = 0;
    seqs_.clear();
    free_slots_.clear();
    waiting_.clear();
    ready_.clear();
    head_ = tail_ = kNone;
    running_ = 0;
    prefilling_.clear();
    joining_.clear();
    entries_.clear();
    lru_head_ = lru_tail_ = kNone;
    held_.clear();
    free_held_.clear();
    g_ = 0;
    decoding_ = 0;
    sum_base_ = 0;
    by_key_.assign(static_cast<std::size_t>(block_), 0);
    finish_heap_.clear();
    context_heap_.clear();
    fresh_.clear();
    step_ = Step{};
    out_.clear();
    return ids;
}

// ------------------------------------------------------------------------------------------
// Checks

void ReplicaScheduler::check_invariants() const {
    TRNSIM_CHECK(!step_.active, "serving: invariants are checked between steps");
    std::int64_t held = pool_; // + every block held below: must make the capacity
    std::int64_t running = 0, decoding = 0, sum_base = 0;
    std::vector<std::int64_t> by_key(static_cast<std::size_t>(block_), 0);
    std::vector<std::int64_t> refs(entries_.size(), 0);
    for (std::uint32_t s = head_; s != kNone; s = seqs_[s].next) {
        const Seq& q = seqs_[s];
        ++running;
        TRNSIM_CHECK(q.state == State::prefill || q.state == State::decode,
                     "serving: a running sequence is neither in prefill nor in decode");
        const std::int64_t shared = shared_blocks(q);
        if (q.entry != kNone) {
            ++refs[q.entry];
        }
        if (q.state == State::decode && spec_k_ == 0) {
            const std::int64_t kv = q.kv + g_;
            held += blocks_for(kv) - shared;
            ++decoding;
            sum_base += q.kv;
            ++by_key[static_cast<std::size_t>(key_of(q.kv))];
            TRNSIM_CHECK(kv - q.req.input_tokens + 1 < q.req.output_tokens,
                         "serving: a decoding sequence has generated all its tokens");
            TRNSIM_CHECK(kv + 1 <= max_context_, "serving: a context beyond max_context");
        } else {
            held += q.own;
            if (q.state == State::prefill) {
                TRNSIM_CHECK((q.own + shared) * block_ >= q.target,
                             "serving: a prefill without the blocks of its prompt");
            } else {
                TRNSIM_CHECK((q.own + shared) * block_ >= q.kv,
                             "serving: a sequence without the blocks of its KV cache");
            }
        }
    }
    for (const Held& h : held_) {
        held += h.blocks;
        if (h.entry != kNone) {
            ++refs[h.entry];
        }
    }
    std::int64_t idle = 0;
    for (std::size_t e = 0; e < entries_.size(); ++e) {
        const Entry& en = entries_[e];
        if (!en.present) {
            continue;
        }
        held += en.blocks;
        TRNSIM_CHECK(refs[e] == en.refs, "serving: a prefix's reference count is wrong");
        if (en.refs == 0) {
            idle += en.blocks;
        }
    }
    TRNSIM_CHECK(idle == idle_cached_, "serving: idle cached blocks miscounted");
    TRNSIM_CHECK(held == capacity_,
                 "serving: KV blocks not conserved (free + held != capacity)");
    TRNSIM_CHECK(pool_ >= 0 && used_blocks() <= capacity_, "serving: KV blocks over capacity");
    TRNSIM_CHECK(running == running_ && running_ <= max_batch_,
                 "serving: the batch is larger than max_batch");
    TRNSIM_CHECK(decoding == decoding_ && sum_base == sum_base_ && by_key == by_key_,
                 "serving: decode bookkeeping differs from the sequences");
}

} // namespace trnsim::serving
