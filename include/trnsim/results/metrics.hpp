// Metric records from the engine's sink as a results table.
#pragma once

#include "trnsim/engine/metrics.hpp"
#include "trnsim/results/table.hpp"

namespace trnsim::results {

/// Columns: entity (int64), metric (string, the declared name), time_s (float64), value
/// (float64); rows in the sink's merged order (entity, then handling order).
Table metrics_table(const engine::MetricSink& sink);

} // namespace trnsim::results
