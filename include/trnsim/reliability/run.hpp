// The run simulation: a training job over days or months on the event engine, with failures,
// detection, restarts, spares, repairs and checkpoints (docs/reliability.md has the full model).
//
// Entities (layout.hpp): every component with a failure process, every replaceable domain, every
// power domain and switch, and the job controller. A component holds one pending "next failure"
// event; most components never fail during a run, so only failures due before the current
// horizon are queued: the run advances in chunks of simulated time and each chunk queues the
// failures that fall into it, which costs one pass over an array of next-failure times per
// chunk and is exact (a failure is queued before its time, whatever the chunk length).
// A failed component reports to its domain (same partition); the domain goes to repair and
// reports to the controller, which reacts as the job's state machine:
//
//   running --(checkpoint due)--> checkpointing --(stall over)--> running
//   running/checkpointing --(failure)--> detecting --> [waiting for spare] --> restarting
//       --> loading --> running (or running degraded on fewer domains or replicas)
//   running --(work complete)--> done
//
// Reports reach the controller exactly L = 1 h after they happen (L is the engine's lookahead:
// partitions are power-domain blocks, the controller has its own), and the controller's own
// timers are scheduled L after their time as well, so it sees every failure and every timer
// in the order of their true times and accounts for each at its true time: the model is exact,
// not delayed by L. A long L lets each window of the engine hold an hour of events.
//
// Accounting is in integer nanoseconds: the time in each state sums exactly to the wall time,
// and the running time splits exactly into time whose progress was kept and time whose progress
// was lost. Progress ("work") is measured in seconds of failure-free training on the full
// cluster; running degraded makes progress at a rate below 1.
//
// Results are a function of (scenario, seed, replication) only: identical for any thread count.
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/reliability/checkpoint.hpp"
#include "trnsim/reliability/failure_model.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/spec.hpp"
#include "trnsim/reliability/statistics.hpp"
#include "trnsim/cluster/shape.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::reliability {

/// What the run simulation needs to know about the training job.
struct JobModel {
    std::int64_t steps = 0;           ///< to train
    Seconds step;                     ///< failure-free step time on the full cluster
    std::int64_t tokens_per_step = 0;
    /// Replica bookkeeping (recovery.scope: replica): consecutive ranks of one replica in a
    /// pipeline stage (tp x cp), and the replicas.
    int tp = 1;
    int dp = 1;
    std::int64_t ranks_per_domain = 1;
    Bytes checkpoint_size;            ///< resolved: the spec's, or weights + optimizer state
    double instance_hour_usd = 0.0;
    /// Step time on `domains` job domains with every instance's EFA bandwidth scaled by
    /// `efa_factor` in (0, 1]; nothing when the job cannot run on that many domains. Called
    /// from one thread at a time (under a lock); results are cached per (domains, factor).
    std::function<std::optional<double>(std::int64_t domains, double efa_factor)> step_time;
};

