// Admission, preemption and batch formation: what a replica's next iteration computes. One of
// the parts of ReplicaScheduler (scheduler.hpp describes the policy); public so that it can be
// tested alone.
//
// The batcher owns the replica's books, the sequences (SequenceTable), the KV cache (KvCache)
// and the decode batch in offset form (DecodeBook), and changes them only through admission
// (a queued prompt, or a transferred sequence joining the decode batch), preemption (the
// youngest running sequence back to the front of the queue, to recompute) and the blocks of
// the coming decode iteration. form() decides an iteration: whole-prompt prefill when the head
// of the queue fits, else decode (reserving its blocks, preempting as needed), transferred
// sequences joining, and with chunked prefill a chunk budget spread over the prompts in
// progress and then new admissions; and writes the iteration's shape. What the iteration
// then did (tokens, finishes) is ReplicaScheduler's.
//
// form(), the shape and progress_prefill() are defined inline below this class: they run once
// per step, on the scheduler's hot path. Not thread-safe.
#pragma once

#include "trnsim/serving/decode_book.hpp"
#include "trnsim/serving/iteration.hpp"
#include "trnsim/serving/kv_cache.hpp"
#include "trnsim/serving/sequence_table.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/serving/token_gap_log.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

namespace trnsim::serving {

class Batcher {
public:
    /// An iteration, as form() decided it (its shape aside).
    struct Plan {
        bool prefill_only = false; ///< whole-prompt prefill: nothing decodes
        bool preempted = false;    ///< the decode blocks preempted a sequence
    };

    /// `spec` is checked by the caller but for the KV cache's size: throws InputError
    /// (workload.serving.max_context) when `kv_blocks` cannot hold one sequence of
    /// max_context tokens (+ the `spec_k` + 1 it verifies) plus the watermark.
    Batcher(const ServingSpec& spec, std::int64_t kv_blocks, int spec_k);

    SequenceTable& seqs() { return seqs_; }
    const SequenceTable& seqs() const { return seqs_; }
    KvCache& kv() { return kv_; }
    const KvCache& kv() const { return kv_; }
    DecodeBook& decode() { return decode_; }
    const DecodeBook& decode() const { return decode_; }

    /// Decides the next iteration: admits, preempts, reserves its decode blocks, sets each
    /// prefilling sequence's chunk and writes the iteration's shape into `sh` (empty: nothing
    /// can run). `gaps` stamps preempted sequences' last tokens.
    Plan form(const TokenGapLog& gaps, IterationShape& sh);
    /// The prefill chunks of the iteration ran: each prompt's progress, its prefix entry
    /// ready once computed; the prompts completed go to `done` (the others stay, in order;
    /// `still` is scratch). Returns the tokens computed.
    std::int64_t progress_prefill(std::vector<std::uint32_t>& still,
                                  std::vector<std::uint32_t>& done);

    /// Admits queued sequence s into prefill if a batch slot and the blocks of its prompt
    /// (beyond a cached prefix) plus the watermark are free; only checks unless `commit`.
    bool try_admit(std::uint32_t s, bool commit);
    /// Decode replica: transferred sequence s joins the decode batch if a slot and its blocks
    /// (its KV tokens + 1, + k with speculation) plus the watermark are free.
    bool try_admit_transferred(std::uint32_t s);
    /// Running sequence s goes back to the front of the queue, its blocks freed, to
    /// recompute its prompt and the tokens it had generated.
    void preempt(std::uint32_t s, const TokenGapLog& gaps);
    /// Takes (speculation) or reserves (offset form) the blocks of the next decode iteration,
    /// preempting the youngest running sequence until they fit; whether it preempted.
    bool reserve_decode(const TokenGapLog& gaps);

    std::uint64_t preemptions() const { return preemptions_; }
    /// Drops every sequence and block; the request ids it held, sorted.
    std::vector<std::uint64_t> clear();
    /// Recounts the blocks and the decode book from the sequences (TRNSIM_CHECK), between
    /// iterations.
    void check_invariants() const;

private:
    std::int64_t available() const { return kv_.free_blocks() - reserved_; }
    void plan_prefill_whole();
    void plan_prefill_chunked(bool preempted);
    /// The iteration's shape, once form() has admitted and planned.
    void shape(IterationShape& sh, bool prefill_only);

