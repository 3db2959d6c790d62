// The run simulation's job on the cluster's domains (private to the reliability module): which
// physical domain holds each slot of the job, the spare pool (domains in service and not in the
// job) and the vacant slots. The controller (run_model.hpp) decides when slots are filled,
// released or vacated; this class keeps the two maps and the two sets consistent.
//
// Invariants: slot s holds domain d exactly when domain_of(s) == d and slot_of(d) == s; a
// vacant slot holds no domain; a domain in the pool is in no slot. Spares are taken lowest
// domain first into the lowest vacant slot, so the order never depends on the thread count.
#pragma once

#include "trnsim/reliability/layout.hpp"

#include <cstdint>
#include <set>
#include <vector>

namespace trnsim::reliability::detail {

class JobDomains {
public:
    /// Slots 0 .. job_domains - 1 hold domains 0 .. job_domains - 1; the rest are spares.
    explicit JobDomains(const Layout& layout);

    std::int64_t slots() const { return static_cast<std::int64_t>(slot_domain_.size()); }
    /// The domain in `slot`, or -1 when it is vacant.
    std::int64_t domain_of(std::int64_t slot) const {
        return slot_domain_[static_cast<std::size_t>(slot)];
    }
    /// The slot `domain` fills, or -1 when it is not in the job (also for -1).
    std::int64_t slot_of(std::int64_t domain) const {
        return domain < 0 ? -1 : domain_slot_[static_cast<std::size_t>(domain)];
    }
    bool in_job(std::int64_t domain) const { return slot_of(domain) >= 0; }

    std::size_t vacancies() const { return vacant_.size(); }
    std::size_t spares() const { return pool_.size(); }
    /// The lowest vacant slot (there must be one).
    std::int64_t first_vacancy() const { return *vacant_.begin(); }

    /// The lowest spare fills `slot`; returns its domain (there must be a spare).
    std::int64_t take_spare(std::int64_t slot);
    /// `domain` went down: it leaves the pool or its slot, whose number is returned (-1: it
    /// was not in the job).
    std::int64_t down(std::int64_t domain);
    /// `domain` is back from repair: a spare.
    void repaired(std::int64_t domain) { pool_.insert(domain); }
    /// The domain of `slot` (if any) goes back to the pool and the slot becomes vacant.
    void release(std::int64_t slot);

private:
    std::vector<std::int64_t> slot_domain_;
    std::vector<std::int64_t> domain_slot_;
    std::set<std::int64_t> pool_;
    std::set<std::int64_t> vacant_;
};

} // namespace trnsim::reliability::detail
