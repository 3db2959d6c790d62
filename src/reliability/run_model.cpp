#include "run_model.hpp"
#include "trnsim/reliability/outages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability::detail {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// now + d, saturating at "never".
std::int64_t later(std::int64_t now, Duration d) {
    return d.is_max() || d.ns() > engine::kNever - now ? engine::kNever : now + d.ns();
}

} // namespace

// ------------------------------------------------------------------------------------------
// Setup

Setup::Setup(const RunInput& in)
    : input(in), failures(in.spec.failures, in.spec.trace),
      layout(in.cluster, in.hardware, in.spec.fabric, in.spec.spares.count(),
             failures.present_classes()) {
    for (const Process& p : failures.processes()) {
        impact.push_back(layout.impact(p.cls, p.effect));
    }
    work_ns = Duration::from_seconds_ceil(static_cast<double>(in.job.steps) * in.job.step_s).ns();
    step_ns = Duration::from_seconds_ceil(in.job.step_s).ns();
    for (const TraceFailure& t : in.spec.trace.failures) {
        trace.push_back({t.time.ns(), layout.component(t.component, t.index),
                         failures.trace_process(t.component, t.cause)});
    }
}

double Setup::job_failure_rate(std::int64_t domains) const {
    double rate = 0.0;
    const auto& procs = failures.processes();
    for (std::size_t i = 0; i < procs.size(); ++i) {
        const Process& p = procs[i];
        const double r = p.population_rate();
        switch (impact[i]) {
        case Impact::replace_domain:
        case Impact::restart_only:
            rate += r * static_cast<double>(layout.per_domain(p.cls) * domains);
            break;
        case Impact::power:
            rate += r * static_cast<double>(ceil_div(domains, layout.domains_per_power()));
            break;
        case Impact::fabric_interrupt:
            // Only the switches the job's traffic crosses (not those of idle spares).
            rate += r * static_cast<double>(layout.switches_carrying(p.cls, domains));
            break;
        case Impact::fabric_degrade:
            break;
        }
    }
    return rate;
}

CheckpointCosts Setup::costs(std::int64_t domains) const {
    return checkpoint_costs(input.spec.checkpoint, input.job.checkpoint_size,
                            domains * layout.chips_per_domain(),
                            domains * layout.instances_per_domain(), domains,
                            input.hardware.efa_bandwidth_per_instance);
}

Duration Setup::interval(std::int64_t domains) const {
    return checkpoint_interval(input.spec.checkpoint, costs(domains), job_failure_rate(domains),
                               input.job.step_s)
        .every;
}

std::optional<double> Setup::step_time(std::int64_t domains, double f) const {
    if (domains == layout.job_domains() && f == 1.0) {
        return input.job.step_s;
    }
    if (!input.job.step_time) {
        // No step model: the step time does not depend on the configuration.
        return input.job.step_s;
    }
    const std::lock_guard<std::mutex> lock(step_mutex_);
    const auto key = std::make_pair(domains, f);
    auto it = step_cache_.find(key);
    if (it == step_cache_.end()) {
        it = step_cache_.emplace(key, input.job.step_time(domains, f)).first;
    }
    return it->second;
}

RunFacts Setup::facts() const {
    RunFacts f;
    const std::int64_t jobs = layout.job_domains();
    f.job_domains = jobs;
    f.spare_domains = layout.spare_domains();
    f.instances_per_domain = layout.instances_per_domain();
    f.entities = layout.entities();
    for (ComponentClass c : kAllClasses) {
        f.components[static_cast<std::size_t>(c)] = layout.present(c) ? layout.count(c) : 0;
    }
    f.job_failure_rate = job_failure_rate(jobs);
    const CheckpointCosts c = costs(jobs);
    const CheckpointInterval chosen = checkpoint_interval(
        input.spec.checkpoint, c, job_failure_rate(jobs), input.job.step_s);
    f.checkpoint_interval_s = chosen.every.is_max() ? std::numeric_limits<double>::infinity()
                                                    : chosen.every.seconds();
    f.checkpoint_interval_reason = chosen.reason;
    f.checkpoint_daly_s = chosen.daly.seconds();
    f.checkpoint_stall_s = c.stall.seconds();
    f.checkpoint_background_s = c.background.seconds();
    f.restore_s = c.restore.seconds();
    f.replica_restore_s = c.replica_restore.seconds();
    f.checkpoint_size = input.job.checkpoint_size;
    f.work_s = static_cast<double>(work_ns) * 1e-9;
    return f;
}

