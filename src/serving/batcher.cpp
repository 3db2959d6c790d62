// Batcher: admission, preemption and the decode blocks (batcher.hpp, which also holds form()
// and the iteration's shape inline; scheduler.hpp describes the policy).
#include "trnsim/serving/batcher.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace trnsim::serving {

Batcher::Batcher(const ServingSpec& spec, std::int64_t kv_blocks, int spec_k)
    : max_batch_(spec.max_batch), chunk_(spec.prefill_chunk),
      // 0: the whole compiled batch in one context-encoding graph (ServingSpec::prefill_batch).
      prefill_batch_(spec.prefill_batch == 0 ? spec.max_batch : spec.prefill_batch),
      max_context_(spec.max_context), prefix_caching_(spec.prefix_caching), spec_k_(spec_k),
      kv_(kv_blocks, spec.kv_block), decode_(spec.kv_block) {
    const std::int64_t one = kv_.blocks_for(max_context_ + spec_k_ + 1);
    if (kv_.capacity() < one + kv_.watermark()) {
        throw InputError("workload.serving.max_context",
                         "the KV cache holds " + std::to_string(kv_.capacity()) +
                             " blocks of " + std::to_string(kv_.block()) +
                             " tokens; one sequence of max_context " +
                             std::to_string(max_context_) + " tokens needs " +
                             std::to_string(one) + " plus a watermark of " +
                             std::to_string(kv_.watermark()));
    }
}

// ------------------------------------------------------------------------------------------
// The iteration

void Batcher::plan_prefill_whole() {
    std::deque<std::uint32_t>& waiting = seqs_.waiting();
    const std::vector<std::uint32_t>& prefilling = seqs_.prefilling();
    while (static_cast<std::int64_t>(prefilling.size()) < prefill_batch_ && !waiting.empty() &&
           try_admit(waiting.front(), true)) {
        waiting.pop_front();
    }
    for (std::uint32_t s : prefilling) {
        seqs_[s].chunk = seqs_[s].target - seqs_[s].done;
    }
}

void Batcher::plan_prefill_chunked(bool preempted) {
    std::int64_t budget = chunk_;
    for (std::uint32_t s : seqs_.prefilling()) {
        Seq& q = seqs_[s];
        q.chunk = std::min(q.target - q.done, budget);
        budget -= q.chunk;
    }
    std::deque<std::uint32_t>& waiting = seqs_.waiting();
    while (!preempted && budget > 0 && !waiting.empty() && try_admit(waiting.front(), true)) {
        Seq& q = seqs_[waiting.front()];
        waiting.pop_front();
        q.chunk = std::min(q.target - q.done, budget);
        budget -= q.chunk;
    }
}

// ------------------------------------------------------------------------------------------
// Admission and preemption

bool Batcher::try_admit(std::uint32_t s, bool commit) {
    if (seqs_.running() >= max_batch_) {
        return false;
    }
    Seq& q = seqs_[s];
    KvCache::Prefix prefix;
    if (prefix_caching_) {
        prefix = kv_.find(q.req.prefix_id, q.req.prefix_tokens);
    }
    const std::int64_t need = kv_.blocks_for(q.target) - prefix.cached;
    if (need + kv_.watermark() > available() - prefix.pinned) {
        return false;
    }
    if (!commit) {
        return true;
    }
    if (prefix.create) {
        const std::int64_t blocks = q.req.prefix_tokens / kv_.block();
        kv_.create(prefix.entry, blocks);
        kv_.take(need);
        q.own = need - blocks;
        q.done = 0;
    } else if (prefix.entry != kNone) {
        const std::int64_t tokens = kv_.reuse(prefix.entry);
        kv_.take(need);
        q.own = need;
        q.done = tokens;
    } else {
        kv_.take(need);
        q.own = need;
        q.done = 0;
    }
    q.entry = prefix.entry;
    q.state = SeqState::prefill;
    q.chunk = 0;
    seqs_.link(s);
    seqs_.prefilling().push_back(s);
    return true;
}

bool Batcher::try_admit_transferred(std::uint32_t s) {
    if (seqs_.running() >= max_batch_) {
        return false;
    }
    Seq& q = seqs_[s];
    // It joins this iteration's decode, which writes one more KV token (with speculation, the
    // k + 1 it verifies).
    const std::int64_t need = kv_.blocks_for(q.kv + spec_k_ + 1);
    if (need + kv_.watermark() > available()) {
        return false;
    }
    kv_.take(need);
    q.own = need;
    seqs_.link(s);
    if (spec_k_ > 0) {
        q.state = SeqState::decode;
    } else {
        q.state = SeqState::joining;
        seqs_.joining().push_back(s);
    }
    return true;
}