    std::int64_t max_batch_ = 1;
    std::int64_t chunk_ = 0;
    std::int64_t prefill_batch_ = 1;
    std::int64_t max_context_ = 0;
    bool prefix_caching_ = false;
    int spec_k_ = 0;

    SequenceTable seqs_;
    KvCache kv_;
    DecodeBook decode_;
    std::int64_t reserved_ = 0; ///< offset-form decode blocks promised while forming
    std::uint64_t preemptions_ = 0;
};

// Inline: once per step, on the scheduler's hot path.
inline Batcher::Plan Batcher::form(const TokenGapLog& gaps, IterationShape& sh) {
    reserved_ = 0;
    Plan p;
    std::deque<std::uint32_t>& waiting = seqs_.waiting();
    if (chunk_ == 0 && !waiting.empty() && try_admit(waiting.front(), false)) {
        plan_prefill_whole();
        p.prefill_only = true;
    }
    if (!p.prefill_only) {
        p.preempted = reserve_decode(gaps);
        std::deque<std::uint32_t>& ready = seqs_.ready();
        while (!p.preempted && !ready.empty() && try_admit_transferred(ready.front())) {
            ready.pop_front();
        }
        if (chunk_ > 0) {
            plan_prefill_chunked(p.preempted);
        }
    }
    shape(sh, p.prefill_only);
    reserved_ = 0; // the reserved blocks are taken at the step's end
    return p;
}

inline void Batcher::shape(IterationShape& sh, bool prefill_only) {
    sh = IterationShape{};
    for (std::uint32_t s : seqs_.prefilling()) {
        const Seq& q = seqs_[s];
        if (q.chunk > 0) {
            ++sh.prefill_sequences;
            sh.prefill_tokens += q.chunk;
            sh.prefill_max_tokens = std::max(sh.prefill_max_tokens, q.chunk);
            sh.prefill_max_context = std::max(sh.prefill_max_context, q.done + q.chunk);
        }
    }
    if (prefill_only) {
        return;
    }
    if (spec_k_ == 0) {
        const std::int64_t g = decode_.iteration();
        const std::int64_t decoding = decode_.count();
        sh.decode_sequences = decoding + static_cast<std::int64_t>(seqs_.joining().size());
        sh.decode_context_tokens = decode_.sum_base() + decoding * (g + 1);
        if (decoding > 0) {
            sh.decode_max_context = decode_.max_base(seqs_) + g + 1;
        }
        for (std::uint32_t s : seqs_.joining()) {
            sh.decode_context_tokens += seqs_[s].kv + 1;
            sh.decode_max_context = std::max(sh.decode_max_context, seqs_[s].kv + 1);
        }
    } else {
        for (std::uint32_t s = seqs_.head(); s != kNone; s = seqs_.next(s)) {
            const Seq& q = seqs_[s];
            if (q.state == SeqState::decode) {
                const std::int64_t ctx = std::min(q.kv + 1 + spec_k_, max_context_);
                ++sh.decode_sequences;
                sh.decode_context_tokens += ctx;
                sh.decode_max_context = std::max(sh.decode_max_context, ctx);
            }
        }
        sh.speculative_k = sh.decode_sequences > 0 ? spec_k_ : 0;
    }
}

// Inline: once per step with prefill work, on the scheduler's hot path.
inline std::int64_t Batcher::progress_prefill(std::vector<std::uint32_t>& still,
                                              std::vector<std::uint32_t>& done) {
    still.clear();
    done.clear();
    std::int64_t tokens = 0;
    for (std::uint32_t s : seqs_.prefilling()) {
        Seq& q = seqs_[s];
        q.done += q.chunk;
        tokens += q.chunk;
        q.chunk = 0;
        if (q.entry != kNone) {
            kv_.computed(q.entry, q.done);
        }
        (q.done >= q.target ? done : still).push_back(s);
    }
    seqs_.prefilling().swap(still);
    return tokens;
}

} // namespace trnsim::serving
