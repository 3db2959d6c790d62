#include "trnsim/network/maxmin.hpp"

#include <algorithm>
#include <stdexcept>

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

constexpr double kRelTol = 1e-9;

} // namespace

std::shared_ptr<MaxMinSolver::LinkTable>
MaxMinSolver::make_links(const std::vector<double>& capacity) {
    auto table = std::make_shared<LinkTable>();
    table->links.resize(capacity.size());
    table->on_link = std::vector<FlowList, HugePageAllocator<FlowList>>(capacity.size());
    for (std::size_t l = 0; l < capacity.size(); ++l) {
        if (!(capacity[l] > 0.0)) {
            throw std::invalid_argument("maxmin: link capacities must be positive");
        }
        table->links[l].capacity = capacity[l];
    }
    return table;
}

MaxMinSolver::MaxMinSolver(const std::vector<double>& capacity)
    : MaxMinSolver(make_links(capacity), 0, 1) {}

MaxMinSolver::MaxMinSolver(std::shared_ptr<LinkTable> links, std::uint32_t phase,
                           std::uint32_t stride)
    : table_(std::move(links)), links_(table_->links), on_link_(table_->on_link), stamp_(phase),
      stride_(stride) {
    if (stride == 0 || phase >= stride) {
        throw std::invalid_argument("maxmin: the stamp phase must be below a positive stride");
    }
}

MaxMinSolver::FlowId MaxMinSolver::add(std::span<const std::uint32_t> links, double weight) {
    if (links.empty()) {
        throw std::invalid_argument("maxmin: a flow needs at least one link");
    }
    if (!(weight > 0.0)) {
        throw std::invalid_argument("maxmin: flow weights must be positive");
    }
    for (std::uint32_t l : links) {
        if (l >= links_.size()) {
            throw std::out_of_range("maxmin: no link " + std::to_string(l));
        }
    }
    FlowId f;
    if (!free_.empty()) {
        f = free_.back();
        free_.pop_back();
    } else {
        f = static_cast<FlowId>(flows_.size());
        flows_.emplace_back();
        member_.push_back(0);
    }
    FlowState& st = flows_[f];
    st = FlowState{};
    st.weight = weight;
    st.offset = static_cast<std::uint32_t>(pool_.size());
    st.count = static_cast<std::uint32_t>(links.size());
    for (std::uint32_t l : links) {
        const auto incidence = static_cast<std::uint32_t>(pool_.size());
        pool_.push_back(l);
        position_.push_back(static_cast<std::uint32_t>(on_link_[l].size()));
        on_link_[l].push_back({f, incidence});
    }
    ++active_;
    added_.push_back(f);
    return f;
}

void MaxMinSolver::remove(FlowId f) {
    if (!alive(f)) {
        throw std::invalid_argument("maxmin: no such flow");
    }
    const FlowState& st = flows_[f];
    for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
        freed_links_.push_back(pool_[i]);
    }
    detach(f);
}

void MaxMinSolver::detach(FlowId f) {
    if (!alive(f)) {
        throw std::invalid_argument("maxmin: no such flow");
    }
    FlowState& st = flows_[f];
    for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
        const std::uint32_t l = pool_[i];
        links_[l].used -= st.rate;
        auto& list = on_link_[l];
        const std::uint32_t pos = position_[i];
        list[pos] = list.back();
        position_[list[pos].incidence] = pos;
        list.pop_back();
    }
    dead_incidences_ += st.count;
    st.count = 0;
    st.rate = 0.0;
    free_.push_back(f);
    --active_;
    if (active_ == 0) {
        pool_.clear(); // nothing alive: no need to compact
        position_.clear();
        dead_incidences_ = 0;
    }
}

void MaxMinSolver::clear_live_links() {
    // Only the links of live flows: a dead incidence's link may belong to another solver now.
    for (const FlowState& st : flows_) {
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            on_link_[pool_[i]].clear();
            links_[pool_[i]].used = 0.0;
        }
    }
}

void MaxMinSolver::clear() {
    clear_live_links();
    for (FlowId f = 0; f < flows_.size(); ++f) {
        if (flows_[f].count > 0) {
            flows_[f].count = 0;
            flows_[f].rate = 0.0;
            free_.push_back(f);
        }
    }
    pool_.clear();
    position_.clear();
    dead_incidences_ = 0;
    active_ = 0;
    added_.clear();
    freed_links_.clear();
    refilled_.clear();
}