void Batcher::preempt(std::uint32_t s, const TokenGapLog& gaps) {
    Seq& q = seqs_[s];
    switch (q.state) {
    case SeqState::decode:
        gaps.stamp(q, gaps.last_token(q));
        if (spec_k_ == 0) {
            const std::int64_t kv = q.kv + decode_.iteration();
            q.generated = kv - q.req.input_tokens + 1;
            q.own = kv_.blocks_for(kv) - kv_.shared_blocks(q.entry);
            decode_.leave(q);
        }
        break;
    case SeqState::prefill:
        SequenceTable::erase(seqs_.prefilling(), s);
        break;
    case SeqState::joining:
        SequenceTable::erase(seqs_.joining(), s);
        break;
    case SeqState::waiting:
    case SeqState::free:
        TRNSIM_CHECK(false, "serving: preempting a sequence that does not run");
    }
    kv_.give(q.own);
    q.own = 0;
    if (q.entry != kNone) {
        kv_.unref(q.entry);
        q.entry = kNone;
    }
    seqs_.unlink(s);
    q.state = SeqState::waiting;
    q.transferred = false;
    q.target = q.req.input_tokens + q.generated;
    q.done = 0;
    q.chunk = 0;
    q.kv = 0;
    ++q.preemptions;
    ++preemptions_;
    seqs_.waiting().push_front(s);
}

bool Batcher::reserve_decode(const TokenGapLog& gaps) {
    bool preempted = false;
    if (spec_k_ > 0) {
        const auto lookahead = [&](const Seq& q) {
            return std::max<std::int64_t>(
                0, kv_.blocks_for(q.kv + spec_k_ + 1) - kv_.shared_blocks(q.entry) - q.own);
        };
        while (true) {
            std::int64_t need = 0;
            for (std::uint32_t s = seqs_.head(); s != kNone; s = seqs_.next(s)) {
                if (seqs_[s].state == SeqState::decode) {
                    need += lookahead(seqs_[s]);
                }
            }
            if (need <= kv_.free_blocks()) {
                break;
            }
            TRNSIM_CHECK(seqs_.tail() != kNone, "serving: decode blocks with nothing running");
            preempt(seqs_.tail(), gaps);
            preempted = true;
        }
        for (std::uint32_t s = seqs_.head(); s != kNone; s = seqs_.next(s)) {
            Seq& q = seqs_[s];
            if (q.state == SeqState::decode) {
                const std::int64_t add = lookahead(q);
                kv_.take(add);
                q.own += add;
            }
        }
        return preempted;
    }
    while (true) {
        const std::int64_t need = decode_.next_demand();
        if (need <= kv_.free_blocks()) {
            reserved_ = need;
            break;
        }
        TRNSIM_CHECK(seqs_.tail() != kNone, "serving: decode blocks with nothing running");
        preempt(seqs_.tail(), gaps);
        preempted = true;
    }
    return preempted;
}

// ------------------------------------------------------------------------------------------
// Failure and checks

std::vector<std::uint64_t> Batcher::clear() {
    std::vector<std::uint64_t> ids = seqs_.ids();
    seqs_.clear();
    kv_.clear();
    decode_.clear();
    reserved_ = 0;
    return ids;
}

void Batcher::check_invariants() const {
    std::int64_t held = 0; // by sequences; KvCache::check adds the rest
    std::int64_t running = 0, decoding = 0, sum_base = 0;
    std::vector<std::int64_t> by_key(static_cast<std::size_t>(kv_.block()), 0);
    std::vector<std::int64_t> refs(kv_.entries(), 0);
    for (std::uint32_t s = seqs_.head(); s != kNone; s = seqs_.next(s)) {
        const Seq& q = seqs_[s];
        ++running;
        TRNSIM_CHECK(q.state == SeqState::prefill || q.state == SeqState::decode,
                     "serving: a running sequence is neither in prefill nor in decode");
        const std::int64_t shared = kv_.shared_blocks(q.entry);
        if (q.entry != kNone) {
            ++refs[q.entry];
        }
        if (q.state == SeqState::decode && spec_k_ == 0) {
            const std::int64_t kv = q.kv + decode_.iteration();
            held += kv_.blocks_for(kv) - shared;
            ++decoding;
            sum_base += q.kv;
            ++by_key[static_cast<std::size_t>(decode_.key_of(q.kv))];
            TRNSIM_CHECK(kv - q.req.input_tokens + 1 < q.req.output_tokens,
                         "serving: a decoding sequence has generated all its tokens");
            TRNSIM_CHECK(kv + 1 <= max_context_, "serving: a context beyond max_context");
        } else {
            held += q.own;
            if (q.state == SeqState::prefill) {
                TRNSIM_CHECK((q.own + shared) * kv_.block() >= q.target,
                             "serving: a prefill without the blocks of its prompt");
            } else {
                TRNSIM_CHECK((q.own + shared) * kv_.block() >= q.kv,
                             "serving: a sequence without the blocks of its KV cache");
            }
        }
    }
    kv_.check(held, std::move(refs));
    TRNSIM_CHECK(running == seqs_.running() && running <= max_batch_,
                 "serving: the batch is larger than max_batch");
    decode_.check(decoding, sum_base, by_key);
}

} // namespace trnsim::serving
