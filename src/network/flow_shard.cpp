// A shard's part of a window edge (flow_shard.hpp).
#include "flow_shard.hpp"

#include <algorithm>

namespace trnsim::network {

bool FlowShard::stop_cancelled(const FlowGroups& groups, const topology::Fabric& fabric,
                               LinkOwners& owners) {
    leaving.clear();
    for (MaxMinSolver::FlowId sid = 0; sid < flow_of_solver_id.size(); ++sid) {
        if (!solver.alive(sid)) {
            continue;
        }
        const std::uint32_t slot = flow_of_solver_id[sid];
        Flow& f = flows[slot];
        const FlowGroups::Group& g = groups[f.group];
        if (f.solver_id != sid || g.cancel_at == FlowGroups::kNotCancelled) {
            continue;
        }
        if (f.rate > 0.0 && f.finish() <= g.cancel_at) {
            continue; // it had finished transmitting: it arrives as usual
        }
        f.advance(std::max(g.cancel_at, f.last));
        for (const std::uint32_t l : solver.links(sid)) {
            unsent[static_cast<std::size_t>(fabric.kind()[l])] += f.remaining;
        }
        owners.release(solver.links(sid));
        leaving.push_back(sid);
        ++f.version;
        arrivals.push_back({f.group, FlowGroups::kStopped});
        free_flows.push_back(slot);
    }
    if (leaving.empty()) {
        return false;
    }
    solver.remove_batch(leaving);
    leaving.clear();
    return true;
}

void FlowShard::resolve(std::int64_t now, bool cancel_scan, const FlowGroups& groups,
                        const topology::Fabric& fabric, LinkOwners& owners) {
    flush(owners.users);
    bool changed = dirty;
    if (cancel_scan && stop_cancelled(groups, fabric, owners)) {
        changed = true;
    }
    dirty = false;
    lost = false;
    const auto release = [&](MaxMinSolver::FlowId sid) { owners.release(solver.links(sid)); };
    // Release finished transmissions and re-solve until no transmission ends before `now`
    // (rates can rise when flows leave, moving other finish times earlier).
    while (true) {
        if (!changed && finishes.size() == solver.active_flows() && !finishes.empty() &&
            max_finish <= now) {
            // Every flow in flight ends by now and nothing new arrived (the last edge of a
            // phase): release them all at once.
            while (!finishes.empty()) {
                const Finish fin = finishes.top();
                finishes.pop();
                Flow& f = flows[fin.flow];
                ++f.version;
                release(f.solver_id);
                arrivals.push_back({f.group, fin.time + f.latency});
                free_flows.push_back(fin.flow);
            }
            solver.clear();
            max_finish = 0;
            break;
        }
        leaving.clear();
        while (!finishes.empty() && finishes.top().time <= now) {
            const Finish fin = finishes.top();
            finishes.pop();
            Flow& f = flows[fin.flow];
            if (fin.version != f.version) {
                continue; // superseded by a later rate change
            }
            leaving.push_back(f.solver_id);
            release(f.solver_id);
            ++f.version;
            arrivals.push_back({f.group, fin.time + f.latency});
            free_flows.push_back(fin.flow);
        }
        if (!leaving.empty()) {
            solver.remove_batch(leaving);
            changed = true;
        }
        if (!changed) {
            break;
        }
        solver.update();
        ++solves;
        // Finish times of the re-filled flows.
        for (const MaxMinSolver::FlowId sid : solver.last_refilled()) {
            const std::uint32_t slot = flow_of_solver_id[sid];
            Flow& f = flows[slot];
            f.advance(now); // a new flow's first rate applies from its start
            f.rate = solver.rate(sid);
            const std::int64_t t_tx = f.finish();
            finishes.push({t_tx, slot, ++f.version});
            max_finish = std::max(max_finish, t_tx);
        }
        changed = false;
    }
    // The next end of transmission, skipping superseded entries.
    while (!finishes.empty() && finishes.top().version != flows[finishes.top().flow].version) {
        finishes.pop();
    }
    if (finishes.empty()) {
        max_finish = 0;
        next_finish = kNoFinish;
    } else {
        next_finish = finishes.top().time;
    }
}

} // namespace trnsim::network
