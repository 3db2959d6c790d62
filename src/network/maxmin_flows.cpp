// The max-min solver's bookkeeping (maxmin_flows.hpp): link records, flows and their
// incidences, stamps.
#include "trnsim/network/maxmin_flows.hpp"

#include <stdexcept>
#include <string>

namespace trnsim::network {

MaxMinLinks::MaxMinLinks(const std::vector<double>& capacity)
    : state_(capacity.size()), on_link_(capacity.size()) {
    for (std::size_t l = 0; l < capacity.size(); ++l) {
        if (!(capacity[l] > 0.0)) {
            throw std::invalid_argument("maxmin: link capacities must be positive");
        }
        state_[l].capacity = capacity[l];
    }
}

MaxMinStamps::MaxMinStamps(std::uint32_t phase, std::uint32_t stride)
    : stamp_(phase), stride_(stride) {
    if (stride == 0 || phase >= stride) {
        throw std::invalid_argument("maxmin: the stamp phase must be below a positive stride");
    }
}

MaxMinFlows::MaxMinFlows(std::shared_ptr<MaxMinLinks> links) : table_(std::move(links)) {}

MaxMinFlows::FlowId MaxMinFlows::add(std::span<const std::uint32_t> links, double weight) {
    if (links.empty()) {
        throw std::invalid_argument("maxmin: a flow needs at least one link");
    }
    if (!(weight > 0.0)) {
        throw std::invalid_argument("maxmin: flow weights must be positive");
    }
    for (std::uint32_t l : links) {
        if (l >= table_->size()) {
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
    }
    MaxMinFlowState& st = flows_[f];
    st = MaxMinFlowState{};
    st.weight = weight;
    st.offset = static_cast<std::uint32_t>(pool_.size());
    st.count = static_cast<std::uint32_t>(links.size());
    MaxMinFlowList* on_link = table_->lists();
    for (std::uint32_t l : links) {
        const auto incidence = static_cast<std::uint32_t>(pool_.size());
        pool_.push_back(l);
        position_.push_back(on_link[l].size());
        on_link[l].push_back({f, incidence});
    }
    ++active_;
    added_.push_back(f);
    return f;
}

void MaxMinFlows::remove(FlowId f) {
    if (!alive(f)) {
        throw std::invalid_argument("maxmin: no such flow");
    }
    const MaxMinFlowState& st = flows_[f];
    for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
        freed_links_.push_back(pool_[i]);
    }
    detach(f);
}

void MaxMinFlows::detach(FlowId f) {
    if (!alive(f)) {
        throw std::invalid_argument("maxmin: no such flow");
    }
    MaxMinFlowState& st = flows_[f];
    MaxMinLinkState* links = table_->state();
    MaxMinFlowList* on_link = table_->lists();
    for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
        const std::uint32_t l = pool_[i];
        links[l].used -= st.rate;
        MaxMinFlowList& list = on_link[l];
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

void MaxMinFlows::clear_live_links() {
    // Only the links of live flows: a dead incidence's link may belong to another solver now.
    MaxMinLinkState* links = table_->state();
    MaxMinFlowList* on_link = table_->lists();
    for (const MaxMinFlowState& st : flows_) {
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            on_link[pool_[i]].clear();
            links[pool_[i]].used = 0.0;
        }
    }
}

void MaxMinFlows::clear() {
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
    forget_changes();
}

void MaxMinFlows::remove_batch(std::span<const FlowId> batch) {
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
    // update re-fill every survivor (from zero: `used` is reset with them).
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
    MaxMinFlowList* on_link = table_->lists();
    std::vector<std::uint32_t>& pool = pool_scratch_;
    pool.clear();
    position_.clear();
    added_.clear();
    for (FlowId f = 0; f < flows_.size(); ++f) {
        MaxMinFlowState& st = flows_[f];
        if (st.count == 0) {
            continue;
        }
        const auto offset = static_cast<std::uint32_t>(pool.size());
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const std::uint32_t l = pool_[i];
            const auto incidence = static_cast<std::uint32_t>(pool.size());
            pool.push_back(l);
            position_.push_back(on_link[l].size());
            on_link[l].push_back({f, incidence});
        }
        st.offset = offset;
        st.rate = 0.0;
        added_.push_back(f);
    }
    pool_.swap(pool);
    dead_incidences_ = 0;
    freed_links_.clear();
}

void MaxMinFlows::compact_if_sparse() {
    if (dead_incidences_ > 1024 && dead_incidences_ * 2 > pool_.size()) {
        compact_pool();
    }
}

void MaxMinFlows::compact_pool() {
    MaxMinFlowList* on_link = table_->lists();
    std::vector<std::uint32_t>& pool = pool_scratch_;
    std::vector<std::uint32_t>& position = position_scratch_;
    pool.clear();
    position.clear();
    for (MaxMinFlowState& st : flows_) {
        if (st.count == 0) {
            continue;
        }
        const auto offset = static_cast<std::uint32_t>(pool.size());
        for (std::uint32_t i = st.offset; i < st.offset + st.count; ++i) {
            const auto j = static_cast<std::uint32_t>(pool.size());
            pool.push_back(pool_[i]);
            position.push_back(position_[i]);
            on_link[pool_[i]][position_[i]].incidence = j;
        }
        st.offset = offset;
    }
    pool_.swap(pool);
    position_.swap(position);
    dead_incidences_ = 0;
}

} // namespace trnsim::network
