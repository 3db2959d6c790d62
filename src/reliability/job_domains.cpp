#include "job_domains.hpp"

namespace trnsim::reliability::detail {

JobDomains::JobDomains(const Layout& l)
    : slot_domain_(static_cast<std::size_t>(l.job_domains())),
      domain_slot_(static_cast<std::size_t>(l.domains()), -1) {
    for (std::int64_t d = 0; d < l.job_domains(); ++d) {
        slot_domain_[static_cast<std::size_t>(d)] = d;
        domain_slot_[static_cast<std::size_t>(d)] = d;
    }
    for (std::int64_t d = l.job_domains(); d < l.domains(); ++d) {
        pool_.insert(d);
    }
}

std::int64_t JobDomains::take_spare(std::int64_t slot) {
    const std::int64_t d = *pool_.begin();
    pool_.erase(pool_.begin());
    slot_domain_[static_cast<std::size_t>(slot)] = d;
    domain_slot_[static_cast<std::size_t>(d)] = slot;
    vacant_.erase(slot);
    return d;
}

std::int64_t JobDomains::down(std::int64_t domain) {
    const std::int64_t slot = domain_slot_[static_cast<std::size_t>(domain)];
    if (slot < 0) {
        pool_.erase(domain); // a spare (or a surplus domain) broke
        return -1;
    }
    slot_domain_[static_cast<std::size_t>(slot)] = -1;
    domain_slot_[static_cast<std::size_t>(domain)] = -1;
    vacant_.insert(slot);
    return slot;
}

void JobDomains::release(std::int64_t slot) {
    const std::int64_t d = slot_domain_[static_cast<std::size_t>(slot)];
    if (d >= 0) {
        slot_domain_[static_cast<std::size_t>(slot)] = -1;
        domain_slot_[static_cast<std::size_t>(d)] = -1;
        vacant_.insert(slot);
        pool_.insert(d);
    }
}

} // namespace trnsim::reliability::detail
