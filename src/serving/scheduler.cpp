// ReplicaScheduler's steps (begin, interrupt, end), the requests coming in, the sequences'
// lists and the fast decode bookkeeping (scheduler.hpp describes the policy). Blocks, the
// prefix cache, admission and preemption are in scheduler_admission.cpp; construction,
// fail() and check_invariants() in scheduler_setup.cpp.
#include "trnsim/serving/scheduler.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace trnsim::serving {

namespace {

/// Cap on the iterations of one step (keeps n x d far from overflow).
constexpr std::int64_t kMaxStepIterations = std::int64_t{1} << 30;

bool min_first(const auto& a, const auto& b) { // std heap comparator for a min-heap
    return a.key > b.key || (a.key == b.key && a.slot > b.slot);
}
bool max_first(const auto& a, const auto& b) { // for a max-heap
    return a.key < b.key || (a.key == b.key && a.slot > b.slot);
}

} // namespace

// ------------------------------------------------------------------------------------------
// Sequences and lists

std::uint32_t ReplicaScheduler::new_seq(const Request& r) {
    std::uint32_t s = 0;
    if (!free_slots_.empty()) {
        s = free_slots_.back();
        free_slots_.pop_back();
    } else {
        s = static_cast<std::uint32_t>(seqs_.size());
        seqs_.emplace_back();
    }
    Seq& q = seqs_[s];
    const std::uint32_t version = q.version;
    q = Seq{};
    q.version = version + 1;
    q.req = r;
    return s;
}

void ReplicaScheduler::free_seq(std::uint32_t s) {
    Seq& q = seqs_[s];
    q.state = State::free;
    ++q.version;
    free_slots_.push_back(s);
}

void ReplicaScheduler::link_running(std::uint32_t s) {
    Seq& q = seqs_[s];
    q.admitted = admissions_++;
    q.prev = tail_;
    q.next = kNone;
    if (tail_ != kNone) {
        seqs_[tail_].next = s;
    } else {
        head_ = s;
    }
    tail_ = s;
    ++running_;
}

void ReplicaScheduler::unlink_running(std::uint32_t s) {
    Seq& q = seqs_[s];
    if (q.prev != kNone) {
        seqs_[q.prev].next = q.next;
    } else {
        head_ = q.next;
    }
    if (q.next != kNone) {
        seqs_[q.next].prev = q.prev;
    } else {
        tail_ = q.prev;
    }
    q.prev = q.next = kNone;
    --running_;
}

// ------------------------------------------------------------------------------------------
// Fast decode bookkeeping

std::int64_t ReplicaScheduler::key_of(std::int64_t base) const {
    std::int64_t r = (-base) % block_;
    return r < 0 ? r + block_ : r;
}

void ReplicaScheduler::enter_decode(std::uint32_t s) {
    Seq& q = seqs_[s];
    q.state = State::decode;
    if (spec_k_ > 0) {
        return; // explicit form: kv as it is
    }
    q.kv -= g_; // the base
    ++by_key_[static_cast<std::size_t>(key_of(q.kv))];
    ++decoding_;
    sum_base_ += q.kv;
    const std::int64_t last = g_ + (q.req.output_tokens - q.generated) - 1;
    finish_heap_.push_back({last, s, q.version});
    std::push_heap(finish_heap_.begin(), finish_heap_.end(),
                   [](const HeapItem& a, const HeapItem& b) { return min_first(a, b); });
    context_heap_.push_back({q.kv, s, q.version});
    std::push_heap(context_heap_.begin(), context_heap_.end(),
                   [](const HeapItem& a, const HeapItem& b) { return max_first(a, b); });
}

void ReplicaScheduler::leave_decode(Seq& q) {
    --by_key_[static_cast<std::size_t>(key_of(q.kv))];
    --decoding_;
    sum_base_ -= q.kv;
    ++q.version; // its heap items are stale now
}

std::int64_t ReplicaScheduler::demand(std::int64_t iterations) const {
    if (iterations <= 0 || decoding_ == 0) {
        return 0;
    }
    std::int64_t d = (iterations / block_) * decoding_;
    const std::int64_t rem = iterations % block_;
    std::int64_t k = step_.g0 % block_;
    for (std::int64_t j = 0; j < rem; ++j) {
        d += by_key_[static_cast<std::size_t>(k)];
        if (++k == block_) {
            k = 0;
        }
    }
    return d;
}

