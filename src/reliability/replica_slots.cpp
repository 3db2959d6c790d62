#include "replica_slots.hpp"

#include <algorithm>

namespace trnsim::reliability::detail {

ReplicaSlots::ReplicaSlots(std::int64_t replicas, std::int64_t ranks_per_slot, std::int64_t tp)
    : ranks_per_slot_(ranks_per_slot), tp_(std::max<std::int64_t>(tp, 1)),
      hits_(static_cast<std::size_t>(replicas), 0) {}

void ReplicaSlots::mark(std::int64_t slot, int delta) {
    const std::int64_t dp = static_cast<std::int64_t>(hits_.size());
    const std::int64_t first = slot * ranks_per_slot_ / tp_;
    const std::int64_t last = ((slot + 1) * ranks_per_slot_ - 1) / tp_;
    const std::int64_t n = std::min(dp, last - first + 1);
    for (std::int64_t g = first; g < first + n; ++g) {
        std::uint16_t& hits = hits_[static_cast<std::size_t>(g % dp)];
        if (delta > 0) {
            down_ += hits == 0 ? 1 : 0;
            ++hits;
        } else {
            --hits;
            down_ -= hits == 0 ? 1 : 0;
        }
    }
}

std::uint64_t ReplicaSlots::fail(std::int64_t slot, bool needs_domain) {
    auto it = recovering_.find(slot);
    if (it == recovering_.end()) {
        mark(slot, +1);
        it = recovering_.emplace(slot, Recovery{}).first;
        it->second.needs_domain = false;
    }
    Recovery& rec = it->second;
    rec.stage = Stage::detecting;
    rec.epoch = ++epoch_;
    rec.needs_domain = rec.needs_domain || needs_domain;
    return payload(slot, rec.epoch);
}

bool ReplicaSlots::current(std::uint64_t p) const {
    const auto it = recovering_.find(static_cast<std::int64_t>(p >> 32));
    return it != recovering_.end() && it->second.epoch == static_cast<std::uint32_t>(p);
}

std::uint64_t ReplicaSlots::enter(std::int64_t slot, Stage stage) {
    Recovery& rec = recovering_.at(slot);
    rec.stage = stage;
    rec.epoch = ++epoch_;
    return payload(slot, rec.epoch);
}

void ReplicaSlots::recovered(std::int64_t slot) {
    mark(slot, -1);
    recovering_.erase(slot);
}

void ReplicaSlots::clear() {
    for (const auto& [slot, rec] : recovering_) {
        mark(slot, -1);
    }
    recovering_.clear();
}

std::vector<std::int64_t> ReplicaSlots::waiting() const {
    std::vector<std::int64_t> out;
    for (const auto& [slot, rec] : recovering_) {
        if (rec.stage == Stage::waiting) {
            out.push_back(slot);
        }
    }
    return out;
}

} // namespace trnsim::reliability::detail
