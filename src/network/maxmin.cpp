// The max-min solver (maxmin.hpp): a full solve, and the incremental update that picks the
// flows to re-fill and grows the set until the max-min conditions hold. The bookkeeping is in
// maxmin_flows.cpp, the progressive filling in maxmin_fill.cpp.
#include "trnsim/network/maxmin.hpp"

#include <algorithm>
#include <limits>

namespace trnsim::network {

namespace {
constexpr double kRelTol = 1e-9;
} // namespace

std::shared_ptr<MaxMinSolver::LinkTable>
MaxMinSolver::make_links(const std::vector<double>& capacity) {
    return std::make_shared<LinkTable>(capacity);
}

MaxMinSolver::MaxMinSolver(const std::vector<double>& capacity)
    : MaxMinSolver(make_links(capacity), 0, 1) {}

MaxMinSolver::MaxMinSolver(std::shared_ptr<LinkTable> links, std::uint32_t phase,
                           std::uint32_t stride)
    : flows_(std::move(links)), stamps_(phase, stride) {}

void MaxMinSolver::clear() {
    flows_.clear();
    refilled_.clear();
}

void MaxMinSolver::solve() {
    MaxMinLinkState* const link = flows_.table().state();
    const std::uint32_t* const pool = flows_.incidences();
    for (FlowId f = 0; f < flows_.slots(); ++f) {
        const MaxMinFlowState& st = flows_[f];
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            link[pool[i]].used = 0.0;
        }
    }
    std::vector<FlowId> all;
    all.reserve(flows_.active());
    for (FlowId f = 0; f < flows_.slots(); ++f) {
        if (flows_[f].count > 0) {
            all.push_back(f);
        }
    }
    fill_.run(flows_, all, stamps_);
    flows_.forget_changes();
    refilled_ = std::move(all);
}

void MaxMinSolver::seed_update_set() {
    const auto join = [&](FlowId f) {
        if (flows_[f].count > 0 && !member_[f]) {
            member_[f] = 1;
            set_.push_back(f);
        }
    };
    for (FlowId f : flows_.added()) {
        join(f);
    }
    MaxMinLinkState* const link = flows_.table().state();
    const MaxMinFlowList* const on_link = flows_.table().lists();
    const std::uint32_t seen = stamps_.next();
    for (std::uint32_t l : flows_.freed_links()) {
        if (link[l].mark == seen) {
            continue;
        }
        link[l].mark = seen;
        for (const MaxMinEntry& e : on_link[l]) {
            if (flows_[e.flow].bottleneck == l) {
                join(e.flow);
            }
        }
    }
    flows_.forget_changes();
}

bool MaxMinSolver::grow_update_set() {
    // Max-min conditions on every link the set touches.
    MaxMinLinkState* const link = flows_.table().state();
    const MaxMinFlowList* const on_link = flows_.table().lists();
    links_of_set_.clear();
    const std::uint32_t mark = stamps_.next();
    for (FlowId f : set_) {
        for (std::uint32_t l : flows_.links(f)) {
            if (link[l].mark != mark) {
                link[l].mark = mark;
                links_of_set_.push_back(l);
            }
        }
    }
    const std::size_t before = set_.size();
    for (std::uint32_t l : links_of_set_) {
        const MaxMinFlowList& list = on_link[l];
        const bool saturated = link[l].used >= link[l].capacity * (1.0 - kRelTol);
        double max_share = 0.0;
        double frozen_here = std::numeric_limits<double>::infinity();
        for (const MaxMinEntry& e : list) {
            const MaxMinFlowState& st = flows_[e.flow];
            const double s = st.rate / st.weight;
            max_share = std::max(max_share, s);
            if (member_[e.flow] && st.bottleneck == l) {
                frozen_here = std::min(frozen_here, s);
            }
        }
        for (const MaxMinEntry& e : list) {
            const FlowId g = e.flow;
            if (member_[g]) {
                continue;
            }
            const MaxMinFlowState& st = flows_[g];
            const double s = st.rate / st.weight;
            const bool lost_bottleneck =
                st.bottleneck == l && (!saturated || s < max_share * (1.0 - kRelTol));
            const bool above_set = s > frozen_here * (1.0 + kRelTol);
            if (lost_bottleneck || above_set) {
                member_[g] = 1; // alive: it crosses a link
                set_.push_back(g);
            }
        }
    }
    return set_.size() != before;
}

void MaxMinSolver::update() {
    refilled_.clear();
    if (flows_.added().empty() && flows_.freed_links().empty()) {
        return;
    }
    flows_.compact_if_sparse(); // at most once per update, however many flows left
    if (member_.size() < flows_.slots()) {
        member_.resize(flows_.slots(), 0); // all zero between updates
    }
    // The flows to re-fill, marked in member_.
    set_.clear();
    seed_update_set();
    MaxMinFlowState* const state = flows_.state();
    MaxMinLinkState* const link = flows_.table().state();
    while (true) {
        // Take the set's bandwidth back, then re-fill it.
        for (FlowId f : set_) {
            for (std::uint32_t l : flows_.links(f)) {
                link[l].used -= state[f].rate;
            }
            state[f].rate = 0.0;
        }
        fill_.run(flows_, set_, stamps_);
        if (set_.size() == flows_.active()) {
            break; // everything was re-filled together: that is a full solve
        }
        if (!grow_update_set()) {
            break;
        }
    }
    for (FlowId f : set_) {
        member_[f] = 0;
    }
    refilled_.swap(set_);
}

} // namespace trnsim::network
