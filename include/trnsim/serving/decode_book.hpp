// The decode batch in offset form: what lets ReplicaScheduler run many identical decode
// iterations as one step in O(kv_block + log batch). One of the parts of ReplicaScheduler
// (scheduler.hpp describes the policy); public so that it can be tested alone.
//
// Without speculation every sequence in decode gains one KV token per decode iteration, so a
// sequence is kept as its base, KV tokens = base + G, where G counts the decode iterations so
// far (iteration()). The book keeps: the number of sequences and the sum of their bases (the
// iteration's context tokens in O(1)); a max-heap of bases (the longest context); a min-heap of
// the value of G in each sequence's last iteration (the next finish); and the sequences counted
// by (-base) mod kv_block, the key: the decode iteration of counter G takes a new block for
// exactly the sequences whose key is G mod kv_block (their KV cache fills its last block).
//
// A sequence that leaves (finished or preempted) is not removed from the heaps: its version
// changes (Seq::version), and heap items of stale (slot, version) pairs are dropped when they
// reach the top, or all at once by compact() when they outnumber the live ones.
//
// Not thread-safe.
#pragma once

#include "trnsim/serving/sequence_table.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::serving {

class DecodeBook {
public:
    DecodeBook() = default;
    explicit DecodeBook(std::int64_t block);

    /// G: decode iterations so far.
    std::int64_t iteration() const { return g_; }
    /// Sequences in the book.
    std::int64_t count() const { return decoding_; }
    std::int64_t sum_base() const { return sum_base_; }
    /// The key of a base: (-base) mod kv_block.
    std::int64_t key_of(std::int64_t base) const {
        const std::int64_t r = (-base) % block_;
        return r < 0 ? r + block_ : r;
    }

    /// Sequence s (q, with q.kv its KV tokens now) enters: q.kv becomes its base; it has
    /// q.req.output_tokens - q.generated tokens left, one per iteration.
    void enter(std::uint32_t s, Seq& q);
    /// q (q.kv its base) leaves; its version changes, which makes its heap items stale.
    void leave(Seq& q);
    /// G advances by n iterations.
    void advance(std::int64_t n) { g_ += n; }

    /// Blocks the next `iterations` iterations take (from G on).
    std::int64_t demand(std::int64_t iterations) const;
    /// Blocks the next iteration takes.
    std::int64_t next_demand() const { return by_key_[static_cast<std::size_t>(g_ % block_)]; }
    /// The most iterations (from G on) whose blocks fit in `free` blocks; count() > 0.
    std::int64_t iterations_fitting(std::int64_t free) const;

    /// The largest base (count() > 0); drops stale tops.
    std::int64_t max_base(const SequenceTable& seqs);
    /// The smallest last iteration G of a sequence (count() > 0); drops stale tops. Its slot
    /// is finish_slot().
    std::int64_t next_finish(const SequenceTable& seqs);
    std::uint32_t finish_slot() const { return finish_heap_.front().slot; }
    /// Drops every stale heap item once they outnumber the live ones (2 x count() + 64).
    void compact(const SequenceTable& seqs);

    /// Empty, G = 0.
    void clear();
    /// TRNSIM_CHECK that the book matches a recount of its sequences.
    void check(std::int64_t count, std::int64_t sum_base,
               const std::vector<std::int64_t>& by_key) const;

private:
    struct HeapItem {
        std::int64_t key;
        std::uint32_t slot;
        std::uint32_t version;
    };

    std::int64_t block_ = 1;
    std::int64_t g_ = 0;                  ///< decode iterations so far
    std::int64_t decoding_ = 0;           ///< sequences in decode
    std::int64_t sum_base_ = 0;
    std::vector<std::int64_t> by_key_;    ///< sequences by (-base) mod kv_block
    std::vector<HeapItem> finish_heap_;   ///< min G of the last iteration
    std::vector<HeapItem> context_heap_;  ///< max base
};

} // namespace trnsim::serving
