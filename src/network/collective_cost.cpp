#include "trnsim/network/collective_cost.hpp"

#include <algorithm>

namespace trnsim::network {

long long GroupShape::size() const {
    long long n = 1;
    for (const auto& l : levels) {
        n *= l.members;
    }
    return n;
}

std::string GroupShape::describe() const {
    std::string out;
    for (const auto& l : levels) {
        if (l.members <= 1) {
            continue;
        }
        if (!out.empty()) {
            out += " x ";
        }
        out += std::to_string(l.members) + " " + to_string(l.link);
    }
    return out.empty() ? "1 (no communication)" : out;
}

namespace {

/// Hierarchical ring reduce-scatter (or, by symmetry, all-gather) of `bytes` per member.
double ring_scatter_seconds(double bytes, const GroupShape& group) {
    double t = 0.0;
    double shard = bytes;
    for (const auto& l : group.levels) {
        if (l.members <= 1) {
            continue;
        }
        const double g = l.members;
        t += (g - 1.0) / g * transfer_seconds(shard, l.bandwidth) +
             (g - 1.0) * l.step_latency.seconds();
        shard /= g;
    }
    return t;
}

double all_to_all_seconds(double bytes, const GroupShape& group) {
    const double total = static_cast<double>(group.size());
    if (total <= 1.0) {
        return 0.0;
    }
    double inner = 1.0; // members within the same unit of the previous level
    double bandwidth_term = 0.0;
    double latency = 0.0;
    for (const auto& l : group.levels) {
        if (l.members <= 1) {
            continue;
        }
        const double within = inner * l.members;
        // Share of each member's traffic whose peer is in this level's unit but not the inner one.
        const double share = (within - inner) / total;
        bandwidth_term = std::max(bandwidth_term, transfer_seconds(bytes * share, l.bandwidth));
        latency = std::max(latency, l.step_latency.seconds());
        inner = within;
    }
    return bandwidth_term + latency;
}

double broadcast_seconds(double bytes, const GroupShape& group) {
    double slowest = 0.0;
    double latency = 0.0;
    for (const auto& l : group.levels) {
        if (l.members <= 1) {
            continue;
        }
        slowest = std::max(slowest, transfer_seconds(bytes, l.bandwidth));
        latency += (l.members - 1) * l.step_latency.seconds();
    }
    return slowest + latency;
}

} // namespace

double collective_seconds(CollectiveOp op, double bytes, const GroupShape& group) {
    if (bytes <= 0.0) {
        return 0.0;
    }
    switch (op) {
    case CollectiveOp::all_reduce:
        return 2.0 * ring_scatter_seconds(bytes, group);
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather:
        return ring_scatter_seconds(bytes, group);
    case CollectiveOp::all_to_all:
        return all_to_all_seconds(bytes, group);
    case CollectiveOp::broadcast:
        return broadcast_seconds(bytes, group);
    case CollectiveOp::send_recv: {
        double t = 0.0;
        for (const auto& l : group.levels) {
            t = std::max(t, transfer_seconds(bytes, l.bandwidth) + l.step_latency.seconds());
        }
        return t;
    }
    }
    return 0.0;
}

} // namespace trnsim::network
