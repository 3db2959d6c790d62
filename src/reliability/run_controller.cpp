// The run simulation's controller (run_model.hpp): its bookkeeping, the job's state machine
// (steps, checkpoints, interruptions, restarts), the event handler and the replication's
// result. How failures reach the job (domains and spares, replica scope, the fabric, failure
// reports) is in run_failures.cpp; Setup and RunModel are in run_model.cpp.
#include "run_model.hpp"
#include "trnsim/reliability/outages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability::detail {

// ------------------------------------------------------------------------------------------
// Controller: bookkeeping

Controller::Controller(const Setup& setup, bool record, bool record_checkpoints)
    : setup_(setup), record_(record), record_checkpoints_(record_checkpoints) {
    const Layout& l = setup.layout;
    const std::size_t processes = setup.failures.processes().size();
    r_.failures_by_process.assign(processes, 0);
    r_.interruptions_by_process.assign(processes, 0);
    slot_domain_.resize(static_cast<std::size_t>(l.job_domains()));
    domain_slot_.assign(static_cast<std::size_t>(l.domains()), -1);
    domain_up_.assign(static_cast<std::size_t>(l.domains()), 1);
    for (std::int64_t d = 0; d < l.job_domains(); ++d) {
        slot_domain_[static_cast<std::size_t>(d)] = d;
        domain_slot_[static_cast<std::size_t>(d)] = d;
    }
    for (std::int64_t d = l.job_domains(); d < l.domains(); ++d) {
        pool_.insert(d);
    }
    active_domains_ = l.job_domains();
    costs_ = setup.costs(active_domains_);
    interval_ = setup.interval(active_domains_);
    if (setup.input.spec.recovery.scope == RecoveryScope::replica) {
        replica_hits_.assign(static_cast<std::size_t>(std::max(setup.input.job.dp, 1)), 0);
    }
}

void Controller::timer(Sink& s, std::int64_t at, std::uint16_t kind, std::uint64_t payload) {
    s.at(setup_.layout.controller(), at + kReportLatencyNs, kTimer, payload, kind,
         kTimerPriority);
}

void Controller::record(std::int64_t t, EventKind kind, engine::EntityId entity,
                        std::int64_t domain, int process) {
    if (!record_ || (kind == EventKind::checkpoint && !record_checkpoints_)) {
        return;
    }
    RunEvent ev;
    ev.time_ns = t;
    ev.kind = kind;
    ev.domain = domain;
    ev.process = process;
    if (entity != 0) {
        const Layout::Located where = setup_.layout.locate(entity);
        if (where.kind == EntityKind::component || where.kind == EntityKind::power) {
            ev.component = where.cls;
            ev.component_index = where.index;
        }
    }
    r_.events.push_back(ev);
}

void Controller::count_interruption(int process) {
    ++r_.interruptions;
    ++r_.interruptions_by_process[static_cast<std::size_t>(process)];
}

void Controller::advance(std::int64_t t) {
    const std::int64_t dt = t - since_;
    if (dt > 0 && state_ != JobState::done) {
        r_.state_ns[static_cast<std::size_t>(state_)] += dt;
        if (running()) {
            run_uncommitted_ns_ += dt;
            since_checkpoint_ns_ += dt;
            const std::int64_t gain =
                rate_ == 1.0 ? dt
                             : static_cast<std::int64_t>(std::floor(static_cast<double>(dt) * rate_));
            work_ns_ = std::min(work_ns_ + gain, setup_.work_ns);
        }
    }
    since_ = t;
}

void Controller::enter(JobState next, std::int64_t t) {
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
    r_.timeline.push_back({t, state_, static_cast<double>(work_ns_) * 1e-9,
                           static_cast<double>(committed_ns_) * 1e-9, rate_});
}

double Controller::current_rate() {
    fabric_factor_ = fabric_factor(); // the job's domains may have changed since
    if (fabric_factor_ <= 0.0) {
        return 0.0;
    }
    const std::optional<double> step = setup_.step_time(active_domains_, fabric_factor_);
    if (!step || !(*step > 0.0)) {
        return 0.0;
    }
    double r = setup_.input.job.step_s / *step;
    if (!replica_hits_.empty()) {
        const double dp = static_cast<double>(replica_hits_.size());
        r *= (dp - static_cast<double>(replicas_down_)) / dp;
    }
    return r;
}

// ------------------------------------------------------------------------------------------
// Controller: the job

void Controller::start(Sink& s) {
    state_ = JobState::running;
    since_ = 0;
    rate_ = current_rate();
    if (record_) {
        r_.timeline.push_back({0, state_, 0.0, 0.0, rate_});
    }
    schedule_next(s, 0);
}

