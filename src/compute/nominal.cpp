#include "nominal.hpp"

#include "instruction_costs.hpp"

namespace trnsim::compute::detail {

DmaTally::DmaTally(const ChipSpec& chip) : chip_(&chip), usable_(dma_engines_usable(chip)) {}

double DmaTally::transfer_seconds(double bytes, double descriptors) const {
    return dma_engine_seconds(*chip_, bytes, descriptors) / std::min(usable_, std::max(1.0, descriptors));
}

void DmaTally::add(int queue, double count, double bytes, double descriptors) {
    if (count <= 0.0) {
        return;
    }
    engine_seconds_ += count * dma_engine_seconds(*chip_, bytes, descriptors);
    issues_ += count;
    bytes_ += count * bytes;
    queue_seconds_[static_cast<std::size_t>(queue)] += count * transfer_seconds(bytes, descriptors);
}

double DmaTally::seconds() const {
    double t = std::max(engine_seconds_ / usable_, issues_ * chip_->core.dma_issue_time.seconds() /
                                                      std::max(1, chip_->core.dma_generators));
    for (double q : queue_seconds_) {
        t = std::max(t, q);
    }
    return t;
}

} // namespace trnsim::compute::detail
