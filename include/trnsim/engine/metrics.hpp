// Metric sink: where domain models record per-entity observations during a run.
//
// Metrics are declared before the run (name, unit). During the run, a handler records
// (entity, metric, time, value) into its partition's buffer: no locks, no sharing. After the
// run, merged() returns every record ordered by entity id and, within an entity, in the order
// its events were handled, which is the same whatever the thread count or partitioning (an
// entity belongs to one partition and handles its events in key order). The results module
// turns the merged records into an HDF5 table (results/metrics.hpp).
#pragma once

#include "trnsim/engine/event.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::engine {

using MetricId = std::uint32_t;

struct MetricInfo {
    std::string name;
    std::string unit;
};

struct MetricRecord {
    EntityId entity = 0;
    MetricId metric = 0;
    std::int64_t time = 0; ///< ns
    double value = 0.0;
};

class MetricSink {
public:
    /// Declares a metric; call before the run. Returns its id.
    MetricId declare(std::string name, std::string unit);
    const std::vector<MetricInfo>& metrics() const { return metrics_; }

    /// Sizes the per-partition buffers (the simulator calls this).
    void set_partitions(std::uint32_t partitions);

    /// Records one observation. Safe to call concurrently for different partitions.
    void record(std::uint32_t partition, EntityId entity, MetricId metric, std::int64_t time,
                double value) {
        buffers_[partition].push_back({entity, metric, time, value});
    }

    std::size_t size() const;

    /// All records in entity order (stable within an entity).
    std::vector<MetricRecord> merged() const;

private:
    std::vector<MetricInfo> metrics_;
    std::vector<std::vector<MetricRecord>> buffers_;
};

} // namespace trnsim::engine
