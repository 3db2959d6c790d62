// The collective benchmark (trnsim collective, and scenarios with workload.type: collective):
// one collective over the first `ranks` ranks of a cluster, timed on the flow-level fabric at
// each message size, reported as nccom-test does (algorithm and bus bandwidth).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/cluster/shape.hpp"
#include "trnsim/topology/fabric_spec.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::sim {

struct CollectiveBenchSpec {
    compute::ChipSpec chip;
    int lnc = 0; ///< 0: the chip's default
    topology::FabricSpec fabric;
    cluster::ClusterSpec cluster; ///< UltraServers, or plain instances
    network::CollectiveOp op = network::CollectiveOp::all_reduce;
    std::vector<double> sizes; ///< bytes per rank
    std::int64_t ranks = 0;    ///< 0: every rank of the cluster
    network::Algorithm algorithm = network::Algorithm::automatic;
    bool exact = false;
    bool reuse_identical_phases = true;
    int threads = 1;
};

struct CollectiveRow {
    double bytes = 0.0;
    std::string algorithm;
    std::size_t phases = 0;
    double seconds = 0.0;
    double algbw = 0.0; ///< bytes/s: size / time
    double busbw = 0.0; ///< bytes/s: algbw x the op's bus factor
};

struct CollectiveBenchResult {
    std::int64_t chips = 0;       ///< in the cluster
    std::int64_t chips_used = 0;  ///< taking part
    std::int64_t ranks = 0;       ///< taking part
    int lnc = 0;
    std::int64_t ultraservers = 0;
    std::int64_t instances = 0;
    std::vector<CollectiveRow> rows;
};

/// Every check run_collective_bench makes (the fabric holds the cluster, lnc, ranks, an
/// algorithm that applies at every size), without simulating. InputError as below.
void check_collective_bench(const CollectiveBenchSpec& spec);

/// Runs every size, after checking them all. Throws InputError (key paths under workload.collective and cluster) for
/// requests the cluster cannot hold; `on_row` (may be empty) sees each row as it is done.
CollectiveBenchResult run_collective_bench(const CollectiveBenchSpec& spec,
                                           const std::function<void(const CollectiveRow&)>& on_row = {});

} // namespace trnsim::sim
