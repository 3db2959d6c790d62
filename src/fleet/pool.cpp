#include "trnsim/fleet/pool.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <stdexcept>

namespace trnsim::fleet {

namespace {

std::size_t at(DomainUse u) { return static_cast<std::size_t>(u); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

} // namespace

Pool::Pool(std::int64_t domains, std::int64_t chips_per_domain, cluster::DomainGroups groups,
           std::int64_t spares)
    : chips_per_domain_(chips_per_domain), groups_(groups), spare_target_(spares) {
    if (domains < 1 || spares < 0 || spares > domains || chips_per_domain < 1 ||
        groups.domains_per_leaf_group < 1 || groups.leaf_groups_per_pod < 1) {
        throw std::invalid_argument("fleet: a pool needs domains >= 1, 0 <= spares <= domains, "
                                    "chips and groups >= 1");
    }
    use_.assign(static_cast<std::size_t>(domains), DomainUse::idle);
    holder_.assign(static_cast<std::size_t>(domains), -1);
    const std::int64_t group_count = ceil_div(domains, groups.domains_per_leaf_group);
    idle_in_group_.assign(static_cast<std::size_t>(group_count), 0);
    idle_in_pod_.assign(static_cast<std::size_t>(ceil_div(domains, groups.domains_per_pod())), 0);
    for (std::int64_t d = 0; d < domains; ++d) {
        const bool spare = d >= domains - spares;
        use_[static_cast<std::size_t>(d)] = spare ? DomainUse::spare : DomainUse::idle;
        if (!spare) {
            ++idle_in_group_[static_cast<std::size_t>(group_of(d))];
            ++idle_in_pod_[static_cast<std::size_t>(pod_of(d))];
        }
    }
    counts_[at(DomainUse::idle)] = domains - spares;
    counts_[at(DomainUse::spare)] = spares;
    note(SimTime::zero());
}

std::optional<std::vector<std::int64_t>> Pool::place(std::int64_t n) const {
    if (n < 1 || n > count(DomainUse::idle)) {
        return std::nullopt;
    }
    const std::int64_t per_group = groups_.domains_per_leaf_group;
    const std::int64_t groups_per_pod = groups_.leaf_groups_per_pod;
    const auto groups = static_cast<std::int64_t>(idle_in_group_.size());
    // The best-fitting unit (fewest idle that still hold n; lowest index on a tie), or -1.
    const auto best_fit = [n](const std::vector<std::int64_t>& idle) {
        std::int64_t best = -1;
        for (std::size_t i = 0; i < idle.size(); ++i) {
            if (idle[i] >= n && (best < 0 || idle[i] < idle[static_cast<std::size_t>(best)])) {
                best = static_cast<std::int64_t>(i);
            }
        }
        return best;
    };
    // Idle domains of groups [g0, g1), the groups with the most idle first (then by index),
    // the lowest-numbered domains of each, until n.
    const auto take = [&](std::int64_t g0, std::int64_t g1) {
        std::vector<std::int64_t> order;
        for (std::int64_t g = g0; g < g1; ++g) {
            order.push_back(g);
        }
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
            return idle_in_group_[static_cast<std::size_t>(a)] >
                   idle_in_group_[static_cast<std::size_t>(b)];
        });
        std::vector<std::int64_t> out;
        out.reserve(static_cast<std::size_t>(n));
        for (const std::int64_t g : order) {
            const std::int64_t end = std::min(domains(), (g + 1) * per_group);
            for (std::int64_t d = g * per_group; d < end && std::ssize(out) < n; ++d) {
                if (use(d) == DomainUse::idle) {
                    out.push_back(d);
                }
            }
            if (std::ssize(out) == n) {
                break;
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    if (const std::int64_t g = best_fit(idle_in_group_); g >= 0) {
        return take(g, g + 1);
    }
    if (const std::int64_t p = best_fit(idle_in_pod_); p >= 0) {
        return take(p * groups_per_pod, std::min(groups, (p + 1) * groups_per_pod));
    }
    return take(0, groups);
}

Span Pool::span(const std::vector<std::int64_t>& domains) const {
    TRNSIM_CHECK(!domains.empty(), "fleet: the span of no domains");
    const auto [lo, hi] = std::minmax_element(domains.begin(), domains.end());
    if (group_of(*lo) == group_of(*hi)) {
        return Span::leaf_group;
    }
    return pod_of(*lo) == pod_of(*hi) ? Span::pod : Span::pool;
}

void Pool::set(SimTime t, std::int64_t d, DomainUse u, std::int64_t holder) {
    TRNSIM_CHECK(t >= last_, "fleet: the pool's time went backwards");
    const auto i = static_cast<std::size_t>(d);
    const DomainUse was = use_[i];
    if (t > last_) {
        accrue(t);
    }
    const int delta_idle = (u == DomainUse::idle ? 1 : 0) - (was == DomainUse::idle ? 1 : 0);
    idle_in_group_[static_cast<std::size_t>(group_of(d))] += delta_idle;
    idle_in_pod_[static_cast<std::size_t>(pod_of(d))] += delta_idle;
    --counts_[at(was)];
    ++counts_[at(u)];
    use_[i] = u;
    holder_[i] = holder;
    note(t);
}

void Pool::accrue(SimTime t) {
    const double dt = (t - last_).seconds();
    for (std::size_t k = 0; k < kDomainUses; ++k) {
        account_.domain_time[k] += Seconds::of(dt * static_cast<double>(counts_[k]));
    }
    accrue_fragmented(t);
    last_ = t;
}

void Pool::accrue_fragmented(SimTime t) {
    account_.fragmented_time +=
        Seconds::of((t - fragmented_last_).seconds() * static_cast<double>(fragmented()));
    fragmented_last_ = t;
}

void Pool::set_smallest_wait(SimTime t, std::int64_t domains) {
    TRNSIM_CHECK(t >= last_, "fleet: the pool's time went backwards");
    if (domains == smallest_wait_) {
        return;
    }
    // Only the fragmented time is integrated here: the uses' sums keep their own steps.
    accrue_fragmented(t);
    const std::int64_t was = fragmented();
    smallest_wait_ = domains;
    if (fragmented() != was) {
        note(t);
    }
}

void Pool::note(SimTime t) {
    std::int64_t sum = 0;
    for (const std::int64_t c : counts_) {
        sum += c;
    }
    TRNSIM_CHECK(sum == domains(), "fleet: busy + idle + spare + down differs from the pool");
    if (!account_.timeline.empty() && account_.timeline.back().at == t) {
        account_.timeline.back().domains = counts_;
        account_.timeline.back().fragmented = fragmented();
    } else {
        account_.timeline.push_back({t, counts_, fragmented()});
    }
}

void Pool::grant(SimTime t, const std::vector<std::int64_t>& domains, std::int64_t job) {
    for (const std::int64_t d : domains) {
        TRNSIM_CHECK(use(d) == DomainUse::idle || use(d) == DomainUse::spare,
                     "fleet: granting a domain that is neither idle nor spare");
        set(t, d, DomainUse::busy, job);
    }
}

void Pool::release(SimTime t, const std::vector<std::int64_t>& domains) {
    for (const std::int64_t d : domains) {
        TRNSIM_CHECK(use(d) == DomainUse::busy, "fleet: releasing a domain that is not busy");
        set(t, d, DomainUse::idle, -1);
    }
}

void Pool::fail(SimTime t, std::int64_t domain) {
    TRNSIM_CHECK(use(domain) != DomainUse::down, "fleet: a down domain failed again");
    set(t, domain, DomainUse::down, -1);
}

DomainUse Pool::repair(SimTime t, std::int64_t domain) {
    TRNSIM_CHECK(use(domain) == DomainUse::down, "fleet: repairing a domain that is not down");
    const DomainUse u =
        count(DomainUse::spare) < spare_target_ ? DomainUse::spare : DomainUse::idle;
    set(t, domain, u, -1);
    return u;
}

std::int64_t Pool::first_spare() const {
    if (count(DomainUse::spare) == 0) {
        return -1;
    }
    for (std::int64_t d = 0; d < domains(); ++d) {
        if (use(d) == DomainUse::spare) {
            return d;
        }
    }
    return -1;
}

PoolAccount Pool::close(SimTime t) {
    TRNSIM_CHECK(t >= last_, "fleet: closing the pool before its last change");
    accrue(t);
    note(t);
    return account_;
}

} // namespace trnsim::fleet