std::int64_t Setup::runnable_domains(std::int64_t domains) const {
    for (std::int64_t n = domains; n > 0; --n) {
        if (step_time(n, 1.0)) {
            return n;
        }
    }
    return 0;
}

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
// Controller: domains and spares

std::int64_t Controller::take_spare(std::int64_t t, std::int64_t slot) {
    const std::int64_t d = *pool_.begin();
    pool_.erase(pool_.begin());
    slot_domain_[static_cast<std::size_t>(slot)] = d;
    domain_slot_[static_cast<std::size_t>(d)] = slot;
    vacant_.erase(slot);
    ++r_.spares_assigned;
    record(t, EventKind::spare_assigned, 0, d, -1);
    return d;
}

void Controller::fill_vacancies(std::int64_t t) {
    while (!vacant_.empty() && !pool_.empty()) {
        take_spare(t, *vacant_.begin());
    }
}

void Controller::domain_down(Sink& s, std::int64_t t, std::int64_t domain, int process,
                             bool count) {
    domain_up_[static_cast<std::size_t>(domain)] = 0;
    const std::int64_t slot = domain_slot_[static_cast<std::size_t>(domain)];
    if (slot < 0) {
        pool_.erase(domain); // a spare (or a surplus domain) broke
        return;
    }
    slot_domain_[static_cast<std::size_t>(slot)] = -1;
    domain_slot_[static_cast<std::size_t>(domain)] = -1;
    vacant_.insert(slot);
    if (count) {
        count_interruption(process);
        record(t, EventKind::interruption, 0, domain, process);
    }
    if (!replica_hits_.empty() && !job_recovery_) {
        replica_failure(s, t, slot, true);
    } else {
        interrupt(s, t);
    }
}

void Controller::on_repaired(Sink& s, std::int64_t t, std::int64_t domain) {
    domain_up_[static_cast<std::size_t>(domain)] = 1;
    pool_.insert(domain);
    record(t, EventKind::repaired, 0, domain, -1);
    if (state_ == JobState::waiting_for_spare) {
        fill_vacancies(t);
        if (vacant_.empty()) {
            begin_restart(s, t, setup_.layout.job_domains());
        }
    }
    serve_waiting_slots(s, t);
}

// ------------------------------------------------------------------------------------------
// Controller: replica scope

void Controller::mark_replicas(std::int64_t slot, int delta) {
    const std::int64_t dp = static_cast<std::int64_t>(replica_hits_.size());
    const std::int64_t tp = std::max(setup_.input.job.tp, 1);
    const std::int64_t ranks = setup_.input.job.ranks_per_domain;
    const std::int64_t first = slot * ranks / tp;
    const std::int64_t last = ((slot + 1) * ranks - 1) / tp;
    const std::int64_t n = std::min(dp, last - first + 1);
    for (std::int64_t g = first; g < first + n; ++g) {
        std::uint16_t& hits = replica_hits_[static_cast<std::size_t>(g % dp)];
        if (delta > 0) {
            replicas_down_ += hits == 0 ? 1 : 0;
            ++hits;
        } else {
            --hits;
            replicas_down_ -= hits == 0 ? 1 : 0;
        }
    }
}

void Controller::stall(Sink& s, std::int64_t t) {
    stall_until_ = std::max(stall_until_, t + setup_.input.spec.recovery.detection.ns());
    timer(s, stall_until_, kJobTimer, ++epoch_);
}

