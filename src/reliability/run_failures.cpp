// How failures reach the run simulation's job (run_model.hpp): the controller's domains and
// spares, replica scope, the fabric's degraded bandwidth and the failure reports (which
// element carries the job). The state machine they drive is in run_controller.cpp.
#include "run_model.hpp"
#include "trnsim/reliability/outages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability::detail {

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

} // namespace trnsim::reliability::detail
