// The per-replica scheduler: continuous batching over a paged KV cache, as vLLM schedules a
// replica and as its Neuron integration (NxD Inference) runs it.
//
// Sequences. A request of P prompt tokens and O output tokens is admitted into the running
// batch (at most max_batch sequences, prefilling or decoding), prefills its prompt, which
// yields its first token, then decodes one token per iteration (1 + accepted drafts with
// speculative decoding) until it has O. Its KV cache holds P + g - 1 tokens once it has
// generated g (the last generated token is fed to the next iteration, which writes its KV).
//
// KV cache. `kv_blocks` blocks of kv_block tokens (the cost model derives the count from the
// HBM left after weights). A sequence holds ceil(kv tokens / kv_block) blocks. Admission
// allocates the blocks of the whole prefill at once and only when, after it, at least a
// watermark of 1% of the blocks stays free (vLLM's default watermark), so prefills never run
// out; each decode iteration takes a block for every sequence whose KV cache fills its last
// block. When a decode iteration needs more blocks than are free, the youngest running
// sequence (the last admitted) is preempted, repeatedly, until the rest fit: its blocks are
// freed and it goes back to the front of the queue to recompute (it prefills its prompt and
// the tokens it had generated, P + g, which also yields its next token). The constructor
// requires room for one sequence of max_context tokens plus the watermark, so a replica with
// nothing running can always admit the head of its queue.
//
// An iteration, decided at its start (begin()):
//   - whole-prompt prefill (prefill_chunk 0): if the head of the queue can be admitted, the
//     iteration prefills it and the following ones that can be admitted, up to
//     prefill_batch prompts (0: max_batch, a static batch encoded together), and decodes
//     nothing (prefill first, as vLLM without chunked prefill and NxD Inference's separate
//     context-encoding graph do); otherwise it decodes every running sequence;
//   - chunked prefill: it decodes every running sequence and prefills up to prefill_chunk
//     tokens, continuing the sequences in prefill in admission order and then admitting from
//     the queue (first come, first served: a head that does not fit stops admission), unless
//     this iteration preempted a sequence;
//   - its time is IterationCost::time of its shape (real tokens, unpadded).
// Requests are served first come, first served; preempted ones go before the others.
//
// Prefix caching (prefix_caching): the full blocks of a shared prefix (Request::prefix_id) are
// kept once computed and shared by later requests with the same prefix, reference-counted;
// their prefill starts after the cached tokens. A prefix becomes reusable at the end of the
// iteration that completes it; a request admitted while its prefix is still being computed
// computes it privately. Cached blocks no running sequence uses count as free: they are
// evicted, least recently used first, when blocks are needed.
//
// Speculative decoding (speculative.k > 0): every decode iteration verifies k draft tokens per
// sequence. acceptance[i] is the fraction of iterations in which draft position i is accepted
// (vLLM's per-position acceptance rate; a position is only accepted after every earlier one, so
// the rates do not increase): one uniform u per sequence-iteration accepts the positions with
// u < acceptance[i]. A sequence gains its accepted drafts plus one token (the bonus or
// correction token), at most the tokens it has left, so the mean gain is 1 + sum_i
// acceptance[i] (vLLM's mean acceptance length: INF-T2's 1 + 0.865 + 0.725 + 0.635 = 3.22).
// Draws use the stream (seed, speculation, request index), one Philox block per iteration of
// that sequence, so they do not depend on the replica or on the batch.
// A sequence holds blocks for its KV tokens plus the k + 1 it verifies (vLLM's lookahead
// slots).
//
// Disaggregation (ReplicaRole): a prefill replica hands each prefilled sequence off (its KV
// blocks stay held until release()); a decode replica takes handed-off sequences
// (add_transferred) that join the decode batch when a slot and their blocks are free, and
// recomputes locally any sequence it preempts.
//
// Steps. A step is one iteration, or with fast_forward several identical decode-only
// iterations run at once: when nothing is in prefill or can be admitted and speculation is
// off, the next iterations have the same shape up to the next finish, the end of the compiled
// bucket holding the longest context (IterationCost::bucket_end) and the iteration whose
// blocks would not fit. The scheduler keeps per-sequence state in offsets from a decode
// iteration counter (context = base + counter), a heap of finish iterations, a heap of
// contexts and a count of sequences by the iteration at which they need their next block, so
// a step costs O(kv_block + log batch) plus O(log batch) per admission, finish or
// preemption, never O(batch). An event that can change the schedule (an arrival) calls
// interrupt(), which shortens the step to the first iteration boundary at or after it: the
// results are those of stepping iteration by iteration (tests prove it).
//
// KV blocks of a fast-forwarded step are taken at its end (for the iterations it ran); the
// blocks in use at any time inside it are known exactly (used_blocks_at).
//
// Inter-token gaps (token_gaps, the ITL of metrics.hpp). Every delivery of tokens to a
// sequence after its first token records the time since its previous delivery: a decode
// iteration's tokens (all of one iteration together with speculation), a recompute prefill's
// token after a preemption (the gap spans the preemption), a transferred sequence's first
// decode (the gap spans the KV transfer). A fast-forwarded step of n iterations of d records
// each sequence's first gap and (n - 1) x sequences gaps of d; without speculation every
// sequence in decode decodes in every decode iteration, so its previous token came at the last
// decode iteration's end unless it entered decode since. O(1) per step plus O(1) per
// sequence entering decode.
//
// Parts. The scheduler composes: Batcher (batcher.hpp: admission, preemption and the
// iteration's shape, over the books it owns: SequenceTable, KvCache and DecodeBook),
// Speculator (speculator.hpp: the acceptance draws) and TokenGapLog (token_gap_log.hpp: the
// inter-token gaps). It keeps the steps: how many iterations a step runs, and what they
// produced (tokens, prefill progress, finishes, hand-offs, the statistics).
//
// Times are int64 nanoseconds of simulated time. Not thread-safe: one replica, one thread.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/serving/batcher.hpp"
#include "trnsim/serving/iteration.hpp"
#include "trnsim/serving/metrics.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/serving/speculator.hpp"
#include "trnsim/serving/token_gap_log.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace trnsim::serving {

