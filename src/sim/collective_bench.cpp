#include "trnsim/sim/collective_bench.hpp"

#include "trnsim/workload/plan.hpp"

#include "trnsim/cluster/hierarchy.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/network/collective_sim.hpp"
#include "trnsim/topology/fabric.hpp"

#include <algorithm>
#include <stdexcept>

namespace trnsim::sim {

namespace {

/// Flows of the plans run_collective_bench keeps between checking and simulating.
constexpr std::size_t kKeptFlows = 1'000'000;

/// The fabric and the request of a benchmark, every input checked.
struct Prepared {
    topology::Fabric fabric;
    network::CollectiveRequest req;
    int lnc = 0;
    std::int64_t ranks = 0;
    std::int64_t chips_used = 0;
};

Prepared prepare(const CollectiveBenchSpec& spec) {
    const auto& chip = spec.chip;
    topology::FabricSpec fabric_spec = spec.fabric;
    if (fabric_spec.chip != chip.name) {
        throw InputError("cluster.fabric", "fabric '" + fabric_spec.name + "' is made of " +
                                               fabric_spec.chip + " chips, not " + chip.name);
    }
    std::int64_t domains = spec.cluster.ultraservers;
    if (spec.cluster.instances > 0) {
        fabric_spec.scale_up.ultraserver_instances = 0; // plain instances
        domains = spec.cluster.instances;
    } else if (fabric_spec.scale_up.ultraserver_instances < 2) {
        throw InputError("cluster.ultraservers", "fabric '" + fabric_spec.name +
                                                     "' has no UltraServers; give "
                                                     "cluster.instances");
    }
    Prepared p{topology::Fabric::build(fabric_spec, domains), {}, 0, 0, 0};
    const int lnc = spec.lnc > 0 ? spec.lnc : chip.lnc_default;
    if (std::find(chip.lnc_allowed.begin(), chip.lnc_allowed.end(), lnc) == chip.lnc_allowed.end()) {
        throw InputError("hardware.lnc", "lnc = " + std::to_string(lnc) + " is not allowed on " + chip.name);
    }
    const std::int64_t rpc = chip.ranks_per_chip(lnc);
    const std::int64_t all = rpc * p.fabric.chips();
    const std::int64_t ranks = spec.ranks > 0 ? spec.ranks : all;
    if (ranks < 2 || ranks > all || (ranks > rpc && ranks % rpc != 0)) {
        throw InputError("workload.collective.ranks",
                         std::to_string(ranks) + " ranks: must be 2 to " + std::to_string(all) +
                             " and a multiple of the " + std::to_string(rpc) +
                             " ranks per chip (or fewer)");
    }
    network::CollectiveRequest& req = p.req;
    req.op = spec.op;
    req.algorithm = spec.algorithm;
    req.ranks_per_chip = static_cast<int>(std::min(ranks, rpc));
    const std::int64_t chips_used = ranks / req.ranks_per_chip;
    for (std::int64_t c = 0; c < chips_used; ++c) {
        req.chips.push_back(static_cast<std::uint32_t>(c));
    }
    if (spec.op == network::CollectiveOp::send_recv) {
        if (chips_used < 2) {
            throw InputError("workload.collective.ranks", "send_recv needs ranks on two chips");
        }
        req.chips = {0, static_cast<std::uint32_t>(chips_used - 1)};
        req.ranks_per_chip = 1;
    }
    p.lnc = lnc;
    p.ranks = ranks;
    p.chips_used = chips_used;
    return p;
}

network::CollectivePlan plan_size(const Prepared& p, double bytes,
                                  const network::LocalCosts& local) {
    network::CollectiveRequest req = p.req;
    req.bytes = bytes;
    try {
        return network::plan_collective(p.fabric, req, local);
    } catch (const std::invalid_argument& e) {
        throw InputError("workload.collective.algorithm", e.what());
    }
}

/// The chip's costs beside the links: HBM, on-chip latency and its collective engine.
network::LocalCosts local_costs(const compute::ChipSpec& chip, int lnc) {
    const cluster::LinkLevel on_chip =
        cluster::Hierarchy(chip, cluster::Hierarchy::smallest_holding(chip, 1))
            .link(network::LinkClass::on_chip);
    return {on_chip.per_chip,
            on_chip.latency,
            chip.collectives.launch,
            chip.collectives.rank_bandwidth,
            chip.collectives.efa_step_overhead,
            workload::collective_reduce_bandwidth(chip, lnc)};
}

} // namespace

void check_collective_bench(const CollectiveBenchSpec& spec) {
    const Prepared p = prepare(spec);
    const network::LocalCosts local = local_costs(spec.chip, p.lnc);
    for (double size : spec.sizes) {
        (void)plan_size(p, size, local);
    }
}

CollectiveBenchResult run_collective_bench(const CollectiveBenchSpec& spec,
                                           const std::function<void(const CollectiveRow&)>& on_row) {
    const auto& chip = spec.chip;
    const Prepared prepared = prepare(spec);
    const topology::Fabric& fabric = prepared.fabric;
    const std::int64_t ranks = prepared.ranks;
    const std::int64_t chips_used = prepared.chips_used;
    const int lnc = prepared.lnc;
    const network::LocalCosts local = local_costs(chip, lnc);
    network::CollectiveSimOptions options;
    options.exact = spec.exact;
    options.reuse_identical_phases = spec.reuse_identical_phases;
    options.threads = spec.threads;

    CollectiveBenchResult out;
    out.chips = fabric.chips();
    out.chips_used = chips_used;
    out.ranks = ranks;
    out.lnc = lnc;
    out.ultraservers = fabric.ultraservers();
    out.instances = fabric.instances();
    const double factor = network::bus_bandwidth_factor(spec.op, static_cast<std::size_t>(ranks));
    // Every size is planned (and so checked) before the first is simulated. The plans are kept
    // for the simulation up to kKeptFlows flows in all (the planner's estimates of each
    // algorithm are most of a small benchmark's time); beyond, a size is planned again.
    std::vector<network::CollectivePlan> plans(spec.sizes.size());
    std::vector<bool> kept(spec.sizes.size(), false);
    std::size_t kept_flows = 0;
    for (std::size_t i = 0; i < spec.sizes.size(); ++i) {
        network::CollectivePlan plan = plan_size(prepared, spec.sizes[i], local);
        std::size_t flows = 0;
        for (const network::Phase& ph : plan.phases) {
            flows += ph.flows.size();
        }
        if (kept_flows + flows <= kKeptFlows) {
            kept_flows += flows;
            plans[i] = std::move(plan);
            kept[i] = true;
        }
    }
    for (std::size_t i = 0; i < spec.sizes.size(); ++i) {
        const double size = spec.sizes[i];
        network::CollectivePlan plan =
            kept[i] ? std::move(plans[i]) : plan_size(prepared, size, local);
        CollectiveRow row;
        row.bytes = size;
        row.algorithm = plan.algorithm;
        row.phases = plan.total_phases();
        const auto result = network::simulate_collectives(
            fabric, {{std::move(plan), SimTime::zero()}}, local, options);
        row.seconds = result[0].seconds();
        row.algbw = size / row.seconds;
        row.busbw = row.algbw * factor;
        if (on_row) {
            on_row(row);
        }
        out.rows.push_back(std::move(row));
    }
    return out;
}

} // namespace trnsim::sim
