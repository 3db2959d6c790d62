// The conservative, window-based parallel driver (YAWNS-style; Nicol 1993).
//
// Partitions are groups of entities fixed by the model; threads are workers that take
// partitions. Each window:
//
//   1. serial    t_min = earliest pending event over all partitions; stop if none or
//                t_min >= until; window_end = min(t_min + lookahead, until). Starting at t_min
//                (not at the previous window end) jumps over empty stretches of time.
//   2. parallel  every partition handles its events with time < window_end. Events for other
//                partitions go to per-(source, destination) outboxes; the lookahead guarantees
//                they are not due before window_end.
//   3. parallel  every partition takes the events addressed to it from all outboxes into its
//                queue (the queue's total order makes the insertion order irrelevant) and
//                reports its next event time. A window that sent nothing across partitions
//                runs this step on the leader alone (it only reads each queue's next time).
//   4. serial    the model's window-edge hook runs (shared resources, such as the fabric
//                solver, are resolved here, with all partitions stopped). The hook may hand
//                independent pieces of its work to every thread (EdgeTeam::parallel_for).
//
// Thread 0 leads: it runs the serial steps and takes part in every parallel one. Each window
// is either run by the leader alone ("inline") or shared with the other threads ("helpers"),
// chosen per window by measurement: windows are classed by their expected one-thread time,
// and per class the driver keeps the mean wall time of a window in each mode, uses the
// faster and retries the slower one from time to time (docs/engine.md); the hook's
// parallel_for calls are decided the same way, apart from their window. A shared step never
// waits for a helper that has not started: the leader takes items itself, and a helper that
// is asleep or descheduled (a loaded machine) finds the step done when it wakes; waits are a
// short spin and then a futex sleep. Who runs what depends on timing; what is computed never
// does, so results do not depend on the thread count or on the modes chosen.
// The helpers are std::threads, started at the first shared step of a run and never waited
// for: at the end of a run they return whenever they next get a core. They synchronise
// through std::atomic (which ThreadSanitizer understands). An exception thrown while handling a partition is caught,
// the run stops at the next window, and the exception of the lowest-numbered failing
// partition is rethrown to the caller.
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>
#include <functional>

namespace trnsim::engine {

/// The driver's threads, lent to the window-edge hook while the partitions are stopped.
class EdgeTeam {
public:
    virtual ~EdgeTeam() = default;
    /// Runs work(i) for every i in [0, n), spread over the threads as they free up, and
    /// returns when all are done. If some throw, rethrows the exception of the lowest i.
    virtual void parallel_for(std::uint32_t n, const std::function<void(std::uint32_t)>& work) = 0;
};

/// What the driver needs from a simulation, per partition. Calls for different partitions may
/// run concurrently; calls for one partition never do.
class WindowedModel {
public:
    virtual ~WindowedModel() = default;
    virtual std::uint32_t partition_count() const = 0;
    /// Handles the partition's events with time < window_end; returns how many it handled
    /// (the driver starts the busiest partitions of the last window first).
    virtual std::uint64_t process(std::uint32_t partition, std::int64_t window_end) = 0;
    /// Moves the events other partitions sent to this one into its queue; returns the time of
    /// its earliest pending event (kNever when none).
    virtual std::int64_t deliver(std::uint32_t partition) = 0;
    /// Runs between windows, called on one thread; `team` runs pieces of it on all threads.
    /// Returns true when it scheduled events (the driver then asks every partition for its
    /// next time again).
    virtual bool window_edge(std::int64_t window_end, EdgeTeam& team) = 0;
    /// Earliest pending event time of a partition (used at start and after a window edge).
    virtual std::int64_t next_time(std::uint32_t partition) = 0;
    /// Whether the window just processed sent events across partitions (false: deliver() has
    /// nothing to move, and the driver calls it for every partition on the leader alone
    /// instead of waking the helpers for it). Called between the phases, on the leader.
    virtual bool sent_remote() const { return true; }
};

/// Whether windows are shared with the helper threads. Only speed depends on it, never results.
enum class Sharing {
    adaptive, ///< per window, by measured wall time (the default)
    always,   ///< every window with the helpers (tests of the parallel path, benchmarks)
    never,    ///< every window on the leader alone
};

struct DriverConfig {
    int threads = 1;
    Duration lookahead = Duration::from_ns(1);
    SimTime until; ///< events at or after this time are not handled
    /// `adaptive` here gives way to the environment variable TRNSIM_WINDOW_SHARING
    /// (`adaptive`, `always` or `never`), so that tests and benchmarks can force a mode
    /// through code that does not pass one.
    Sharing sharing = Sharing::adaptive;
};

struct DriverStats {
    std::uint64_t windows = 0;
    std::uint64_t shared_windows = 0; ///< windows run with the helper threads
    int threads = 1;
};

/// Runs windows until no event is due before `until`. Rethrows the first model exception.
/// Throws std::invalid_argument for a lookahead <= 0 or a bad TRNSIM_WINDOW_SHARING.
DriverStats run_windows(WindowedModel& model, const DriverConfig& config);

/// The number of threads `auto` (0) stands for: OpenMP's default team size.
int default_thread_count();

} // namespace trnsim::engine
