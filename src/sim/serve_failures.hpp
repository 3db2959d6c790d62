// Failures of the serving fleet's NeuronLink domains (private to the sim module;
// serve_layout.hpp lists the parts; include/trnsim/sim/serve.hpp "Failures" gives the model).
//
// Each router shard follows its own copy of the fleet's reliability::OutageSchedule and acts
// on the transitions of its own domains: when domain d goes down at t, its replicas get kDown
// at t + hop and the shard's router kDetect at t + detection; when it comes back, the
// replicas get kUp at t + hop (after a failure of the same instant) and the router kEnable at
// t + 1 ns, so requests it sends from then on reach the replicas after their kUp. Between
// the failure and its detection the router holds the requests its replicas dropped (hold);
// it retries them once it notices (notice_down).
//
// With ServeInput::availability instead of failures, the shards follow its planned changes:
// a down or up as above with detection 0; a drain only stops the router sending the domain
// requests (kDrain), the replicas finish theirs; changes at time 0 apply before any request.
//
// The figures: outages and retries counted by the shards, replica-seconds down (a domain's
// down time times its replicas), availability over the run.
//
// Threading: shard k's state and the state of its domains are touched only by router k's
// handler (a domain belongs to one shard).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/outages.hpp"
#include "trnsim/sim/serve.hpp"

#include "serve_layout.hpp"
#include "serve_placement.hpp"

namespace trnsim::sim::detail {

class ServeFailures {
public:
    /// Failures of the fleet `pl` of `in` when in.reliability.enabled; else none (every call
    /// below but the figures' is then for the router to skip).
    ServeFailures(const ServeInput& in, const Placement& pl);

    bool enabled() const { return enabled_; }

    /// Router k starts following its domains' transitions (nothing without failures).
    /// Returns its domains that take no request from the start (an availability's changes at
    /// time 0): the router disables their replicas.
    std::vector<std::uint32_t> start(ServeContext& ctx, std::uint32_t k);
    /// Router k's kOutage: applies its pending transition and schedules its next one.
    void on_outage(ServeContext& ctx, std::uint32_t k);
    /// Router k's kDrain of domain d: nothing to do here beyond the router's own (it stops
    /// routing to d's replicas); kept for symmetry with enable.
    bool draining(std::uint32_t d) const { return domain_state_[d] == kDraining; }
    /// Domain d's router noticed that it is down: returns the requests held for it (to retry).
    std::vector<std::uint64_t> notice_down(std::uint32_t d);
    /// kEnable of domain d at its router: false when d went down again at the instant it came
    /// back (it stays down); else d serves again.
    bool enable(std::uint32_t d);
    /// Whether domain d is down and its router has not noticed yet.
    bool unnoticed(std::uint32_t d) const { return domain_state_[d] == kDownUnnoticed; }
    /// Keeps request `id` dropped by a failure of domain d until the router notices.
    void hold(std::uint32_t d, std::uint64_t id) { held_[d].push_back(id); }
    /// Router k retries a dropped request.
    void count_retry(std::uint32_t k) { ++shards_[k].retries_count; }
    /// The replicas of domain d.
    const std::vector<std::uint32_t>& replicas_of(std::uint32_t d) const {
        return domain_reps_[d];
    }

    /// After the run, with router shards: a shard whose requests were all done stopped
    /// following the outages, while one router follows them until the fleet's last request is
    /// done (`done`, router time). Each shard's transitions before then are counted here: they
    /// touch no request, only the failure figures.
    void catch_up(std::int64_t done);
    /// After the run: the failure figures of `replicas` replicas up to `end` (router time).
    void add_stats(std::int64_t end, std::size_t replicas, ServingRunStats& st) const;

private:
    static constexpr std::uint8_t kUpState = 0, kDownUnnoticed = 1, kDownNoticed = 2,
                                  kDraining = 3;

    /// One router shard's view: its copy of the outage schedule, of which it acts on its
    /// domains' transitions.
    struct ShardOutages {
        engine::EntityId router = 0;
        std::unique_ptr<reliability::OutageSchedule> outages;
        std::size_t cursor = 0;    ///< availability: the next change to look at
        bool pending_drain = false; ///< availability: `pending` is a drain
        reliability::UnitTransition pending;
        bool pending_open = false; ///< `pending` is scheduled and not yet applied
        double down_replica_ns = 0.0;
        std::uint64_t outages_count = 0;
        std::uint64_t retries_count = 0;
    };

    /// The shard's next transition of one of its domains (it skips the others'), from its
    /// outage schedule or the availability; false when there is none.
    bool advance(std::uint32_t k);
    void next_outage(ServeContext& ctx, std::uint32_t k);
    void transition(ServeContext& ctx, std::uint32_t k, const reliability::UnitTransition& t);

    bool enabled_ = false;
    std::int64_t hop_;
    std::vector<std::uint32_t> shard_of_domain_; ///< domain -> router shard
    std::vector<ShardOutages> shards_;
    std::unique_ptr<reliability::Layout> layout_;
    std::shared_ptr<const std::vector<DomainChange>> availability_;
    std::vector<std::vector<std::uint32_t>> domain_reps_; ///< replicas by domain
    std::vector<std::uint8_t> domain_state_;
    std::vector<std::vector<std::uint64_t>> held_; ///< by domain: retries until noticed
    std::vector<std::int64_t> down_since_;         ///< by domain, -1: up
    std::int64_t detection_ns_ = 0;
};

} // namespace trnsim::sim::detail
