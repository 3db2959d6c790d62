// The figures of a training run as named values: the columns of /summary in their order
// (docs/results-schema.md defines each). `trnsim run` writes them as one row; `trnsim batch`
// and `trnsim plan` write one row per run.
#pragma once

#include "trnsim/sim/run.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace trnsim::sim {

struct SummaryValue {
    std::string name; ///< column name; the suffix names the unit (_s, _bytes, _usd)
    std::variant<std::int64_t, double, std::string> value;
};

/// Every /summary column of `run`: the plan and step figures, then with a run simulation its
/// figures (means over the replications) and, when `intervals`, the ci95_ half-widths.
std::vector<SummaryValue> summary_values(const TrainingRun& run, bool intervals = true);

} // namespace trnsim::sim
