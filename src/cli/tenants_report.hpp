// What `trnsim run` and `trnsim validate` print for a `tenants:` scenario: the cluster and each
// tenant's allocation, the shared engine's figures, then each tenant's own report as its
// workload alone prints it.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/tenants.hpp"

#include <ostream>

namespace trnsim::cli {

void print_tenants_header(std::ostream& out, const config::ScenarioSpec& spec);
void print_tenants(std::ostream& out, const config::ScenarioSpec& spec,
                   const sim::TenantsRun& run);

} // namespace trnsim::cli
