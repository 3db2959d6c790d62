#include "trnsim/network/flow_network.hpp"

#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::network {

FlowNetwork::FlowNetwork(const topology::Fabric& fabric, std::uint32_t partitions,
                         engine::EntityId wake_entity, engine::EventType wake_type,
                         Bandwidth on_chip, Duration on_chip_latency)
    : fabric_(&fabric), solver_(fabric.capacity()), wake_entity_(wake_entity),
      wake_type_(wake_type), on_chip_bps_(on_chip.bytes_per_s()),
      on_chip_latency_(on_chip_latency.ns()), pending_(partitions) {}

void FlowNetwork::start_group(std::uint32_t partition, std::int64_t now, engine::EntityId owner,
                              engine::EventType done_type, std::uint64_t tag,
                              std::vector<FlowSpec> flows) {
    auto& list = pending_[partition];
    list.push_back({now, owner, done_type, tag, std::move(flows), {}});
    list.back().flows = list.back().owned;
}

void FlowNetwork::start_group_view(std::uint32_t partition, std::int64_t now,
                                   engine::EntityId owner, engine::EventType done_type,
                                   std::uint64_t tag, std::span<const FlowSpec> flows) {
    pending_[partition].push_back({now, owner, done_type, tag, {}, flows});
}

bool FlowNetwork::idle() const {
    if (solver_.active_flows() > 0) {
        return false;
    }
    return std::all_of(pending_.begin(), pending_.end(),
                       [](const std::vector<Pending>& p) { return p.empty(); });
}

std::uint32_t FlowNetwork::new_flow_slot() {
    if (!free_flows_.empty()) {
        const std::uint32_t f = free_flows_.back();
        free_flows_.pop_back();
        return f;
    }
    flows_.push_back({});
    return static_cast<std::uint32_t>(flows_.size() - 1);
}

std::uint32_t FlowNetwork::new_group(const Pending& p) {
    std::uint32_t gid;
    if (!free_groups_.empty()) {
        gid = free_groups_.back();
        free_groups_.pop_back();
    } else {
        gid = static_cast<std::uint32_t>(groups_.size());
        groups_.push_back({});
    }
    // One outstanding arrival per flow, plus the group's admission token (released once every
    // flow is admitted, so that even an empty group completes).
    groups_[gid] = {p.owner, p.done_type, p.tag, static_cast<std::uint32_t>(p.flows.size()) + 1,
                    p.start};
    return gid;
}

void FlowNetwork::arrive(std::uint32_t gid, std::int64_t when, std::int64_t now,
                         const Schedule& schedule) {
    Group& g = groups_[gid];
    g.arrival = std::max(g.arrival, when);
    if (--g.outstanding == 0) {
        schedule(g.owner, std::max(now, g.arrival), g.done_type, g.tag);
        free_groups_.push_back(gid);
    }
}

bool FlowNetwork::admit(const Pending& p, std::int64_t now, const Schedule& schedule) {
    const std::uint32_t gid = new_group(p);
    bool any = false;
    for (std::size_t i = 0; i < p.flows.size(); ++i) {
        const FlowSpec& spec = p.flows[i];
        if (spec.src == spec.dst || spec.bytes <= 0.0) {
            // Between ranks of one chip: an on-chip copy, no fabric link.
            const double ns = static_cast<double>(on_chip_latency_) + spec.bytes / on_chip_bps_ * 1e9;
            arrive(gid, p.start + static_cast<std::int64_t>(std::ceil(ns)), now, schedule);
            continue;
        }
        route_.clear();
        // The salt spreads a group's flows over equal-cost paths. It depends on the flow alone
        // (its index in the group, with source and destination hashed by the router), so the
        // same group of flows always takes the same paths.
        topology::route(*fabric_, spec.src, spec.dst, i, route_);
        for (const std::uint32_t l : route_) {
            link_bytes_[static_cast<std::size_t>(fabric_->kind()[l])] += spec.bytes;
        }
        const std::uint32_t slot = new_flow_slot();
        const MaxMinSolver::FlowId sid = solver_.add(route_, spec.weight);
        if (flow_of_solver_id_.size() <= sid) {
            flow_of_solver_id_.resize(sid + 1);
        }
        flow_of_solver_id_[sid] = slot;
        Flow& f = flows_[slot];
        f.group = gid;
        f.solver_id = sid;
        f.latency = topology::route_latency_ns(*fabric_, route_.data(), route_.size());
        f.last = p.start;
        f.remaining = spec.bytes;
        f.rate = 0.0;
        ++flows_started_;
        any = true;
    }
    arrive(gid, p.start, now, schedule); // the admission token
    return any;
}

