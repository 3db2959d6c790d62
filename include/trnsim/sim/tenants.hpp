// Running a `tenants:` scenario (ADR 0002): every tenant's workload on one engine. Training
// jobs with a reliability section (the run simulation) and serving fleets are tenants of one
// engine::TenantSet, each on its allocation of the cluster; a training job without one is its
// step estimate extended to the whole job, with no events to share. A tenant's results are
// those of its workload run alone on a cluster of its allocation's domains (the same scenario
// with only that tenant, or the single-workload scenario it stands for), for any thread count.
//
// Not tenants yet: collective benchmarks (a measurement of the fabric, not a workload), and
// disaggregated serving (its KV transfers are resolved at the engine's window edges, which a
// shared engine would move); a training job's run simulation is one replication.
#pragma once

#include "trnsim/cluster/shape.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace trnsim::sim {

/// What one tenant's workload produced.
using TenantOutcome = std::variant<TrainingRun, ServingScenarioRun>;

struct TenantRun {
    std::string name;
    cluster::Allocation allocation;
    std::shared_ptr<const config::ScenarioSpec> spec; ///< its scenario (config::TenantSpec)
    TenantOutcome outcome;
    std::uint64_t engine_events = 0; ///< events the shared engine handled for it
};

struct TenantsRun {
    std::vector<TenantRun> tenants; ///< in the scenario's order
    std::uint64_t events = 0;       ///< the shared engine's
    std::uint64_t windows = 0;
    Duration lookahead;
    int threads = 1;
    Seconds wall; ///< host time of the shared run
};

/// Every check run_tenants makes before it simulates: each tenant's workload kind's checks,
/// and what cannot be a tenant. InputError located in the file, keyed tenants[i]....
void check_tenants(const config::ScenarioSpec& spec);

/// Runs the tenants of `spec` (spec.tenants not empty) on `threads` threads (0:
/// simulation.threads, auto: the engine's default).
TenantsRun run_tenants(const config::ScenarioSpec& spec, int threads = 0);

} // namespace trnsim::sim
