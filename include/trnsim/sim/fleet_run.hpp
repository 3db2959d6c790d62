// Running a `fleet:` scenario (docs/fleet.md): each job class's plan and analytic step time on
// its gang (the estimate of its workload run alone on a cluster of that many domains; classes in
// parallel), its checkpoint costs from its reliability section, then every job of every class
// under the fleet's scheduler on the engine (fleet::simulate_fleet).
//
// A class with a reliability section checkpoints as its run simulation would on the same gang
// (reliability::expect: the interval, auto or fixed, raised to whole steps; the stall; the
// restore) and pays recovery.restart on every start; a class without one takes no checkpoint
// and starts at once. The scenario's own reliability section is the failure process of the
// whole pool (reliability::OutageSchedule over every domain), drawn as the run goes.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/fleet/fleet.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/workload/plan.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::sim {

/// A job class as the fleet runs it.
struct FleetClassRun {
    std::string name;
    std::string tenant;
    std::int64_t gang = 0;
    std::int64_t count = 0;
    int priority = 0;
    workload::Plan plan;
    Seconds step;                    ///< the analytic step time on the gang
    std::int64_t steps = 0;          ///< steps of one job (its plan's)
    std::int64_t checkpoint_steps = 0; ///< 0: no periodic checkpoint
    Seconds save;                    ///< stall of one checkpoint
    Seconds restore;
    Seconds launch;                  ///< recovery.restart with a reliability section, else 0
    Duration deadline;               ///< each job's, from its submission (zero: none)
    /// An elastic class's larger gangs (fleet.jobs[i].gang as a list), each with its own plan,
    /// step time and checkpoint costs, in increasing gang; empty: `gang` only.
    std::vector<FleetClassRun> wider;
};

/// A service as the fleet runs it: one domain's capacity at the SLO, measured with the
/// request-level simulation of its workload on one domain (docs/fleet.md, "Services").
struct FleetServiceRun {
    std::string name;
    std::string tenant;
    int priority = 0;
    bool borrow = false;
    int tp = 1;
    std::int64_t replicas_per_domain = 0;
    double capacity = 0.0;        ///< requests per second one domain serves at the SLO
    /// Requests per second one domain serves at most: the highest rate of finishes over the
    /// second half of a run's arrivals (a saturated run's is its service rate).
    double throughput = 0.0;
    Seconds slack;                ///< slo.ttft - the median TTFT at capacity (at least 0)
    Seconds model_load;           ///< a domain's weights into HBM at the load bandwidth
    Bandwidth load_bandwidth;     ///< per instance
    double output_tokens = 0.0;   ///< per request, at capacity
    /// The measurements below the throughput: rate per domain, its SLO attainment and median
    /// TTFT (by rate).
    struct Point {
        double rate = 0.0, attainment = 0.0;
        Seconds ttft_p50;
    };
    std::vector<Point> points;
    int simulations = 0;          ///< request-level runs behind the figures (0: shared)
    std::int64_t shares_with = -1; ///< the service whose measurement this one reuses
};

/// A service's window at request level (fleet.request_level, docs/fleet.md "A window at
/// request level"): its requests over the window, at the rate level's mean load there, served
/// by replicas on as many domains as it had ready at each instant of the fleet run.
struct FleetServiceWindow {
    std::string name;
    Seconds from, to;
    double rate = 0.0;            ///< requests per second offered (the window's mean load)
    std::int64_t domains = 0;     ///< the replay's cluster: domains ready or draining at once, at most
    std::int64_t changes = 0;     ///< changes of its domains inside the window
    double rate_level_attainment = 0.0; ///< the fleet run's, over the window's arrivals
    std::int64_t requests = 0;    ///< issued at request level
    std::int64_t unfinished = 0;
    double attainment = 0.0;      ///< met the SLO over the issued
    Seconds ttft_p50, ttft_p99, tpot_p99;
    std::int64_t retried = 0;     ///< requests a domain's leaving sent elsewhere
    Seconds wall;                 ///< host time of its replay
};

/// One pool of a fleet as it ran (config::FleetPool): its own scheduler over its domains, with
/// its jobs and services (`jobs` and `services`: their indices in FleetRun's, in order). Its
/// `result` keeps its pool account, end and events; its records are moved into FleetRun's.
struct FleetPoolRun {
    std::string name;
    std::string chip;           ///< the chip file's name
    bool ultraservers = true;   ///< its domains are UltraServers, else instances
    std::string origin;         ///< where its price comes from (CostSpec::origin)
    Money domain_hour;          ///< its price: instance-hour x instances of a domain
    fleet::FleetInput input;    ///< its domains, spares, jobs and services
    fleet::FleetResult result;
    std::vector<std::int64_t> jobs, services;
};