struct RunControl {
    Duration duration;       ///< zero: until the job is done
    Duration time_limit = Duration::from_ns(std::int64_t{5} * 365 * 86400 * 1'000'000'000);
    int replications = 1;
    /// Threads; results do not depend on it. min(threads, replications) replications run at
    /// once (each is independent), each on the engine with threads / that many threads.
    int threads = 1;
    std::uint64_t seed = 1;
    bool record = true;      ///< keep the events and timeline of the first replication
    /// With record: keep the checkpoints too (their events, and the checkpointing states of
    /// the timeline). Off, a checkpoint leaves no row: the timeline keeps the running state
    /// it interrupts (output.timeline: summary); every figure is the same either way.
    bool record_checkpoints = true;
};

enum class JobState : std::uint8_t {
    running,
    running_degraded,
    checkpointing,
    detecting,
    restarting,
    loading,
    waiting_for_spare,
    done,
};
inline constexpr std::size_t kTimedStates = 7; ///< all but done
constexpr std::array<EnumName<JobState>, 8> enum_names(JobState) {
    return {{
        {JobState::running, "running"},
        {JobState::running_degraded, "running_degraded"},
        {JobState::checkpointing, "checkpointing"},
        {JobState::detecting, "detecting"},
        {JobState::restarting, "restarting"},
        {JobState::loading, "loading"},
        {JobState::waiting_for_spare, "waiting_for_spare"},
        {JobState::done, "done"},
    }};
}
inline const char* to_string(JobState v) { return enum_name(v); }

enum class EventKind : std::uint8_t {
    failure,         ///< a component failed (anywhere in the cluster)
    interruption,    ///< a failure stopped the job (or, replica scope, replicas of it)
    repaired,        ///< a domain came back from repair into the spare pool
    spare_assigned,  ///< a spare domain took a failed domain's place in the job
    checkpoint,      ///< a checkpoint became durable
    checkpoint_lost, ///< a checkpoint (or its upload) was cut short by a failure
    degraded,        ///< a network element failed: the job runs slower
    restored,        ///< the element was repaired
    done,            ///< the job finished
};
constexpr std::array<EnumName<EventKind>, 9> enum_names(EventKind) {
    return {{
        {EventKind::failure, "failure"},
        {EventKind::interruption, "interruption"},
        {EventKind::repaired, "repaired"},
        {EventKind::spare_assigned, "spare_assigned"},
        {EventKind::checkpoint, "checkpoint"},
        {EventKind::checkpoint_lost, "checkpoint_lost"},
        {EventKind::degraded, "degraded"},
        {EventKind::restored, "restored"},
        {EventKind::done, "done"},
    }};
}
inline const char* to_string(EventKind v) { return enum_name(v); }

struct RunEvent {
    SimTime time;
    EventKind kind = EventKind::failure;
    std::optional<ComponentClass> component; ///< class of the component involved
    std::int64_t component_index = -1;       ///< within its class
    std::int64_t domain = -1;                ///< physical domain involved
    int process = -1;                        ///< the cause (FailureModel::processes() index)
};

struct TimelinePoint {
    SimTime time;
    JobState state = JobState::running;
    Seconds progress;  ///< work done in the current lineage (full-cluster seconds)
    Seconds committed; ///< work saved in the newest durable checkpoint
    double rate = 1.0;        ///< progress per second of wall time
};

/// One replication.
struct ReplicationResult {
    bool done = false;
    Duration wall;
    std::array<Duration, kTimedStates> time_in_state{};
    Duration work;      ///< progress kept at the end (full-cluster time)
    Duration lost_work; ///< progress lost to failures
    Duration kept_run;  ///< running time whose progress was kept
    Duration lost_run;  ///< running time whose progress was lost
    std::int64_t interruptions = 0;
    std::int64_t failures = 0;     ///< every component failure before the end
    std::int64_t checkpoints = 0;
    std::int64_t checkpoints_lost = 0;
    std::int64_t spares_assigned = 0;
    std::vector<std::int64_t> failures_by_process;
    std::vector<std::int64_t> interruptions_by_process;
    std::vector<RunEvent> events;           ///< when recorded
    std::vector<TimelinePoint> timeline;    ///< when recorded
    std::uint64_t engine_events = 0;
};

/// Per replication metrics in SI units; the summary and the HDF5 files name them as
/// metric_fields() does (a time's name ends in _s). Real values (Seconds for times): they are
/// averaged over replications, and a job that never finishes has an infinite time to train.
struct Metrics {
    Seconds wall_time;            ///< simulated time the replication ran
    Seconds time_to_train;        ///< wall time when done, else projected: work / ETTR
    double ettr = 0.0;            ///< kept progress / wall time
    double goodput = 0.0;         ///< tokens kept per second of wall time
    double interruptions = 0.0;
    double failures = 0.0;
    Seconds lost_work;            ///< progress redone after interruptions
    Seconds downtime;             ///< detecting + restarting + loading + waiting for spares
    Seconds checkpoint_overhead;  ///< training stalled for checkpoints
    double checkpoints = 0.0;
    double cost_usd = 0.0;        ///< (job + spare instances) x time to train x price
    double done = 0.0;            ///< 1 when the job finished within the run
};

/// A metric's value in SI units (seconds for a time).
using MetricValue = double (*)(const Metrics&);

/// The metric names in table order, with the value of each.
const std::vector<std::pair<const char*, MetricValue>>& metric_fields();

/// Fixed facts of a run, the same for every replication. Times in seconds as doubles: the
/// closed forms they come from (checkpoint.hpp, theory.hpp) work in real seconds and use
/// +inf for "never".
struct RunFacts {
    std::int64_t job_domains = 0;
    std::int64_t spare_domains = 0;
    std::int64_t instances_per_domain = 1;
    std::uint32_t entities = 0;
    std::array<std::int64_t, kClassCount> components{}; ///< with failure processes
    double job_failure_rate = 0.0;     ///< per second, full job (sum of component rates)
    Seconds checkpoint_interval; ///< on the full job; +inf: no periodic checkpoint
    IntervalReason checkpoint_interval_reason = IntervalReason::fixed; ///< what set it
    Seconds checkpoint_daly;       ///< auto: Daly's optimum before the bounds
    Seconds checkpoint_stall;      ///< training stalls per checkpoint
    Seconds checkpoint_background; ///< async upload or memory peer copy
    Seconds restore;               ///< reload of the whole job's checkpoint
    Seconds replica_restore;       ///< reload of one replica's share (scope: replica)
    Bytes checkpoint_size;
    Seconds work; ///< failure-free training time (steps x step time)
};

struct RunSummary {
    RunFacts facts;
    std::vector<Process> processes;
    std::vector<Impact> impacts; ///< what each process's failures do (layout.hpp)
    std::vector<ReplicationResult> replications;
    std::vector<Metrics> metrics; ///< per replication
    /// Mean and 95% interval of every metric (metric_fields order).
    std::vector<Estimate> estimates;
    /// Mean failures and interruptions per replication by process.
    std::vector<double> mean_failures_by_process;
    std::vector<double> mean_interruptions_by_process;
    double seconds = 0.0; ///< host wall time of the simulation
    std::uint64_t engine_events = 0;

    const Estimate& estimate(const std::string& metric) const;
};

/// Everything the run simulation is built from.
struct RunInput {
    ReliabilitySpec spec;
    cluster::ClusterShape cluster;
    HardwareFacts hardware;
    JobModel job;
};

/// Checks what the schema cannot (validate_fleet, and checkpoints that do not fit in host
/// memory); throws InputError with a key path.
void validate(const RunInput& input);

/// The checks of any fleet's failures, a training job's or a serving fleet's: spares of the
/// cluster's kind of domain, effects the cluster cannot have, trace components that do not exist
/// (located in the trace file); throws InputError with a key path.
void validate_fleet(const ReliabilitySpec& spec, const cluster::ClusterShape& cluster,
                    const HardwareFacts& hardware);

/// Runs every replication of `control`.
RunSummary simulate(const RunInput& input, const RunControl& control);

} // namespace trnsim::reliability
