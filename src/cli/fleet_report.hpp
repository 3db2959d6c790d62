// What `trnsim run` and `trnsim validate` print for a `fleet:` scenario: the pool, the
// scheduler and each job class; after a run, each class's plan on its gang and its jobs'
// waits, the pool's use and the run's figures.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/fleet_run.hpp"

#include <ostream>

namespace trnsim::cli {

void print_fleet_header(std::ostream& out, const config::ScenarioSpec& spec);
void print_fleet(std::ostream& out, const config::ScenarioSpec& spec, const sim::FleetRun& run);

} // namespace trnsim::cli
