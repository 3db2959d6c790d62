// The KV caches of disaggregated serving (serve_transfers.hpp).
#include "serve_transfers.hpp"

#include "serve_placement.hpp"

#include "trnsim/cluster/hierarchy.hpp"

#include <algorithm>

namespace trnsim::sim::detail {

namespace {

/// The flow network of the fleet's KV transfers; transfers between ranks of one chip cost the
/// cluster's on-chip link.
std::unique_ptr<network::FlowNetwork> kv_network(const ServeInput& in,
                                                 const topology::Fabric& fabric,
                                                 std::uint32_t partitions) {
    const cluster::LinkLevel on_chip =
        cluster::Hierarchy(in.chip, fleet_shape(in)).link(network::LinkClass::on_chip);
    return std::make_unique<network::FlowNetwork>(
        fabric, partitions, kWake, kWakeUp, on_chip.per_chip, on_chip.latency,
        std::max<std::uint32_t>(in.options.fabric_shards, 1));
}

} // namespace

std::vector<network::FlowSpec> kv_flows(const ReplicaPlacement& from, const ReplicaPlacement& to,
                                        double bytes) {
    const std::uint32_t pairs = std::min(from.chips, to.chips);
    const double each = bytes / static_cast<double>(pairs);
    std::vector<network::FlowSpec> flows(pairs);
    for (std::uint32_t j = 0; j < pairs; ++j) {
        flows[j] = {from.first_chip + j, to.first_chip + j, each, 1.0};
    }
    return flows;
}

KvTransfers::KvTransfers(const ServeInput& in, const topology::Fabric& fabric,
                         std::uint32_t partitions, std::size_t replicas)
    : kv_bytes_per_token_(in.kv_bytes_per_token.count()),
      network_(kv_network(in, fabric, partitions)),
      books_(replicas) {}

void KvTransfers::send(std::uint32_t partition, std::int64_t now, std::uint32_t from,
                       const ReplicaPlacement& from_place, std::uint32_t to,
                       const ReplicaPlacement& to_place, std::uint32_t handoff,
                       std::uint64_t request, std::uint16_t attempt, double bytes) {
    std::vector<Outgoing>& out = books_[from].outgoing;
    if (out.size() <= handoff) {
        out.resize(handoff + 1);
    }
    out[handoff] = {request, to, attempt, true};
    network_->start_group(partition, now, replica_entity(to), kKvArrived,
                          transfer_tag(request, attempt), kv_flows(from_place, to_place, bytes));
}

void KvTransfers::cancel_incoming(std::uint32_t partition, std::int64_t now, std::uint32_t r) {
    network_->cancel(partition, now, replica_entity(r), network::FlowNetwork::kAnyTag,
                     kKvCancelled);
}

void KvTransfers::lose(std::uint32_t partition, std::int64_t now, std::uint32_t r,
                       std::uint64_t request, std::uint16_t attempt) {
    books_[r].lost.emplace_back(request, attempt);
    network_->cancel(partition, now, replica_entity(r), transfer_tag(request, attempt),
                     kKvCancelled);
}

bool KvTransfers::take_lost(std::uint32_t r, std::uint64_t request, std::uint16_t attempt) {
    auto& lost = books_[r].lost;
    const auto it = std::find(lost.begin(), lost.end(),
                              std::pair<std::uint64_t, std::uint16_t>{request, attempt});
    if (it == lost.end()) {
        return false;
    }
    lost.erase(it);
    return true;
}

} // namespace trnsim::sim::detail
