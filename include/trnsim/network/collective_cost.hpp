// Latency-bandwidth (alpha-beta) cost of collectives over a hierarchical group.
//
// A group of ranks is described level by level, innermost first: how many members share a chip,
// how many chips of an instance take part, how many instances of an UltraServer, how many
// UltraServers or instances across the EFA fabric. Each level has the bandwidth one member can
// drive over that level's links while every other rank of the chip does the same (the caller
// divides the chip's link bandwidth among its ranks) and the latency of one algorithm step.
//
// Collectives run hierarchically, as the Neuron runtime composes them (CCX): a reduce-scatter
// runs a ring at level 0 over the whole buffer, then a ring at level 1 over the 1/g0 shard each
// member now owns, and so on outward; an all-gather is the mirror image; an all-reduce is a
// reduce-scatter followed by an all-gather. For a ring of g members over a buffer of B bytes at
// bandwidth bw and step latency a:
//
//   reduce-scatter / all-gather:  (g - 1) / g * B / bw + (g - 1) * a
//   all-reduce:                   2 (g - 1) / g * B / bw + 2 (g - 1) * a
//
// All-to-all is direct: each member sends B/g to every member; the traffic leaving a level-l
// unit uses that level's links, all levels run concurrently, and one outermost step latency is
// paid. Broadcast is a pipelined chain (B / slowest bw + (g - 1) steps of latency). Point-to-point
// is one level: B / bw + a.
//
// This is the uncongested closed form of the analytic step estimate (algorithm fixed to
// rings). The step and collective simulations do not use it for traffic between replicas:
// they run collectives as flows with max-min sharing and size-based algorithm selection
// (collectives.hpp, docs/network.md); the step simulation still costs tensor-parallel
// collectives with it.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/network/collective_spec.hpp"

#include <string>
#include <vector>

namespace trnsim::network {

struct GroupLevel {
    LinkClass link = LinkClass::on_chip;
    /// Members of the group at this level inside one unit of the next level (>= 1).
    int members = 1;
    /// Bandwidth one member drives over this level's links.
    Bandwidth bandwidth;
    /// Latency of one algorithm step across this level.
    Duration step_latency;
};

/// Levels innermost first. Levels with one member cost nothing.
struct GroupShape {
    std::vector<GroupLevel> levels;
    /// Total members (product of the levels' members).
    long long size() const;
    /// Human-readable: "4 on_chip x 4 neuronlink x 16 efa".
    std::string describe() const;
};

/// Seconds for one collective. `bytes` is, per rank: the buffer reduced (all-reduce), the full
/// input (reduce-scatter), the full output (all-gather), everything it sends including its own
/// share (all-to-all), the message (broadcast, send/recv).
double collective_seconds(CollectiveOp op, double bytes, const GroupShape& group);

} // namespace trnsim::network
