// What goes into the results files of studies (docs/results-schema.md, "Sweeps" and
// "Plans"): the runs of a sweep with each point's mean and interval, and a plan's ranked
// finalists with every candidate's estimate.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/report/run_results.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"
#include "trnsim/study/sweep.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::report {

/// The /summary values a sweep keeps of one run: those of `trnsim run` without the ci95_
/// columns (one replication) and without `replications` (the batch has its own); of a
/// serving run, its /summary values.
std::vector<results::NamedValue> batch_run_values(const sim::ScenarioOutcome& outcome);

/// What a batch's results depend on besides the points: the base scenario with the sweep's
/// `set` applied (resolved YAML) and the base seed. --resume only reuses a file whose context
/// is the same.
std::string batch_context(const std::string& base_resolved_yaml, std::int64_t base_seed);

/// The results file of a sweep: /meta, /summary (one row per run, `records` sorted),
/// /batch/points, /batch/mean, /batch/sweep and /batch/context.
results::ResultsFile batch_results(const study::Sweep& sweep,
                                   const std::string& base_resolved_yaml,
                                   const std::string& context,
                                   const std::vector<study::RunRecord>& records,
                                   const Writer& writer);

/// The runs stored in an earlier results file of the same sweep context, renumbered to this
/// sweep's points (matched by identity; runs of points no longer in the sweep are dropped).
/// Throws InputError when the file is not a batch file of this context.
std::vector<study::RunRecord> read_batch_records(const std::string& path,
                                                 const study::Sweep& sweep,
                                                 const std::string& context);

/// The results file of a plan: /summary (finalists in rank order), /plan/candidates,
/// /plan/constraints, /plan/file and the best finalist's /step, /plan/memory and /run tables.
results::ResultsFile plan_results(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                                  const study::PlanResult& result, const Writer& writer);

} // namespace trnsim::report
