// Latency-bandwidth (alpha-beta) cost of collectives over a hierarchical group.
//
// A group of ranks is described level by level, innermost first: how many members share a chip,
// how many chips of an instance take part, how many instances of an UltraServer, how many
// UltraServers or instances across the EFA fabric. Each level has the bandwidth one member can
// drive over that level's links while every other rank of the chip does the same (the caller
// divides the chip's link bandwidth among its ranks) and the latency of one algorithm step.
//
// Collectives run hierarchically, as the Neuron runtime composes them (CCX): a reduce-scatter
// runs at level 0 over the whole buffer, then at level 1 over the 1/g0 shard each member now
// owns, and so on outward; an all-gather is the mirror image; an all-reduce is a
// reduce-scatter followed by an all-gather. Each level picks its algorithm by size as the
// runtime does (and as the flow model's `automatic` does, docs/network.md): inside a chip and
// a NeuronLink domain (CCI) mesh below 1 MiB, recursive halving-doubling (RDH) up to 56 MiB,
// rings above; across EFA (CCX) mesh for groups of up to 32 below 1 MiB, RDH up to 56 MiB,
// rings above and for pairs. The selecting size is the collective's buffer per rank inside a
// domain and the shard that crosses the fabric at the EFA level. For a level of g members
// over a shard of B bytes at bandwidth bw and step latency a, a reduce-scatter or all-gather
// costs
//
//   ring  (g - 1) / g * B / bw + (g - 1) * a
//   mesh  (g - 1) / g * B / bw + a
//   rdh   (q - 1) / q * B / bw + log2(q) * a, q the largest power of two <= g, plus a fold
//         step B / bw + a when g != q (the extra members hand their buffer to a partner)
//
// and an all-reduce twice that. Every collective also pays the group's `launch` once; a level's
// bandwidth is at most the group's `rank_bandwidth` (the collective engine's DMA rate per rank,
// measured by nccom-test); in a reduce-scatter (and the reduce-scatter half of an all-reduce)
// each level also sums the (g - 1) / g * s bytes it receives at `reduce_bandwidth` (the
// calibrated reduce kernel), overlapped with the transfer: the level takes the longer of the
// two. Small messages are latency-bound: an all-reduce of 16 KB over
// 32 ranks of 16 Trainium1 chips is 4 steps (mesh on chip and over NeuronLink, twice), not the
// 62 of a flat ring. Mesh and RDH move the ring's bytes; their link over-subscription (routed
// traffic, CCI) is not modelled.
//
// A switched level (NeuronSwitch: every member reaches every other at its full bandwidth, no
// routed traffic to over-subscribe a link) picks its algorithm by cost instead of by size:
// mesh, which moves the ring's bytes in one step, is then never slower than ring or RDH. An
// all-reduce whose outermost level is switched may also run there one-shot: every member
// writes its whole shard s to every other and sums what it receives, (g - 1) s / bw + a
// (and (g - 1) s at reduce_bandwidth, overlapped) in place of the mesh reduce-scatter and
// all-gather's 2 (g - 1) / g s / bw + 2 a; the cheaper is taken, which is one-shot for small
// messages (a decode step's tensor-parallel all-reduce).
//
// All-to-all is direct: each member sends B/g to every member; the traffic leaving a level-l
// unit uses that level's links, all levels run concurrently, and one outermost step latency is
// paid. Broadcast is a pipelined chain (B / slowest bw + (g - 1) steps of latency). Point-to-point
// is one level: B / bw + a.
//
// This is the uncongested closed form (the analytic step estimate, the step simulation's
// tensor-parallel collectives, serving's iteration cost). Collectives between replicas in the
// step and collective simulations run as flows with max-min sharing instead (collectives.hpp,
// docs/network.md), over the same algorithms phase by phase.
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
    /// The level's members meet through a non-blocking switch (a Trn3 UltraServer's
    /// NeuronSwitch), not rings: every member reaches every other at its full bandwidth.
    bool switched = false;
};

/// Levels innermost first. Levels with one member cost nothing.
struct GroupShape {
    std::vector<GroupLevel> levels;
    /// The runtime's collective engine (compute::CollectiveEngineSpec): a fixed cost per
    /// collective, the rate one member's transfers move at most (0: the links alone), and the
    /// rate at which a member sums the data it receives in a reduction (0: free).
    Duration launch = {};
    Bandwidth rank_bandwidth = {};
    Bandwidth reduce_bandwidth = {};
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
