// The fleet's scheduler for training jobs: a queue, a policy, quotas, and the pool's domains.
// It decides; the fleet model (fleet.hpp) turns its decisions into events on the engine.
//
// Policies (the queue's order and what a job that does not fit does):
//   fifo      by submit time (then job index); the first job that does not fit blocks the rest
//   backfill  fifo, and EASY backfilling: the blocked head gets a reservation at the earliest
//             time enough domains come free (running jobs ending when their segments end);
//             a later job starts now if it fits and either ends by then or needs no more than
//             the domains the head leaves over at that time (counts only, not places). When
//             the running jobs' ends cannot free enough (domains are down), there is no
//             reservation and later jobs that fit start
//   priority  by priority (higher first), then submit time; the first job that does not fit
//             preempts running jobs of lower priority (lowest priority first, then the most
//             recently started) when freeing them makes it fit, else it blocks the rest
// A job whose tenant is at its quota (domains held) is passed over and does not block. A job
// requeued after a preemption or a failure keeps its submit time, so it goes back near the
// front.
//
// Failures (domain_down). A busy domain that fails interrupts its job (Segment::cut): when the
// spare pool has a domain, it takes the failed one's place and the job starts a new segment
// after the detection time (restore included); else the job releases its other domains and
// goes back to the queue (its next start pays the detection time too).
// A repaired domain refills the spare pool to its target, else becomes idle (Pool::repair).
//
// Services (service.hpp) hold domains one by one, outside the queue: acquire() grants idle
// domains at once (placed as a gang of that many would be), within the tenant's quota; a
// service that may borrow also preempts running jobs of lower priority (as the priority policy
// picks victims) for the rest. Their domains count against their tenant's quota. A failed
// service domain is replaced from the spare pool when it has one (the service provisions it).
// In the pool a service's domains are held by holder `jobs + service`.
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/fleet/job.hpp"
#include "trnsim/fleet/pool.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace trnsim::fleet {

enum class Policy : std::uint8_t { fifo, backfill, priority };

constexpr std::array<EnumName<Policy>, 3> enum_names(Policy) {
    return {{
        {Policy::fifo, "fifo"},
        {Policy::backfill, "backfill"},
        {Policy::priority, "priority"},
    }};
}
inline const char* to_string(Policy v) { return enum_name(v); }

/// A service's claim on domains.
struct ServiceClaim {
    std::int64_t tenant = 0;
    int priority = 0;
    bool borrow = false; ///< may preempt jobs of lower priority
};

struct SchedulerSpec {
    Policy policy = Policy::fifo;
    std::vector<ServiceClaim> services;
    /// Domains each tenant may hold at once (index: JobSpec::tenant; 0 or absent: no quota).
    std::vector<std::int64_t> quotas;
    /// Added to the restart of a job that a failed domain interrupted and a spare replaces.
    Duration detection;
};

/// A segment the scheduler started: the caller schedules its end at `end`, tagged `epoch`.
struct Start {
    std::int64_t job = 0;
    SimTime end;
    std::uint32_t epoch = 0;
};

class Scheduler {
public:
    /// Throws std::invalid_argument when a job needs more domains than the pool can ever grant
    /// (its domains less its spares), or more than its tenant's quota (the caller's input
    /// checks say which key).
    Scheduler(Pool& pool, std::vector<JobSpec> jobs, SchedulerSpec spec);

