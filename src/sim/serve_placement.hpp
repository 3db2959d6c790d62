// Where the serving fleet's replicas sit (private to the sim module; serve_layout.hpp lists
// the parts): the chips of each replica, the units (instances or UltraServers) they fill in
// order, their NeuronLink domains, which replicas only prefill, and which router shard owns
// each domain. include/trnsim/sim/serve.hpp ("Placement", "Router shards") gives the rules.
#pragma once

#include <cstdint>
#include <vector>

#include "trnsim/reliability/layout.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/cluster/shape.hpp"

namespace trnsim::sim::detail {

struct Placement {
    std::vector<ReplicaPlacement> replicas;
    std::uint32_t per_unit = 0;
    std::uint32_t units = 0;
    bool unit_is_ultraserver = false;
    std::int64_t chips_per_domain = 0; ///< an UltraServer's when the cluster has them
    std::int64_t instances = 0;
    std::int64_t chips = 0;
    std::uint32_t shards = 1;                   ///< router shards
    std::vector<std::uint32_t> shard_of_domain; ///< by NeuronLink domain with replicas
};

/// The fleet's cluster shape (placement, failure layout) and hardware facts (failure layout).
cluster::ClusterShape fleet_shape(const ServeInput& in);
reliability::HardwareFacts fleet_hardware(const ServeInput& in);

/// Replicas per router that `router_shards: auto` aims at: the benchmark's fleet (1,024
/// replicas) gets 8 routers, whose figures are within 0.05% of one router's over an hour
/// (docs/performance.md "Serving").
constexpr std::int64_t kReplicasPerAutoRouter = 128;

/// `router_shards: auto`: one router per kReplicasPerAutoRouter replicas (rounded down, at
/// least one), at most one per NeuronLink domain with replicas and one per closed-loop client,
/// and, disaggregated, the most at or below that which leave every router prefill and decode
/// replicas. It depends on the fleet only, never on the threads, so the records are the same
/// on any number of threads.
std::int64_t auto_router_shards(const serving::InferenceSpec& spec,
                                const std::vector<ReplicaPlacement>& replicas);

/// Places the replicas of `in` at LNC `lnc`. Throws InputError when they do not fit (tp
/// against the chip's ranks, the replica count against the cluster, the prefill replicas, the
/// router shards against the domains and clients).
Placement place(const ServeInput& in, int lnc);

} // namespace trnsim::sim::detail