std::int64_t ReplicaScheduler::max_base() {
    const auto cmp = [](const HeapItem& a, const HeapItem& b) { return max_first(a, b); };
    while (true) {
        const HeapItem& top = context_heap_.front();
        const Seq& q = seqs_[top.slot];
        if (q.version == top.version && q.state == State::decode) {
            return top.key;
        }
        std::pop_heap(context_heap_.begin(), context_heap_.end(), cmp);
        context_heap_.pop_back();
    }
}

std::int64_t ReplicaScheduler::next_finish() {
    const auto cmp = [](const HeapItem& a, const HeapItem& b) { return min_first(a, b); };
    while (true) {
        const HeapItem& top = finish_heap_.front();
        const Seq& q = seqs_[top.slot];
        if (q.version == top.version && q.state == State::decode) {
            return top.key;
        }
        std::pop_heap(finish_heap_.begin(), finish_heap_.end(), cmp);
        finish_heap_.pop_back();
    }
}

void ReplicaScheduler::compact_heaps() {
    const auto limit = static_cast<std::size_t>(2 * decoding_ + 64);
    const auto stale = [&](const HeapItem& h) {
        const Seq& q = seqs_[h.slot];
        return q.version != h.version || q.state != State::decode;
    };
    if (finish_heap_.size() > limit) {
        finish_heap_.erase(std::remove_if(finish_heap_.begin(), finish_heap_.end(), stale),
                           finish_heap_.end());
        std::make_heap(finish_heap_.begin(), finish_heap_.end(),
                       [](const HeapItem& a, const HeapItem& b) { return min_first(a, b); });
    }
    if (context_heap_.size() > limit) {
        context_heap_.erase(std::remove_if(context_heap_.begin(), context_heap_.end(), stale),
                            context_heap_.end());
        std::make_heap(context_heap_.begin(), context_heap_.end(),
                       [](const HeapItem& a, const HeapItem& b) { return max_first(a, b); });
    }
}

// ------------------------------------------------------------------------------------------
// Requests in

void ReplicaScheduler::add(const Request& r) {
    const std::uint32_t s = new_seq(r);
    Seq& q = seqs_[s];
    q.state = State::waiting;
    q.target = r.input_tokens;
    waiting_.push_back(s);
}

void ReplicaScheduler::add_transferred(const Request& r, std::int64_t first_token_ns,
                                       std::uint32_t preemptions) {
    TRNSIM_CHECK(role_ == ReplicaRole::decode, "serving: a transferred sequence needs a decode replica");
    const std::uint32_t s = new_seq(r);
    Seq& q = seqs_[s];
    q.state = State::waiting;
    q.transferred = true;
    q.first_token_ns = first_token_ns;
    q.preemptions = preemptions;
    q.generated = 1;
    q.kv = r.input_tokens;
    q.target = r.input_tokens + 1;
    q.tok_ns = first_token_ns; // its first token, on the prefill replica
    q.tok_step = decode_steps_;
    ready_.push_back(s);
}

void ReplicaScheduler::release(std::uint32_t handoff) {
    Held& h = held_[handoff];
    give(h.blocks);
    if (h.entry != kNone) {
        unref(h.entry);
    }
    h = Held{};
    free_held_.push_back(handoff);
}

// ------------------------------------------------------------------------------------------
// Steps

void ReplicaScheduler::plan_prefill_whole() {
    while (static_cast<std::int64_t>(prefilling_.size()) < prefill_batch_ && !waiting_.empty() &&
           try_admit(waiting_.front(), true)) {
        waiting_.pop_front();
    }
    for (std::uint32_t s : prefilling_) {
        seqs_[s].chunk = seqs_[s].target - seqs_[s].done;
    }
}

void ReplicaScheduler::plan_prefill_chunked(bool preempted) {
    std::int64_t budget = chunk_;
    for (std::uint32_t s : prefilling_) {
        Seq& q = seqs_[s];
        q.chunk = std::min(q.target - q.done, budget);
        budget -= q.chunk;
    }
    while (!preempted && budget > 0 && !waiting_.empty() && try_admit(waiting_.front(), true)) {
        Seq& q = seqs_[waiting_.front()];
        waiting_.pop_front();
        q.chunk = std::min(q.target - q.done, budget);
        budget -= q.chunk;
    }
}