    /// `job` joins the queue at `t`.
    void submit(SimTime t, std::int64_t job);
    /// The end of `job`'s segment `epoch` at `t`: the job finishes and releases its domains.
    /// False (nothing changes) when the segment was cut short since.
    bool end(SimTime t, std::int64_t job, std::uint32_t epoch);
    /// A domain fails at `t` (see the header comment): the interrupted job's restart on a
    /// spare, if any; or the service that held it and the spare that replaces it, if any.
    struct Down {
        std::vector<Start> starts;
        std::int64_t service = -1;
        std::int64_t replacement = -1;
    };
    Down domain_down(SimTime t, std::int64_t domain);
    /// Up to `n` domains for service `s` at `t` (see the header comment).
    std::vector<std::int64_t> acquire(SimTime t, std::int64_t s, std::int64_t n);
    /// Service `s` gives domains back at `t`.
    void release(SimTime t, std::int64_t s, const std::vector<std::int64_t>& domains);
    /// A failed domain is repaired at `t`.
    void domain_up(SimTime t, std::int64_t domain);
    /// Starts what the policy lets start at `t` (preempting under the priority policy).
    std::vector<Start> schedule(SimTime t);

    /// Counts the changes that may let a queued job start (a job queued, domains given back,
    /// domains granted to a service, which can move EASY's reservation later): a decision
    /// after none of them starts nothing.
    std::uint64_t version() const { return version_; }

    const std::vector<JobSpec>& jobs() const { return jobs_; }
    const std::vector<JobRecord>& records() const { return records_; }
    std::int64_t queued() const { return static_cast<std::int64_t>(queue_.size()); }
    std::int64_t running() const { return static_cast<std::int64_t>(active_.size()); }
    /// Every job has finished.
    bool all_done() const { return finished_ == jobs_.size(); }
    /// At the end of a run: accounts the segments still running at `t` as if cut there (their
    /// held time, overhead and durable steps; the rest is JobRecord::unsaved). They keep their
    /// domains; nothing may be scheduled after.
    void close(SimTime t);

private:
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
    struct Running {
        bool active = false;
        Segment segment;
        std::vector<std::int64_t> domains;
        std::uint32_t epoch = 0;
        SimTime end; ///< the segment's end, uninterrupted
        bool after_failure = false; ///< requeued by a failure: its next start pays detection
    };

    Key key(std::int64_t job) const;
    /// Gives elastic `job` its k-th shape (its JobSpec's fields from JobSpec::shapes[k]).
    void shape(std::int64_t job, std::size_t k);
    /// An elastic job about to start: its largest shape within the idle domains and its
    /// tenant's quota (at least its smallest, which the caller checked).
    void widen(std::int64_t job);
    void enqueue(SimTime t, std::int64_t job);
    bool may_hold(std::int64_t job) const;
    Start start(SimTime t, std::int64_t job, std::vector<std::int64_t> domains);
    /// Cuts `job`'s segment at `t`; with `release`, gives its domains back and stops it.
    void interrupt(SimTime t, std::int64_t job, bool release = true);
    bool preempt_for(SimTime t, std::int64_t job);
    /// Preempts running jobs below `priority` (lowest first, then the most recently started)
    /// until `need` domains are idle; with `partial`, as many as it can, else none unless all.
    void preempt(SimTime t, int priority, std::int64_t need, bool partial);
    std::int64_t quota_room(std::int64_t tenant) const;
    /// EASY: the head's reservation time and the domains it leaves over then.
    std::pair<SimTime, std::int64_t> reservation(SimTime t, std::int64_t head) const;

    Pool& pool_;
    std::vector<JobSpec> jobs_;
    SchedulerSpec spec_;
    std::vector<JobRecord> records_;
    std::vector<Running> run_;
    std::vector<SimTime> queued_since_;
    std::vector<std::int64_t> held_by_tenant_;
    std::set<Key> queue_;
    /// The queue again, by gang: the smallest waiting gang (fragmentation), and a backfill
    /// scan that visits only the jobs that fit the idle domains.
    std::map<std::int64_t, std::set<Key>> by_gang_;
    /// Takes queue_'s `job` (at `it`) out of the queue; returns the next.
    std::set<Key>::iterator dequeue(SimTime t, std::set<Key>::iterator it);
    std::set<std::int64_t> active_; ///< the running jobs, by index
    std::set<std::pair<SimTime, std::int64_t>> ends_; ///< their segments' ends
    std::size_t finished_ = 0;
    std::uint64_t version_ = 0;
};

} // namespace trnsim::fleet
