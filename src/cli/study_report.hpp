// What `trnsim batch` and `trnsim plan` print (their results files: report/study_results.hpp).
#pragma once

#include "trnsim/config/study.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace trnsim::cli {

/// A table of the points' means (up to `max_points` points).
void print_batch(std::ostream& out, const study::Sweep& sweep,
                 const std::vector<study::RunRecord>& records, std::size_t max_points);

/// The plan summary: search size, rejections, and the ranked finalists.
void print_plan_result(std::ostream& out, const config::PlanSpec& plan,
                       const config::ScenarioSpec& base, const study::PlanResult& result);

} // namespace trnsim::cli