enum class ReplicaRole { unified, prefill, decode };

/// What a step produced for one request.
struct Completion {
    enum class Kind : std::uint8_t {
        finished,  ///< all output tokens generated at `time`
        prefilled, ///< prefill replica: first token at `time`, KV held under `handoff`
    };
    Kind kind = Kind::finished;
    std::uint64_t request = 0;
    SimTime first_token;
    SimTime time;
    std::uint32_t preemptions = 0;
    std::uint32_t handoff = 0;
};

struct SchedulerStats {
    std::uint64_t steps = 0;
    std::uint64_t iterations = 0;
    std::uint64_t prefill_iterations = 0;    ///< with prefill work (whole or chunk)
    Duration busy;                           ///< sum of step times
    std::uint64_t prefill_tokens = 0;        ///< computed (cached prefix tokens excluded)
    std::uint64_t decode_tokens = 0;         ///< generated by decode iterations
    /// Tokens of KV cache the iterations touched on each rank: every decode iteration reads
    /// its sequences' contexts, every prefill writes its new tokens (for the measured MBU).
    double kv_tokens_touched = 0.0;
    std::uint64_t preemptions = 0;
    std::uint64_t prefix_hits = 0;           ///< admissions that reused a cached prefix
    std::uint64_t prefix_hit_tokens = 0;     ///< prefill tokens they did not compute
    std::uint64_t prefix_evictions = 0;
    std::uint64_t speculative_steps = 0;     ///< sequence-iterations with speculation
    std::uint64_t speculative_accepted = 0;  ///< drafts accepted over them (before the cap)
    std::int64_t peak_used_blocks = 0;
};

class ReplicaScheduler {
public:
    /// Throws InputError (workload.serving...) for a spec it cannot run: max_batch, kv_block or
    /// max_context below 1, a negative prefill_chunk or prefill_batch, speculation with
    /// acceptance of the wrong length or outside [0, 1], or a KV cache too small for one
    /// sequence of max_context tokens plus the watermark. `cost` must outlive the scheduler.
    ReplicaScheduler(const ServingSpec& spec, const IterationCost& cost, std::int64_t kv_blocks,
                     std::uint64_t seed, ReplicaRole role = ReplicaRole::unified,
                     bool fast_forward = true);