void MaxMinSolver::remove_batch(std::span<const FlowId> batch) {
    if (batch.size() * 2 < active_) {
        for (FlowId f : batch) {
            remove(f);
        }
        return;
    }
    if (batch.size() == active_) {
        clear();
        return;
    }
    // Most flows leave: drop them, rebuild the link lists from the survivors, and let the next
    // update re-fill every survivor (from zero: used_ is reset with them).
    for (FlowId f : batch) {
        if (!alive(f)) {
            throw std::invalid_argument("maxmin: no such flow");
        }
    }
    clear_live_links();
    for (FlowId f : batch) {
        flows_[f].count = 0;
        flows_[f].rate = 0.0;
        free_.push_back(f);
        --active_;
    }
    std::vector<std::uint32_t>& pool = pool_scratch_;
    pool.clear();
    position_.clear();
    added_.clear();
    for (FlowId f = 0; f < flows_.size(); ++f) {
        FlowState& st = flows_[f];
        if (st.count == 0) {
            continue;
        }
        const auto offset = static_cast<std::uint32_t>(pool.size());
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const std::uint32_t l = pool_[i];
            const auto incidence = static_cast<std::uint32_t>(pool.size());
            pool.push_back(l);
            position_.push_back(static_cast<std::uint32_t>(on_link_[l].size()));
            on_link_[l].push_back({f, incidence});
        }
        st.offset = offset;
        st.rate = 0.0;
        added_.push_back(f);
    }
    pool_.swap(pool);
    dead_incidences_ = 0;
    freed_links_.clear();
}

void MaxMinSolver::compact_pool() {
    std::vector<std::uint32_t>& pool = pool_scratch_;
    std::vector<std::uint32_t>& position = position_scratch_;
    pool.clear();
    position.clear();
    for (FlowState& st : flows_) {
        if (st.count == 0) {
            continue;
        }
        const auto offset = static_cast<std::uint32_t>(pool.size());
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const auto j = static_cast<std::uint32_t>(pool.size());
            pool.push_back(pool_[i]);
            position.push_back(position_[i]);
            on_link_[pool_[i]][position_[i]].incidence = j;
        }
        st.offset = offset;
    }
    pool_.swap(pool);
    position_.swap(position);
    dead_incidences_ = 0;
}

void MaxMinSolver::fill(const std::vector<FlowId>& set) {
    // Flows of the set are unfrozen; every other flow keeps its rate and its share of used_.
    // Pass 1 marks the set's links with `counted` and sums their unfrozen flows; pass 2 gives
    // each shared link a heap entry (marking it `queued`) and each flow its private cap.
    const std::uint32_t counted = next_stamp();
    const std::uint32_t queued = next_stamp();
    // The link records of a fill are scattered over the fabric: fetch those of a flow a few
    // flows ahead so that the misses overlap.
    constexpr std::size_t kAhead = 8;
    const auto prefetch_links = [&](std::size_t i) {
        if (i < set.size()) {
            const FlowState& st = flows_[set[i]];
            for (std::uint32_t k = st.offset; k < st.offset + st.count; ++k) {
                __builtin_prefetch(&links_[pool_[k]]);
            }
        }
    };
    for (std::size_t i = 0; i < std::min(kAhead, set.size()); ++i) {
        __builtin_prefetch(&flows_[set[i]]);
    }
    for (std::size_t i = 0; i < set.size(); ++i) {
        const FlowId f = set[i];
        prefetch_links(i + kAhead);
        if (i + 2 * kAhead < set.size()) {
            __builtin_prefetch(&flows_[set[i + 2 * kAhead]]);
        }
        const double w = flows_[f].weight;
        for (std::uint32_t l : links(f)) {
            LinkState& ls = links_[l];
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
        FlowState& st = flows_[f];
        st.stamp = queued;
        double cap = std::numeric_limits<double>::infinity();
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const std::uint32_t l = pool_[i];
            LinkState& ls = links_[l];
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
        FlowState& st = flows_[f];
        st.stamp = 0;
        --unfrozen;
        const double r = st.weight * share;
        st.rate = r;
        st.bottleneck = at;
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            LinkState& ls = links_[pool_[i]];
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
                __builtin_prefetch(&flows_[caps[next_cap + 2 * kAhead].id & (kFlowBit - 1)]);
            }
            if (next_cap + kAhead < caps.size()) {
                const FlowState& ahead = flows_[caps[next_cap + kAhead].id & (kFlowBit - 1)];
                for (std::uint32_t k = ahead.offset; k < ahead.offset + ahead.count; ++k) {
                    __builtin_prefetch(&links_[pool_[k]]);
                }
            }
            top = caps[next_cap++];
        } else {
            top = heap.pop();
        }
        if ((top.id & kFlowBit) != 0) {
            const auto f = static_cast<FlowId>(top.id & (kFlowBit - 1));
            const FlowState& st = flows_[f];
            if (st.stamp == stamp_) {
                // Its tightest private link binds first; it is the flow's bottleneck.
                std::uint32_t at = kNoLink;
                for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
                    const std::uint32_t l = pool_[i];
                    const LinkState& ls = links_[l];
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
        const LinkState& ls = links_[l];
        if (ls.unfrozen == 0) {
            continue; // every flow on it is frozen already
        }
        const double share = std::max(0.0, ls.residual) / ls.wsum;
        if (share > top.share * (1.0 + 1e-12)) {
            heap.push({share, l});
            continue;
        }
        for (const Entry& e : on_link_[l]) {
            if (flows_[e.flow].stamp == stamp_) {
                freeze(e.flow, share, l);
            }
        }
    }
}

void MaxMinSolver::solve() {
    for (const FlowState& st : flows_) {
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            links_[pool_[i]].used = 0.0;
        }
    }
    std::vector<FlowId> all;
    all.reserve(active_);
    for (FlowId f = 0; f < flows_.size(); ++f) {
        if (flows_[f].count > 0) {
            all.push_back(f);
        }
    }
    fill(all);
    added_.clear();
    freed_links_.clear();
    refilled_ = std::move(all);
}

