// DecodeBook: the decode batch in offset form (decode_book.hpp).
#include "trnsim/serving/decode_book.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>

namespace trnsim::serving {

namespace {

bool min_first(const auto& a, const auto& b) { // std heap comparator for a min-heap
    return a.key > b.key || (a.key == b.key && a.slot > b.slot);
}
bool max_first(const auto& a, const auto& b) { // for a max-heap
    return a.key < b.key || (a.key == b.key && a.slot > b.slot);
}

} // namespace

DecodeBook::DecodeBook(std::int64_t block)
    : block_(block), by_key_(static_cast<std::size_t>(block), 0) {}

void DecodeBook::enter(std::uint32_t s, Seq& q) {
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

void DecodeBook::leave(Seq& q) {
    --by_key_[static_cast<std::size_t>(key_of(q.kv))];
    --decoding_;
    sum_base_ -= q.kv;
    ++q.version; // its heap items are stale now
}

std::int64_t DecodeBook::demand(std::int64_t iterations) const {
    if (iterations <= 0 || decoding_ == 0) {
        return 0;
    }
    std::int64_t d = (iterations / block_) * decoding_;
    const std::int64_t rem = iterations % block_;
    std::int64_t k = g_ % block_;
    for (std::int64_t j = 0; j < rem; ++j) {
        d += by_key_[static_cast<std::size_t>(k)];
        if (++k == block_) {
            k = 0;
        }
    }
    return d;
}

std::int64_t DecodeBook::iterations_fitting(std::int64_t free) const {
    // Whole cycles of kv_block iterations take one block per sequence, then the partial cycle
    // takes them sequence by key.
    std::int64_t n = (free / decoding_) * block_;
    std::int64_t left = free - (free / decoding_) * decoding_;
    std::int64_t k = g_ % block_;
    for (std::int64_t j = 0; j < block_; ++j) {
        const std::int64_t h = by_key_[static_cast<std::size_t>(k)];
        if (h > left) {
            break;
        }
        left -= h;
        ++n;
        if (++k == block_) {
            k = 0;
        }
    }
    return n;
}

std::int64_t DecodeBook::max_base(const SequenceTable& seqs) {
    const auto cmp = [](const HeapItem& a, const HeapItem& b) { return max_first(a, b); };
    while (true) {
        const HeapItem& top = context_heap_.front();
        if (seqs.decoding(top.slot, top.version)) {
            return top.key;
        }
        std::pop_heap(context_heap_.begin(), context_heap_.end(), cmp);
        context_heap_.pop_back();
    }
}

std::int64_t DecodeBook::next_finish(const SequenceTable& seqs) {
    const auto cmp = [](const HeapItem& a, const HeapItem& b) { return min_first(a, b); };
    while (true) {
        const HeapItem& top = finish_heap_.front();
        if (seqs.decoding(top.slot, top.version)) {
            return top.key;
        }
        std::pop_heap(finish_heap_.begin(), finish_heap_.end(), cmp);
        finish_heap_.pop_back();
    }
}

void DecodeBook::compact(const SequenceTable& seqs) {
    const auto limit = static_cast<std::size_t>(2 * decoding_ + 64);
    const auto stale = [&](const HeapItem& h) { return !seqs.decoding(h.slot, h.version); };
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

void DecodeBook::clear() {
    g_ = 0;
    decoding_ = 0;
    sum_base_ = 0;
    by_key_.assign(static_cast<std::size_t>(block_), 0);
    finish_heap_.clear();
    context_heap_.clear();
}

void DecodeBook::check(std::int64_t count, std::int64_t sum_base,
                       const std::vector<std::int64_t>& by_key) const {
    TRNSIM_CHECK(count == decoding_ && sum_base == sum_base_ && by_key == by_key_,
                 "serving: decode bookkeeping differs from the sequences");
}

} // namespace trnsim::serving