std::int64_t ReplicaScheduler::begin(std::int64_t now) {
    TRNSIM_CHECK(!step_.active, "serving: a step is already running");
    step_ = Step{};
    step_.start = now;
    step_.g0 = g_;

    bool prefill_only = false;
    if (chunk_ == 0 && !waiting_.empty() && try_admit(waiting_.front(), false)) {
        plan_prefill_whole();
        prefill_only = true;
    }
    bool preempted = false;
    if (!prefill_only) {
        preempted = reserve_decode();
        while (!preempted && !ready_.empty() && try_admit_transferred(ready_.front())) {
            ready_.pop_front();
        }
        if (chunk_ > 0) {
            plan_prefill_chunked(preempted);
        }
    }

    IterationShape sh;
    for (std::uint32_t s : prefilling_) {
        const Seq& q = seqs_[s];
        if (q.chunk > 0) {
            ++sh.prefill_sequences;
            sh.prefill_tokens += q.chunk;
            sh.prefill_max_tokens = std::max(sh.prefill_max_tokens, q.chunk);
            sh.prefill_max_context = std::max(sh.prefill_max_context, q.done + q.chunk);
        }
    }
    if (!prefill_only) {
        if (spec_k_ == 0) {
            sh.decode_sequences = decoding_ + static_cast<std::int64_t>(joining_.size());
            sh.decode_context_tokens = sum_base_ + decoding_ * (g_ + 1);
            if (decoding_ > 0) {
                sh.decode_max_context = max_base() + g_ + 1;
            }
            for (std::uint32_t s : joining_) {
                sh.decode_context_tokens += seqs_[s].kv + 1;
                sh.decode_max_context = std::max(sh.decode_max_context, seqs_[s].kv + 1);
            }
        } else {
            for (std::uint32_t s = head_; s != kNone; s = seqs_[s].next) {
                const Seq& q = seqs_[s];
                if (q.state == State::decode) {
                    const std::int64_t ctx = std::min(q.kv + 1 + spec_k_, max_context_);
                    ++sh.decode_sequences;
                    sh.decode_context_tokens += ctx;
                    sh.decode_max_context = std::max(sh.decode_max_context, ctx);
                }
            }
            sh.speculative_k = sh.decode_sequences > 0 ? spec_k_ : 0;
        }
    }
    if (sh.empty()) {
        step_ = Step{};
        return -1;
    }
    const std::int64_t d = cost_.time(sh).ns();
    TRNSIM_CHECK(d > 0, "serving: an iteration must take time");

    std::int64_t n = 1;
    if (fast_forward_ && spec_k_ == 0 && !prefill_only && !preempted &&
        sh.prefill_sequences == 0 && joining_.empty() && decoding_ > 0) {
        const std::int64_t n_finish = next_finish() - g_ + 1;
        const std::int64_t ctx = sh.decode_max_context;
        const std::int64_t n_bucket = std::max<std::int64_t>(cost_.bucket_end(ctx) - ctx + 1, 1);
        n = std::min({n_finish, n_bucket, kMaxStepIterations,
                      std::numeric_limits<std::int64_t>::max() / 4 / d});
        const std::int64_t avail = pool_ + idle_cached_;
        if (((n + block_ - 1) / block_) * decoding_ > avail) {
            // The blocks may not last: the most iterations whose blocks fit. Whole cycles of
            // kv_block iterations take one block per sequence, then the partial cycle takes
            // them sequence by key.
            std::int64_t n_kv = (avail / decoding_) * block_;
            std::int64_t left = avail - (avail / decoding_) * decoding_;
            std::int64_t k = g_ % block_;
            for (std::int64_t j = 0; j < block_; ++j) {
                const std::int64_t h = by_key_[static_cast<std::size_t>(k)];
                if (h > left) {
                    break;
                }
                left -= h;
                ++n_kv;
                if (++k == block_) {
                    k = 0;
                }
            }
            n = std::min(n, n_kv);
        }
        n = std::max<std::int64_t>(n, 1);
    }
    step_.active = true;
    step_.fast = spec_k_ == 0;
    step_.d = d;
    step_.n = n;
    step_.shape = sh;
    step_.reserved = 0;
    stats_.peak_used_blocks = std::max(stats_.peak_used_blocks, used_blocks());
    return now + n * d;
}