void Controller::replica_failure(Sink& s, std::int64_t t, std::int64_t slot, bool needs_domain) {
    auto it = recovering_.find(slot);
    if (it == recovering_.end()) {
        mark_replicas(slot, +1);
        it = recovering_.emplace(slot, SlotRecovery{}).first;
        it->second.needs_domain = false;
    }
    SlotRecovery& rec = it->second;
    rec.stage = SlotRecovery::detecting;
    rec.epoch = ++slot_epoch_;
    rec.needs_domain = rec.needs_domain || needs_domain;
    timer(s, t + setup_.input.spec.recovery.detection.ns(), kSlotTimer,
          (static_cast<std::uint64_t>(slot) << 32) | rec.epoch);
    if (replicas_down_ >= static_cast<std::int64_t>(replica_hits_.size())) {
        interrupt(s, t); // no healthy replica left
        return;
    }
    // The whole job hangs until the failure is detected; the step in progress is lost.
    if (running() || state_ == JobState::checkpointing) {
        abort_checkpoint(t);
        enter(JobState::detecting, t);
        std::int64_t lost = setup_.step_ns > 0 ? work_ns_ % setup_.step_ns : 0;
        lost = std::min(lost, work_ns_ - committed_ns_);
        work_ns_ -= lost;
        r_.lost_work_ns += lost;
        const std::int64_t wall =
            rate_ > 0.0 ? static_cast<std::int64_t>(std::ceil(static_cast<double>(lost) / rate_))
                        : 0;
        const std::int64_t moved = std::min(run_uncommitted_ns_, wall);
        run_uncommitted_ns_ -= moved;
        r_.lost_run_ns += moved;
        stall_until_ = t;
    }
    if (state_ == JobState::detecting) {
        stall(s, t);
    }
}

void Controller::on_slot_timer(Sink& s, std::int64_t t, std::int64_t slot) {
    SlotRecovery& rec = recovering_.at(slot);
    const std::uint64_t key = static_cast<std::uint64_t>(slot) << 32;
    switch (rec.stage) {
    case SlotRecovery::detecting:
        if (rec.needs_domain && slot_domain_[static_cast<std::size_t>(slot)] < 0) {
            if (pool_.empty()) {
                rec.stage = SlotRecovery::waiting;
                return;
            }
            take_spare(t, slot);
        }
        rec.stage = SlotRecovery::restarting;
        rec.epoch = ++slot_epoch_;
        timer(s, t + setup_.input.spec.recovery.restart.ns(), kSlotTimer, key | rec.epoch);
        break;
    case SlotRecovery::restarting:
        rec.stage = SlotRecovery::loading;
        rec.epoch = ++slot_epoch_;
        timer(s, t + costs_.replica_restore.ns(), kSlotTimer, key | rec.epoch);
        break;
    case SlotRecovery::loading:
        mark_replicas(slot, -1);
        recovering_.erase(slot);
        rate_changed(s, t);
        break;
    case SlotRecovery::waiting:
        break;
    }
}

