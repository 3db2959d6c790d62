// Turning a finished run into what users see: the text summary on stdout and the results file.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/results/hdf5_writer.hpp"
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

/// The HDF5 content of a run (docs/results-schema.md).
results::ResultsFile make_results(const config::ScenarioSpec& spec, const sim::TrainingRun& run,
                                  int threads);

} // namespace trnsim::cli
