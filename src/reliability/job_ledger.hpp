// The run simulation's account of the job over time (private to the reliability module): the
// state it is in and since when, the time spent in each state, its progress ("work": ns of
// failure-free training on the full cluster, gained at the current rate while it runs), the
// part of it a durable checkpoint holds, and how the running time splits into time whose
// progress was kept and time whose progress was lost. The controller (run_model.hpp) decides
// the transitions; this class keeps the sums exact in integer nanoseconds: the time in the
// states sums to the wall time, and the running time to kept + lost (+ what is uncommitted).
#pragma once

#include "trnsim/reliability/run.hpp"

#include <cstdint>

namespace trnsim::reliability::detail {

class JobLedger {
public:
    /// Accounts into `out` (its time_in_state, timeline, kept and lost figures); `work_ns` is the
    /// job's whole work; `record` keeps the timeline, `record_checkpoints` its checkpoint rows.
    JobLedger(ReplicationResult& out, std::int64_t work_ns, bool record, bool record_checkpoints)
        : r_(out), total_ns_(work_ns), record_(record), record_checkpoints_(record_checkpoints) {}

    JobState state() const { return state_; }
    bool running() const {
        return state_ == JobState::running || state_ == JobState::running_degraded;
    }
    double rate() const { return rate_; }
    /// Work left to do.
    std::int64_t remaining_ns() const { return total_ns_ - work_ns_; }
    /// Running time since the last checkpoint began (the interval counts from it).
    std::int64_t since_checkpoint_ns() const { return since_checkpoint_ns_; }
    void checkpoint_taken() { since_checkpoint_ns_ = 0; }

    /// Time 0, running at `rate`: the timeline's first row.
    void start(double rate);
    /// Accounts the current state and rate up to `t`.
    void advance(std::int64_t t);
    /// advance(t), then the new state (a timeline row unless it only marks a checkpoint
    /// without record_checkpoints).
    void enter(JobState next, std::int64_t t);
    /// advance(t), then the new rate (the caller enters the state it runs in).
    void set_rate(std::int64_t t, double rate) {
        advance(t);
        rate_ = rate;
    }
    /// A checkpoint begins: it will hold the work done so far.
    void snapshot() {
        snapshot_ns_ = work_ns_;
        run_snapshot_ns_ = run_uncommitted_ns_;
    }
    /// The checkpoint is durable: its work is committed, its running time kept.
    void commit();
    /// Progress since the last durable checkpoint is lost (an interruption).
    void lose_uncommitted();
    /// The step in progress is lost (a replica failure stalls the whole job; replica scope):
    /// the work since the last step boundary, at most what is uncommitted, and the running
    /// time it took at the current rate.
    void lose_step(std::int64_t step_ns);
    /// advance(t); all the work is done and committed.
    void complete(std::int64_t t);
    /// The run ends at `end` (unfinished: the state is accounted up to it): the work done,
    /// and the uncommitted running time kept (the job was not interrupted).
    void close(std::int64_t end, bool finished);

private:
    ReplicationResult& r_;
    const std::int64_t total_ns_;
    const bool record_;
    const bool record_checkpoints_;

    JobState state_ = JobState::running;
    std::int64_t since_ = 0;
    double rate_ = 1.0;
    std::int64_t work_ns_ = 0, committed_ns_ = 0, snapshot_ns_ = 0;
    std::int64_t run_uncommitted_ns_ = 0, run_snapshot_ns_ = 0;
    std::int64_t since_checkpoint_ns_ = 0;
};

} // namespace trnsim::reliability::detail
