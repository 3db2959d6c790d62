#include "trnsim/network/collective_cost.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

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

constexpr double kMiB = 1024.0 * 1024.0;

/// The algorithm of one level, chosen by size as the Neuron runtime does and as the flow
/// model's `automatic` does (network/collectives.cpp): inside a chip and a NeuronLink domain
/// (CCI) mesh below 1 MiB, recursive halving-doubling up to 56 MiB, rings above; across EFA
/// (CCX) rings for pairs and large messages, mesh for groups of up to 32 with small messages,
/// RDH in between. `bytes` is the buffer that selects (the collective's size per rank inside
/// a domain, the shard that crosses the fabric at the EFA level).
enum class LevelAlgorithm { ring, mesh, rdh };

LevelAlgorithm pick(const GroupLevel& l, double bytes) {
    if (l.switched) {
        return LevelAlgorithm::mesh; // by cost: the ring's bytes in one step (header comment)
    }
    if (l.link == LinkClass::efa) {
        if (l.members <= 2) {
            return LevelAlgorithm::ring;
        }
        if (bytes < kMiB && l.members <= 32) {
            return LevelAlgorithm::mesh;
        }
        return bytes <= 56.0 * kMiB ? LevelAlgorithm::rdh : LevelAlgorithm::ring;
    }
    if (bytes < kMiB) {
        return LevelAlgorithm::mesh;
    }
    return bytes <= 56.0 * kMiB ? LevelAlgorithm::rdh : LevelAlgorithm::ring;
}

/// Hierarchical reduce-scatter (or, by symmetry, all-gather) of `bytes` per member: level 0
/// over the whole buffer, then each level over the 1/g shard the members now own. Per level
/// of g members, shard s, bandwidth bw and step latency a:
///   ring  (g - 1) / g * s / bw + (g - 1) a
///   mesh  (g - 1) / g * s / bw + a            (every member writes every other directly)
///   rdh   (q - 1) / q * s / bw + log2(q) a     (q: the largest power of two <= g), and when
///         g != q the g - q extra members first fold their whole shard into a partner:
///         + s / bw + a
/// Mesh and RDH move the ring's bytes; the link over-subscription of their routed traffic
/// (CCI) is not modelled, which matters only near the upper end of their size ranges.
/// The bandwidth of a level for one member: its links', at most the collective engine's rate.
Bandwidth member_bandwidth(const GroupLevel& l, const GroupShape& group) {
    const double cap = group.rank_bandwidth.bytes_per_s();
    return cap > 0.0 && cap < l.bandwidth.bytes_per_s() ? group.rank_bandwidth : l.bandwidth;
}

/// The reduce-scatter (all-gather) of `bytes` per member over levels [0, end); `shard`, when
/// given, receives the shard each member owns after them.
double ring_scatter_seconds(double bytes, const GroupShape& group, bool reduce,
                            std::size_t end = static_cast<std::size_t>(-1),
                            double* shard_out = nullptr) {
    double t = 0.0;
    double shard = bytes;
    const double reduce_rate = reduce ? group.reduce_bandwidth.bytes_per_s() : 0.0;
    end = std::min(end, group.levels.size());
    for (std::size_t i = 0; i < end; ++i) {
        const GroupLevel& l = group.levels[i];
        if (l.members <= 1) {
            continue;
        }
        const double g = l.members;
        const double a = l.step_latency.seconds();
        const double selecting = l.link == LinkClass::efa ? shard : bytes;
        const Bandwidth bw = member_bandwidth(l, group);
        // The (g - 1) / g of the shard a member receives; summed as it arrives (reductions).
        const auto moved = [&](double fraction) {
            const double transfer = fraction * transfer_seconds(shard, bw);
            return reduce_rate > 0.0 ? std::max(transfer, (g - 1.0) / g * shard / reduce_rate)
                                     : transfer;
        };
        switch (pick(l, selecting)) {
        case LevelAlgorithm::ring:
            t += moved((g - 1.0) / g) + (g - 1.0) * a;
            break;
        case LevelAlgorithm::mesh:
            t += moved((g - 1.0) / g) + a;
            break;
        case LevelAlgorithm::rdh: {
            const auto q = static_cast<double>(std::bit_floor(static_cast<unsigned>(l.members)));
            t += moved((q - 1.0) / q) + std::log2(q) * a;
            if (q != g) {
                t += transfer_seconds(shard, bw) + a;
            }
            break;
        }
        }
        shard /= g;
    }
    if (shard_out != nullptr) {
        *shard_out = shard;
    }
    return t;
}

/// An all-reduce: the hierarchical reduce-scatter and all-gather; when the outermost level
/// with more than one member is switched, the cheaper of that and the inner levels' pair
/// around a one-shot all-reduce there (header comment).
double all_reduce_seconds(double bytes, const GroupShape& group) {
    const double pair =
        ring_scatter_seconds(bytes, group, true) + ring_scatter_seconds(bytes, group, false);
    std::size_t outer = group.levels.size();
    while (outer > 0 && group.levels[outer - 1].members <= 1) {
        --outer;
    }
    if (outer == 0 || !group.levels[outer - 1].switched) {
        return pair;
    }
    const GroupLevel& l = group.levels[outer - 1];
    double shard = bytes;
    const double inner = ring_scatter_seconds(bytes, group, true, outer - 1, &shard) +
                         ring_scatter_seconds(bytes, group, false, outer - 1);
    const double g = l.members;
    const double received = (g - 1.0) * shard;
    const double reduce_rate = group.reduce_bandwidth.bytes_per_s();
    double one_shot = transfer_seconds(received, member_bandwidth(l, group));
    if (reduce_rate > 0.0) {
        one_shot = std::max(one_shot, received / reduce_rate);
    }
    return std::min(pair, inner + one_shot + l.step_latency.seconds());
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
        bandwidth_term =
            std::max(bandwidth_term, transfer_seconds(bytes * share, member_bandwidth(l, group)));
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
        slowest = std::max(slowest, transfer_seconds(bytes, member_bandwidth(l, group)));
        latency += (l.members - 1) * l.step_latency.seconds();
    }
    return slowest + latency;
}

} // namespace

double collective_seconds(CollectiveOp op, double bytes, const GroupShape& group) {
    if (bytes <= 0.0 || group.size() <= 1) {
        return 0.0;
    }
    const double launch = group.launch.seconds();
    switch (op) {
    case CollectiveOp::all_reduce:
        return launch + all_reduce_seconds(bytes, group);
    case CollectiveOp::reduce_scatter:
        return launch + ring_scatter_seconds(bytes, group, true);
    case CollectiveOp::all_gather:
        return launch + ring_scatter_seconds(bytes, group, false);
    case CollectiveOp::all_to_all:
        return launch + all_to_all_seconds(bytes, group);
    case CollectiveOp::broadcast:
        return launch + broadcast_seconds(bytes, group);
    case CollectiveOp::send_recv: {
        // A pipeline transfer: no collective launch.
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
