// A fleet of training jobs on one pool, on the engine: submissions, segment ends, domain
// failures and repairs are events of the scheduler's entity; once an instant, after all of
// them, the scheduler decides what starts (scheduler.hpp). Events at one instant are handled
// ends first, then repairs, then failures, then submissions (each kind in the engine's order of
// its events: the order they were scheduled in), so a domain freed at t is granted at t and a
// job ending at t is never preempted at t.
//
// Services (service.hpp) have events of their own on the same entity: every autoscaler
// interval a decision (after the instant's ends, repairs, failures and submissions, before the
// scheduler's decision, so a service gets idle domains before the queue does), a domain
// becoming ready, a draining domain given back (with the ends). Their domains at time zero are
// ready at once (deployed before the run, for the load at time zero). A fleet with services
// runs to its horizon.
//
// Determinism: the result is a function of the input alone.
#pragma once

#include "trnsim/fleet/job.hpp"
#include "trnsim/fleet/pool.hpp"
#include "trnsim/fleet/scheduler.hpp"
#include "trnsim/fleet/service.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace trnsim::fleet {

/// A domain out of service from `down` to `up` (a failure and its repair).
struct DomainOutage {
    std::int64_t domain = 0;
    SimTime down;
    SimTime up;
};

/// One change of a domain from a failure process: it goes down, or comes back.
struct DomainTransition {
    SimTime at;
    std::int64_t domain = 0;
    bool up = false;
};

/// A failure process drawn as the run goes: the next transition, in time order (each domain
/// alternating down and up), or nothing when it has no more.
using OutageSource = std::function<std::optional<DomainTransition>()>;

struct FleetInput {
    std::int64_t domains = 0;
    std::int64_t chips_per_domain = 0;
    cluster::DomainGroups groups;
    std::int64_t spares = 0;
    std::vector<JobSpec> jobs;
    std::vector<ServiceSpec> services;
    SchedulerSpec scheduler; ///< its `services` are filled from `services`
    /// In any order; a domain's outages must not overlap.
    std::vector<DomainOutage> outages;
    /// A failure process instead of (not beside) `outages`: drawn while jobs are left to run.
    OutageSource outage_source;
    /// Added to the restart of a job that a failed domain interrupted and a spare replaces:
    /// the time to notice the failure.
    Duration detection;
    /// The run stops here (SimTime::max(): when every job has finished, the last job's end).
    SimTime horizon = SimTime::max();
};

struct FleetResult {
    std::vector<JobRecord> jobs;
    std::vector<ServiceRecord> services;
    std::vector<std::vector<ServiceSample>> service_samples;
    /// With a window: each service's ready domains' changes up to its end (Service::changes).
    std::vector<std::vector<ServiceChange>> service_changes;
    PoolAccount pool;
    SimTime end;              ///< the last job's end, or the horizon
    std::uint64_t events = 0;
};

/// Throws std::invalid_argument on an input the scheduler cannot run (see Scheduler).
FleetResult simulate_fleet(const FleetInput& input);

} // namespace trnsim::fleet
