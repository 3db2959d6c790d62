// Turning a finished run into what users see: the text summary on stdout and the results file.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/trace.hpp"
#include "trnsim/sim/collective_bench.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/summary.hpp"
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

/// The HDF5 content of a collective scenario: /summary (one row) and /collective (per size).
results::ResultsFile make_collective_results(const config::ScenarioSpec& spec,
                                             const sim::CollectiveBenchResult& result,
                                             int threads);

/// A table from rows of named values: the union of the rows' columns in first-seen order; a
/// column missing from a row holds NaN (-1 in an integer column, "" in a string column).
results::Table summary_table(const std::vector<std::vector<sim::SummaryValue>>& rows);

/// The timeline of a step simulation, for results::write_chrome_trace.
results::TraceData make_trace(const config::ScenarioSpec& spec, const sim::StepSimResult& step);

/// The HDF5 content of a run (docs/results-schema.md).
results::ResultsFile make_results(const config::ScenarioSpec& spec, const sim::TrainingRun& run,
                                  int threads);

} // namespace trnsim::cli
