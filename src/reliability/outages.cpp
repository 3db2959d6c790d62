// Unit outages of a fleet without checkpoints (outages.hpp has the model).
#include "trnsim/reliability/outages.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/engine/event.hpp"

#include <algorithm>
#include <limits>

namespace trnsim::reliability {

namespace {

std::int64_t later(std::int64_t now, Duration d) {
    return d.is_max() || d.ns() > engine::kNever - now ? engine::kNever : now + d.ns();
}

} // namespace

Duration draw_repair_time(const RepairSpec& r, engine::RandomStream& stream) {
    const auto sample = [&](Duration mean) {
        return r.distribution == RepairDistribution::fixed
                   ? mean
                   : Duration::from_seconds_ceil(stream.exponential(mean.seconds()));
    };
    if (stream.uniform() < r.manual_fraction) {
        return sample(r.manual);
    }
    Duration t = sample(r.automatic);
    if (stream.uniform() < r.auto_escalation) {
        t += sample(r.manual);
    }
    return t;
}

OutageSchedule::OutageSchedule(const ReliabilitySpec& spec, const Layout& layout,
                               std::int64_t units, std::uint64_t seed)
    : spec_(spec), layout_(layout), model_(spec.failures, spec.trace), seed_(seed) {
    TRNSIM_CHECK(units >= 0 && units <= layout.job_domains(),
                 "outages: more units than the cluster's domains");
    for (const Process& p : model_.processes()) {
        impact_.push_back(layout.impact(p.cls, p.effect));
    }
    const std::int64_t domains = layout.domains();
    domains_.resize(static_cast<std::size_t>(domains));
    units_.resize(static_cast<std::size_t>(units));
    for (std::int64_t d = 0; d < domains; ++d) {
        if (d < units) {
            domains_[static_cast<std::size_t>(d)].unit = d;
            units_[static_cast<std::size_t>(d)].domain = d;
        } else {
            spares_.push_back(d);
        }
    }
    for (ComponentClass c : kAllClasses) {
        if (model_.random_processes(c).empty() || is_switch(c)) {
            continue;
        }
        if (c == ComponentClass::power) {
            for (std::int64_t pd = 0; pd < layout.power_domains(); ++pd) {
                comps_.push_back({c, pd, pd, 0, 0, 0});
            }
            continue;
        }
        const std::int64_t n = layout.per_domain(c);
        for (std::int64_t d = 0; d < domains; ++d) {
            for (std::int64_t k = 0; k < n; ++k) {
                domains_[static_cast<std::size_t>(d)].components.push_back(
                    static_cast<std::uint32_t>(comps_.size()));
                comps_.push_back({c, d * n + k, d, 0, 0, 0});
            }
        }
    }
    for (std::size_t i = 0; i < comps_.size(); ++i) {
        arm(static_cast<std::uint32_t>(i), 0);
    }
    for (const TraceFailure& f : spec.trace.failures) {
        TRNSIM_CHECK(f.index >= 0 && f.index < layout.count(f.component),
                     "outages: a trace failure of a component the cluster does not have");
        TraceHit h;
        h.process = model_.trace_process(f.component, f.cause);
        if (f.component == ComponentClass::power) {
            h.domain = f.index;
        } else if (!is_switch(f.component)) {
            h.domain = f.index / layout.per_domain(f.component);
        }
        push(f.time.ns(), Kind::trace, static_cast<std::uint32_t>(trace_.size()), 0);
        trace_.push_back(h);
    }
}

void OutageSchedule::push(std::int64_t t, Kind k, std::uint32_t a, std::uint32_t gen) {
    if (t < engine::kNever) {
        heap_.push({t, k, a, gen});
    }
}

void OutageSchedule::arm(std::uint32_t slot, std::int64_t now) {
    Component& c = comps_[slot];
    ++c.gen;
    const FailureModel::Draw d =
        model_.draw(c.cls, layout_.component(c.cls, c.index), seed_, 0, c.blocks);
    if (d.lifetime.seconds() == std::numeric_limits<double>::infinity()) {
        return;
    }
    c.process = d.process;
    push(later(now, Duration::from_seconds_ceil(d.lifetime.seconds())), Kind::fail, slot, c.gen);
}

void OutageSchedule::go_down(std::int64_t unit, std::int64_t now, std::uint16_t process) {
    Unit& u = units_[static_cast<std::size_t>(unit)];
    if (!u.down) {
        u.down = true;
        u.down_since = SimTime::from_ns(now);
        out_.push_back({SimTime::from_ns(now), static_cast<std::uint32_t>(unit), false, process});
    }
    ++u.gen; // a pending return is void
}

void OutageSchedule::place(std::int64_t unit, std::int64_t now) {
    Unit& u = units_[static_cast<std::size_t>(unit)];
    if (spares_.empty()) {
        waiting_.push_back(unit);
        return;
    }
    const std::int64_t s = spares_.front();
    spares_.erase(spares_.begin());
    domains_[static_cast<std::size_t>(s)].unit = unit;
    u.domain = s;
    const RecoverySpec& r = spec_.recovery;
    push(later(later(now, r.detection), r.restart), Kind::back, static_cast<std::uint32_t>(unit),
         u.gen);
}

void OutageSchedule::hit(std::int64_t domain, std::int64_t now, std::uint16_t process) {
    Domain& d = domains_[static_cast<std::size_t>(domain)];
    if (d.repairing) {
        return;
    }
    d.repairing = true;
    for (std::uint32_t slot : d.components) {
        ++comps_[slot].gen; // re-armed when the repair ends
    }
    engine::RandomStream stream(seed_, stream_kind(StreamPurpose::repair, 0),
                                layout_.domain_entity(domain), d.repair_blocks);
    const Duration t = draw_repair_time(spec_.repair, stream);
    d.repair_blocks = static_cast<std::uint32_t>(stream.blocks_used());
    push(later(now, t), Kind::repaired, static_cast<std::uint32_t>(domain), 0);
    if (d.unit >= 0) {
        const std::int64_t unit = d.unit;
        d.unit = -1;
        units_[static_cast<std::size_t>(unit)].domain = -1;
        go_down(unit, now, process);
        place(unit, now);
    } else {
        spares_.erase(std::remove(spares_.begin(), spares_.end(), domain), spares_.end());
    }
}

bool OutageSchedule::strike(std::int64_t domain, std::uint16_t process, std::int64_t now) {
    switch (impact_[process]) {
    case Impact::power: {
        const std::int64_t first = domain * layout_.domains_per_power();
        const std::int64_t last = std::min(first + layout_.domains_per_power(), layout_.domains());
        for (std::int64_t d = first; d < last; ++d) {
            hit(d, now, process);
        }
        return true; // a power domain is not repaired: its feed returns with the domains
    }
    case Impact::replace_domain:
        hit(domain, now, process);
        return false;
    case Impact::restart_only: {
        const std::int64_t unit = domains_[static_cast<std::size_t>(domain)].unit;
        if (unit >= 0) {
            go_down(unit, now, process);
            const RecoverySpec& r = spec_.recovery;
            push(later(later(now, r.detection), r.restart), Kind::back,
                 static_cast<std::uint32_t>(unit), units_[static_cast<std::size_t>(unit)].gen);
        }
        return true;
    }
    case Impact::fabric_interrupt:
    case Impact::fabric_degrade:
        return true; // a degraded NIC: requests still reach the replicas
    }
    return true;
}

void OutageSchedule::fail(const Item& it) {
    Component& c = comps_[it.a];
    if (it.gen != c.gen) {
        return;
    }
    if (strike(c.domain, c.process, it.t)) {
        arm(it.a, it.t);
    }
}

std::optional<UnitTransition> OutageSchedule::next() {
    std::uint64_t quiet = 0;
    while (out_pos_ == out_.size()) {
        out_.clear();
        out_pos_ = 0;
        if (heap_.empty()) {
            return std::nullopt;
        }
        if (++quiet > kMaxQuietSteps) {
            // Failures keep every waiting unit from returning (outages.hpp): give up.
            heap_ = {};
            gave_up_ = true;
            return std::nullopt;
        }
        const Item it = heap_.top();
        heap_.pop();
        switch (it.kind) {
        case Kind::fail:
            fail(it);
            break;
        case Kind::trace: {
            const TraceHit& h = trace_[it.a];
            const bool in_repair = h.domain >= 0 && impact_[h.process] != Impact::power &&
                                   domains_[static_cast<std::size_t>(h.domain)].repairing;
            if (h.domain >= 0 && !in_repair) {
                (void)strike(h.domain, h.process, it.t);
            }
            break;
        }
        case Kind::repaired: {
            Domain& d = domains_[it.a];
            d.repairing = false;
            for (std::uint32_t slot : d.components) {
                arm(slot, it.t);
            }
            if (!waiting_.empty()) {
                const std::int64_t unit = waiting_.front();
                waiting_.erase(waiting_.begin());
                Unit& u = units_[static_cast<std::size_t>(unit)];
                d.unit = unit;
                u.domain = it.a;
                const RecoverySpec& r = spec_.recovery;
                const std::int64_t from = std::max(it.t, later(u.down_since.ns(), r.detection));
                push(later(from, r.restart), Kind::back, static_cast<std::uint32_t>(unit), u.gen);
            } else {
                spares_.insert(std::lower_bound(spares_.begin(), spares_.end(), it.a), it.a);
            }
            break;
        }
        case Kind::back: {
            Unit& u = units_[it.a];
            if (it.gen == u.gen && u.down) {
                u.down = false;
                out_.push_back({SimTime::from_ns(it.t), it.a, true, 0});
            }
            break;
        }
        }
    }
    return out_[out_pos_++];
}

} // namespace trnsim::reliability
