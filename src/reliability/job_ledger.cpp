#include "job_ledger.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::reliability::detail {

void JobLedger::start(double rate) {
    since_ = 0;
    rate_ = rate;
    if (record_) {
        r_.timeline.push_back({SimTime::zero(), state_, Seconds(), Seconds(), rate_});
    }
}

void JobLedger::advance(std::int64_t t) {
    const std::int64_t dt = t - since_;
    if (dt > 0 && state_ != JobState::done) {
        r_.time_in_state[static_cast<std::size_t>(state_)] += Duration::from_ns(dt);
        if (running()) {
            run_uncommitted_ns_ += dt;
            since_checkpoint_ns_ += dt;
            const std::int64_t gain =
                rate_ == 1.0
                    ? dt
                    : static_cast<std::int64_t>(std::floor(static_cast<double>(dt) * rate_));
            work_ns_ = std::min(work_ns_ + gain, total_ns_);
        }
    }
    since_ = t;
}

void JobLedger::enter(JobState next, std::int64_t t) {
    advance(t);
    const JobState previous = state_;
    state_ = next;
    if (!record_) {
        return;
    }
    if (!record_checkpoints_ && !r_.timeline.empty()) {
        // A checkpoint is not a change of the timeline: neither its start nor the return to
        // the state it interrupted (same state and rate as the last row) leaves a row.
        const TimelinePoint& last = r_.timeline.back();
        if (next == JobState::checkpointing ||
            (previous == JobState::checkpointing && next == last.state && rate_ == last.rate)) {
            return;
        }
    }
    r_.timeline.push_back({SimTime::from_ns(t), state_,
                           Seconds::of(static_cast<double>(work_ns_) * 1e-9),
                           Seconds::of(static_cast<double>(committed_ns_) * 1e-9), rate_});
}

void JobLedger::commit() {
    committed_ns_ = snapshot_ns_;
    r_.kept_run += Duration::from_ns(run_snapshot_ns_);
    run_uncommitted_ns_ -= run_snapshot_ns_;
    run_snapshot_ns_ = 0;
}

void JobLedger::lose_uncommitted() {
    r_.lost_work += Duration::from_ns(work_ns_ - committed_ns_);
    work_ns_ = committed_ns_;
    r_.lost_run += Duration::from_ns(run_uncommitted_ns_);
    run_uncommitted_ns_ = 0;
    run_snapshot_ns_ = 0;
}

void JobLedger::lose_step(std::int64_t step_ns) {
    std::int64_t lost = step_ns > 0 ? work_ns_ % step_ns : 0;
    lost = std::min(lost, work_ns_ - committed_ns_);
    work_ns_ -= lost;
    r_.lost_work += Duration::from_ns(lost);
    const std::int64_t wall =
        rate_ > 0.0 ? static_cast<std::int64_t>(std::ceil(static_cast<double>(lost) / rate_)) : 0;
    const std::int64_t moved = std::min(run_uncommitted_ns_, wall);
    run_uncommitted_ns_ -= moved;
    r_.lost_run += Duration::from_ns(moved);
}

void JobLedger::complete(std::int64_t t) {
    advance(t);
    work_ns_ = total_ns_;
    committed_ns_ = work_ns_;
}

void JobLedger::close(std::int64_t end, bool finished) {
    if (!finished) {
        advance(end);
    }
    r_.work = Duration::from_ns(work_ns_);
    r_.kept_run += Duration::from_ns(run_uncommitted_ns_);
    run_uncommitted_ns_ = 0;
}

} // namespace trnsim::reliability::detail
