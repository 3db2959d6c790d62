// Max-min fair bandwidth sharing: a pure kernel over flat arrays (no engine, no topology).
//
// Links have capacities c_l (bytes/s). Flows cross lists of links and carry weights w_f. The
// max-min fair allocation (Bertsekas & Gallager, Data Networks, §6.5) is the one where no flow
// can get more without taking from a flow whose weighted rate is no larger; equivalently every
// flow f has a bottleneck link b: b is saturated and r_f / w_f is the largest weighted rate on
// b. Progressive filling computes it: raise every flow's weighted rate together; when a link
// fills, freeze the flows crossing it at its share (residual capacity / sum of their weights);
// continue with the rest. Implemented with a heap of link shares: O(I log I) for I flow-link
// incidences (a link goes back on the heap only when its entry surfaces stale).
//
// Incremental update. After flows are added or removed, only some flows can change rate:
// added flows, and flows whose bottleneck was on a removed flow's path. update() re-fills
// just that set A (the other flows keep their rates and their bandwidth), then checks the
// max-min conditions on every link A touches: a flow outside A that lost its bottleneck (the
// link is no longer saturated, or a flow of A now has a larger weighted rate there), or that
// has a larger weighted rate than a flow of A frozen at that link, joins A, and A is re-filled.
// A only grows, so this ends, at worst as a full solve; the result equals solve() (tests
// compare them on random instances).
//
// Determinism: ties are broken by link id; the same sequence of calls gives the same rates.
//
// Shared links. Several solvers can share one LinkTable when they own disjoint sets of links:
// every flow of a solver crosses only links no other solver's flows cross (FlowNetwork keeps
// that invariant). They may then run concurrently, each on its own thread; a solver touches
// only the links its flows cross. One solver is not thread-safe.
#pragma once

#include "trnsim/core/huge_pages.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

namespace trnsim::network {

namespace detail {
/// A candidate bottleneck of a fill: a shared link with its share when pushed, or (flow bit
/// set) one flow's tightest private link.
struct MaxMinShare {
    double share;
    std::uint64_t id; ///< link id, or (1 << 40) | flow id
};
} // namespace detail

class MaxMinSolver {
public:
    using FlowId = std::uint32_t;
    static constexpr std::uint32_t kNoLink = std::numeric_limits<std::uint32_t>::max();

    class LinkTable;
    /// The per-link records of a fabric, to share between solvers (see above).
    static std::shared_ptr<LinkTable> make_links(const std::vector<double>& capacity);

    /// A solver with links of its own.
    explicit MaxMinSolver(const std::vector<double>& capacity);
    /// A solver on a shared table; `phase` (< `stride`) and `stride` keep the marks it leaves
    /// on links apart from those of the other solvers of the table (give each its own phase).
    MaxMinSolver(std::shared_ptr<LinkTable> links, std::uint32_t phase, std::uint32_t stride);
    MaxMinSolver(const MaxMinSolver&) = delete;
    MaxMinSolver& operator=(const MaxMinSolver&) = delete;

    /// A new flow across `links` (each at most once). Its rate is set by the next solve() or
    /// update(). Flows without links are not allowed (handle them outside).
    FlowId add(std::span<const std::uint32_t> links, double weight = 1.0);
    void remove(FlowId f);
    /// Removes a flow without re-filling what it leaves: only for a flow whose links no other
    /// flow of this solver crosses (a whole component handed to another solver).
    void detach(FlowId f);
    /// Removes every flow at once (cheaper than removing them one by one); no update needed.
    void clear();
    /// Removes several flows. When they are most of the active flows, the solver is rebuilt
    /// from the survivors (whose rates the next update() recomputes) instead.
    void remove_batch(std::span<const FlowId> flows);

    /// Recomputes every flow from scratch.
    void solve();
    /// Recomputes what the adds and removes since the last solve()/update() can change.
    void update();

    double rate(FlowId f) const { return flows_[f].rate; }
    double weight(FlowId f) const { return flows_[f].weight; }
    /// Calls `visit(flow)` for every flow crossing `link`.
    template <class Visit>
    void for_each_flow_on(std::uint32_t link, Visit&& visit) const {
        for (const Entry& e : on_link_[link]) {
            visit(e.flow);
        }
    }
    std::uint32_t bottleneck(FlowId f) const { return flows_[f].bottleneck; }
    bool alive(FlowId f) const { return f < flows_.size() && flows_[f].count > 0; }
    std::span<const std::uint32_t> links(FlowId f) const {
        return {pool_.data() + flows_[f].offset, flows_[f].count};
    }
    std::size_t active_flows() const { return active_; }
    std::size_t link_count() const { return links_.size(); }
    double capacity(std::uint32_t link) const { return links_[link].capacity; }
    /// Sum of the rates of the flows crossing `link`.
    double used(std::uint32_t link) const { return links_[link].used; }
    /// Flows re-filled by the last solve() or update() (the only ones whose rate may have
    /// changed; also the cost driver).
    std::size_t last_update_size() const { return refilled_.size(); }
    const std::vector<FlowId>& last_refilled() const { return refilled_; }

private:
    struct Entry {
        FlowId flow;
        std::uint32_t incidence; ///< index into pool_
    };

