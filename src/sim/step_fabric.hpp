// The step simulation's use of the flow network (private to the sim module; step_layout.hpp
// lists the parts): pipeline transfers and collective phases start here as flows, the fabric
// resolves their rates at window edges (docs/adr/0001), and the link traffic of the step adds
// up here, flows and closed-form TP collectives alike.
//
// Threading: the start_* and add_tp_link_bytes calls come from handlers of any partition at
// once; each partition writes only its own slot (network::FlowNetwork is built for that).
// window_edge runs with every partition stopped.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "trnsim/network/collectives.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/workload/plan.hpp"

#include "step_layout.hpp"

namespace trnsim::sim::detail {

class StepFabric {
public:
    /// `wake` is the model's wake entity, which ignores its kFabricWake events.
    StepFabric(const workload::Plan& plan, const topology::Fabric& fabric, std::uint32_t partitions,
               engine::EntityId wake, std::uint32_t shards);

    const topology::Fabric& topology() const { return fabric_; }
    /// Costs of copies between ranks of one chip (HBM bandwidth, fixed step latency).
    const network::LocalCosts& local_costs() const { return local_; }

    /// A pipeline transfer from a handler of `partition`: `receiver` gets kPipelineInput with
    /// `slot` when the flow has arrived.
    void start_transfer(std::uint32_t partition, std::int64_t now_ns, engine::EntityId receiver,
                        std::size_t slot, const network::FlowSpec& flow);
    /// One phase of a collective: `family` gets kPhaseFlowsDone with `chip_group` when all
    /// `flows` have arrived. The flows are not copied: they must live until the next window
    /// edge (a family's cached plan lives for the whole run).
    void start_phase(std::uint32_t partition, std::int64_t now_ns, engine::EntityId family,
                     std::uint32_t chip_group, std::span<const network::FlowSpec> flows);
    /// One phase of a TP collective run as flows (tp_collectives = flows): `worker` gets
    /// kTpFlowsDone with `tp_group` when all `flows` (copied) have arrived.
    void start_tp_phase(std::uint32_t partition, std::int64_t now_ns, engine::EntityId worker,
                        std::int64_t tp_group, std::vector<network::FlowSpec> flows);
    /// The longest fixed latency of the flows: their routes' latency, the on-chip step for a
    /// copy inside a chip. Flow i takes the route the flow network gives it (salt i).
    std::int64_t longest_latency_ns(std::span<const network::FlowSpec> flows) const;

    void window_edge(StepEdge& edge) { network_->resolve_at(edge, wake_); }

    /// Bytes of closed-form TP collectives (flows count their own), by link kind, from a handler of `partition`.
    void add_tp_link_bytes(std::uint32_t partition,
                           const std::array<double, topology::kLinkKinds>& bytes);
    /// Traffic per link kind over a step of `step_s` seconds: flows, then the TP bytes of each
    /// partition in partition order (a fixed order of the floating-point sum).
    std::vector<LinkClassUse> link_use(double step_s) const;
    /// The flow network's counters and window-edge wall times.
    void add_stats(StepSimStats& stats) const;

private:
    const topology::Fabric& fabric_;
    network::LocalCosts local_;
    engine::EntityId wake_;
    std::uint32_t shards_;
    std::unique_ptr<network::FlowNetwork> network_;
    std::vector<std::array<double, topology::kLinkKinds>> tp_link_bytes_; ///< per partition
};

} // namespace trnsim::sim::detail
