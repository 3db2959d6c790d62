// The text summary of a run on stdout (its results file: report/run_results.hpp).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/collective_bench.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/workload/plan.hpp"

#include <ostream>
#include <string>

namespace trnsim::cli {

/// The plan part of the summary (cluster, model, parallelism, memory): shared by run and
/// validate.
void print_plan(std::ostream& out, const config::ScenarioSpec& spec, const workload::Plan& plan);

/// The full summary of a training run.
void print_run(std::ostream& out, const config::ScenarioSpec& spec, const sim::TrainingRun& run);

/// The collective benchmark table, as nccom-test prints it: a header line, then one row per
/// message size (size, algorithm, phases, time, algorithm bandwidth, bus bandwidth last).
void print_collective_header(std::ostream& out, const sim::CollectiveBenchSpec& spec);
void print_collective_row(std::ostream& out, const sim::CollectiveRow& row);

} // namespace trnsim::cli