    /// The flows crossing one link. Most links (a chip's own ports) carry one or two flows at a
    /// time: those stay inside the 24-byte record, so millions of links need no allocation.
    class FlowList {
    public:
        FlowList() = default;
        FlowList(const FlowList&) = delete;
        FlowList& operator=(const FlowList&) = delete;
        ~FlowList() {
            if (cap_ > kInline) {
                delete[] heap_;
            }
        }
        std::uint32_t size() const { return size_; }
        Entry* begin() { return data(); }
        Entry* end() { return data() + size_; }
        const Entry* begin() const { return data(); }
        const Entry* end() const { return data() + size_; }
        Entry& operator[](std::uint32_t i) { return data()[i]; }
        Entry& back() { return data()[size_ - 1]; }
        void pop_back() { --size_; }
        void clear() { size_ = 0; }
        void push_back(const Entry& e) {
            if (size_ == cap_) {
                grow();
            }
            data()[size_++] = e;
        }

    private:
        static constexpr std::uint32_t kInline = 2;
        Entry* data() { return cap_ > kInline ? heap_ : inline_; }
        const Entry* data() const { return cap_ > kInline ? heap_ : inline_; }
        void grow() {
            Entry* bigger = new Entry[std::size_t{cap_} * 2];
            std::copy(data(), data() + size_, bigger);
            if (cap_ > kInline) {
                delete[] heap_;
            }
            heap_ = bigger;
            cap_ *= 2;
        }
        union {
            Entry inline_[kInline];
            Entry* heap_;
        };
        std::uint32_t size_ = 0;
        std::uint32_t cap_ = kInline;
    };

    /// Progressive filling of the flows in `set`, every other flow keeping its rate.
    void fill(const std::vector<FlowId>& set);
    void compact_pool();
    /// A fresh stamp (marks on links): this solver's phase modulo the stride.
    std::uint32_t next_stamp() { return stamp_ += stride_; }
    /// Empties the link lists of the live flows (and their `used`).
    void clear_live_links();

    /// Per flow, in one record: the fields the fill and the checks read together share a
    /// cache line (at 10^5 to 10^6 flows each separate array would be a miss per flow).
    struct FlowState {
        double rate = 0.0;
        double weight = 0.0;
        std::uint32_t bottleneck = kNoLink;
        std::uint32_t offset = 0; ///< first incidence in pool_
        std::uint32_t count = 0;  ///< links; 0 for a free slot
        std::uint32_t stamp = 0;  ///< equal to the fill's stamp while unfrozen in that fill
    };

    /// Per link, in one record for the same reason.
    struct LinkState {
        double capacity = 0.0;
        double used = 0.0;     ///< sum of the rates of the flows crossing it
        double residual = 0.0; ///< during a fill: capacity left for the unfrozen flows
        double wsum = 0.0;     ///< during a fill: weights of the unfrozen flows
        std::uint32_t mark = 0;     ///< stamp of the last fill or check that touched it
        std::uint32_t unfrozen = 0; ///< during a fill: unfrozen flows crossing it
    };

public:
    class LinkTable {
    private:
        friend class MaxMinSolver;
        std::vector<LinkState, HugePageAllocator<LinkState>> links;
        std::vector<FlowList, HugePageAllocator<FlowList>> on_link; ///< flows crossing each link
    };

private:
    std::shared_ptr<LinkTable> table_;
    std::vector<LinkState, HugePageAllocator<LinkState>>& links_;
    std::vector<FlowList, HugePageAllocator<FlowList>>& on_link_;
    std::vector<FlowState, HugePageAllocator<FlowState>> flows_;
    std::vector<FlowId> free_;
    std::size_t active_ = 0;
    // Flow-link incidences: link id and position in on_link_[link].
    std::vector<std::uint32_t> pool_;
    std::vector<std::uint32_t> position_;
    std::size_t dead_incidences_ = 0;
    // Changes since the last solve/update.
    std::vector<FlowId> added_;
    std::vector<std::uint32_t> freed_links_;
    // Scratch, kept to avoid reallocation.
    std::vector<std::uint8_t> member_; ///< per flow: in the update's re-fill set
    using Share = detail::MaxMinShare;
    std::vector<Share> shares_;               ///< fill: heap of shared links
    std::vector<Share> caps_;                 ///< fill: flows by their tightest private link
    std::vector<FlowId> set_;                 ///< update: the flows to re-fill
    std::vector<std::uint32_t> links_of_set_; ///< update: the links they cross
    std::vector<std::uint32_t> pool_scratch_, position_scratch_; ///< rebuilding pool_
    std::uint32_t stamp_ = 0;
    std::uint32_t stride_ = 1;
    std::vector<FlowId> refilled_;
};

} // namespace trnsim::network
