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
// Parts: the links and flows with their bookkeeping (maxmin_flows.hpp), the progressive filling
// (maxmin_fill.hpp) and, here, the solver that composes them: a full solve, and the incremental
// update that chooses which flows to re-fill.
//
// Shared links. Several solvers can share one LinkTable when they own disjoint sets of links:
// every flow of a solver crosses only links no other solver's flows cross (FlowNetwork keeps
// that invariant). They may then run concurrently, each on its own thread; a solver touches
// only the links its flows cross. One solver is not thread-safe.
#pragma once

#include "trnsim/network/maxmin_fill.hpp"
#include "trnsim/network/maxmin_flows.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace trnsim::network {

class MaxMinSolver {
public:
    using FlowId = MaxMinFlowId;
    static constexpr std::uint32_t kNoLink = kMaxMinNoLink;

    using LinkTable = MaxMinLinks;
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
    FlowId add(std::span<const std::uint32_t> links, double weight = 1.0) {
        return flows_.add(links, weight);
    }
    void remove(FlowId f) { flows_.remove(f); }
    /// Removes a flow without re-filling what it leaves: only for a flow whose links no other
    /// flow of this solver crosses (a whole component handed to another solver).
    void detach(FlowId f) { flows_.detach(f); }
    /// Removes every flow at once (cheaper than removing them one by one); no update needed.
    void clear();
    /// Removes several flows. When they are most of the active flows, the solver is rebuilt
    /// from the survivors (whose rates the next update() recomputes) instead.
    void remove_batch(std::span<const FlowId> flows) { flows_.remove_batch(flows); }

    /// Recomputes every flow from scratch.
    void solve();
    /// Recomputes what the adds and removes since the last solve()/update() can change.
    void update();

    double rate(FlowId f) const { return flows_[f].rate; }
    double weight(FlowId f) const { return flows_[f].weight; }
    /// Calls `visit(flow)` for every flow crossing `link`.
    template <class Visit>
    void for_each_flow_on(std::uint32_t link, Visit&& visit) const {
        for (const MaxMinEntry& e : flows_.table().lists()[link]) {
            visit(e.flow);
        }
    }
    std::uint32_t bottleneck(FlowId f) const { return flows_[f].bottleneck; }
    bool alive(FlowId f) const { return flows_.alive(f); }
    std::span<const std::uint32_t> links(FlowId f) const { return flows_.links(f); }
    std::size_t active_flows() const { return flows_.active(); }
    std::size_t link_count() const { return flows_.table().size(); }
    double capacity(std::uint32_t link) const { return flows_.table().state()[link].capacity; }
    /// Sum of the rates of the flows crossing `link`.
    double used(std::uint32_t link) const { return flows_.table().state()[link].used; }
    /// Flows re-filled by the last solve() or update() (the only ones whose rate may have
    /// changed; also the cost driver).
    std::size_t last_update_size() const { return refilled_.size(); }
    const std::vector<FlowId>& last_refilled() const { return refilled_; }

private:
    /// The flows the update re-fills at first: those added, and those bottlenecked on a link
    /// that a removed flow freed.
    void seed_update_set();
    /// Adds to the set the flows outside it that break a max-min condition on a link the set
    /// crosses; false when none does.
    bool grow_update_set();

    MaxMinFlows flows_;
    ProgressiveFill fill_;
    MaxMinStamps stamps_;
    // Scratch of update(), kept to avoid reallocation.
    std::vector<std::uint8_t> member_;        ///< per flow: in the re-fill set (0 between calls)
    std::vector<FlowId> set_;                 ///< the flows to re-fill
    std::vector<std::uint32_t> links_of_set_; ///< the links they cross
    std::vector<FlowId> refilled_;
};

} // namespace trnsim::network