void Controller::serve_waiting_slots(Sink& s, std::int64_t t) {
    for (auto& [slot, rec] : recovering_) {
        if (pool_.empty()) {
            return;
        }
        if (rec.stage == SlotRecovery::waiting) {
            take_spare(t, slot);
            rec.stage = SlotRecovery::restarting;
            rec.epoch = ++slot_epoch_;
            timer(s, t + setup_.input.spec.recovery.restart.ns(), kSlotTimer,
                  (static_cast<std::uint64_t>(slot) << 32) | rec.epoch);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Controller: fabric

void Controller::fabric_change(engine::EntityId element, int delta) {
    const Layout& l = setup_.layout;
    const Layout::Located where = l.locate(element);
    const auto bump = [delta](std::map<std::int64_t, int>& m, std::int64_t key) {
        if ((m[key] += delta) == 0) {
            m.erase(key);
        }
    };
    switch (where.cls) {
    case ComponentClass::nic:
        bump(rails_down_, where.index / l.rails());
        break;
    case ComponentClass::leaf: {
        const std::int64_t block = where.index % l.leaves_per_rail();
        const std::int64_t instances = l.domains() * l.instances_per_domain();
        const std::int64_t first = block * l.instances_per_leaf();
        const std::int64_t last = std::min(first + l.instances_per_leaf(), instances);
        for (std::int64_t i = first; i < last; ++i) {
            bump(rails_down_, i);
        }
        break;
    }
    case ComponentClass::spine:
        bump(spines_down_, l.pod_of_spine(where.index));
        break;
    case ComponentClass::core:
        cores_down_ += delta;
        break;
    default:
        break;
    }
    fabric_factor_ = fabric_factor();
}

double Controller::fabric_factor() const {
    // Degraded elements slow the job only where its traffic goes: its own instances' rails,
    // the spines of the pods it uses, the cores when it spans pods.
    const Layout& l = setup_.layout;
    int worst_rails = 0;
    for (const auto& [instance, down] : rails_down_) {
        if (in_job(instance / l.instances_per_domain())) {
            worst_rails = std::max(worst_rails, down);
        }
    }
    int worst_spines = 0;
    for (const auto& [pod, down] : spines_down_) {
        if (pod_carries_job(pod)) {
            worst_spines = std::max(worst_spines, down);
        }
    }
    double f = static_cast<double>(l.rails() - std::min(worst_rails, l.rails())) /
               static_cast<double>(l.rails());
    if (worst_spines > 0) {
        f *= static_cast<double>(std::max<std::int64_t>(l.spines_per_pod() - worst_spines, 0)) /
             static_cast<double>(l.spines_per_pod());
    }
    if (cores_down_ > 0 && job_spans_pods()) {
        const std::int64_t cores = l.count(ComponentClass::core);
        f *= static_cast<double>(std::max<std::int64_t>(cores - cores_down_, 0)) /
             static_cast<double>(cores);
    }
    return f;
}

// ------------------------------------------------------------------------------------------
// Controller: reports

void Controller::on_failure(Sink& s, std::int64_t t, const engine::Event& e) {
    const auto entity = static_cast<engine::EntityId>(e.payload & 0xffffffffu);
    const auto domain32 = static_cast<std::uint32_t>(e.payload >> 32);
    const std::int64_t domain = domain32 == kNoDomain ? -1 : std::int64_t{domain32};
    const int process = e.aux & kProcessMask;
    const bool secondary = (e.aux & kSecondary) != 0;
    const bool went_down = (e.aux & kWentDown) != 0;
    if (!secondary) {
        ++r_.failures;
        ++r_.failures_by_process[static_cast<std::size_t>(process)];
        record(t, EventKind::failure, entity, domain, process);
    }
    switch (setup_.impact[static_cast<std::size_t>(process)]) {
    case Impact::replace_domain:
    case Impact::power:
        if (went_down) {
            bool count = true;
            if (secondary) {
                // One power failure is one interruption, however many job domains it takes.
                count = !(last_power_.first == entity && last_power_.second == t);
                if (count && domain_slot_[static_cast<std::size_t>(domain)] >= 0) {
                    last_power_ = {entity, t};
                }
            }
            domain_down(s, t, domain, process, count);
        }
        break;
    case Impact::restart_only: {
        const std::int64_t slot = domain_slot_[static_cast<std::size_t>(domain)];
        if (slot < 0) {
            break; // not in the job
        }
        count_interruption(process);
        record(t, EventKind::interruption, entity, domain, process);
        if (!replica_hits_.empty() && !job_recovery_) {
            replica_failure(s, t, slot, false);
        } else {
            interrupt(s, t);
        }
        break;
    }
    case Impact::fabric_interrupt:
        if (!carries_job(entity)) {
            break; // a switch of the idle spares only: the job does not notice
        }
        count_interruption(process);
        record(t, EventKind::interruption, entity, -1, process);
        interrupt(s, t);
        break;
    case Impact::fabric_degrade: {
        // Counted wherever it is (the job may move onto it); slows the job only when it
        // carries the job's traffic (fabric_factor).
        const bool job = carries_job(entity);
        fabric_change(entity, +1);
        if (job) {
            record(t, EventKind::degraded, entity, -1, process);
            rate_changed(s, t);
        }
        break;
    }
    }
}

bool Controller::in_job(std::int64_t domain) const {
    return domain >= 0 && domain_slot_[static_cast<std::size_t>(domain)] >= 0;
}

bool Controller::leaf_carries_job(std::int64_t leaf) const {
    const auto [first, last] = setup_.layout.domains_of_leaf(leaf);
    for (std::int64_t d = first; d < last; ++d) {
        if (in_job(d)) {
            return true;
        }
    }
    return false;
}

bool Controller::pod_carries_job(std::int64_t pod) const {
    const Layout& l = setup_.layout;
    const std::int64_t leaves = l.count(ComponentClass::leaf);
    for (std::int64_t leaf = pod * l.leaves_per_pod();
         leaf < std::min(leaves, (pod + 1) * l.leaves_per_pod()); ++leaf) {
        if (leaf_carries_job(leaf)) {
            return true;
        }
    }
    return false;
}

bool Controller::job_spans_pods() const {
    const Layout& l = setup_.layout;
    std::int64_t seen = -1;
    for (std::int64_t d : slot_domain_) {
        if (d < 0) {
            continue;
        }
        for (std::int64_t i = d * l.instances_per_domain(); i < (d + 1) * l.instances_per_domain();
             ++i) {
            for (std::int64_t r = 0; r < l.rails(); ++r) {
                const std::int64_t pod =
                    l.pod_of_leaf(r * l.leaves_per_rail() + i / l.instances_per_leaf());
                if (seen >= 0 && pod != seen) {
                    return true;
                }
                seen = pod;
            }
        }
    }
    return false;
}

bool Controller::carries_job(engine::EntityId element) const {
    const Layout& l = setup_.layout;
    const Layout::Located where = l.locate(element);
    switch (where.cls) {
    case ComponentClass::nic:
        return in_job(where.domain);
    case ComponentClass::leaf:
        return leaf_carries_job(where.index);
    case ComponentClass::spine:
        return pod_carries_job(l.pod_of_spine(where.index));
    case ComponentClass::core:
        return job_spans_pods();
    default:
        return true;
    }
}

void Controller::on_restored(Sink& s, std::int64_t t, engine::EntityId element) {
    const bool job = carries_job(element);
    fabric_change(element, -1);
    if (job) {
        record(t, EventKind::restored, element, -1, -1);
        rate_changed(s, t);
    }
}

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

// ------------------------------------------------------------------------------------------
// RunModel: components, domains, power domains

RunModel::RunModel(const Setup& setup, std::uint64_t seed, std::uint32_t replication, bool record,
                   bool record_checkpoints)
    : setup_(setup), seed_(seed), replication_(replication),
      comps_(setup.layout.entities()),
      domains_(static_cast<std::size_t>(setup.layout.domains())),
      controller_(setup, record, record_checkpoints) {
    const Layout& l = setup.layout;
    for (ComponentClass c : kAllClasses) {
        if (!l.present(c)) {
            continue;
        }
        const std::int64_t per = l.per_domain(c);
        for (std::int64_t i = 0; i < l.count(c); ++i) {
            Component& comp = comps_[l.component(c, i)];
            comp.cls = c;
            comp.flags = kIsComponent;
            comp.domain = Layout::domain_class(c) ? static_cast<std::uint32_t>(i / per)
                                                  : static_cast<std::uint32_t>(i);
        }
    }
    for (std::int64_t d = 0; d < l.domains(); ++d) {
        comps_[l.domain_entity(d)].domain = static_cast<std::uint32_t>(d);
    }
}

void RunModel::report(Sink& s, std::int64_t now, engine::EventType type, std::uint64_t payload,
                      std::uint16_t aux) {
    s.at(setup_.layout.controller(), now + kReportLatencyNs, type, payload, aux, 0);
}

void RunModel::queue(Sink& s, engine::EntityId id) {
    Component& c = comps_[id];
    if (c.next_ns < horizon_) {
        s.at(id, c.next_ns, kFail, c.generation, 0, 0);
        c.flags |= kQueued;
    }
}

void RunModel::arm(Sink& s, engine::EntityId id, std::int64_t now) {
    Component& c = comps_[id];
    const FailureModel::Draw d =
        setup_.failures.draw(c.cls, id, seed_, replication_, c.blocks);
    c.flags &= static_cast<std::uint8_t>(~kFailed);
    c.process = d.process;
    c.next_ns = later(now, Duration::from_seconds_ceil(d.lifetime_s));
    queue(s, id);
}

Duration RunModel::repair_time(engine::RandomStream& stream) const {
    return draw_repair_time(setup_.input.spec.repair, stream);
}

void RunModel::fail(Sink& s, engine::EntityId self, std::int64_t now, std::uint16_t process) {
    Component& c = comps_[self];
    c.flags = static_cast<std::uint8_t>((c.flags | kFailed) & ~kQueued);
    ++c.generation;
    c.next_ns = engine::kNever;
    c.process = process;
    const Layout& l = setup_.layout;
    const std::uint64_t no_domain = std::uint64_t{kNoDomain} << 32;
    switch (setup_.impact[process]) {
    case Impact::replace_domain:
        s.at(l.domain_entity(c.domain), now, kDomainHit, self, process, 0);
        break;
    case Impact::restart_only:
        report(s, now, kReportFailure, (std::uint64_t{c.domain} << 32) | self, process);
        arm(s, self, now);
        break;
    case Impact::power: {
        report(s, now, kReportFailure, no_domain | self, process);
        const std::int64_t first = std::int64_t{c.domain} * l.domains_per_power();
        const std::int64_t last = std::min(first + l.domains_per_power(), l.domains());
        for (std::int64_t d = first; d < last; ++d) {
            s.at(l.domain_entity(d), now, kDomainHit, self,
                 static_cast<std::uint16_t>(process | kSecondary), 0);
        }
        arm(s, self, now);
        break;
    }
    case Impact::fabric_interrupt:
    case Impact::fabric_degrade: {
        report(s, now, kReportFailure, no_domain | self, process);
        engine::RandomStream stream(seed_, stream_kind(StreamPurpose::lifetime, replication_),
                                    self, c.blocks);
        const Duration t = repair_time(stream);
        c.blocks = static_cast<std::uint32_t>(stream.blocks_used());
        s.at(self, later(now, t), kElementRepaired, c.generation, 0, 0);
        break;
    }
    }
}

void RunModel::domain_hit(Sink& s, std::int64_t now, std::int64_t domain,
                          engine::EntityId source, std::uint16_t aux) {
    DomainState& d = domains_[static_cast<std::size_t>(domain)];
    const bool secondary = (aux & kSecondary) != 0;
    if (!secondary) {
        d.failed.push_back(source);
    }
    bool went_down = false;
    if (d.in_service) {
        d.in_service = false;
        went_down = true;
        const engine::EntityId self = setup_.layout.domain_entity(domain);
        engine::RandomStream stream(seed_, stream_kind(StreamPurpose::repair, replication_), self,
                                    d.repair_blocks);
        const Duration t = repair_time(stream);
        d.repair_blocks = static_cast<std::uint32_t>(stream.blocks_used());
        s.at(self, later(now, t), kRepairDone, 0, 0, 0);
    }
    report(s, now, kReportFailure, (static_cast<std::uint64_t>(domain) << 32) | source,
           static_cast<std::uint16_t>(aux | (went_down ? kWentDown : 0)));
}

void RunModel::dispatch(Sink& s, engine::EntityId self, std::int64_t now,
                        const engine::Event& e) {
    switch (e.type) {
    case kFail: {
        Component& c = comps_[self];
        if (e.payload != c.generation) {
            return; // superseded by a trace failure
        }
        c.flags &= static_cast<std::uint8_t>(~kQueued);
        if ((c.flags & kFailed) == 0) {
            fail(s, self, now, c.process);
        }
        break;
    }
    case kTraceFail:
        if ((comps_[self].flags & kFailed) == 0) {
            fail(s, self, now, static_cast<std::uint16_t>(e.payload));
        }
        break;
    case kDomainHit:
        domain_hit(s, now, comps_[self].domain, static_cast<engine::EntityId>(e.payload), e.aux);
        break;
    case kRepairDone: {
        DomainState& d = domains_[comps_[self].domain];
        d.in_service = true;
        for (engine::EntityId id : d.failed) {
            arm(s, id, now);
        }
        d.failed.clear();
        report(s, now, kReportRepaired, comps_[self].domain, 0);
        break;
    }
    case kElementRepaired: {
        Component& c = comps_[self];
        if (e.payload == c.generation) {
            report(s, now, kReportRestored, self, c.process);
            arm(s, self, now);
        }
        break;
    }
    default:
        controller_.handle(s, e);
        break;
    }
}

void RunModel::prime(Sink& sink, std::int64_t end) {
    for (engine::EntityId id = 0; id < comps_.size(); ++id) {
        if (comps_[id].flags & kIsComponent) {
            arm(sink, id, 0);
        }
    }
    for (const Setup::TraceEvent& t : setup_.trace) {
        if (t.time_ns < end) {
            sink.at(t.entity, t.time_ns, kTraceFail, t.process, 0, 0);
        }
    }
    controller_.start(sink);
}

void RunModel::queue_due(Sink& sink) {
    for (engine::EntityId id = 0; id < comps_.size(); ++id) {
        const Component& c = comps_[id];
        if ((c.flags & (kIsComponent | kFailed | kQueued)) == kIsComponent &&
            c.next_ns < horizon_) {
            queue(sink, id);
        }
    }
}

} // namespace trnsim::reliability::detail