void FlowNetwork::reschedule_refilled(std::int64_t now) {
    for (const MaxMinSolver::FlowId sid : solver_.last_refilled()) {
        const std::uint32_t slot = flow_of_solver_id_[sid];
        Flow& f = flows_[slot];
        // Progress so far at the old rate; a new flow has none, and its rate applies from its
        // start (it was admitted at the edge after it started).
        std::int64_t from = f.last;
        if (f.rate > 0.0) {
            f.remaining = std::max(0.0, f.remaining - f.rate * static_cast<double>(now - f.last) * 1e-9);
            from = now;
        }
        f.rate = solver_.rate(sid);
        f.last = from;
        const std::int64_t t_tx = from + static_cast<std::int64_t>(std::ceil(f.remaining / f.rate * 1e9));
        finishes_.push({t_tx, slot, ++f.version});
        max_finish_ = std::max(max_finish_, t_tx);
    }
}

bool FlowNetwork::resolve(std::int64_t now, const Schedule& schedule) {
    bool scheduled = false;
    const Schedule note = [&](engine::EntityId e, std::int64_t t, engine::EventType type,
                              std::uint64_t payload) {
        schedule(e, t, type, payload);
        scheduled = true;
    };
    bool changed = false;
    for (auto& part : pending_) {
        for (const Pending& p : part) {
            changed |= admit(p, now, note);
        }
        part.clear();
    }
    // Release finished transmissions and re-solve until no transmission ends before `now`
    // (rates can rise when flows leave, moving other finish times earlier).
    while (true) {
        if (!changed && finishes_.size() == solver_.active_flows() && !finishes_.empty() &&
            max_finish_ <= now) {
            // Every flow in flight ends by now and nothing new arrived (the last edge of a
            // phase): release them all at once.
            while (!finishes_.empty()) {
                const Finish fin = finishes_.top();
                finishes_.pop();
                Flow& f = flows_[fin.flow];
                ++f.version;
                arrive(f.group, fin.time + f.latency, now, note);
                free_flows_.push_back(fin.flow);
            }
            solver_.clear();
            max_finish_ = 0;
            break;
        }
        leaving_.clear();
        while (!finishes_.empty() && finishes_.top().time <= now) {
            const Finish fin = finishes_.top();
            finishes_.pop();
            Flow& f = flows_[fin.flow];
            if (fin.version != f.version) {
                continue; // superseded by a later rate change
            }
            leaving_.push_back(f.solver_id);
            ++f.version;
            arrive(f.group, fin.time + f.latency, now, note);
            free_flows_.push_back(fin.flow);
        }
        if (!leaving_.empty()) {
            solver_.remove_batch(leaving_);
            changed = true;
        }
        if (!changed) {
            break;
        }
        solver_.update();
        ++solves_;
        reschedule_refilled(now);
        changed = false;
    }
    // Wake at the next end of transmission, skipping superseded entries.
    while (!finishes_.empty() && finishes_.top().version != flows_[finishes_.top().flow].version) {
        finishes_.pop();
    }
    if (finishes_.empty()) {
        max_finish_ = 0;
    } else {
        const std::int64_t t = std::max(now, finishes_.top().time);
        if (wake_at_ < now || t < wake_at_) {
            note(wake_entity_, t, wake_type_, 0);
            wake_at_ = t;
        }
    }
    return scheduled;
}

} // namespace trnsim::network
