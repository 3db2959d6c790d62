// How failures reach the run simulation's job (run_model.hpp): the controller's domains and
// spares (their bookkeeping in job_domains.cpp), replica scope and the failure reports (which
// element carries the job, job_fabric.cpp). The state machine they drive is in
// run_controller.cpp.
#include "run_model.hpp"
#include "trnsim/reliability/outages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability::detail {

// ------------------------------------------------------------------------------------------
// Controller: domains and spares

std::int64_t Controller::take_spare(std::int64_t t, std::int64_t slot) {
    const std::int64_t d = domains_.take_spare(slot);
    ++r_.spares_assigned;
    record(t, EventKind::spare_assigned, 0, d, -1);
    return d;
}

void Controller::fill_vacancies(std::int64_t t) {
    while (domains_.vacancies() > 0 && domains_.spares() > 0) {
        take_spare(t, domains_.first_vacancy());
    }
}

void Controller::domain_down(Sink& s, std::int64_t t, std::int64_t domain, int process,
                             bool count) {
    const std::int64_t slot = domains_.down(domain);
    if (slot < 0) {
        return;
    }
    if (count) {
        count_interruption(process);
        record(t, EventKind::interruption, 0, domain, process);
    }
    if (replicas_.enabled() && !job_recovery_) {
        replica_failure(s, t, slot, true);
    } else {
        interrupt(s, t);
    }
}

void Controller::on_repaired(Sink& s, std::int64_t t, std::int64_t domain) {
    domains_.repaired(domain);
    record(t, EventKind::repaired, 0, domain, -1);
    if (ledger_.state() == JobState::waiting_for_spare) {
        fill_vacancies(t);
        if (domains_.vacancies() == 0) {
            begin_restart(s, t, setup_.layout.job_domains());
        }
    }
    serve_waiting_slots(s, t);
}

// ------------------------------------------------------------------------------------------
// Controller: replica scope

void Controller::stall(Sink& s, std::int64_t t) {
    stall_until_ = std::max(stall_until_, t + setup_.input.spec.recovery.detection.ns());
    timer(s, stall_until_, kJobTimer, ++epoch_);
}

void Controller::replica_failure(Sink& s, std::int64_t t, std::int64_t slot, bool needs_domain) {
    timer(s, t + setup_.input.spec.recovery.detection.ns(), kSlotTimer,
          replicas_.fail(slot, needs_domain));
    if (replicas_.all_down()) {
        interrupt(s, t); // no healthy replica left
        return;
    }
    // The whole job hangs until the failure is detected; the step in progress is lost.
    if (ledger_.running() || ledger_.state() == JobState::checkpointing) {
        abort_checkpoint(t);
        ledger_.enter(JobState::detecting, t);
        ledger_.lose_step(setup_.step_ns);
        stall_until_ = t;
    }
    if (ledger_.state() == JobState::detecting) {
        stall(s, t);
    }
}

void Controller::on_slot_timer(Sink& s, std::int64_t t, std::int64_t slot) {
    using Stage = ReplicaSlots::Stage;
    switch (replicas_.stage(slot)) {
    case Stage::detecting:
        if (replicas_.needs_domain(slot) && domains_.domain_of(slot) < 0) {
            if (domains_.spares() == 0) {
                replicas_.wait(slot);
                return;
            }
            take_spare(t, slot);
        }
        timer(s, t + setup_.input.spec.recovery.restart.ns(), kSlotTimer,
              replicas_.enter(slot, Stage::restarting));
        break;
    case Stage::restarting:
        timer(s, t + costs_.replica_restore.ns(), kSlotTimer,
              replicas_.enter(slot, Stage::loading));
        break;
    case Stage::loading:
        replicas_.recovered(slot);
        rate_changed(s, t);
        break;
    case Stage::waiting:
        break;
    }
}

void Controller::serve_waiting_slots(Sink& s, std::int64_t t) {
    for (const std::int64_t slot : replicas_.waiting()) {
        if (domains_.spares() == 0) {
            return;
        }
        take_spare(t, slot);
        timer(s, t + setup_.input.spec.recovery.restart.ns(), kSlotTimer,
              replicas_.enter(slot, ReplicaSlots::Stage::restarting));
    }
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
                if (count && domains_.in_job(domain)) {
                    last_power_ = {entity, t};
                }
            }
            domain_down(s, t, domain, process, count);
        }
        break;
    case Impact::restart_only: {
        const std::int64_t slot = domains_.slot_of(domain);
        if (slot < 0) {
            break; // not in the job
        }
        count_interruption(process);
        record(t, EventKind::interruption, entity, domain, process);
        if (replicas_.enabled() && !job_recovery_) {
            replica_failure(s, t, slot, false);
        } else {
            interrupt(s, t);
        }
        break;
    }
    case Impact::fabric_interrupt:
        if (!fabric_.carries_job(entity, domains_)) {
            break; // a switch of the idle spares only: the job does not notice
        }
        count_interruption(process);
        record(t, EventKind::interruption, entity, -1, process);
        interrupt(s, t);
        break;
    case Impact::fabric_degrade: {
        // Counted wherever it is (the job may move onto it); slows the job only when it
        // carries the job's traffic (fabric_factor).
        const bool job = fabric_.carries_job(entity, domains_);
        fabric_.change(entity, +1);
        fabric_factor_ = fabric_.factor(domains_);
        if (job) {
            record(t, EventKind::degraded, entity, -1, process);
            rate_changed(s, t);
        }
        break;
    }
    }
}

void Controller::on_restored(Sink& s, std::int64_t t, engine::EntityId element) {
    const bool job = fabric_.carries_job(element, domains_);
    fabric_.change(element, -1);
    fabric_factor_ = fabric_.factor(domains_);
    if (job) {
        record(t, EventKind::restored, element, -1, -1);
        rate_changed(s, t);
    }
}

} // namespace trnsim::reliability::detail
