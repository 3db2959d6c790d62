// Tables shared by the report module's files (private).
#pragma once

#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/sim/run.hpp"

namespace trnsim::report {

/// The run simulation's /run/... tables (a run with a reliability section): per-replication
/// figures, failure causes, and (with `timeline`) the first replication's events and
/// timeline as recorded (output.timeline).
void add_reliability_tables(results::ResultsFile& file, const sim::TrainingRun& run,
                            bool timeline = true);

} // namespace trnsim::report
