// KvCache: the blocks, the prefix cache's reference counts and LRU list, the hand-offs
// (kv_cache.hpp describes them).
#include "trnsim/serving/kv_cache.hpp"

#include "trnsim/core/assert.hpp"

namespace trnsim::serving {

KvCache::KvCache(std::int64_t capacity, std::int64_t block)
    : block_(block), capacity_(capacity), watermark_(capacity / 100), pool_(capacity) {}

void KvCache::take(std::int64_t blocks) {
    TRNSIM_CHECK(blocks <= pool_ + idle_cached_, "serving: KV blocks over capacity");
    while (pool_ < blocks) {
        const std::uint32_t e = lru_head_;
        Entry& en = entries_[e];
        lru_remove(e);
        idle_cached_ -= en.blocks;
        pool_ += en.blocks;
        en.present = false;
        en.ready = false;
        ++evictions_;
    }
    pool_ -= blocks;
}

// ------------------------------------------------------------------------------------------
// Prefix cache

KvCache::Prefix KvCache::find(std::uint32_t id, std::int64_t tokens) {
    Prefix p;
    if (id == 0) {
        return p;
    }
    if (entries_.size() <= id) {
        entries_.resize(id + 1);
    }
    const Entry& en = entries_[id];
    if (en.present && en.ready) {
        p.entry = id;
        p.cached = en.blocks;
        p.pinned = en.refs == 0 ? en.blocks : 0;
    } else if (!en.present && tokens / block_ > 0) {
        p.entry = id;
        p.create = true;
    }
    return p;
}

void KvCache::create(std::uint32_t e, std::int64_t blocks) {
    if (entries_.size() <= e) {
        entries_.resize(e + 1); // find() has made room unless the caller skipped it
    }
    Entry& en = entries_[e];
    en.present = true;
    en.ready = false;
    en.blocks = blocks;
    en.refs = 1;
}

std::int64_t KvCache::reuse(std::uint32_t e) {
    Entry& en = entries_[e];
    if (en.refs == 0) {
        lru_remove(e);
        idle_cached_ -= en.blocks;
    }
    ++en.refs;
    const std::int64_t tokens = en.blocks * block_;
    ++hits_;
    hit_tokens_ += static_cast<std::uint64_t>(tokens);
    return tokens;
}

void KvCache::unref(std::uint32_t e) {
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

void KvCache::computed(std::uint32_t e, std::int64_t tokens) {
    Entry& en = entries_[e];
    if (!en.ready && tokens >= en.blocks * block_) {
        en.ready = true; // the creator has computed the prefix
    }
}

void KvCache::lru_push(std::uint32_t e) {
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

void KvCache::lru_remove(std::uint32_t e) {
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

// ------------------------------------------------------------------------------------------
// Hand-offs

std::uint32_t KvCache::hold(std::int64_t blocks, std::uint32_t entry) {
    std::uint32_t h = 0;
    if (!free_held_.empty()) {
        h = free_held_.back();
        free_held_.pop_back();
    } else {
        h = static_cast<std::uint32_t>(held_.size());
        held_.emplace_back();
    }
    held_[h].blocks = blocks;
    held_[h].entry = entry;
    return h;
}

void KvCache::release(std::uint32_t h) {
    Held& hd = held_[h];
    give(hd.blocks);
    if (hd.entry != kNone) {
        unref(hd.entry);
    }
    hd = Held{};
    free_held_.push_back(h);
}

// ------------------------------------------------------------------------------------------
// Reset and checks

void KvCache::clear() {
    pool_ = capacity_;
    idle_cached_ = 0;
    entries_.clear();
    lru_head_ = lru_tail_ = kNone;
    held_.clear();
    free_held_.clear();
}

void KvCache::check(std::int64_t held, std::vector<std::int64_t> refs) const {
    held += pool_;
    refs.resize(entries_.size(), 0);
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
    TRNSIM_CHECK(pool_ >= 0 && used() <= capacity_, "serving: KV blocks over capacity");
}

} // namespace trnsim::serving
