// Replica scope's bookkeeping in the run simulation (private to the reliability module;
// recovery.scope: replica, docs/reliability.md): which data-parallel replicas are down (a
// failed slot takes down the replicas whose ranks it holds, in rank order tp x cp per replica
// and stage), and each failed slot's recovery stage, with an epoch per stage change so that a
// timer of an earlier stage is recognised as stale. The controller (run_model.hpp) schedules
// the timers and decides what each stage does.
#pragma once

#include "trnsim/reliability/run.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace trnsim::reliability::detail {

class ReplicaSlots {
public:
    enum class Stage : std::uint8_t { detecting, waiting, restarting, loading };

    /// `replicas` data-parallel replicas (0: replica scope is off), `ranks_per_slot` ranks per
    /// domain, `tp` consecutive ranks per replica and stage.
    ReplicaSlots(std::int64_t replicas, std::int64_t ranks_per_slot, std::int64_t tp);

    bool enabled() const { return !hits_.empty(); }
    bool all_down() const { return down_ >= static_cast<std::int64_t>(hits_.size()); }
    /// The share of replicas up, as the job's rate factor.
    double healthy_fraction() const {
        const double dp = static_cast<double>(hits_.size());
        return (dp - static_cast<double>(down_)) / dp;
    }

    /// `slot` failed (again): its replicas are down (once), it is detecting, and it needs a
    /// domain if this or an earlier failure took its domain. Returns the detection timer's
    /// payload.
    std::uint64_t fail(std::int64_t slot, bool needs_domain);
    /// Whether a slot timer's payload is its slot's current one.
    bool current(std::uint64_t payload) const;
    Stage stage(std::int64_t slot) const { return recovering_.at(slot).stage; }
    bool needs_domain(std::int64_t slot) const { return recovering_.at(slot).needs_domain; }
    /// `slot` waits for a spare (no timer).
    void wait(std::int64_t slot) { recovering_.at(slot).stage = Stage::waiting; }
    /// `slot` moves to `stage`; returns the payload of that stage's timer.
    std::uint64_t enter(std::int64_t slot, Stage stage);
    /// `slot` is recovered: its replicas are up again.
    void recovered(std::int64_t slot);
    /// Every slot's recovery is abandoned (the job restarts as a whole).
    void clear();
    /// The slots waiting for a spare, in slot order.
    std::vector<std::int64_t> waiting() const;

private:
    struct Recovery {
        Stage stage = Stage::detecting;
        std::uint32_t epoch = 0;
        bool needs_domain = true;
    };
    void mark(std::int64_t slot, int delta);
    static std::uint64_t payload(std::int64_t slot, std::uint32_t epoch) {
        return (static_cast<std::uint64_t>(slot) << 32) | epoch;
    }

    std::int64_t ranks_per_slot_;
    std::int64_t tp_;
    std::map<std::int64_t, Recovery> recovering_;
    std::vector<std::uint16_t> hits_; ///< per replica: its failed slots
    std::int64_t down_ = 0;           ///< replicas with a failed slot
    std::uint32_t epoch_ = 0;
};

} // namespace trnsim::reliability::detail