void Controller::resume(Sink& s, std::int64_t t) {
    const double r = current_rate();
    advance(t);
    rate_ = r;
    enter(r < 1.0 ? JobState::running_degraded : JobState::running, t);
    schedule_next(s, t);
}

void Controller::rate_changed(Sink& s, std::int64_t t) {
    if (running()) {
        resume(s, t); // accounts the old rate up to t, then continues at the new one
    }
}

void Controller::schedule_next(Sink& s, std::int64_t t) {
    ++epoch_;
    if (!(rate_ > 0.0)) {
        done_at_ = engine::kNever; // stalled until the rate changes
        return;
    }
    const std::int64_t remaining = setup_.work_ns - work_ns_;
    done_at_ = t + (rate_ == 1.0 ? remaining
                                 : static_cast<std::int64_t>(
                                       std::ceil(static_cast<double>(remaining) / rate_)));
    std::int64_t next = done_at_;
    if (!checkpoint_deferred_ && !interval_.is_max()) {
        next = std::min(next, t + std::max<std::int64_t>(0, interval_.ns() - since_checkpoint_ns_));
    }
    timer(s, next, kJobTimer, epoch_);
}

void Controller::begin_checkpoint(Sink& s, std::int64_t t) {
    enter(JobState::checkpointing, t);
    snapshot_ns_ = work_ns_;
    run_snapshot_ns_ = run_uncommitted_ns_;
    timer(s, t + costs_.stall.ns(), kJobTimer, ++epoch_);
}

void Controller::commit(Sink& s, std::int64_t t) {
    committed_ns_ = snapshot_ns_;
    r_.kept_run_ns += run_snapshot_ns_;
    run_uncommitted_ns_ -= run_snapshot_ns_;
    run_snapshot_ns_ = 0;
    ++r_.checkpoints;
    record(t, EventKind::checkpoint, 0, -1, -1);
    // A job running degraded on fewer domains goes back to full size once spares cover the
    // vacancies: a restart right after a checkpoint costs the restart and load, no progress
    // (an async checkpoint's upload completes while training continued: that part is lost).
    if (setup_.input.spec.recovery.scope == RecoveryScope::job && !vacant_.empty() &&
        pool_.size() >= vacant_.size()) {
        advance(t);
        lose_uncommitted();
        fill_vacancies(t);
        begin_restart(s, t, setup_.layout.job_domains());
    }
}

void Controller::lose_uncommitted() {
    r_.lost_work_ns += work_ns_ - committed_ns_;
    work_ns_ = committed_ns_;
    r_.lost_run_ns += run_uncommitted_ns_;
    run_uncommitted_ns_ = 0;
    run_snapshot_ns_ = 0;
}

void Controller::abort_checkpoint(std::int64_t t) {
    if (state_ == JobState::checkpointing) {
        ++r_.checkpoints_lost;
        record(t, EventKind::checkpoint_lost, 0, -1, -1);
    }
    if (upload_in_flight_) {
        upload_in_flight_ = false;
        ++upload_epoch_;
        ++r_.checkpoints_lost;
        record(t, EventKind::checkpoint_lost, 0, -1, -1);
    }
    checkpoint_deferred_ = false;
}

void Controller::interrupt(Sink& s, std::int64_t t) {
    abort_checkpoint(t);
    enter(JobState::detecting, t);
    lose_uncommitted();
    if (!replica_hits_.empty()) {
        // The replica scope falls back to restarting the whole job from its checkpoint.
        job_recovery_ = true;
        for (const auto& [slot, rec] : recovering_) {
            mark_replicas(slot, -1);
        }
        recovering_.clear();
    }
    timer(s, t + setup_.input.spec.recovery.detection.ns(), kJobTimer, ++epoch_);
}

void Controller::after_detection(Sink& s, std::int64_t t) {
    const std::int64_t full = setup_.layout.job_domains();
    fill_vacancies(t);
    if (vacant_.empty()) {
        begin_restart(s, t, full);
        return;
    }
    if (setup_.input.spec.recovery.run_degraded && replica_hits_.empty()) {
        const std::int64_t filled = full - static_cast<std::int64_t>(vacant_.size());
        const std::int64_t n = setup_.runnable_domains(filled);
        if (n > 0) {
            // Return the surplus (highest slots) to the pool.
            for (std::int64_t slot = full - 1; slot >= 0 && full - static_cast<std::int64_t>(vacant_.size()) > n; --slot) {
                const std::int64_t d = slot_domain_[static_cast<std::size_t>(slot)];
                if (d >= 0) {
                    slot_domain_[static_cast<std::size_t>(slot)] = -1;
                    domain_slot_[static_cast<std::size_t>(d)] = -1;
                    vacant_.insert(slot);
                    pool_.insert(d);
                }
            }
            begin_restart(s, t, n);
            return;
        }
    }
    enter(JobState::waiting_for_spare, t);
}

