// A fleet's services replayed at request level over a window (private to the sim module;
// fleet_window.cpp; include/trnsim/sim/fleet_run.hpp FleetServiceWindow).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/fleet_run.hpp"

#include <vector>

namespace trnsim::sim::detail {

/// Each service of `run` (a fleet run of `spec`, whose fleet.request_level is set) replayed
/// over the window; services side by side on `threads` threads.
std::vector<FleetServiceWindow> replay_windows(const config::ScenarioSpec& spec,
                                               const FleetRun& run, int threads);

} // namespace trnsim::sim::detail
