// Checks and figures of a built fabric, computed with Boost.Graph (the fabric is turned into a
// compressed-sparse-row graph): connectivity, diameter, bisection bandwidth.
#pragma once

#include "trnsim/topology/fabric.hpp"

#include <array>
#include <cstdint>

namespace trnsim::topology {

struct FabricReport {
    std::array<std::uint64_t, kLinkKinds> links{};    ///< directed links per kind
    std::array<double, kLinkKinds> link_bandwidth{};  ///< bytes/s of one such link
    bool connected = false;
    /// Longest shortest path between two chips, in links (double-sweep BFS: exact for the
    /// symmetric tori and Clos trnsim builds; tests compare it with all-pairs BFS).
    std::uint32_t diameter = 0;
    /// Capacity (bytes/s, one direction) across the cut between the first and the second half
    /// of the chips, per tier: NeuronLink torus, NIC injection, leaf up-links, spine up-links.
    /// The bisection bandwidth is the smallest tier that applies.
    double bisection = 0.0;
};

FabricReport analyse(const Fabric& f);

/// Maximum flow from the first half of the chips to the second (push-relabel on the whole
/// graph). Exact but heavy: for checking `bisection` on small fabrics.
double max_flow_between_halves(const Fabric& f);

/// Shortest-path hop counts from chip `from` to every node (BFS).
std::vector<std::uint32_t> hop_distances(const Fabric& f, std::uint32_t from);

} // namespace trnsim::topology