void Controller::begin_restart(Sink& s, std::int64_t t, std::int64_t domains) {
    active_domains_ = domains;
    costs_ = setup_.costs(domains);
    interval_ = setup_.interval(domains);
    enter(JobState::restarting, t);
    timer(s, t + setup_.input.spec.recovery.restart.ns(), kJobTimer, ++epoch_);
}

void Controller::complete(std::int64_t t) {
    advance(t);
    work_ns_ = setup_.work_ns;
    committed_ns_ = work_ns_;
    finished_ = true;
    end_ns_ = t;
    record(t, EventKind::done, 0, -1, -1);
    enter(JobState::done, t);
}

void Controller::on_job_timer(Sink& s, std::int64_t t) {
    switch (state_) {
    case JobState::running:
    case JobState::running_degraded:
        advance(t);
        if (t >= done_at_) {
            complete(t);
        } else if (upload_in_flight_) {
            checkpoint_deferred_ = true; // the next snapshot waits for the upload
            schedule_next(s, t);
        } else {
            begin_checkpoint(s, t);
        }
        break;
    case JobState::checkpointing:
        since_checkpoint_ns_ = 0;
        if (costs_.background == Duration::zero()) {
            advance(t);
            commit(s, t);
            if (state_ != JobState::checkpointing) {
                break; // a rescale restart began
            }
        } else {
            upload_in_flight_ = true;
            timer(s, t + costs_.background.ns(), kUploadTimer, ++upload_epoch_);
        }
        resume(s, t);
        break;
    case JobState::detecting:
        if (!replica_hits_.empty() && !job_recovery_) {
            resume(s, t); // the replica-scope stall is over
        } else {
            after_detection(s, t);
        }
        break;
    case JobState::restarting:
        enter(JobState::loading, t);
        timer(s, t + costs_.restore.ns(), kJobTimer, ++epoch_);
        break;
    case JobState::loading:
        job_recovery_ = false;
        since_checkpoint_ns_ = 0;
        resume(s, t);
        break;
    case JobState::waiting_for_spare:
    case JobState::done:
        break;
    }
}

void Controller::on_upload_timer(Sink& s, std::int64_t t) {
    upload_in_flight_ = false;
    advance(t);
    commit(s, t);
    if (checkpoint_deferred_ && running()) {
        checkpoint_deferred_ = false;
        begin_checkpoint(s, t);
    }
}

// ------------------------------------------------------------------------------------------
// Controller: events and the result

void Controller::handle(Sink& s, const engine::Event& e) {
    if (finished_) {
        return;
    }
    const std::int64_t t = e.time - kReportLatencyNs;
    switch (e.type) {
    case kReportFailure:
        on_failure(s, t, e);
        break;
    case kReportRepaired:
        on_repaired(s, t, static_cast<std::int64_t>(e.payload));
        break;
    case kReportRestored:
        if (setup_.impact[e.aux & kProcessMask] == Impact::fabric_degrade) {
            on_restored(s, t, static_cast<engine::EntityId>(e.payload));
        }
        break;
    case kTimer:
        if (e.aux == kJobTimer && e.payload == epoch_) {
            on_job_timer(s, t);
        } else if (e.aux == kUploadTimer && e.payload == upload_epoch_ && upload_in_flight_) {
            on_upload_timer(s, t);
        } else if (e.aux == kSlotTimer) {
            const auto slot = static_cast<std::int64_t>(e.payload >> 32);
            const auto it = recovering_.find(slot);
            if (it != recovering_.end() &&
                it->second.epoch == static_cast<std::uint32_t>(e.payload)) {
                on_slot_timer(s, t, slot);
            }
        }
        break;
    default:
        break;
    }
}

void Controller::finish(std::int64_t end, ReplicationResult& out) {
    if (!finished_) {
        advance(end);
    }
    r_.done = finished_;
    r_.wall_ns = finished_ ? end_ns_ : end;
    r_.work_ns = work_ns_;
    // Progress not yet in a checkpoint when the run ends is kept: the job was not interrupted.
    r_.kept_run_ns += run_uncommitted_ns_;
    run_uncommitted_ns_ = 0;
    out = std::move(r_);
}

} // namespace trnsim::reliability::detail
