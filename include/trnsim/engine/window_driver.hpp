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
//                they are not due before window_end. Each thread processes a home block of
//                partitions (the same every window, for its cache), those that handled the most
//                events in the last window first, then helps with what is left of the others.
//   3. parallel  every partition takes the events addressed to it from all outboxes into its
//                queue (the queue's total order makes the insertion order irrelevant) and
//                reports its next event time.
//   4. serial    the model's window-edge hook runs (shared resources, such as the fabric
//                solver, are resolved here, with all partitions stopped). The hook may hand
//                independent pieces of its work to every thread (EdgeTeam::parallel_for).
//
// One thread runs the same algorithm, so results do not depend on the thread count.
// Threads synchronise through a barrier and counters built on std::atomic (which
// ThreadSanitizer understands); OpenMP only provides the team of threads. An exception thrown
// while handling a partition is caught inside the parallel region, the run stops at the next
// window, and the exception of the lowest-numbered failing partition is rethrown to the caller.
#pragma once

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
};

struct DriverConfig {
    int threads = 1;
    std::int64_t lookahead_ns = 1;
    std::int64_t until_ns = 0; ///< events at or after this time are not handled
};

struct DriverStats {
    std::uint64_t windows = 0;
    int threads = 1;
};

/// Runs windows until no event is due before `until`. Rethrows the first model exception.
DriverStats run_windows(WindowedModel& model, const DriverConfig& config);

/// The number of threads `auto` (0) stands for: OpenMP's default team size.
int default_thread_count();

} // namespace trnsim::engine
