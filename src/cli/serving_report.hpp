// The text summary of a serving run on stdout (its results file: report/run_results.hpp).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <ostream>

namespace trnsim::cli {

/// The fleet before it runs (cluster, model, replicas, memory, requests): shared by run and
/// validate.
void print_serving_layout(std::ostream& out, const config::ScenarioSpec& spec,
                          const sim::ServingLayout& layout);

/// The full summary of a serving run: the layout, latency percentiles, throughput and SLO,
/// MBU and KV cache use, cost, and the engine's figures.
void print_serving(std::ostream& out, const config::ScenarioSpec& spec,
                   const sim::ServingScenarioRun& run);

} // namespace trnsim::cli
