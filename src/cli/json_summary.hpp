// The JSON form of a run's /summary (trnsim run --json): one object, {"results": FILE,
// "summary": {column: value, ...}} in column order; non-finite numbers are null.
#pragma once

#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/table.hpp"

#include <string>

namespace trnsim::cli {

std::string summary_json(const results::Table& summary, const std::string& results_file);

/// The JSON form of a tenants scenario's results: {"results": FILE, "tenants": [{the tenant's
/// /summary row (name, workload, allocation, engine events), "summary": {its own /summary
/// row}}, ...]} in the scenario's order.
std::string tenants_json(const results::ResultsFile& file, const std::string& results_file);

} // namespace trnsim::cli
