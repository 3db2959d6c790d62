// Failures of the serving fleet's domains (serve_failures.hpp).
#include "serve_failures.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace trnsim::sim::detail {

ServeFailures::ServeFailures(const ServeInput& in, const Placement& pl)
    : enabled_(in.reliability.enabled || in.availability != nullptr), hop_(hop_ns(in)),
      shard_of_domain_(pl.shard_of_domain), shards_(pl.shards) {
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    for (std::uint32_t k = 0; k < pl.shards; ++k) {
        shards_[k].router = router_entity(k, replicas);
    }
    if (!enabled_) {
        return;
    }
    std::uint32_t domains = 0;
    for (const ReplicaPlacement& rp : pl.replicas) {
        domains = std::max(domains, rp.domain + 1);
    }
    domain_reps_.resize(domains);
    for (std::uint32_t r = 0; r < pl.replicas.size(); ++r) {
        domain_reps_[pl.replicas[r].domain].push_back(r);
    }
    domain_state_.assign(domains, kUpState);
    held_.resize(domains);
    down_since_.assign(domains, -1);
    if (in.availability) {
        availability_ = in.availability;
        for (const DomainChange& c : *availability_) {
            TRNSIM_CHECK(c.domain < domains, "serve: an availability change of no domain");
        }
        detection_ns_ = 0; // planned: the router knows at once
        return;
    }
    const reliability::ReliabilitySpec& rs = in.reliability;
    const reliability::FailureModel probe(rs.failures, rs.trace);
    const cluster::ClusterShape shape = fleet_shape(in);
    const reliability::HardwareFacts hw = fleet_hardware(in);
    const std::int64_t spares =
        shape.ultraserver_domains() ? rs.spares.ultraservers : rs.spares.instances;
    layout_ = std::make_unique<reliability::Layout>(shape, hw, rs.fabric, spares,
                                                    probe.present_classes());
    for (ShardOutages& sh : shards_) {
        sh.outages =
            std::make_unique<reliability::OutageSchedule>(rs, *layout_, domains, in.seed);
    }
    detection_ns_ = rs.recovery.detection.ns();
}

std::vector<std::uint32_t> ServeFailures::start(ServeContext& ctx, std::uint32_t k) {
    std::vector<std::uint32_t> idle;
    if (availability_) {
        // Domains down or draining from time 0 (a window's slots not yet ready) take no
        // request from the start.
        ShardOutages& sh = shards_[k];
        const std::vector<DomainChange>& a = *availability_;
        for (; sh.cursor < a.size() && a[sh.cursor].at == SimTime::zero(); ++sh.cursor) {
            const DomainChange& c = a[sh.cursor];
            if (shard_of_domain_[c.domain] != k || c.kind == DomainChange::Kind::up) {
                continue;
            }
            if (c.kind == DomainChange::Kind::down) {
                domain_state_[c.domain] = kDownNoticed;
                down_since_[c.domain] = 0;
            } else {
                domain_state_[c.domain] = kDraining;
            }
            idle.push_back(c.domain);
        }
    }
    if (shards_[k].outages || availability_) {
        next_outage(ctx, k);
    }
    return idle;
}

bool ServeFailures::advance(std::uint32_t k) {
    ShardOutages& sh = shards_[k];
    if (availability_) {
        const std::vector<DomainChange>& a = *availability_;
        while (sh.cursor < a.size()) {
            const DomainChange& c = a[sh.cursor++];
            if (shard_of_domain_[c.domain] == k) {
                sh.pending = reliability::UnitTransition{c.at, c.domain,
                                                         c.kind == DomainChange::Kind::up, 0};
                sh.pending_drain = c.kind == DomainChange::Kind::drain;
                return true;
            }
        }
        return false;
    }
    while (const std::optional<reliability::UnitTransition> t = sh.outages->next()) {
        if (shard_of_domain_[t->unit] == k) {
            sh.pending = *t;
            sh.pending_drain = false;
            return true;
        }
    }
    return false;
}

void ServeFailures::on_outage(ServeContext& ctx, std::uint32_t k) {
    ShardOutages& sh = shards_[k];
    sh.pending_open = false;
    transition(ctx, k, sh.pending);
    next_outage(ctx, k);
}

