// FlowNetwork's groups (flow_groups.hpp): buffering, cancels, admission and completion events.
#include "flow_groups.hpp"

#include <algorithm>

namespace trnsim::network {

void FlowGroups::start(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                       engine::EventType done_type, std::uint64_t tag,
                       std::vector<FlowSpec> flows) {
    auto& list = pending_[partition];
    list.push_back({now, owner, done_type, tag, std::move(flows), {}});
    list.back().flows = list.back().owned;
}

void FlowGroups::start_view(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                            engine::EventType done_type, std::uint64_t tag,
                            std::span<const FlowSpec> flows) {
    pending_[partition].push_back({now, owner, done_type, tag, {}, flows});
}

void FlowGroups::cancel(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                        std::uint64_t tag, engine::EventType cancelled_type) {
    cancels_[partition].push_back({now, owner, tag, cancelled_type, pending_[partition].size()});
}

bool FlowGroups::nothing_buffered() const {
    return std::all_of(pending_.begin(), pending_.end(),
                       [](const std::vector<Pending>& p) { return p.empty(); }) &&
           !has_cancels();
}

bool FlowGroups::has_cancels() const {
    return std::any_of(cancels_.begin(), cancels_.end(),
                       [](const std::vector<Cancel>& c) { return !c.empty(); });
}

std::uint32_t FlowGroups::admit(const Pending& p) {
    std::uint32_t gid;
    if (!free_.empty()) {
        gid = free_.back();
        free_.pop_back();
    } else {
        gid = static_cast<std::uint32_t>(groups_.size());
        groups_.push_back({});
    }
    // One outstanding arrival per flow, plus the group's admission token (released once every
    // flow is admitted, so that even an empty group completes).
    groups_[gid] = {p.owner, p.done_type, p.tag, static_cast<std::uint32_t>(p.flows.size()) + 1,
                    p.start, kNotCancelled, 0, false};
    return gid;
}

void FlowGroups::arrive(std::uint32_t gid, std::int64_t when, std::int64_t now,
                        const FlowNetwork::Schedule& schedule) {
    Group& g = groups_[gid];
    if (when == kStopped) {
        g.stopped = true;
    } else {
        g.arrival = std::max(g.arrival, when);
    }
    if (--g.outstanding == 0) {
        if (g.stopped) {
            schedule(g.owner, now, g.cancelled_type, g.tag);
            ++cancelled_;
        } else {
            schedule(g.owner, std::max(now, g.arrival), g.done_type, g.tag);
        }
        free_.push_back(gid);
    }
}

bool FlowGroups::apply_cancels(std::int64_t now, const FlowNetwork::Schedule& schedule) {
    const auto matches = [](const Cancel& c, engine::EntityId owner, std::uint64_t tag) {
        return c.owner == owner && (c.tag == FlowNetwork::kAnyTag || c.tag == tag);
    };
    bool admitted = false;
    std::vector<std::vector<std::uint8_t>> drop(pending_.size());
    for (std::uint32_t p = 0; p < cancels_.size(); ++p) {
        for (const Cancel& c : cancels_[p]) {
            // Groups started in this window and not yet admitted: those before the cancel
            // (in its own partition, by order; in the others, by time) never start.
            for (std::uint32_t q = 0; q < pending_.size(); ++q) {
                drop[q].resize(pending_[q].size(), 0);
                for (std::size_t i = 0; i < pending_[q].size(); ++i) {
                    const Pending& g = pending_[q][i];
                    const bool before = q == p ? i < c.started : g.start <= c.at;
                    if (drop[q][i] == 0 && before && matches(c, g.owner, g.tag)) {
                        drop[q][i] = 1;
                        schedule(g.owner, now, c.cancelled_type, g.tag);
                        ++cancelled_;
                    }
                }
            }
            // Admitted groups in flight: their shards stop the flows still transmitting.
            for (Group& g : groups_) {
                if (g.outstanding > 0 && g.cancel_at == kNotCancelled &&
                    matches(c, g.owner, g.tag)) {
                    g.cancel_at = c.at;
                    g.cancelled_type = c.cancelled_type;
                    admitted = true;
                }
            }
        }
        cancels_[p].clear();
    }
    for (std::uint32_t q = 0; q < pending_.size(); ++q) {
        std::size_t kept = 0;
        for (std::size_t i = 0; i < pending_[q].size(); ++i) {
            if (i >= drop[q].size() || drop[q][i] == 0) {
                if (kept != i) {
                    Pending& to = pending_[q][kept];
                    to = std::move(pending_[q][i]);
                    if (!to.owned.empty()) {
                        to.flows = to.owned; // the moved vector keeps its buffer
                    }
                }
                ++kept;
            }
        }
        pending_[q].resize(kept);
    }
    return admitted;
}

} // namespace trnsim::network
