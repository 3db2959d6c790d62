// Pending-event queues, one per partition. All share one interface:
//
//   void push(const Event&)                       any time (also earlier than the last pop)
//   bool pop_before(std::int64_t limit, Event&)   pops the first event if its time < limit
//   std::int64_t min_time()                       time of the first event, kNever if empty
//   const Event* peek() const                     the first event if known without work, else
//                                                 null (used to prefetch the next entity)
//   std::size_t size() const, bool empty() const
//   std::size_t memory_bytes() const              bytes held, including spare capacity
//
// and each pops events in exactly the order of engine::before (a total order), so the choice
// of queue never changes results. Three structures are kept so the benchmark can compare them
// (tests/bench/phold_bench.cpp, docs/performance.md):
//
//   DaryHeap<2>     binary heap over a vector (what std::priority_queue does)
//   DaryHeap<4>     4-ary heap: half the depth, children of a node share a cache line
//   CalendarQueue   a calendar queue (Brown 1988) specialised for windowed simulation: a ring
//                   of time buckets of width 2^shift ns holds future events unsorted (push is
//                   an append); only the current bucket is a (small) 4-ary heap, built when the
//                   scan reaches it; events beyond the ring wait in an overflow heap and move
//                   into the ring as it turns. O(1) amortised push, O(log bucket) pop. A
//                   bucket's storage moves into the heap when it becomes current, so memory
//                   follows the pending events (allocations: a few per bucket, not per event).
//
// Not thread-safe: each partition's queue is touched by one thread at a time.
#pragma once

#include "trnsim/engine/event.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace trnsim::engine {

/// Implicit d-ary min-heap of events.
template <int D>
class DaryHeap {
    static_assert(D >= 2);

public:
    static constexpr const char* name() { return D == 2 ? "binary heap" : "4-ary heap"; }

    void push(const Event& e) {
        v_.push_back(e);
        sift_up(v_.size() - 1);
    }

    const Event& top() const { return v_.front(); }

    void pop() {
        const Event last = v_.back();
        v_.pop_back();
        if (!v_.empty()) {
            sift_down(0, last);
        }
    }

    bool pop_before(std::int64_t limit, Event& out) {
        if (v_.empty() || v_.front().time >= limit) {
            return false;
        }
        out = v_.front();
        pop();
        return true;
    }

    std::int64_t min_time() const { return v_.empty() ? kNever : v_.front().time; }
    const Event* peek() const { return v_.empty() ? nullptr : &v_.front(); }
    std::size_t size() const { return v_.size(); }
    bool empty() const { return v_.empty(); }
    std::size_t memory_bytes() const { return v_.capacity() * sizeof(Event); }

    /// Replaces the content with `events` (any order) in O(n).
    void assign(std::vector<Event>& events) {
        v_.swap(events);
        events.clear();
        if (v_.size() < 2) {
            return;
        }
        for (std::size_t i = (v_.size() - 2) / D + 1; i-- > 0;) {
            sift_down(i, v_[i]);
        }
    }

    void clear() { v_.clear(); }

private:
    void sift_up(std::size_t i) {
        const Event e = v_[i];
        while (i > 0) {
            const std::size_t parent = (i - 1) / D;
            if (!before(e, v_[parent])) {
                break;
            }
            v_[i] = v_[parent];
            i = parent;
        }
        v_[i] = e;
    }

    /// Places `e` at hole `i` and moves it down.
    void sift_down(std::size_t i, const Event e) {
        const std::size_t n = v_.size();
        while (true) {
            const std::size_t first = D * i + 1;
            if (first >= n) {
                break;
            }
            const std::size_t end = std::min(first + D, n);
            std::size_t best = first;
            for (std::size_t c = first + 1; c < end; ++c) {
                if (before(v_[c], v_[best])) {
                    best = c;
                }
            }
            if (!before(v_[best], e)) {
                break;
            }
            v_[i] = v_[best];
            i = best;
        }
        v_[i] = e;
    }

    std::vector<Event> v_;
};

using BinaryHeap = DaryHeap<2>;
using QuaternaryHeap = DaryHeap<4>;

class CalendarQueue {
public:
    static constexpr const char* name() { return "calendar queue"; }

    /// Buckets of 2^shift ns; a ring of 2^ring_bits buckets.
    explicit CalendarQueue(int shift = 6, int ring_bits = 8)
        : shift_(shift), mask_((std::int64_t{1} << ring_bits) - 1), ring_(mask_ + 1) {}

    /// Chooses the bucket width for events that are typically `spacing_ns` apart in time per
    /// partition window (the engine passes the lookahead): the largest power of two below it.
    static int shift_for(std::int64_t spacing_ns) {
        int s = 0;
        while (s < 40 && (std::int64_t{2} << s) <= spacing_ns) {
            ++s;
        }
        return s;
    }

    void push(const Event& e) {
        const std::int64_t b = e.time >> shift_;
        if (b <= cursor_) {
            active_.push(e);
        } else if (b - cursor_ <= mask_) {
            ring_[static_cast<std::size_t>(b & mask_)].push_back(e);
            ++ring_count_;
        } else {
            far_.push(e);
        }
        ++size_;
    }

    bool pop_before(std::int64_t limit, Event& out) {
        if (!ready()) {
            return false;
        }
        if (active_.top().time >= limit) {
            return false;
        }
        out = active_.top();
        active_.pop();
        --size_;
        return true;
    }

    std::int64_t min_time() { return ready() ? active_.top().time : kNever; }
    /// The first event while the current bucket has one (no bucket scan).
    const Event* peek() const { return active_.peek(); }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

    std::size_t memory_bytes() const {
        std::size_t bytes = active_.memory_bytes() + far_.memory_bytes() +
                            ring_.capacity() * sizeof(std::vector<Event>);
        for (const auto& b : ring_) {
            bytes += b.capacity() * sizeof(Event);
        }
        return bytes;
    }

private:
    /// Makes the active heap hold the earliest events; false when the queue is empty.
    bool ready() {
        while (active_.empty()) {
            if (size_ == 0) {
                return false;
            }
            if (ring_count_ == 0) {
                // Nothing in the ring: jump straight to the overflow's first bucket.
                cursor_ = (far_.min_time() >> shift_) - 1;
            }
            ++cursor_;
            std::vector<Event>& bucket = ring_[static_cast<std::size_t>(cursor_ & mask_)];
            if (!bucket.empty()) {
                ring_count_ -= bucket.size();
                active_.assign(bucket); // heapify the bucket's events in place
                // The bucket now holds the active heap's old storage: release it, so that
                // memory follows the pending events rather than the busiest moment of every
                // bucket of the ring.
                std::vector<Event>().swap(bucket);
            }
            // The ring moved on: overflow events now within reach enter it.
            while (!far_.empty() && (far_.top().time >> shift_) - cursor_ <= mask_) {
                const Event e = far_.top();
                far_.pop();
                const std::int64_t b = e.time >> shift_;
                if (b <= cursor_) {
                    active_.push(e);
                } else {
                    ring_[static_cast<std::size_t>(b & mask_)].push_back(e);
                    ++ring_count_;
                }
            }
        }
        return true;
    }

    int shift_;
    std::int64_t mask_;
    std::int64_t cursor_ = -1; ///< absolute index of the active bucket
    std::vector<std::vector<Event>> ring_;
    std::size_t ring_count_ = 0;
    QuaternaryHeap active_;
    QuaternaryHeap far_;
    std::size_t size_ = 0;
};

} // namespace trnsim::engine