std::int64_t ReplicaScheduler::interrupt(std::int64_t at) {
    TRNSIM_CHECK(step_.active, "serving: no step to interrupt");
    if (step_.n > 1 && at < step_end()) {
        const std::int64_t k = std::max<std::int64_t>((at - step_.start + step_.d - 1) / step_.d, 1);
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
        return used_blocks() + demand(k);
    }
    return used_blocks();
}

void ReplicaScheduler::finish(std::uint32_t s, std::int64_t t) {
    Seq& q = seqs_[s];
    if (q.state == State::decode && spec_k_ == 0) {
        const std::int64_t kv = q.kv + g_;
        q.own = blocks_for(kv) - shared_blocks(q);
        leave_decode(q);
    }
    give(q.own);
    q.own = 0;
    if (q.entry != kNone) {
        unref(q.entry);
        q.entry = kNone;
    }
    Completion c;
    c.kind = Completion::Kind::finished;
    c.request = q.req.id;
    c.first_token_ns = q.first_token_ns;
    c.time_ns = t;
    c.preemptions = q.preemptions;
    out_.push_back(c);
    unlink_running(s);
    free_seq(s);
}

void ReplicaScheduler::finish_prefill(std::uint32_t s, std::int64_t t) {
    Seq& q = seqs_[s];
    if (q.first_token_ns < 0) {
        q.first_token_ns = t;
    } else if (q.generated > 0) {
        gap(t - q.tok_ns, 1); // a recompute's token, after a preemption
    }
    q.tok_ns = t;
    q.tok_step = decode_steps_;
    ++q.generated;
    q.kv = q.target;
    if (q.generated >= q.req.output_tokens) {
        finish(s, t);
        return;
    }
    if (role_ == ReplicaRole::prefill) {
        std::uint32_t h = 0;
        if (!free_held_.empty()) {
            h = free_held_.back();
            free_held_.pop_back();
        } else {
            h = static_cast<std::uint32_t>(held_.size());
            held_.emplace_back();
        }
        held_[h].blocks = q.own;
        held_[h].entry = q.entry;
        Completion c;
        c.kind = Completion::Kind::prefilled;
        c.request = q.req.id;
        c.first_token_ns = q.first_token_ns;
        c.time_ns = t;
        c.preemptions = q.preemptions;
        c.handoff = h;
        out_.push_back(c);
        q.own = 0;
        q.entry = kNone;
        unlink_running(s);
        free_seq(s);
        return;
    }
    enter_decode(s);
    fresh_.push_back({s, q.version});
}

void ReplicaScheduler::speculate(std::uint32_t s) {
    Seq& q = seqs_[s];
    // One uniform per sequence-iteration: the drafts accepted are the positions whose
    // (non-increasing) acceptance rate exceeds it, so position i is accepted with probability
    // acceptance[i] and only after every earlier position.
    const std::array<std::uint32_t, 4> w =
        engine::philox_block(seed_, stream_kind(ServingStream::speculation),
                             static_cast<std::uint32_t>(q.req.id), q.spec_iterations);
    const double u = static_cast<double>(w[0]) * 0x1.0p-32;
    std::int64_t accepted = 0;
    while (accepted < spec_k_ && u < acceptance_[static_cast<std::size_t>(accepted)]) {
        ++accepted;
    }
    ++q.spec_iterations;
    ++stats_.speculative_steps;
    stats_.speculative_accepted += static_cast<std::uint64_t>(accepted);
    const std::int64_t gain = std::min(accepted + 1, q.req.output_tokens - q.generated);
    const std::int64_t t = step_end();
    gap(t - q.tok_ns, 1);
    q.tok_ns = t;
    q.tok_step = decode_steps_;
    q.kv += gain;
    q.generated += gain;
    stats_.decode_tokens += static_cast<std::uint64_t>(gain);
}

