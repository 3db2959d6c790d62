#include "trnsim/results/metrics.hpp"

#include <algorithm>

namespace trnsim::results {

Table metrics_table(const engine::MetricSink& sink) {
    int width = 1;
    for (const auto& m : sink.metrics()) {
        width = std::max(width, static_cast<int>(m.name.size()));
    }
    Table t;
    t.add_int("entity");
    t.add_string("metric", width);
    t.add_float("time_s");
    t.add_float("value");
    for (const auto& r : sink.merged()) {
        t.add_row({static_cast<std::int64_t>(r.entity), sink.metrics().at(r.metric).name,
                   static_cast<double>(r.time) * 1e-9, r.value});
    }
    return t;
}

} // namespace trnsim::results
