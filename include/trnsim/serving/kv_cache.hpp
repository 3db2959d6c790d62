// A replica's paged KV cache: its blocks, the prefix cache and the blocks held for hand-offs.
// One of the parts of ReplicaScheduler (scheduler.hpp describes the policy); public so that it
// can be tested alone.
//
// Blocks. `capacity` blocks of `block` tokens. Every block is free (the pool), held (by a
// sequence, a hand-off or a referenced prefix) or cached idle (a computed prefix no sequence
// references). Idle cached blocks count as free: take() evicts idle prefixes, least recently
// used first, when the pool alone is short. The watermark is 1% of the blocks (vLLM's).
//
// Prefix cache, by prefix id (Request::prefix_id). An entry holds the full blocks of a shared
// prefix, reference-counted. It is `present` once a sequence creates it (that sequence computes
// it) and `ready` once computed (computed()); only a ready entry is reused. When its last
// reference goes, a ready entry becomes idle (kept, evictable) and an unready one is dropped.
//
// Hand-offs (a prefill replica): a prefilled sequence's blocks and prefix reference, held
// until release().
//
// O(1) per call except take(), O(1) per eviction. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace trnsim::serving {

/// No slot, prefix entry or list neighbour.
inline constexpr std::uint32_t kNone = 0xffffffffu;

class KvCache {
public:
    /// What the prefix cache offers a prompt (find()).
    struct Prefix {
        std::uint32_t entry = kNone; ///< the entry to use, kNone: none
        bool create = false;         ///< the prompt computes the entry (else it reuses it)
        std::int64_t cached = 0;     ///< blocks reused
        std::int64_t pinned = 0;     ///< idle cached blocks the reuse takes off the free count
    };

    KvCache() = default;
    /// `block` >= 1 tokens per block; `capacity` blocks, all free.
    KvCache(std::int64_t capacity, std::int64_t block);

    std::int64_t block() const { return block_; }
    std::int64_t capacity() const { return capacity_; }
    std::int64_t watermark() const { return watermark_; }
    std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + block_ - 1) / block_; }
    /// Free blocks, idle cached ones included.
    std::int64_t free_blocks() const { return pool_ + idle_cached_; }
    /// Blocks held by sequences, hand-offs or referenced prefixes.
    std::int64_t used() const { return capacity_ - pool_ - idle_cached_; }
    std::int64_t idle_cached() const { return idle_cached_; }

    /// Takes `blocks` (at most free_blocks()) out of the pool, evicting idle prefixes as needed.
    void take(std::int64_t blocks);
    void give(std::int64_t blocks) { pool_ += blocks; }

    /// The prefix cache's offer to a prompt with prefix `id` (0: none) of `tokens` tokens:
    /// reuse a ready entry, create an absent one (when the prefix fills a block), or nothing
    /// (the prefix is being computed by another sequence).
    Prefix find(std::uint32_t id, std::int64_t tokens);
    /// Creates entry `e` of `blocks` blocks, referenced once and not ready (find()'s create).
    void create(std::uint32_t e, std::int64_t blocks);
    /// A new reference to ready entry `e` (a prefix hit); the prompt tokens it covers.
    std::int64_t reuse(std::uint32_t e);
    void unref(std::uint32_t e);
    /// The prefix blocks of entry `e` (0 for kNone).
    std::int64_t shared_blocks(std::uint32_t e) const {
        return e == kNone ? 0 : entries_[e].blocks;
    }
    /// The creator of entry `e` has computed `tokens` of its prompt: ready once they cover it.
    void computed(std::uint32_t e, std::int64_t tokens);

    /// Holds `blocks` private blocks and the reference to `entry` for a hand-off; its id.
    std::uint32_t hold(std::int64_t blocks, std::uint32_t entry);
    /// Frees what hand-off `h` held.
    void release(std::uint32_t h);

    /// Everything free again, no prefix, no hand-off (the counters stay).
    void clear();
    /// Recounts: `held` (blocks held by sequences) + the free, hand-off and prefix blocks must
    /// make the capacity; `refs[e]` (references by sequences; resized here) + the hand-offs'
    /// must be each entry's count; the idle blocks must be idle_cached(). TRNSIM_CHECK.
    void check(std::int64_t held, std::vector<std::int64_t> refs) const;
    std::size_t entries() const { return entries_.size(); }

    std::uint64_t hits() const { return hits_; }
    std::uint64_t hit_tokens() const { return hit_tokens_; }
    std::uint64_t evictions() const { return evictions_; }

private:
    struct Entry {
        std::int64_t blocks = 0;
        std::int64_t refs = 0;
        bool present = false;
        bool ready = false;
        std::uint32_t prev = kNone, next = kNone; ///< LRU list of idle entries
    };
    struct Held {
        std::int64_t blocks = 0;
        std::uint32_t entry = kNone;
    };

    void lru_push(std::uint32_t e);
    void lru_remove(std::uint32_t e);

    std::int64_t block_ = 1;
    std::int64_t capacity_ = 0;
    std::int64_t watermark_ = 0;   ///< 1% of the capacity
    std::int64_t pool_ = 0;        ///< free blocks
    std::int64_t idle_cached_ = 0; ///< blocks of cached prefixes no sequence references
    std::vector<Entry> entries_;
    std::uint32_t lru_head_ = kNone, lru_tail_ = kNone;
    std::vector<Held> held_;
    std::vector<std::uint32_t> free_held_;
    std::uint64_t hits_ = 0;       ///< reuses of a cached prefix
    std::uint64_t hit_tokens_ = 0; ///< prefill tokens they did not compute
    std::uint64_t evictions_ = 0;
};

} // namespace trnsim::serving
