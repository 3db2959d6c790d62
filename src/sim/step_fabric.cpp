#include "step_fabric.hpp"

#include <algorithm>

#include "trnsim/topology/routing.hpp"

namespace trnsim::sim::detail {

StepFabric::StepFabric(const workload::Plan& plan, const topology::Fabric& fabric,
                       std::uint32_t partitions, engine::EntityId wake, std::uint32_t shards)
    : fabric_(fabric),
      local_{plan.cluster.link(network::LinkClass::on_chip).per_chip,
             plan.cluster.link(network::LinkClass::on_chip).latency,
             workload::collective_launch(plan.chip, workload::CollectiveIssue::in_graph),
             plan.chip.collectives.rank_bandwidth,
             plan.chip.collectives.efa_step_overhead,
             workload::collective_reduce_bandwidth(plan.chip, plan.lnc)},
      wake_(wake),
      shards_(shards),
      network_(std::make_unique<network::FlowNetwork>(fabric, partitions, wake, kFabricWake,
                                                      local_.hbm, local_.step_latency, shards)),
      tp_link_bytes_(partitions) {}

void StepFabric::start_transfer(std::uint32_t partition, std::int64_t now_ns,
                                engine::EntityId receiver, std::size_t slot,
                                const network::FlowSpec& flow) {
    network_->start_group(partition, now_ns, receiver, kPipelineInput, slot, {flow});
}

void StepFabric::start_phase(std::uint32_t partition, std::int64_t now_ns, engine::EntityId family,
                             std::uint32_t chip_group, std::span<const network::FlowSpec> flows) {
    network_->start_group_view(partition, now_ns, family, kPhaseFlowsDone, chip_group, flows);
}

void StepFabric::start_tp_phase(std::uint32_t partition, std::int64_t now_ns,
                                engine::EntityId worker, std::int64_t tp_group,
                                std::vector<network::FlowSpec> flows) {
    network_->start_group(partition, now_ns, worker, kTpFlowsDone,
                          static_cast<std::uint64_t>(tp_group), std::move(flows));
}

std::int64_t StepFabric::longest_latency_ns(std::span<const network::FlowSpec> flows) const {
    std::int64_t latency = 0;
    std::vector<std::uint32_t> route;
    for (std::size_t i = 0; i < flows.size(); ++i) {
        const network::FlowSpec& f = flows[i];
        if (f.src == f.dst) {
            latency = std::max(latency, local_.step_latency.ns());
            continue;
        }
        route.clear();
        topology::route(fabric_, f.src, f.dst, i, route);
        latency =
            std::max(latency, topology::route_latency_ns(fabric_, route.data(), route.size()));
    }
    return latency;
}

void StepFabric::add_tp_link_bytes(std::uint32_t partition,
                                   const std::array<double, topology::kLinkKinds>& bytes) {
    auto& mine = tp_link_bytes_[partition];
    for (std::size_t k = 0; k < mine.size(); ++k) {
        mine[k] += bytes[k];
    }
}

std::vector<LinkClassUse> StepFabric::link_use(double step_s) const {
    std::array<double, topology::kLinkKinds> bytes = network_->link_bytes();
    for (const auto& part : tp_link_bytes_) {
        for (std::size_t k = 0; k < bytes.size(); ++k) {
            bytes[k] += part[k];
        }
    }
    std::array<std::int64_t, topology::kLinkKinds> count{};
    std::array<double, topology::kLinkKinds> capacity{};
    for (std::uint32_t l = 0; l < fabric_.links(); ++l) {
        const auto k = static_cast<std::size_t>(fabric_.kind()[l]);
        ++count[k];
        capacity[k] += fabric_.capacity()[l];
    }
    std::vector<LinkClassUse> out;
    for (int k = 0; k < topology::kLinkKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        if (count[i] == 0) {
            continue;
        }
        LinkClassUse u;
        u.kind = topology::to_string(static_cast<topology::LinkKind>(k));
        u.links = count[i];
        u.capacity_bytes_per_s = capacity[i];
        u.bytes = bytes[i];
        u.utilisation = step_s > 0.0 ? bytes[i] / (capacity[i] * step_s) : 0.0;
        out.push_back(u);
    }
    return out;
}

void StepFabric::add_stats(StepSimStats& stats) const {
    stats.flows = network_->flows_started();
    stats.solves = network_->solves();
    stats.fabric_shards = shards_;
    stats.migrations = network_->migrations();
    stats.migrated_flows = network_->migrated_flows();
    const auto& edge = network_->edge_times();
    stats.fabric_route = edge.route;
    stats.fabric_place = edge.place;
    stats.fabric_other_shards = edge.other_shards;
    stats.fabric_arrivals = edge.arrivals;
    stats.fabric_updates = edge.shard_updates;
    stats.fabric_largest_update = edge.largest_update;
    stats.fabric_two_thread_bound = edge.two_thread_bound;
}

} // namespace trnsim::sim::detail