void MaxMinSolver::update() {
    refilled_.clear();
    if (added_.empty() && freed_links_.empty()) {
        return;
    }
    if (dead_incidences_ > 1024 && dead_incidences_ * 2 > pool_.size()) {
        compact_pool(); // at most once per update, however many flows left
    }
    // A: the flows to re-fill. member_ marks them with a stamp of their own.
    std::vector<FlowId>& set = set_;
    set.clear();
    std::vector<std::uint8_t>& member = member_; // all zero between updates
    const auto join = [&](FlowId f) {
        if (flows_[f].count > 0 && !member[f]) {
            member[f] = 1;
            set.push_back(f);
        }
    };
    for (FlowId f : added_) {
        join(f);
    }
    const std::uint32_t seen = next_stamp();
    for (std::uint32_t l : freed_links_) {
        if (links_[l].mark == seen) {
            continue;
        }
        links_[l].mark = seen;
        for (const Entry& e : on_link_[l]) {
            if (flows_[e.flow].bottleneck == l) {
                join(e.flow);
            }
        }
    }
    added_.clear();
    freed_links_.clear();

    std::vector<std::uint32_t>& links_of_set = links_of_set_;
    while (true) {
        // Take the set's bandwidth back, then re-fill it.
        for (FlowId f : set) {
            for (std::uint32_t l : links(f)) {
                links_[l].used -= flows_[f].rate;
            }
            flows_[f].rate = 0.0;
        }
        fill(set);
        if (set.size() == active_) {
            break; // everything was re-filled together: that is a full solve
        }

        // Max-min conditions on every link the set touches.
        links_of_set.clear();
        const std::uint32_t mark = next_stamp();
        for (FlowId f : set) {
            for (std::uint32_t l : links(f)) {
                if (links_[l].mark != mark) {
                    links_[l].mark = mark;
                    links_of_set.push_back(l);
                }
            }
        }
        const std::size_t before = set.size();
        for (std::uint32_t l : links_of_set) {
            const auto& list = on_link_[l];
            const bool saturated = links_[l].used >= links_[l].capacity * (1.0 - kRelTol);
            double max_share = 0.0;
            double frozen_here = std::numeric_limits<double>::infinity();
            for (const Entry& e : list) {
                const FlowState& st = flows_[e.flow];
                const double s = st.rate / st.weight;
                max_share = std::max(max_share, s);
                if (member[e.flow] && st.bottleneck == l) {
                    frozen_here = std::min(frozen_here, s);
                }
            }
            for (const Entry& e : list) {
                const FlowId g = e.flow;
                if (member[g]) {
                    continue;
                }
                const FlowState& st = flows_[g];
                const double s = st.rate / st.weight;
                const bool lost_bottleneck =
                    st.bottleneck == l && (!saturated || s < max_share * (1.0 - kRelTol));
                const bool above_set = s > frozen_here * (1.0 + kRelTol);
                if (lost_bottleneck || above_set) {
                    join(g);
                }
            }
        }
        if (set.size() == before) {
            break;
        }
    }
    for (FlowId f : set) {
        member[f] = 0;
    }
    refilled_.swap(set);
}

} // namespace trnsim::network