std::vector<std::uint64_t> ServeFailures::notice_down(std::uint32_t d) {
    domain_state_[d] = kDownNoticed;
    std::vector<std::uint64_t> held = std::move(held_[d]);
    held_[d].clear();
    return held;
}

bool ServeFailures::enable(std::uint32_t d) {
    if (down_since_[d] >= 0) {
        return false; // down again at the instant it returned
    }
    domain_state_[d] = kUpState;
    return true;
}

void ServeFailures::next_outage(ServeContext& ctx, std::uint32_t k) {
    ShardOutages& sh = shards_[k];
    if (advance(k)) {
        sh.pending_open = true;
        ctx.schedule_at_ns(sh.router, std::max(sh.pending.time.ns(), ctx.now_ns()), kOutage, 0);
    }
}

void ServeFailures::transition(ServeContext& ctx, std::uint32_t k,
                               const reliability::UnitTransition& t) {
    ShardOutages& sh = shards_[k];
    const std::int64_t now = ctx.now_ns();
    const std::uint32_t d = t.unit;
    const auto reps = static_cast<double>(domain_reps_[d].size());
    if (sh.pending_drain) {
        if (domain_state_[d] == kUpState) {
            domain_state_[d] = kDraining;
            ctx.schedule_at_ns(sh.router, now, kDrain, d);
        }
        return;
    }
    if (availability_ && t.up == (down_since_[d] < 0) && domain_state_[d] != kDraining) {
        return; // a planned change that changes nothing (up when up, down when down)
    }
    if (!t.up) {
        ++sh.outages_count;
        domain_state_[d] = kDownUnnoticed;
        down_since_[d] = now;
        for (std::uint32_t r : domain_reps_[d]) {
            ctx.schedule_at_ns(replica_entity(r), now + hop_, kDown, 0);
        }
        ctx.schedule_at_ns(sh.router, now + detection_ns_, kDetect, d);
    } else {
        sh.down_replica_ns += static_cast<double>(now - down_since_[d]) * reps;
        down_since_[d] = -1;
        for (std::uint32_t r : domain_reps_[d]) {
            ctx.schedule_at_ns(replica_entity(r), now + hop_, kUp, 0, 0, kUpPriority);
        }
        // Requests sent from now + 1 reach the replicas after their kUp.
        ctx.schedule_at_ns(sh.router, now + 1, kEnable, d);
    }
}

void ServeFailures::catch_up(std::int64_t done) {
    for (std::uint32_t k = 0; k < shards_.size(); ++k) {
        ShardOutages& sh = shards_[k];
        while ((sh.outages || availability_) && sh.pending_open &&
               sh.pending.time.ns() < done) {
            const reliability::UnitTransition& t = sh.pending;
            const std::uint32_t d = t.unit;
            if (sh.pending_drain) {
                // no figure moves
            } else if (!t.up) {
                ++sh.outages_count;
                down_since_[d] = t.time.ns();
            } else if (down_since_[d] >= 0) {
                sh.down_replica_ns += static_cast<double>(t.time.ns() - down_since_[d]) *
                                      static_cast<double>(domain_reps_[d].size());
                down_since_[d] = -1;
            }
            sh.pending_open = advance(k);
        }
    }
}

void ServeFailures::add_stats(std::int64_t end, std::size_t replicas,
                              ServingRunStats& st) const {
    double down = 0.0;
    for (const ShardOutages& sh : shards_) {
        st.outages += sh.outages_count;
        st.retries += sh.retries_count;
        down += sh.down_replica_ns;
    }
    for (std::size_t d = 0; d < down_since_.size(); ++d) {
        if (down_since_[d] >= 0 && end > down_since_[d]) {
            down += static_cast<double>(end - down_since_[d]) *
                    static_cast<double>(domain_reps_[d].size());
        }
    }
    st.replica_down = Seconds::of(down * 1e-9);
    const double total = static_cast<double>(replicas) * static_cast<double>(end);
    st.availability = total > 0.0 ? 1.0 - down / total : 1.0;
    if (layout_) {
        st.spare_domains = static_cast<std::uint32_t>(layout_->spare_domains());
        st.spare_instances = static_cast<std::uint32_t>(layout_->spare_domains() *
                                                        layout_->instances_per_domain());
    }
}

} // namespace trnsim::sim::detail
