// A fleet's services measured before the fleet runs, and the errors of a fleet's entries,
// private to sim (fleet_run.cpp composes them).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/sim/fleet_run.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace trnsim::sim::detail {

/// An error of an entry of pool k > 0 on a key of its pool (its cluster, hardware or cost),
/// keyed and located as the pool's (fleet.pools[k-1]...); any other unchanged.
InputError pool_keyed(const InputError& e, const config::ScenarioSpec& entry,
                      const config::FleetSpec& fs, std::size_t k);

/// An error of service i's scenario, located in the file and keyed under fleet.services[i].
InputError service_error(const InputError& e, const config::ScenarioSpec& c, std::size_t i);

/// A service's checks before anything runs: open-loop arrivals, an SLO, its replicas on one
/// domain (check_serving). Returns the layout.
ServingLayout check_service(const config::FleetService& v);

/// Each service's measured capacity (services with the same workload, attainment and load
/// bandwidth share one), on `threads` threads; `alongside`, when set, runs as one more item
/// of that loop (first: it is handed out before the measurements).
std::vector<FleetServiceRun> prepare_services(const config::ScenarioSpec& spec, int threads,
                                              const std::function<void()>& alongside);

} // namespace trnsim::sim::detail
