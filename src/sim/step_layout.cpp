#include "step_layout.hpp"

#include <stdexcept>
#include <string>

namespace trnsim::sim::detail {

bool is_family_group(workload::CommGroup group) {
    return std::find(kFamilyGroups.begin(), kFamilyGroups.end(), group) != kFamilyGroups.end();
}

namespace {

const topology::Fabric& checked(const topology::Fabric& fabric, const workload::Plan& plan) {
    if (static_cast<std::int64_t>(fabric.chips()) != plan.cluster.chips()) {
        throw std::invalid_argument("step simulation: the fabric has " +
                                    std::to_string(fabric.chips()) + " chips, the plan " +
                                    std::to_string(plan.cluster.chips()));
    }
    return fabric;
}

} // namespace

StepLayout::StepLayout(const workload::Plan& plan, const topology::Fabric& fabric_in,
                       const StepSimOptions& options)
    : per_rank(options.entities == StepEntities::rank), tp(plan.tp), cp(plan.cp),
      groups_per_stage(std::int64_t{plan.cp} * plan.dp), pp(plan.pp),
      virtual_stages(plan.virtual_stages), microbatches(plan.microbatches),
      ranks_per_chip(plan.ranks_per_chip), tp_groups(plan.ranks / plan.tp),
      workers(per_rank ? static_cast<std::uint64_t>(plan.ranks)
                       : static_cast<std::uint64_t>(plan.ranks / plan.tp)),
      chips_per_group(plan.tp >= plan.ranks_per_chip ? plan.tp / plan.ranks_per_chip : 1),
      lookahead_ns(1), input_slots(static_cast<std::size_t>(2 * microbatches * virtual_stages)) {
    const topology::Fabric& fabric = checked(fabric_in, plan);
    // Notifications cross the fabric: over EFA as soon as there are several domains.
    const std::int64_t control =
        plan.cluster
            .link(fabric.domains() > 1 ? network::LinkClass::efa : network::LinkClass::neuronlink)
            .latency.ns();
    lookahead_ns = std::max<std::int64_t>(control, 1);

    // Whole TP groups per partition (the ranks of one group meet at their TP barriers), blocks
    // of whole domains in worker order.
    const std::uint32_t domains = std::max<std::uint32_t>(1, fabric.domains());
    const std::uint32_t worker_parts = std::min<std::uint32_t>(domains, 64);
    std::uint32_t last_part = 0;
    partition_starts.push_back(0);
    for (std::uint64_t e = 0; e < workers; ++e) {
        const std::uint32_t domain = fabric.domain_of(first_chip_of(tp_group_of(e)));
        const auto part =
            static_cast<std::uint32_t>(static_cast<std::uint64_t>(domain) * worker_parts / domains);
        if (part != last_part) {
            partition_starts.push_back(static_cast<std::uint32_t>(e));
            last_part = part;
        }
    }
    partition_starts.push_back(static_cast<std::uint32_t>(workers));
}

} // namespace trnsim::sim::detail
