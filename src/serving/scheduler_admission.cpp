// ReplicaScheduler's KV blocks, prefix cache, admission and preemption (scheduler.hpp
// describes the policy). The steps and the fast decode bookkeeping are in scheduler.cpp;
// construction, fail() and check_invariants() in scheduler_setup.cpp.
#include "trnsim/serving/scheduler.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>

namespace trnsim::serving {

// ------------------------------------------------------------------------------------------
// Blocks and the prefix cache

void ReplicaScheduler::take(std::int64_t blocks) {
    TRNSIM_CHECK(blocks <= pool_ + idle_cached_, "serving: KV blocks over capacity");
    while (pool_ < blocks) {
        const std::uint32_t e = lru_head_;
        Entry& en = entries_[e];
        lru_remove(e);
        idle_cached_ -= en.blocks;
        pool_ += en.blocks;
        en.present = false;
        en.ready = false;
        ++stats_.prefix_evictions;
    }
    pool_ -= blocks;
}

std::int64_t ReplicaScheduler::shared_blocks(const Seq& q) const {
    return q.entry == kNone ? 0 : entries_[q.entry].blocks;
}

void ReplicaScheduler::lru_push(std::uint32_t e) {
    Entry& en = entries_[e];
    en.prev = lru_tail_;
    en.next = kNone;
    if (lru_tail_ != kNone) {
        entries_[lru_tail_].next = e;
    } else {
        lru_head_ = e;
    }
    lru_tail_ = e;
}

void ReplicaScheduler::lru_remove(std::uint32_t e) {
    Entry& en = entries_[e];
    if (en.prev != kNone) {
        entries_[en.prev].next = en.next;
    } else {
        lru_head_ = en.next;
    }
    if (en.next != kNone) {
        entries_[en.next].prev = en.prev;
    } else {
        lru_tail_ = en.prev;
    }
    en.prev = en.next = kNone;
}

void ReplicaScheduler::unref(std::uint32_t e) {
    Entry& en = entries_[e];
    TRNSIM_CHECK(en.refs > 0, "serving: prefix reference count below zero");
    if (--en.refs == 0) {
        if (en.ready) {
            lru_push(e);
            idle_cached_ += en.blocks;
        } else {
            // Its only user left before computing it: nothing worth keeping.
            give(en.blocks);
            en.present = false;
        }
    }
}

// ------------------------------------------------------------------------------------------
// Admission and preemption

bool ReplicaScheduler::try_admit(std::uint32_t s, bool commit) {
    if (running_ >= max_batch_) {
        return false;
    }
    Seq& q = seqs_[s];
    std::uint32_t e = kNone;
    bool create = false;
    std::int64_t cached = 0;  // blocks reused
    std::int64_t pinned = 0;  // idle cached blocks the hit takes off the free count
    if (prefix_caching_ && q.req.prefix_id != 0) {
        const std::uint32_t pid = q.req.prefix_id;
        if (entries_.size() <= pid) {
            entries_.resize(pid + 1);
        }
        const Entry& en = entries_[pid];
        if (en.present && en.ready) {
            e = pid;
            cached = en.blocks;
            pinned = en.refs == 0 ? en.blocks : 0;
        } else if (!en.present && q.req.prefix_tokens / block_ > 0) {
            e = pid;
            create = true;
        }
    }
    const std::int64_t need = blocks_for(q.target) - cached;
    if (need + watermark_ > available() - pinned) {
        return false;
    }
    if (!commit) {
        return true;
    }
    if (e != kNone) {
        Entry& en = entries_[e];
        if (create) {
            en.present = true;
            en.ready = false;
            en.blocks = q.req.prefix_tokens / block_;
            en.refs = 1;
            take(need);
            q.own = need - en.blocks;
            q.done = 0;
        } else {
            if (en.refs == 0) {
                lru_remove(e);
                idle_cached_ -= en.blocks;
            }
            ++en.refs;
            take(need);
            q.own = need;
            q.done = en.blocks * block_;
            ++stats_.prefix_hits;
            stats_.prefix_hit_tokens += static_cast<std::uint64_t>(q.done);
        }
        q.entry = e;
    } else {
        take(need);
        q.own = need;
        q.done = 0;
        q.entry = kNone;
    }
    q.state = State::prefill;
    q.chunk = 0;
    link_running(s);
    prefilling_.push_back(s);
    return true;
}

bool ReplicaScheduler::try_admit_transferred(std::uint32_t s) {
    if (running_ >= max_batch_) {
        return false;
    }
    Seq& q = seqs_[s];
    // It joins this iteration's decode, which writes one more KV token (with speculation, the
    // k + 1 it verifies).
    const std::int64_t need = blocks_for(q.kv + spec_k_ + 1);
    if (need + watermark_ > available()) {
        return false;
    }
    take(need);
    q.own = need;
    link_running(s);
    if (spec_k_ > 0) {
        q.state = State::decode;
    } else {
        q.state = State::joining;
        joining_.push_back(s);
    }
    return true;
}

void ReplicaScheduler::preempt(std::uint32_t s) {
    Seq& q = seqs_[s];
    switch (q.state) {
    case State::decode:
        q.tok_ns = last_token(q);
        q.tok_step = decode_steps_;
        if (spec_k_ == 0) {
            const std::int64_t kv = q.kv + g_;
            q.generated = kv - q.req.input_tokens + 1;
            q.own = blocks_for(kv) - shared_blocks(q);
            leave_decode(q);
        }
        break;
    case State::prefill:
        prefilling_.erase(std::find(prefilling_.begin(), prefilling_.end(), s));
        break;
    case State::joining:
        joining_.erase(std::find(joining_.begin(), joining_.end(), s));
        break;
    case State::waiting:
    case State::free:
        TRNSIM_CHECK(false, "serving: preempting a sequence that does not run");
    }
    give(q.own);
    q.own = 0;
    if (q.entry != kNone) {
        unref(q.entry);
        q.entry = kNone;
    }
    unlink_running(s);
    q.state = State::waiting;
    q.transferred = false;
    q.target = q.req.input_tokens + q.generated;
    q.done = 0;
    q.chunk = 0;
    q.kv = 0;
    ++q.preemptions;
    ++stats_.preemptions;
    waiting_.push_front(s);
}

bool ReplicaScheduler::reserve_decode() {
    bool preempted = false;
    if (spec_k_ > 0) {
        const auto lookahead = [&](const Seq& q) {
            return std::max<std::int64_t>(
                0, blocks_for(q.kv + spec_k_ + 1) - shared_blocks(q) - q.own);
        };
        while (true) {
            std::int64_t need = 0;
            for (std::uint32_t s = head_; s != kNone; s = seqs_[s].next) {
                if (seqs_[s].state == State::decode) {
                    need += lookahead(seqs_[s]);
                }
            }
            if (need <= pool_ + idle_cached_) {
                break;
            }
            TRNSIM_CHECK(tail_ != kNone, "serving: decode blocks with nothing running");
            preempt(tail_);
            preempted = true;
        }
        for (std::uint32_t s = head_; s != kNone; s = seqs_[s].next) {
            Seq& q = seqs_[s];
            if (q.state == State::decode) {
                const std::int64_t add = lookahead(q);
                take(add);
                q.own += add;
            }
        }
        return preempted;
    }
    while (true) {
        const std::int64_t need = by_key_[static_cast<std::size_t>(g_ % block_)];
        if (need <= pool_ + idle_cached_) {
            step_.reserved = need;
            break;
        }
        TRNSIM_CHECK(tail_ != kNone, "serving: decode blocks with nothing running");
        preempt(tail_);
        preempted = true;
    }
    return preempted;
}

} // namespace trnsim::serving
