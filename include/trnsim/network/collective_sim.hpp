// Simulating collectives on the event engine over the flow-level fabric.
//
// Each collective is an entity that starts its phases one after the other, after its launch
// cost: a phase's flows go to the FlowNetwork as one group, and the phase ends when its last
// flow has arrived (plus its per-step overhead) and its on-chip work (reductions, the collective
// engine's transfer rate; overlapped with the transfers) is done. The fabric is resolved at
// every window edge (flow_network.hpp); the engine's lookahead is the smallest link latency of
// the fabric, or 1 ns in exact mode.
//
// A phase repeated identically (ring steps) is simulated once and its duration reused for the
// repeats when this is the only collective (nothing else can share the fabric); with
// `reuse_identical_phases` off, every repeat is simulated (tests check both agree).
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/topology/fabric.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::network {

struct CollectiveJob {
    CollectivePlan plan;
    SimTime start;
};

struct CollectiveOutcome {
    SimTime start;
    SimTime end;
    std::size_t phases = 0;           ///< counting repeats
    std::size_t simulated_phases = 0; ///< phases whose flows went through the fabric
    double seconds() const { return (end - start).seconds(); }
};

struct CollectiveSimOptions {
    bool exact = false;                 ///< 1 ns windows: rates re-solved at every event time
    bool reuse_identical_phases = true;
    int threads = 1;
};

struct CollectiveSimStats {
    std::uint64_t flows = 0;   ///< flows that went through the solver
    std::uint64_t solves = 0;  ///< solver updates
    std::uint64_t windows = 0;
    std::uint64_t events = 0;
};

std::vector<CollectiveOutcome> simulate_collectives(const topology::Fabric& fabric,
                                                    std::vector<CollectiveJob> jobs,
                                                    const LocalCosts& local,
                                                    const CollectiveSimOptions& options,
                                                    CollectiveSimStats* stats = nullptr);

} // namespace trnsim::network