struct FleetRun {
    std::vector<FleetClassRun> classes;
    std::vector<FleetServiceRun> services;
    std::vector<FleetServiceWindow> windows;   ///< with fleet.request_level, one per service
    std::vector<std::string> tenants;          ///< names, in order of first appearance
    std::vector<std::int32_t> class_of_job;    ///< for each job of result.jobs
    std::vector<std::int64_t> index_in_class;  ///< its index among its class's jobs
    /// Every job and service of the fleet (without the jobs' names), the scheduler's policy and
    /// quotas, the horizon: what each pool's scheduler ran a part of (its domains, groups and
    /// spares are in `pools`).
    fleet::FleetInput input;
    /// Every job's and service's records in the fleet's order; `pool` is the first pool's
    /// account (each pool's is in `pools`), `end` the latest pool's, `events` their sum.
    fleet::FleetResult result;
    /// Each pool (at least one; the first is the scenario's own cluster, `main`).
    std::vector<FleetPoolRun> pools;
    std::vector<std::int32_t> pool_of_job;      ///< for each job, its pool in `pools`
    std::vector<std::int32_t> pool_of_service;  ///< for each service, its pool
    int threads = 1;       ///< threads of the plans' estimates
    Seconds plans_wall;    ///< host time of the plans' estimates (and failures_ahead)
    /// Whether the failures through the horizon were drawn beside the services' measurements
    /// (in plans_wall) rather than during the scheduler's run.
    bool failures_ahead = false;
    Seconds fleet_wall;    ///< host time of the scheduler's run
};

/// The jobs of a fleet run, or of one class: how many started and finished, their preemptions,
/// and the means of first start - submission (over the started) and of end - submission (over
/// the finished); NaN when there are none.
struct FleetJobMeans {
    std::int64_t jobs = 0, started = 0, finished = 0, preemptions = 0, failures = 0;
    /// Jobs of classes with a deadline that missed it (missed_deadline).
    std::int64_t deadlines_missed = 0;
    Seconds lost; ///< total held time whose work was lost
    Seconds wait;
    Seconds completion;
};

/// Over the jobs of class `cls`, or every job (-1).
FleetJobMeans fleet_means(const FleetRun& run, std::int32_t cls = -1);

/// Whether job `job` of the run missed its class's deadline: it ended after it, or it had not
/// ended when the run did and could not end by it even running from then on without a stop
/// (its steps not yet durable, less its work since its last checkpoint). False without one.
bool missed_deadline(const FleetRun& run, std::size_t job);

/// Every check run_fleet makes before it simulates: each class's plan on its gang, a
/// reliability section's checkpoint inputs. InputError located in the file, keyed
/// fleet.jobs[i]....
void check_fleet(const config::ScenarioSpec& spec);

/// Runs the fleet of `spec` (spec.fleet set); the plans' estimates on `threads` threads (0:
/// simulation.threads, auto: the engine's default).
FleetRun run_fleet(const config::ScenarioSpec& spec, int threads = 0);

/// The domain changes of one service's window as its replay sees them: domain d of the
/// fleet's pool is given the lowest free slot of the replay's cluster when it becomes ready
/// (or is ready or draining at the window's start, its changes at that instant applied), and
/// frees it when it leaves; slots with no
/// domain at the start are down from time 0. Times are from the window's start. Returns the
/// changes and the slots used at most (at least 1).
std::pair<std::vector<DomainChange>, std::int64_t> window_changes(
    const std::vector<fleet::ServiceChange>& changes, SimTime from, SimTime to);

/// The part of run_fleet that does not depend on the pool: each class's plan and checkpoints,
/// each service's measured capacity (the result's classes and services; nothing simulated).
FleetRun prepare_fleet(const config::ScenarioSpec& spec, int threads = 0);

/// run_fleet with the classes and services of `prepared`, prepared from a scenario that
/// differs from `spec` at most in its pool (cluster size, fleet.spares) and the classes'
/// deadlines: a fleet plan's candidates (study::run_plan) measure them once.
FleetRun run_fleet(const config::ScenarioSpec& spec, const FleetRun& prepared);

} // namespace trnsim::sim
