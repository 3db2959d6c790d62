// Progressive filling with a heap of link shares (maxmin_fill.hpp; the maths in maxmin.hpp).
#include "trnsim/network/maxmin_fill.hpp"

#include <algorithm>
#include <limits>

namespace trnsim::network {

namespace {

constexpr std::uint64_t kFlowBit = std::uint64_t{1} << 40;

/// Order of the filling: smaller share first, then links before flows, then smaller id
/// (determinism).
using Share = detail::MaxMinShare;

bool before(const Share& a, const Share& b) {
    return a.share < b.share || (a.share == b.share && a.id < b.id);
}

/// A 4-ary min-heap of link shares: half the depth of a binary heap, and the four children of
/// a node share a cache line, which matters with ~10^6 links per fill.
class ShareHeap {
public:
    /// Works in `storage` (cleared), which keeps its capacity from one fill to the next.
    explicit ShareHeap(std::vector<Share>& storage) : v_(storage) { v_.clear(); }
    bool empty() const { return v_.empty(); }
    const Share& top() const { return v_.front(); }
    void push_unordered(const Share& s) { v_.push_back(s); }
    void heapify() {
        if (v_.size() < 2) {
            return;
        }
        for (std::size_t i = (v_.size() - 2) / 4 + 1; i-- > 0;) {
            down(i, v_[i]);
        }
    }
    void push(const Share& s) {
        std::size_t i = v_.size();
        v_.push_back(s);
        while (i > 0) {
            const std::size_t parent = (i - 1) / 4;
            if (!before(s, v_[parent])) {
                break;
            }
            v_[i] = v_[parent];
            i = parent;
        }
        v_[i] = s;
    }
    Share pop() {
        const Share top = v_.front();
        const Share last = v_.back();
        v_.pop_back();
        if (!v_.empty()) {
            down(0, last);
        }
        return top;
    }

private:
    void down(std::size_t i, const Share s) {
        const std::size_t n = v_.size();
        while (true) {
            const std::size_t first = 4 * i + 1;
            if (first >= n) {
                break;
            }
            const std::size_t end = std::min(first + 4, n);
            std::size_t best = first;
            for (std::size_t c = first + 1; c < end; ++c) {
                if (before(v_[c], v_[best])) {
                    best = c;
                }
            }
            if (!before(v_[best], s)) {
                break;
            }
            v_[i] = v_[best];
            i = best;
        }
        v_[i] = s;
    }
    std::vector<Share>& v_;
};

} // namespace

void ProgressiveFill::run(MaxMinFlows& flows, const std::vector<MaxMinFlowId>& set,
                          MaxMinStamps& stamps) {
    using FlowId = MaxMinFlowId;
    MaxMinFlowState* const flow_state = flows.state();
    MaxMinLinkState* const link_state = flows.table().state();
    const MaxMinFlowList* const on_link = flows.table().lists();
    const std::uint32_t* const pool = flows.incidences();
    // Flows of the set are unfrozen; every other flow keeps its rate and its share of `used`.
    // Pass 1 marks the set's links with `counted` and sums their unfrozen flows; pass 2 gives
    // each shared link a heap entry (marking it `queued`) and each flow its private cap.
    const std::uint32_t counted = stamps.next();
    const std::uint32_t queued = stamps.next();
    // The link records of a fill are scattered over the fabric: fetch those of a flow a few
    // flows ahead so that the misses overlap.
    constexpr std::size_t kAhead = 8;
    const auto prefetch_links = [&](std::size_t i) {
        if (i < set.size()) {
            const MaxMinFlowState& st = flow_state[set[i]];
            for (std::uint32_t k = st.offset; k < st.offset + st.count; ++k) {
                __builtin_prefetch(&link_state[pool[k]]);
            }
        }
    };
    for (std::size_t i = 0; i < std::min(kAhead, set.size()); ++i) {
        __builtin_prefetch(&flow_state[set[i]]);
    }
    for (std::size_t i = 0; i < set.size(); ++i) {
        const FlowId f = set[i];
        prefetch_links(i + kAhead);
        if (i + 2 * kAhead < set.size()) {
            __builtin_prefetch(&flow_state[set[i + 2 * kAhead]]);
        }
        const MaxMinFlowState& fs = flow_state[f];
        const double w = fs.weight;
        for (std::uint32_t k = fs.offset; k < fs.offset + fs.count; ++k) {
            MaxMinLinkState& ls = link_state[pool[k]];
            if (ls.mark != counted) {
                ls.mark = counted;
                ls.residual = ls.capacity - ls.used;
                ls.wsum = 0.0;
                ls.unfrozen = 0;
            }
            ls.wsum += w;
            ++ls.unfrozen;
        }
    }
    // Freezing flows at share s never lowers another link's share (s is the smallest), so an
    // entry on the heap is never above its link's true share. An entry that surfaces below
    // the true share is pushed back with the true share; one that matches is the minimum.
    //
    // A link crossed by a single unfrozen flow of the set (a private link: most host and NIC
    // links) gets no heap entry: its share is fixed (nothing else changes its residual), so it
    // only caps that flow. Each flow has one entry for its tightest private link instead.
    // Those entries never change, so they are sorted once and merged with the heap of shared
    // links rather than pushed onto it: a sort is far kinder to the cache than ~10^6 pops.
    ShareHeap heap(shares_);
    std::vector<Share>& caps = caps_;
    caps.clear();
    for (std::size_t n = 0; n < set.size(); ++n) {
        const FlowId f = set[n];
        prefetch_links(n + kAhead);
        MaxMinFlowState& st = flow_state[f];
        st.stamp = queued;
        double cap = std::numeric_limits<double>::infinity();
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const std::uint32_t l = pool[i];
            MaxMinLinkState& ls = link_state[l];
            if (ls.unfrozen == 1) {
                cap = std::min(cap, std::max(0.0, ls.residual) / st.weight);
            } else if (ls.mark != queued) {
                ls.mark = queued;
                heap.push_unordered({std::max(0.0, ls.residual) / ls.wsum, l});
            }
        }
        if (cap < std::numeric_limits<double>::infinity()) {
            caps.push_back({cap, kFlowBit | f});
        }
    }
    heap.heapify();
    std::sort(caps.begin(), caps.end(), before);
    std::size_t next_cap = 0;
    std::size_t unfrozen = set.size();
    const auto freeze = [&](FlowId f, double share, std::uint32_t at) {
        MaxMinFlowState& st = flow_state[f];
        st.stamp = 0;
        --unfrozen;
        const double r = st.weight * share;
        st.rate = r;
        st.bottleneck = at;
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            MaxMinLinkState& ls = link_state[pool[i]];
            ls.residual -= r;
            ls.wsum -= st.weight;
            ls.used += r;
            --ls.unfrozen;
        }
    };
    while ((!heap.empty() || next_cap < caps.size()) && unfrozen > 0) {
        Share top;
        if (next_cap < caps.size() && (heap.empty() || before(caps[next_cap], heap.top()))) {
            // Caps surface in order: fetch the records of the flows a few places on.
            if (next_cap + 2 * kAhead < caps.size()) {
                __builtin_prefetch(&flow_state[caps[next_cap + 2 * kAhead].id & (kFlowBit - 1)]);
            }
            if (next_cap + kAhead < caps.size()) {
                const MaxMinFlowState& ahead =
                    flow_state[caps[next_cap + kAhead].id & (kFlowBit - 1)];
                for (std::uint32_t k = ahead.offset; k < ahead.offset + ahead.count; ++k) {
                    __builtin_prefetch(&link_state[pool[k]]);
                }
            }
            top = caps[next_cap++];
        } else {
            top = heap.pop();
        }
        if ((top.id & kFlowBit) != 0) {
            const auto f = static_cast<FlowId>(top.id & (kFlowBit - 1));
            const MaxMinFlowState& st = flow_state[f];
            if (st.stamp == queued) {
                // Its tightest private link binds first; it is the flow's bottleneck.
                std::uint32_t at = kMaxMinNoLink;
                for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
                    const std::uint32_t l = pool[i];
                    const MaxMinLinkState& ls = link_state[l];
                    if (ls.unfrozen == 1 &&
                        std::max(0.0, ls.residual) / st.weight <= top.share * (1.0 + 1e-12)) {
                        at = l;
                        break;
                    }
                }
                freeze(f, top.share, at);
            }
            continue;
        }
        const auto l = static_cast<std::uint32_t>(top.id);
        const MaxMinLinkState& ls = link_state[l];
        if (ls.unfrozen == 0) {
            continue; // every flow on it is frozen already
        }
        const double share = std::max(0.0, ls.residual) / ls.wsum;
        if (share > top.share * (1.0 + 1e-12)) {
            heap.push({share, l});
            continue;
        }
        for (const MaxMinEntry& e : on_link[l]) {
            if (flow_state[e.flow].stamp == queued) {
                freeze(e.flow, share, l);
            }
        }
    }
}

} // namespace trnsim::network
