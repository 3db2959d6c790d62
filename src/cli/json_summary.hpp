// The JSON form of a run's /summary (trnsim run --json): one object, {"results": FILE,
// "summary": {column: value, ...}} in column order; non-finite numbers are null.
#pragma once

#include "trnsim/results/table.hpp"

#include <string>

namespace trnsim::cli {

std::string summary_json(const results::Table& summary, const std::string& results_file);

} // namespace trnsim::cli