    /// A request arrives (queued until admitted).
    void add(const Request& r);
    /// Decode replica: a prefilled sequence whose KV cache has arrived.
    void add_transferred(const Request& r, std::int64_t first_token_ns, std::uint32_t preemptions);
    /// Prefill replica: the KV cache of hand-off `handoff` has been copied; frees its blocks.
    void release(std::uint32_t handoff) { batch_.kv().release(handoff); }

    /// The replica failed (its chips' HBM is lost): every sequence, hand-off and cached prefix
    /// is dropped and any step in progress is abandoned. Returns the ids of the requests it held
    /// (queued, prefilling, decoding, preempted or joining) by id; the statistics
    /// and inter-token gaps so far are kept.
    std::vector<std::uint64_t> fail();

    bool busy() const { return step_.active; }
    /// Whether anything waits or runs (begin() may still find nothing it can run now).
    bool has_work() const { return running() > 0 || queued() > 0; }

    /// Starts the next step at `now` (not busy). Returns its end, or -1 when nothing can run.
    std::int64_t begin(std::int64_t now);
    /// During a step: something that may change the schedule happened at `at` (start < at <=
    /// end). A multi-iteration step is cut to end at the first iteration boundary >= at.
    /// Returns the step's end.
    std::int64_t interrupt(std::int64_t at);
    /// Ends the current step (at step_end()) and returns what it produced, valid until the
    /// next call.
    const std::vector<Completion>& end();

    std::int64_t step_end() const { return step_.start + step_.n * step_.d; }
    std::int64_t step_iterations() const { return step_.n; }
    /// The shape of the current (or last) step's iterations.
    const IterationShape& shape() const { return step_.shape; }

    std::int64_t capacity_blocks() const { return batch_.kv().capacity(); }
    /// Blocks in use (held by sequences, hand-offs or referenced prefixes) between steps.
    std::int64_t used_blocks() const { return batch_.kv().used(); }
    /// Blocks in use at time t: inside the current step (start <= t < end), else now.
    std::int64_t used_blocks_at(std::int64_t t) const;
    std::int64_t running() const { return batch_.seqs().running(); }
    std::int64_t queued() const { return batch_.seqs().queued(); }
    /// The statistics so far (the parts' counters with the steps').
    SchedulerStats stats() const;
    /// The inter-token gaps so far (above), compacted (metrics.hpp compact_gaps).
    std::vector<TokenGap> token_gaps() const { return gaps_.gaps(); }

    /// Recounts the blocks from scratch and checks every invariant (TRNSIM_CHECK): free +
    /// held by sequences + hand-offs + cached prefixes == capacity, batch <= max_batch, the
    /// decode bookkeeping matches the sequences. O(running); for tests, between steps.
    void check_invariants() const;

private:
    struct Step {
        bool active = false;
        bool fast = false;       ///< decode in the offset form (not speculative)
        std::int64_t start = 0, d = 0, n = 0;
        IterationShape shape;
    };

    /// The checks of `spec` that no part makes (the first ones, in the constructor).
    static const ServingSpec& checked(const ServingSpec& spec);
    void enter_decode(std::uint32_t s);
    void finish_prefill(std::uint32_t s, std::int64_t t);
    /// What a sequence reports when it leaves at `t`, of `kind` (no handoff).
    static Completion completion(Completion::Kind kind, const Seq& q, std::int64_t t);
    void finish(std::uint32_t s, std::int64_t t);
    void speculate(std::uint32_t s);

    const IterationCost& cost_;
    const ReplicaRole role_;
    const bool fast_forward_;
    Speculator spec_;
    Batcher batch_;
    TokenGapLog gaps_;

    Step step_;
    std::vector<Completion> out_;
    std::array<std::vector<std::uint32_t>, 3> scratch_; ///< end()'s lists, kept to reuse
    SchedulerStats stats_; ///< the steps' counters (stats() adds the parts')
};

} // namespace trnsim::serving
