// The run simulation's part of the text summary: only present when the scenario has a
// reliability section.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/run.hpp"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::cli {

/// Summary lines of the run simulation.
void print_reliability(std::ostream& out, const config::ScenarioSpec& spec,
                       const sim::TrainingRun& run);

} // namespace trnsim::cli
