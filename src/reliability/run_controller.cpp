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
    : setup_(setup), record_(record), record_checkpoints_(record_checkpoints),
      ledger_(r_, setup.work_ns, record, record_checkpoints), domains_(setup.layout),
      replicas_(setup.input.spec.recovery.scope == RecoveryScope::replica
                    ? std::max(setup.input.job.dp, 1)
                    : 0,
                setup.input.job.ranks_per_domain, setup.input.job.tp),
      fabric_(setup.layout) {
    const Layout& l = setup.layout;
    const std::size_t processes = setup.failures.processes().size();
    r_.failures_by_process.assign(processes, 0);
    r_.interruptions_by_process.assign(processes, 0);
    active_domains_ = l.job_domains();
    costs_ = setup.costs(active_domains_);
    interval_ = setup.interval(active_domains_);
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
    ev.time = SimTime::from_ns(t);
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

double Controller::current_rate() {
    fabric_factor_ = fabric_.factor(domains_); // the job's domains may have changed since
    if (fabric_factor_ <= 0.0) {
        return 0.0;
    }
    const std::optional<double> step = setup_.step_time(active_domains_, fabric_factor_);
    if (!step || !(*step > 0.0)) {
        return 0.0;
    }
    double r = setup_.input.job.step.seconds() / *step;
    if (replicas_.enabled()) {
        r *= replicas_.healthy_fraction();
    }
    return r;
}

// ------------------------------------------------------------------------------------------
// Controller: the job

void Controller::start(Sink& s) {
    ledger_.start(current_rate());
    schedule_next(s, 0);
}

void Controller::resume(Sink& s, std::int64_t t) {
    const double r = current_rate();
    ledger_.set_rate(t, r);
    ledger_.enter(r < 1.0 ? JobState::running_degraded : JobState::running, t);
    schedule_next(s, t);
}

void Controller::rate_changed(Sink& s, std::int64_t t) {
    if (ledger_.running()) {
        resume(s, t); // accounts the old rate up to t, then continues at the new one
    }
}

void Controller::schedule_next(Sink& s, std::int64_t t) {
    ++epoch_;
    const double rate = ledger_.rate();
    if (!(rate > 0.0)) {
        done_at_ = engine::kNever; // stalled until the rate changes
        return;
    }
    const std::int64_t remaining = ledger_.remaining_ns();
    done_at_ = t + (rate == 1.0 ? remaining
                                : static_cast<std::int64_t>(
                                      std::ceil(static_cast<double>(remaining) / rate)));
    std::int64_t next = done_at_;
    if (!checkpoint_deferred_ && !interval_.is_max()) {
        next = std::min(next, t + std::max<std::int64_t>(
                                      0, interval_.ns() - ledger_.since_checkpoint_ns()));
    }
    timer(s, next, kJobTimer, epoch_);
}

void Controller::begin_checkpoint(Sink& s, std::int64_t t) {
    ledger_.enter(JobState::checkpointing, t);
    ledger_.snapshot();
    timer(s, t + costs_.stall.ns(), kJobTimer, ++epoch_);
}

void Controller::commit(Sink& s, std::int64_t t) {
    ledger_.commit();
    ++r_.checkpoints;
    record(t, EventKind::checkpoint, 0, -1, -1);
    // A job running degraded on fewer domains goes back to full size once spares cover the
    // vacancies: a restart right after a checkpoint costs the restart and load, no progress
    // (an async checkpoint's upload completes while training continued: that part is lost).
    if (setup_.input.spec.recovery.scope == RecoveryScope::job && domains_.vacancies() > 0 &&
        domains_.spares() >= domains_.vacancies()) {
        ledger_.advance(t);
        ledger_.lose_uncommitted();
        fill_vacancies(t);
        begin_restart(s, t, setup_.layout.job_domains());
    }
}

void Controller::abort_checkpoint(std::int64_t t) {
    if (ledger_.state() == JobState::checkpointing) {
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
    ledger_.enter(JobState::detecting, t);
    ledger_.lose_uncommitted();
    if (replicas_.enabled()) {
        // The replica scope falls back to restarting the whole job from its checkpoint.
        job_recovery_ = true;
        replicas_.clear();
    }
    timer(s, t + setup_.input.spec.recovery.detection.ns(), kJobTimer, ++epoch_);
}

void Controller::after_detection(Sink& s, std::int64_t t) {
    const std::int64_t full = setup_.layout.job_domains();
    fill_vacancies(t);
    if (domains_.vacancies() == 0) {
        begin_restart(s, t, full);
        return;
    }
    if (setup_.input.spec.recovery.run_degraded && !replicas_.enabled()) {
        const auto filled = [&] {
            return full - static_cast<std::int64_t>(domains_.vacancies());
        };
        const std::int64_t n = setup_.runnable_domains(filled());
        if (n > 0) {
            // Return the surplus (highest slots) to the pool.
            for (std::int64_t slot = full - 1; slot >= 0 && filled() > n; --slot) {
                domains_.release(slot);
            }
            begin_restart(s, t, n);
            return;
        }
    }
    ledger_.enter(JobState::waiting_for_spare, t);
}

void Controller::begin_restart(Sink& s, std::int64_t t, std::int64_t domains) {
    active_domains_ = domains;
    costs_ = setup_.costs(domains);
    interval_ = setup_.interval(domains);
    ledger_.enter(JobState::restarting, t);
    timer(s, t + setup_.input.spec.recovery.restart.ns(), kJobTimer, ++epoch_);
}

void Controller::complete(std::int64_t t) {
    ledger_.complete(t);
    finished_ = true;
    end_ns_ = t;
    record(t, EventKind::done, 0, -1, -1);
    ledger_.enter(JobState::done, t);
}

void Controller::on_job_timer(Sink& s, std::int64_t t) {
    switch (ledger_.state()) {
    case JobState::running:
    case JobState::running_degraded:
        ledger_.advance(t);
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
        ledger_.checkpoint_taken();
        if (costs_.background == Duration::zero()) {
            ledger_.advance(t);
            commit(s, t);
            if (ledger_.state() != JobState::checkpointing) {
                break; // a rescale restart began
            }
        } else {
            upload_in_flight_ = true;
            timer(s, t + costs_.background.ns(), kUploadTimer, ++upload_epoch_);
        }
        resume(s, t);
        break;
    case JobState::detecting:
        if (replicas_.enabled() && !job_recovery_) {
            resume(s, t); // the replica-scope stall is over
        } else {
            after_detection(s, t);
        }
        break;
    case JobState::restarting:
        ledger_.enter(JobState::loading, t);
        timer(s, t + costs_.restore.ns(), kJobTimer, ++epoch_);
        break;
    case JobState::loading:
        job_recovery_ = false;
        ledger_.checkpoint_taken();
        resume(s, t);
        break;
    case JobState::waiting_for_spare:
    case JobState::done:
        break;
    }
}

void Controller::on_upload_timer(Sink& s, std::int64_t t) {
    upload_in_flight_ = false;
    ledger_.advance(t);
    commit(s, t);
    if (checkpoint_deferred_ && ledger_.running()) {
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
            if (replicas_.current(e.payload)) {
                on_slot_timer(s, t, static_cast<std::int64_t>(e.payload >> 32));
            }
        }
        break;
    default:
        break;
    }
}

void Controller::finish(std::int64_t end, ReplicationResult& out) {
    // Progress not yet in a checkpoint when the run ends is kept: the job was not interrupted.
    ledger_.close(end, finished_);
    r_.done = finished_;
    r_.wall = Duration::from_ns(finished_ ? end_ns_ : end);
    out = std::move(r_);
}

} // namespace trnsim::reliability::detail
