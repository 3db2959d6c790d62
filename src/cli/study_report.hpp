// What `trnsim batch` and `trnsim plan` print and write (docs/results-schema.md, "Sweeps" and
// "Plans").
#pragma once

#include "trnsim/config/study.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace trnsim::cli {

/// What a batch's results depend on besides the points: the base scenario with the sweep's
/// `set` applied (resolved YAML) and the base seed. --resume only reuses a file whose context
/// is the same.
std::string batch_context(const std::string& base_resolved_yaml, std::int64_t base_seed);

/// The results file of a sweep: /meta, /summary (one row per run, `records` sorted),
/// /batch/points, /batch/mean, /batch/sweep and /batch/context.
results::ResultsFile make_batch_results(const study::Sweep& sweep,
                                        const std::string& base_resolved_yaml,
                                        const std::string& context,
                                        const std::vector<study::RunRecord>& records, int threads);

/// The runs stored in an earlier results file of the same sweep context, renumbered to this
/// sweep's points (matched by identity; runs of points no longer in the sweep are dropped).
/// Throws InputError when the file is not a batch file of this context.
std::vector<study::RunRecord> read_batch_records(const std::string& path,
                                                 const study::Sweep& sweep,
                                                 const std::string& context);

/// A table of the points' means (up to `max_points` points).
void print_batch(std::ostream& out, const study::Sweep& sweep,
                 const std::vector<study::RunRecord>& records, std::size_t max_points);

/// The results file of a plan: /summary (finalists in rank order), /plan/candidates, /plan/file
/// and the best finalist's /step, /plan/memory and /run tables.
results::ResultsFile make_plan_results(const config::PlanSpec& plan,
                                       const config::ScenarioSpec& base,
                                       const study::PlanResult& result, int threads);

/// The plan summary: search size, rejections, and the ranked finalists.
void print_plan_result(std::ostream& out, const config::PlanSpec& plan,
                       const config::ScenarioSpec& base, const study::PlanResult& result);

} // namespace trnsim::cli
