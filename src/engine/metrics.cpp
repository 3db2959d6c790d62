#include "trnsim/engine/metrics.hpp"

#include <algorithm>

namespace trnsim::engine {

MetricId MetricSink::declare(std::string name, std::string unit) {
    metrics_.push_back({std::move(name), std::move(unit)});
    return static_cast<MetricId>(metrics_.size() - 1);
}

void MetricSink::set_partitions(std::uint32_t partitions) { buffers_.resize(partitions); }

std::size_t MetricSink::size() const {
    std::size_t n = 0;
    for (const auto& b : buffers_) {
        n += b.size();
    }
    return n;
}

std::vector<MetricRecord> MetricSink::merged() const {
    std::vector<MetricRecord> all;
    all.reserve(size());
    for (const auto& b : buffers_) {
        all.insert(all.end(), b.begin(), b.end());
    }
    // Buffers hold disjoint sets of entities, each in handling order: a stable sort by entity
    // gives one order that does not depend on which partition held which entity.
    std::stable_sort(all.begin(), all.end(), [](const MetricRecord& a, const MetricRecord& b) {
        return a.entity < b.entity;
    });
    return all;
}

} // namespace trnsim::engine
