// The serving fleet's placement (serve_placement.hpp).
#include "serve_placement.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/core/error.hpp"

#include "serve_layout.hpp"

namespace trnsim::sim::detail {

cluster::ClusterShape fleet_shape(const ServeInput& in) {
    return cluster::Hierarchy::shape_of(in.chip, in.cluster);
}

reliability::HardwareFacts fleet_hardware(const ServeInput& in) {
    return hardware_facts(in.chip);
}

namespace {

/// Router k of K owns domains [k D / K, (k + 1) D / K).
std::vector<std::uint32_t> shard_of_domain(std::int64_t domains, std::int64_t shards) {
    std::vector<std::uint32_t> out(static_cast<std::size_t>(domains));
    for (std::int64_t d = 0; d < domains; ++d) {
        out[static_cast<std::size_t>(d)] = static_cast<std::uint32_t>(d * shards / domains);
    }
    return out;
}

/// The prefill and the decode replicas of each router.
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>
roles_by_shard(const std::vector<ReplicaPlacement>& replicas,
               const std::vector<std::uint32_t>& shard_of, std::int64_t shards) {
    std::vector<std::int64_t> prefilling(static_cast<std::size_t>(shards), 0);
    std::vector<std::int64_t> decoding(static_cast<std::size_t>(shards), 0);
    for (const ReplicaPlacement& rp : replicas) {
        ++(rp.prefill ? prefilling : decoding)[shard_of[rp.domain]];
    }
    return {std::move(prefilling), std::move(decoding)};
}

} // namespace

std::int64_t auto_router_shards(const serving::InferenceSpec& spec,
                                const std::vector<ReplicaPlacement>& replicas) {
    const std::int64_t n = static_cast<std::int64_t>(replicas.size());
    const std::int64_t domains = n == 0 ? 0 : replicas.back().domain + 1;
    std::int64_t k = std::min(n / kReplicasPerAutoRouter, domains);
    const serving::ArrivalSpec& a = spec.requests.arrival;
    if (a.kind == serving::ArrivalSpec::Kind::closed_loop) {
        k = std::min<std::int64_t>(k, a.concurrency);
    }
    for (; k > 1; --k) {
        if (spec.serving.disaggregated.prefill_replicas == 0) {
            break;
        }
        const auto [prefilling, decoding] =
            roles_by_shard(replicas, shard_of_domain(domains, k), k);
        const auto none = [](const std::vector<std::int64_t>& v) {
            return std::find(v.begin(), v.end(), 0) != v.end();
        };
        if (!none(prefilling) && !none(decoding)) {
            break;
        }
    }
    return std::max<std::int64_t>(k, 1);
}

Placement place(const ServeInput& in, int lnc) {
    const compute::ChipSpec& chip = in.chip;
    const serving::ServingSpec& sv = in.spec.serving;
    const cluster::ClusterShape shape = fleet_shape(in);
    if (shape.instances < 1) {
        throw InputError("cluster", "the cluster has no instances");
    }
    const std::int64_t rpc = chip.ranks_per_chip(lnc);
    const std::int64_t cpi = chip.instance.chips;
    const std::int64_t tp = sv.tp;
    if (tp < 1) {
        throw InputError("workload.serving.tp", "must be at least 1");
    }
    Placement p;
    p.instances = shape.instances;
    p.chips = shape.chips;
    p.chips_per_domain = shape.chips_per_domain();
    std::int64_t chips_per_replica = 1, per_chip = 1, unit_chips = cpi;
    if (tp <= rpc) {
        if (rpc % tp != 0) {
            throw InputError("workload.serving.tp",
                             "tp " + std::to_string(tp) + " must divide the " +
                                 std::to_string(rpc) + " ranks of a chip (LNC " +
                                 std::to_string(lnc) + ")");
        }
        per_chip = rpc / tp;
    } else {
        if (tp % rpc != 0) {
            throw InputError("workload.serving.tp",
                             "tp " + std::to_string(tp) + " must be a multiple of the " +
                                 std::to_string(rpc) + " ranks of a chip (LNC " +
                                 std::to_string(lnc) + ")");
        }
        chips_per_replica = tp / rpc;
        if (chips_per_replica > cpi) {
            if (!shape.ultraserver_domains()) {
                throw InputError("workload.serving.tp",
                                 "tp " + std::to_string(tp) + " needs " +
                                     std::to_string(chips_per_replica) +
                                     " chips, more than an instance holds, and the cluster has "
                                     "no UltraServers");
            }
            unit_chips = shape.chips_per_domain();
            p.unit_is_ultraserver = true;
        }
        if (chips_per_replica > unit_chips || unit_chips % chips_per_replica != 0) {
            throw InputError("workload.serving.tp",
                             "tp " + std::to_string(tp) + " (" +
                                 std::to_string(chips_per_replica) +
                                 " chips) must divide the chips of an instance (" +
                                 std::to_string(cpi) + ") or of an UltraServer");
        }
    }
    const std::int64_t per_unit = unit_chips / chips_per_replica * per_chip;
    const std::int64_t units = p.unit_is_ultraserver ? shape.domains() : shape.instances;
    const std::int64_t capacity = per_unit * units;
    const std::int64_t replicas = sv.replicas == 0 ? capacity : sv.replicas;
    if (replicas < 1 || replicas > capacity) {
        throw InputError("workload.serving.replicas",
                         std::to_string(replicas) + " replicas of tp " + std::to_string(tp) +
                             " do not fit: the cluster holds " + std::to_string(capacity));
    }
    if (replicas + kFirstReplica >= engine::kMaxEntities) {
        throw InputError("workload.serving.replicas", "too many replicas for the engine");
    }
    const std::int64_t prefill = sv.disaggregated.prefill_replicas;
    if (prefill < 0 || (prefill > 0 && prefill >= replicas)) {
        throw InputError("workload.serving.disaggregated.prefill_replicas",
                         "must leave at least one of the " + std::to_string(replicas) +
                             " replicas to decode");
    }
    p.per_unit = static_cast<std::uint32_t>(per_unit);
    p.units = static_cast<std::uint32_t>((replicas + per_unit - 1) / per_unit);
    p.replicas.resize(static_cast<std::size_t>(replicas));
    for (std::int64_t r = 0; r < replicas; ++r) {
        ReplicaPlacement& rp = p.replicas[static_cast<std::size_t>(r)];
        const std::int64_t unit = r / per_unit, slot = r % per_unit;
        rp.unit = static_cast<std::uint32_t>(unit);
        rp.first_chip = static_cast<std::uint32_t>(unit * unit_chips +
                                                   (slot / per_chip) * chips_per_replica);
        rp.chips = static_cast<std::uint32_t>(chips_per_replica);
        rp.domain = static_cast<std::uint32_t>(rp.first_chip / p.chips_per_domain);
        // Prefill replicas spread evenly: r is one when floor((r + 1) p / n) > floor(r p / n).
        rp.prefill = prefill > 0 && ((r + 1) * prefill) / replicas > (r * prefill) / replicas;
    }
    // Router shards: shard k owns domains [k D / K, (k + 1) D / K) of the D holding replicas
    // (replicas fill the domains in order), so each owns at least one when K <= D.
    const std::int64_t domains = p.replicas.back().domain + 1;
    const std::int64_t shards =
        sv.router_shards == 0 ? auto_router_shards(in.spec, p.replicas) : sv.router_shards;
    if (shards < 1) {
        throw InputError("workload.serving.router_shards", "must be at least 1, or auto");
    }
    if (shards > 1) {
        if (shards > domains) {
            throw InputError("workload.serving.router_shards",
                             std::to_string(shards) + " routers need as many NeuronLink domains "
                             "(UltraServers, else instances) with replicas; the fleet's " +
                                 std::to_string(replicas) + " replicas fill " +
                                 std::to_string(domains));
        }
        const serving::ArrivalSpec& a = in.spec.requests.arrival;
        if (a.kind == serving::ArrivalSpec::Kind::closed_loop && a.concurrency < shards) {
            throw InputError("workload.serving.router_shards",
                             std::to_string(shards) + " routers need a closed-loop client each; "
                             "the requests have " + std::to_string(a.concurrency) +
                                 " (workload.requests.arrival.closed_loop.concurrency)");
        }
    }
    p.shards = static_cast<std::uint32_t>(shards);
    p.shard_of_domain = shard_of_domain(domains, shards);
    if (shards > 1 && prefill > 0) {
        // Each router hands its prompts to its own prefill and decode replicas.
        const auto [prefilling, decoding] = roles_by_shard(p.replicas, p.shard_of_domain, shards);
        for (std::int64_t k = 0; k < shards; ++k) {
            const auto i = static_cast<std::size_t>(k);
            if (prefilling[i] == 0 || decoding[i] == 0) {
                throw InputError("workload.serving.router_shards",
                                 "router " + std::to_string(k) + " of " +
                                     std::to_string(shards) + " would own " +
                                     std::to_string(prefilling[i]) + " prefill and " +
                                     std::to_string(decoding[i]) +
                                     " decode replicas: each needs both (fewer shards or more "
                                     "prefill replicas; they spread evenly over the fleet)");
            }
        }
    }
    return p;
}

} // namespace trnsim::sim::detail
