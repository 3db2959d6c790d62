// The composition of a cluster: how many UltraServers or plain instances, and what that means
// in instances and chips. The fabric between them (NeuronLink tori, EFA Clos) is described in
// docs/network.md; this header only counts.
#pragma once

#include <cstdint>

namespace trnsim::topology {

/// What the scenario asks for: exactly one of the two counts is non-zero.
struct ClusterSpec {
    std::int64_t ultraservers = 0;
    std::int64_t instances = 0;
};

/// Counts derived from a ClusterSpec and the chip's packaging.
struct ClusterShape {
    std::int64_t chips_per_instance = 0;
    std::int64_t instances_per_ultraserver = 1; ///< 1 for a cluster of plain instances
    std::int64_t ultraservers = 0;              ///< 0 for a cluster of plain instances
    std::int64_t instances = 0;
    std::int64_t chips = 0;

    std::int64_t chips_per_ultraserver() const {
        return chips_per_instance * instances_per_ultraserver;
    }
    /// NeuronLink domains: the UltraServers, or the instances of a cluster of plain instances
    /// (the count topology::Fabric::build takes).
    std::int64_t domains() const { return ultraservers > 0 ? ultraservers : instances; }
};

/// `instances_per_ultraserver` is 0 when the chip is not sold in UltraServers; the spec must then
/// count instances (the caller validates that).
ClusterShape make_cluster_shape(const ClusterSpec& spec, std::int64_t chips_per_instance,
                                std::int64_t instances_per_ultraserver);

} // namespace trnsim::topology
