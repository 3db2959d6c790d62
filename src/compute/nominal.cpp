#include "nominal.hpp"

#include "instruction_costs.hpp"

namespace trnsim::compute::detail {

DmaTally::DmaTally(const ChipSpec& chip) : chip_(&chip), usable_(dma_engines_usable(chip)) {}

double DmaTally::transfer_seconds(double bytes, double descriptors) const {
    return dma_engine_seconds(*chip_, bytes, descriptors) / std::min(usable_, std::max(1.0, descriptors));
}

void DmaTally::add(int queue, double count, double bytes, double descriptors, bool store) {
    if (count <= 0.0) {
        return;
    }
    const std::size_t part = store ? 1 : 0;
    engine_seconds_[part] += count * dma_engine_seconds(*chip_, bytes, descriptors);
    issues_[part] += count;
    bytes_ += count * bytes;
    queue_seconds_[part][static_cast<std::size_t>(queue)] += count * transfer_seconds(bytes, descriptors);
}

double DmaTally::part_seconds(std::size_t part) const {
    double t = std::max(engine_seconds_[part] / usable_,
                        issues_[part] * chip_->core.dma_issue_time.seconds() /
                            std::max(1, chip_->core.dma_generators));
    for (double q : queue_seconds_[part]) {
        t = std::max(t, q);
    }
    return t;
}

double DmaTally::seconds() const {
    double t = std::max((engine_seconds_[0] + engine_seconds_[1]) / usable_,
                        (issues_[0] + issues_[1]) * chip_->core.dma_issue_time.seconds() /
                            std::max(1, chip_->core.dma_generators));
    for (std::size_t q = 0; q < 4; ++q) {
        t = std::max(t, queue_seconds_[0][q] + queue_seconds_[1][q]);
    }
    return t;
}

void PathTally::add(int resource, double seconds) {
    total_ += seconds;
    if (count_ > 0 && resource_[static_cast<std::size_t>(count_ - 1)] == resource) {
        seconds_[static_cast<std::size_t>(count_ - 1)] += seconds;
        return;
    }
    if (count_ == kMaxStages) {
        // Merge into the last stage: only the path's total matters past this length.
        seconds_[static_cast<std::size_t>(count_ - 1)] += seconds;
        return;
    }
    resource_[static_cast<std::size_t>(count_)] = resource;
    seconds_[static_cast<std::size_t>(count_)] = seconds;
    ++count_;
}

double PathTally::pipeline(const std::array<double, kResources>& totals, double dma) const {
    double best = 0.0;
    int first_dma = -1;
    int last_dma = -1;
    for (int i = 0; i < count_; ++i) {
        const int r = resource_[static_cast<std::size_t>(i)];
        if (r == kDma || r == kDmaOut) {
            first_dma = first_dma < 0 ? i : first_dma;
            last_dma = i;
        }
    }
    if (first_dma >= 0) {
        double before = 0.0;
        double after = 0.0;
        for (int i = 0; i < first_dma; ++i) {
            before += seconds_[static_cast<std::size_t>(i)];
        }
        for (int i = last_dma + 1; i < count_; ++i) {
            after += seconds_[static_cast<std::size_t>(i)];
        }
        best = std::max(best, before + dma + after);
    }
    for (int r = 0; r < static_cast<int>(kResources); ++r) {
        int first = -1;
        int last = -1;
        for (int i = 0; i < count_; ++i) {
            if (resource_[static_cast<std::size_t>(i)] == r) {
                first = first < 0 ? i : first;
                last = i;
            }
        }
        if (first < 0) {
            best = std::max(best, totals[static_cast<std::size_t>(r)]);
            continue;
        }
        double before = 0.0;
        double after = 0.0;
        for (int i = 0; i < first; ++i) {
            before += seconds_[static_cast<std::size_t>(i)];
        }
        for (int i = last + 1; i < count_; ++i) {
            after += seconds_[static_cast<std::size_t>(i)];
        }
        best = std::max(best, before + totals[static_cast<std::size_t>(r)] + after);
    }
    return best;
}

} // namespace trnsim::compute::detail
