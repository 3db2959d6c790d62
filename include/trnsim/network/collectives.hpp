// Collective algorithms: a collective over a group of ranks becomes phases of concurrent flows
// between chips.
//
// Ranks of one chip first combine on the chip (an HBM stage); the chips then run a chip-level
// algorithm on the chip's share:
//   ring                p - 1 phases (x2 for all-reduce): chip i sends V/p to chip i+1
//   bidirectional_ring  the same with half the data each way round
//   mesh                one phase (x2): every chip sends V/p to every other
//   rdh                 recursive halving (reduce-scatter) and doubling (all-gather): log2 q
//                       phases among the largest power of two q <= p, partner at distance
//                       q/2, q/4, ...; the p - q extra chips fold into partners first and get
//                       their share back last
//   torus_rings         a full NeuronLink domain: bidirectional rings along each torus dimension
//                       in turn (4 x 4 x 4: three rings of 4)
//   hierarchical        NeuronLink inside each domain, EFA between domains, NeuronLink again
//                       (CCX): all-reduce = domain reduce-scatter + all-reduce among the
//                       same-position chips of every domain on V/c + domain all-gather;
//                       all-gather runs the EFA stage first, reduce-scatter last.
// `automatic` runs the cheapest of the algorithms the group allows, by a closed-form
// estimate of their phases (estimate_plan_seconds): the flat ones (ring, bidirectional ring,
// RDH, mesh while it has at most a million flows, torus rings on exactly one full NeuronLink
// domain) and, on a group spanning several domains with the same chips in each, hierarchical
// with the cheapest domain algorithm and the cheapest EFA algorithm. `hierarchical` is that
// choice among the hierarchical ones only. As the Neuron runtime's tuner does, and unlike
// its published size thresholds (CCI: mesh below 1 MB, RDH to 56 MB, rings above; CCX: ring
// for large messages, mesh for small groups and messages, RDH for large groups with small
// to medium messages), which the cost order does not always follow. All-to-all is direct (one phase; every pair), broadcast is a scatter
// from the root followed by a ring all-gather (van de Geijn), send/recv one flow.
//
// Repeated identical phases (the p - 1 steps of a ring) are stored once with a repeat count,
// and every phase carries a signature of its flows: a halving step and the doubling step at
// the same distance, or a torus ring's reduce-scatter and all-gather steps, are the same flows.
// The simulation computes each distinct phase once and reuses its duration when nothing else
// shares the fabric.
#pragma once

#include "trnsim/network/collective_cost.hpp"
#include "trnsim/network/collective_spec.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/topology/fabric.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::network {

struct CollectiveRequest {
    CollectiveOp op = CollectiveOp::all_reduce;
    /// Per rank: the buffer reduced (all-reduce), the full input (reduce-scatter), the full
    /// output (all-gather), everything sent (all-to-all), the message (broadcast, send/recv).
    double bytes = 0.0;
    /// Participating chips in rank order; each holds `ranks_per_chip` ranks of the group.
    /// send/recv: exactly two chips (from, to).
    std::vector<std::uint32_t> chips;
    int ranks_per_chip = 1;
    /// Ranks whose collective engines move each chip's bytes (0: ranks_per_chip): more when
    /// the request stands for the same collective of several groups on the same chips (the
    /// step simulation's TP indices).
    int moving_ranks = 0;
    Algorithm algorithm = Algorithm::automatic;
    std::uint32_t root = 0; ///< broadcast root, index into `chips`
};

struct Phase {
    std::vector<FlowSpec> flows;
    /// On-chip work of the phase, overlapped with its transfers: the reductions of received
    /// data, and the time the collective engine needs to move each chip's bytes at its ranks'
    /// collective rate (LocalCosts::rank_bandwidth). The phase lasts the longer of the two.
    double local_seconds = 0.0;
    /// Fixed cost added after the transfers (the per-message overhead of a step across EFA).
    double overhead_seconds = 0.0;
    std::uint32_t repeat = 1;   ///< identical phases in a row
    std::string stage;          ///< for reports: "domain reduce-scatter (ring)"
    /// Hash of the flows: equal signatures, equal transfers.
    std::uint64_t signature = 0;
};

struct CollectivePlan {
    std::vector<Phase> phases;
    /// The collective's fixed launch cost, before its first phase (LocalCosts::launch).
    double launch_seconds = 0.0;
    std::string algorithm; ///< e.g. "hierarchical: torus_rings + ring"
    /// Phases counting repeats.
    std::size_t total_phases() const;
};

/// On-chip costs: HBM bandwidth of one chip and the fixed cost of an on-chip step; and the
/// runtime's collective engine (compute::CollectiveEngineSpec): the launch cost of a
/// collective, the rate at which one rank's collective transfers move (0: the links alone),
/// the per-step overhead of steps across EFA, and the rate at which one rank sums received
/// data (0: three HBM accesses per byte at the chip's HBM bandwidth).
struct LocalCosts {
    Bandwidth hbm;
    Duration step_latency;
    Duration launch = {};
    Bandwidth rank_bandwidth = {};
    Duration efa_step_overhead = {};
    Bandwidth reduce_bandwidth = {};
};

/// Plans a collective. Throws std::invalid_argument for impossible requests (empty group,
/// a mesh with more than 4 million flows per phase, torus_rings on a partial domain).
CollectivePlan plan_collective(const topology::Fabric& fabric, const CollectiveRequest& request,
                               const LocalCosts& local);

/// Closed-form seconds of a plan alone on the fabric: its launch, then per phase (times its
/// repeat count) the longer of its on-chip work and its transfers plus overhead, the transfers
/// taking the busiest link's bytes over its capacity plus the longest route latency (routes as
/// the flow network takes them). A lower bound of the flow model's max-min time for the phase
/// (equal when the busiest link stays saturated); linear in the bytes, so increasing with the
/// size. What `automatic` compares.
double estimate_plan_seconds(const topology::Fabric& fabric, const CollectivePlan& plan);

/// Bus bandwidth factor of nccom-test / nccl-tests: all-reduce 2(n-1)/n, all-gather,
/// reduce-scatter and all-to-all (n-1)/n, broadcast and send/recv 1.
double bus_bandwidth_factor(CollectiveOp op, std::size_t ranks);

} // namespace trnsim::network
