// A pool of a fleet: whole scale-up domains of one kind (Trn2 UltraServers, or plain instances),
// what each domain is doing, where a gang of domains goes, and the account of domain time by use.
//
// Uses. Every domain is exactly one of
//   busy    held by a job (allocated to it, from its grant to its release)
//   idle    free: the scheduler may grant it
//   spare   kept back for replacing a failed domain of a running job (the shared spare pool)
//   down    failed, until repaired
// so busy + idle + spare + down = domains at every instant (the ledger checks it on every change).
// Idle domains are also fragmented while jobs wait and every waiting job needs more domains than
// are idle: capacity the queue cannot use because of its gangs' sizes (the scheduler tells the
// pool the smallest waiting gang). Idle domains a waiting job would fit are not fragmented: a
// policy, a quota or a reservation holds them back.
//
// Placement (topology- and fragmentation-aware gang placement). A job asks for n whole domains.
// The pool looks at the scale-out Clos's grouping of its domains (cluster::DomainGroups: leaf
// groups inside pods) and takes, in this order of preference:
//   1. one leaf group with at least n idle domains (its rings turn at the leaves);
//   2. else one pod with at least n idle (they turn at the spines);
//   3. else the whole pool (they cross the cores);
// and at each level the candidate with the fewest idle domains that still holds the gang (best
// fit: larger holes stay whole for larger jobs), the lowest index on a tie. Inside the chosen pod
// (or pool) it fills the leaf groups with the most idle domains first, so the gang spans as few
// groups as it can; inside a group, the lowest-numbered idle domains.
#pragma once

#include "trnsim/cluster/shape.hpp"
#include "trnsim/core/units.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace trnsim::fleet {

enum class DomainUse : std::uint8_t { busy, idle, spare, down };
inline constexpr std::size_t kDomainUses = 4;

/// The scale-out level a gang's traffic turns at: the widest it spans.
enum class Span : std::uint8_t { leaf_group, pod, pool };

/// Domain time by use over a run, and the changes of use over time.
struct PoolAccount {
    /// Domain time spent in each use, summed over the domains (index: DomainUse).
    std::array<Seconds, kDomainUses> domain_time{};
    /// Idle domain time while fragmented (part of domain_time[idle]).
    Seconds fragmented_time;
    /// After each change: its time, the domains in each use, and the fragmented idle ones.
    struct Point {
        SimTime at;
        std::array<std::int64_t, kDomainUses> domains{};
        std::int64_t fragmented = 0;
    };
    std::vector<Point> timeline;
};

class Pool {
public:
    /// `domains` domains of `chips_per_domain` chips, grouped as `groups`; the last `spares`
    /// domains start as spares (0 <= spares <= domains).
    Pool(std::int64_t domains, std::int64_t chips_per_domain, cluster::DomainGroups groups,
         std::int64_t spares);

    std::int64_t domains() const { return static_cast<std::int64_t>(use_.size()); }
    std::int64_t chips_per_domain() const { return chips_per_domain_; }
    const cluster::DomainGroups& groups() const { return groups_; }
    std::int64_t count(DomainUse u) const { return counts_[static_cast<std::size_t>(u)]; }
    DomainUse use(std::int64_t domain) const { return use_[static_cast<std::size_t>(domain)]; }
    /// The job holding a busy domain (-1 otherwise).
    std::int64_t holder(std::int64_t domain) const {
        return holder_[static_cast<std::size_t>(domain)];
    }

    /// Where a gang of `n` domains would go now (see the header comment), or nothing when
    /// fewer than n are idle. Does not change the pool.
    std::optional<std::vector<std::int64_t>> place(std::int64_t n) const;
    /// The widest level a set of domains spans.
    Span span(const std::vector<std::int64_t>& domains) const;

    /// Idle (or spare) domains to `job` at `t`.
    void grant(SimTime t, const std::vector<std::int64_t>& domains, std::int64_t job);
    /// Busy domains back to idle at `t`.
    void release(SimTime t, const std::vector<std::int64_t>& domains);
    /// One domain, whatever it was doing, fails at `t` (a busy domain's holder is the caller's
    /// to interrupt first or to keep, see Scheduler::domain_down).
    void fail(SimTime t, std::int64_t domain);
    /// A down domain is repaired at `t`: a spare when the spare pool is below its target,
    /// else idle. Returns its new use.
    DomainUse repair(SimTime t, std::int64_t domain);
    /// The lowest-numbered spare, or -1.
    std::int64_t first_spare() const;

    /// From `t`, the smallest gang a waiting job needs (0: no job waits).
    void set_smallest_wait(SimTime t, std::int64_t domains);
    /// The idle domains that are fragmented now.
    std::int64_t fragmented() const {
        const std::int64_t idle = count(DomainUse::idle);
        return smallest_wait_ > idle ? idle : 0;
    }

    /// Closes the account at `t` (the end of the run) and returns it.
    PoolAccount close(SimTime t);
    const PoolAccount& account() const { return account_; }

private:
    void set(SimTime t, std::int64_t domain, DomainUse u, std::int64_t holder);
    void note(SimTime t);
    /// Adds the domain time since the last change, in the current uses, up to `t`.
    void accrue(SimTime t);
    /// Adds the fragmented idle time since its last change up to `t`.
    void accrue_fragmented(SimTime t);
    std::int64_t group_of(std::int64_t d) const { return d / groups_.domains_per_leaf_group; }
    std::int64_t pod_of(std::int64_t d) const { return d / groups_.domains_per_pod(); }

    std::int64_t chips_per_domain_;
    cluster::DomainGroups groups_;
    std::int64_t spare_target_;
    std::int64_t smallest_wait_ = 0;
    SimTime fragmented_last_;
    std::vector<DomainUse> use_;
    std::vector<std::int64_t> holder_;
    std::vector<std::int64_t> idle_in_group_;
    std::vector<std::int64_t> idle_in_pod_;
    std::array<std::int64_t, kDomainUses> counts_{};
    SimTime last_;
    PoolAccount account_;
};

} // namespace trnsim::fleet
