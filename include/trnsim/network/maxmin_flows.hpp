// The bookkeeping under the max-min solver (maxmin.hpp): the per-link records of a fabric
// (MaxMinLinks, shareable between solvers), the flows of one solver and their incidences on
// links (MaxMinFlows), and the stamps that keep the marks of several solvers on one table apart
// (MaxMinStamps). No maths here: the progressive filling is in maxmin_fill.hpp, the incremental
// update in maxmin.hpp.
//
// Layout. Per flow and per link one record holds the fields the fill and the checks read
// together, so that they share a cache line (at 10^5 to 10^6 flows each separate array would be
// a miss per flow). A flow's links are a run of incidences in one pool; each incidence also
// knows its position in its link's list, so that a flow leaves a link in O(1).
//
// Threading: one MaxMinFlows is not thread-safe. Several may share one MaxMinLinks when they
// own disjoint sets of links (every flow of one crosses only links no other's flows cross).
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

using MaxMinFlowId = std::uint32_t;
inline constexpr std::uint32_t kMaxMinNoLink = std::numeric_limits<std::uint32_t>::max();

/// A flow crossing a link: the flow and the index of the incidence in its solver's pool.
struct MaxMinEntry {
    MaxMinFlowId flow;
    std::uint32_t incidence;
};

/// The flows crossing one link. Most links (a chip's own ports) carry one or two flows at a
/// time: those stay inside the 24-byte record, so millions of links need no allocation.
class MaxMinFlowList {
public:
    using Entry = MaxMinEntry;
    MaxMinFlowList() = default;
    MaxMinFlowList(const MaxMinFlowList&) = delete;
    MaxMinFlowList& operator=(const MaxMinFlowList&) = delete;
    ~MaxMinFlowList() {
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

/// Per flow, in one record (see the layout note above).
struct MaxMinFlowState {
    double rate = 0.0;
    double weight = 0.0;
    std::uint32_t bottleneck = kMaxMinNoLink;
    std::uint32_t offset = 0; ///< first incidence in the pool
    std::uint32_t count = 0;  ///< links; 0 for a free slot
    std::uint32_t stamp = 0;  ///< equal to the fill's stamp while unfrozen in that fill
};

/// Per link, in one record for the same reason.
struct MaxMinLinkState {
    double capacity = 0.0;
    double used = 0.0;     ///< sum of the rates of the flows crossing it
    double residual = 0.0; ///< during a fill: capacity left for the unfrozen flows
    double wsum = 0.0;     ///< during a fill: weights of the unfrozen flows
    std::uint32_t mark = 0;     ///< stamp of the last fill or check that touched it
    std::uint32_t unfrozen = 0; ///< during a fill: unfrozen flows crossing it
};

/// The per-link records of a fabric: capacity, load and fill scratch, and the flows crossing
/// each link. Capacities must be positive (std::invalid_argument otherwise).
class MaxMinLinks {
public:
    explicit MaxMinLinks(const std::vector<double>& capacity);
    MaxMinLinks(const MaxMinLinks&) = delete;
    MaxMinLinks& operator=(const MaxMinLinks&) = delete;

    std::size_t size() const { return state_.size(); }
    MaxMinLinkState* state() { return state_.data(); }
    const MaxMinLinkState* state() const { return state_.data(); }
    MaxMinFlowList* lists() { return on_link_.data(); }
    const MaxMinFlowList* lists() const { return on_link_.data(); }

private:
    std::vector<MaxMinLinkState, HugePageAllocator<MaxMinLinkState>> state_;
    std::vector<MaxMinFlowList, HugePageAllocator<MaxMinFlowList>> on_link_;
};

/// Stamps for the marks a solver leaves on links and flows: `phase` (< `stride`) modulo
/// `stride`, so that solvers sharing one MaxMinLinks never take each other's marks for their
/// own (give each its own phase). std::invalid_argument unless 0 <= phase < stride.
class MaxMinStamps {
public:
    MaxMinStamps(std::uint32_t phase, std::uint32_t stride);
    /// A fresh stamp, which becomes the current one.
    std::uint32_t next() { return stamp_ += stride_; }
    std::uint32_t current() const { return stamp_; }

private:
    std::uint32_t stamp_;
    std::uint32_t stride_;
};

/// The flows of one solver: their records, their links (incidences in a pool, entries in the
/// links' lists, each link's `used` kept as the sum of their rates), free slots for reuse, and
/// the changes since the solver last looked (flows added, links freed by removals).
class MaxMinFlows {
public:
    using FlowId = MaxMinFlowId;
    explicit MaxMinFlows(std::shared_ptr<MaxMinLinks> links);
    MaxMinFlows(const MaxMinFlows&) = delete;
    MaxMinFlows& operator=(const MaxMinFlows&) = delete;

    /// A new flow across `links` (each at most once), rate 0, noted as added. std::
    /// invalid_argument for no links or a weight that is not positive, std::out_of_range for a
    /// link outside the table.
    FlowId add(std::span<const std::uint32_t> links, double weight);
    /// Removes a flow, noting its links as freed (their other flows may gain).
    void remove(FlowId f);
    /// Removes a flow without noting its links: for a flow whose links no other flow of these
    /// crosses (a whole component handed to another solver).
    void detach(FlowId f);
    /// Removes every flow and forgets the changes.
    void clear();
    /// Removes several flows. When they are most of the live flows, the survivors are rebuilt
    /// with rate 0 and noted as added (the next update re-fills them all) instead.
    void remove_batch(std::span<const FlowId> flows);
    /// Rewrites the pool without the dead incidences when they are over half of it (and over
    /// 1,024).
    void compact_if_sparse();

    bool alive(FlowId f) const { return f < flows_.size() && flows_[f].count > 0; }
    std::span<const std::uint32_t> links(FlowId f) const {
        return {pool_.data() + flows_[f].offset, flows_[f].count};
    }
    const MaxMinFlowState& operator[](FlowId f) const { return flows_[f]; }
    /// Flow slots, live or free (flow ids are below this).
    std::size_t slots() const { return flows_.size(); }
    std::size_t active() const { return active_; }
    /// Raw records for the fill: per flow slot, per incidence (its link), per link.
    MaxMinFlowState* state() { return flows_.data(); }
    const std::uint32_t* incidences() const { return pool_.data(); }
    MaxMinLinks& table() { return *table_; }
    const MaxMinLinks& table() const { return *table_; }

    /// Changes since forget_changes(): flows added, links of removed flows (repeats possible).
    const std::vector<FlowId>& added() const { return added_; }
    const std::vector<std::uint32_t>& freed_links() const { return freed_links_; }
    void forget_changes() {
        added_.clear();
        freed_links_.clear();
    }

private:
    void compact_pool();
    /// Empties the link lists of the live flows (and their `used`).
    void clear_live_links();

    std::shared_ptr<MaxMinLinks> table_;
    std::vector<MaxMinFlowState, HugePageAllocator<MaxMinFlowState>> flows_;
    std::vector<FlowId> free_;
    std::size_t active_ = 0;
    // Flow-link incidences: link id and position in its link's list.
    std::vector<std::uint32_t> pool_;
    std::vector<std::uint32_t> position_;
    std::size_t dead_incidences_ = 0;
    std::vector<FlowId> added_;
    std::vector<std::uint32_t> freed_links_;
    std::vector<std::uint32_t> pool_scratch_, position_scratch_; ///< rebuilding pool_
};

} // namespace trnsim::network