const std::vector<Completion>& ReplicaScheduler::end() {
    TRNSIM_CHECK(step_.active, "serving: no step to end");
    out_.clear();
    const std::int64_t t = step_end();
    const std::int64_t n = step_.n;
    const IterationShape& sh = step_.shape;
    ++stats_.steps;
    stats_.iterations += static_cast<std::uint64_t>(n);
    stats_.busy_ns += static_cast<std::uint64_t>(n * step_.d);
    if (sh.prefill_sequences > 0) {
        ++stats_.prefill_iterations;
    }

    // Decode: the blocks of the iterations that ran, then the tokens.
    std::vector<std::uint32_t>& spec_done = scratch_[0];
    spec_done.clear();
    if (sh.decode_sequences > 0) {
        if (spec_k_ == 0) {
            // Gaps: the first iteration's against each sequence's previous token, then d.
            const std::int64_t t1 = step_.start + step_.d;
            std::int64_t fresh = 0;
            for (const Fresh& f : fresh_) {
                const Seq& q = seqs_[f.slot];
                if (q.state == State::decode && q.version == f.version &&
                    q.tok_step == decode_steps_) {
                    gap(t1 - q.tok_ns, 1);
                    ++fresh;
                }
            }
            gap(t1 - last_decode_end_, decoding_ - fresh);
            gap(step_.d, (n - 1) * sh.decode_sequences);
            take(demand(n));
            g_ += n;
            stats_.decode_tokens += static_cast<std::uint64_t>(n * sh.decode_sequences);
        } else {
            for (std::uint32_t s = head_; s != kNone; s = seqs_[s].next) {
                if (seqs_[s].state == State::decode) {
                    speculate(s);
                    if (seqs_[s].generated >= seqs_[s].req.output_tokens) {
                        spec_done.push_back(s);
                    }
                }
            }
        }
    }
    if (sh.decode_sequences > 0) {
        ++decode_steps_;
        last_decode_end_ = t;
        fresh_.clear();
    }
    stats_.peak_used_blocks = std::max(stats_.peak_used_blocks, used_blocks());

    // Prefill progress (chunks, or whole prompts).
    if (!prefilling_.empty()) {
        std::vector<std::uint32_t>& still = scratch_[1];
        std::vector<std::uint32_t>& done_now = scratch_[2];
        still.clear();
        done_now.clear();
        for (std::uint32_t s : prefilling_) {
            Seq& q = seqs_[s];
            q.done += q.chunk;
            stats_.prefill_tokens += static_cast<std::uint64_t>(q.chunk);
            q.chunk = 0;
            if (q.entry != kNone) {
                Entry& en = entries_[q.entry];
                if (!en.ready && q.done >= en.blocks * block_) {
                    en.ready = true; // the creator has computed the prefix
                }
            }
            (q.done >= q.target ? done_now : still).push_back(s);
        }
        prefilling_.swap(still);
        for (std::uint32_t s : done_now) {
            finish_prefill(s, t);
        }
    }

    // Transferred sequences that joined this iteration enter the decode form.
    for (std::uint32_t s : joining_) {
        Seq& q = seqs_[s];
        gap(t - q.tok_ns, 1); // since its first token, on the prefill replica
        q.tok_ns = t;
        q.tok_step = decode_steps_;
        q.kv += 1;
        q.generated += 1;
        if (q.generated >= q.req.output_tokens) {
            finish(s, t);
        } else {
            enter_decode(s);
        }
    }
    joining_.clear();

    // Finishes.
    if (spec_k_ == 0) {
        while (decoding_ > 0 && next_finish() < g_) {
            finish(finish_heap_.front().slot, t);
        }
        compact_heaps();
    } else {
        for (std::uint32_t s : spec_done) {
            finish(s, t);
        }
    }
    step_.active = false;
    step_.reserved = 0;
    return out_;
}

void ReplicaScheduler::gap(std::int64_t ns, std::int64_t count) {
    if (count <= 0) {
        return;
    }
    if (!gaps_.empty() && gaps_.back().ns == ns) {
        gaps_.back().count += count;
        return;
    }
    gaps_.push_back({ns, count});
    if (gaps_.size() >= 4096) {
        compact_gaps(gaps_); // a few distinct iteration times, and first gaps
    }
}

std::vector<TokenGap> ReplicaScheduler::token_gaps() const {
    std::vector<TokenGap> g = gaps_;
    compact_gaps(g);
    return g;
}

} // namespace trnsim::serving
