// FlowNetwork's shards (private to the network module; flow_network.hpp describes them): each
// shard has its own max-min solver on the shared link table, its flow records, the flows
// placed on it at this edge and not yet in its solver, and its heap of transmission ends.
// flow_network.cpp resolves the shards and turns arrivals into events; flow_placement.cpp
// routes the new flows and places them on shards, moving components between shards.
#pragma once

#include "trnsim/network/flow_network.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <span>
#include <vector>

namespace trnsim::network {

/// A flow's solver id until its shard admits it.
constexpr std::uint32_t kQueued = std::numeric_limits<std::uint32_t>::max();
/// No transmission ends (a shard with no flow in flight).
constexpr std::int64_t kNoFinish = std::numeric_limits<std::int64_t>::max();

struct FlowNetwork::Shard {
    Shard(std::shared_ptr<MaxMinSolver::LinkTable> links, std::uint32_t phase,
          std::uint32_t stride)
        : solver(std::move(links), phase, stride) {}

    struct Flow {
        std::uint32_t group;
        MaxMinSolver::FlowId solver_id; ///< kQueued until the shard admits it
        std::int64_t latency;
        std::int64_t last;     ///< time `remaining` refers to
        double remaining;      ///< bytes still to send at `last`
        double rate;           ///< bytes/s since `last`
        std::uint32_t version; ///< bumped when the finish time changes

        /// End of transmission at the current rate (which must be positive).
        std::int64_t finish() const {
            return last + Duration::from_seconds_ceil(remaining / rate).ns();
        }
        /// Counts the bytes sent at the current rate until `now`. A new flow has no rate yet:
        /// it keeps its start, from which its first rate applies.
        void advance(std::int64_t now) {
            if (rate > 0.0) {
                remaining = std::max(0.0, remaining - rate * static_cast<double>(now - last) * 1e-9);
                last = now;
            }
        }
    };
    struct Finish {
        std::int64_t time;
        std::uint32_t flow;
        std::uint32_t version;
        bool operator>(const Finish& o) const {
            return time > o.time || (time == o.time && flow > o.flow);
        }
    };
    /// A flow placed on this shard at the edge, not yet in its solver.
    struct Queued {
        std::uint32_t slot;
        std::uint32_t offset; ///< into queued_links
        std::uint32_t count;
        double weight;
        bool counted; ///< its links' users_ include it already (a flow moved from a shard)
    };

    std::uint32_t new_slot() {
        if (!free_flows.empty()) {
            const std::uint32_t f = free_flows.back();
            free_flows.pop_back();
            return f;
        }
        flows.push_back({});
        return static_cast<std::uint32_t>(flows.size() - 1);
    }
    /// Queues a flow for the solver (its slot keeps its version: stale finishes of the slot's
    /// earlier flows carry older ones). `counted`: its links' users_ include it already.
    void enqueue(std::uint32_t group, std::int64_t latency, std::int64_t last, double remaining,
                 std::span<const std::uint32_t> links, double weight, bool counted) {
        const std::uint32_t slot = new_slot();
        Flow& f = flows[slot];
        f.group = group;
        f.solver_id = kQueued;
        f.latency = latency;
        f.last = last;
        f.remaining = remaining;
        f.rate = 0.0;
        queued.push_back({slot, static_cast<std::uint32_t>(queued_links.size()),
                          static_cast<std::uint32_t>(links.size()), weight, counted});
        queued_links.insert(queued_links.end(), links.begin(), links.end());
    }
    /// Puts the queued flows into the solver, counting them as users of their links.
    void flush(std::vector<std::uint32_t>& users) {
        for (const Queued& q : queued) {
            if (!q.counted) {
                for (std::uint32_t k = q.offset; k < q.offset + q.count; ++k) {
                    ++users[queued_links[k]];
                }
            }
            const MaxMinSolver::FlowId sid =
                solver.add(std::span(queued_links.data() + q.offset, q.count), q.weight);
            if (flow_of_solver_id.size() <= sid) {
                flow_of_solver_id.resize(sid + 1);
            }
            flow_of_solver_id[sid] = q.slot;
            flows[q.slot].solver_id = sid;
            dirty = true;
        }
        queued.clear();
        queued_links.clear();
    }
    std::size_t load() const { return solver.active_flows() + queued.size(); }

    MaxMinSolver solver;
    std::vector<Flow> flows;
    std::vector<std::uint32_t> free_flows;
    std::vector<std::uint32_t> flow_of_solver_id;
    std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes;
    std::int64_t max_finish = 0; ///< latest finish time pushed (bulk release test)
    std::vector<Queued> queued;
    std::vector<std::uint32_t> queued_links;
    bool dirty = false; ///< the solver has flows added since its last update
    /// Flows left for another shard at this edge: next_finish may be one of theirs, so the
    /// shard runs at this edge to find its own (a stale one would wake the fabric for nothing
    /// and make an edge that one solver does not have).
    bool lost = false;
    std::vector<Arrival> arrivals;
    std::vector<MaxMinSolver::FlowId> leaving;
    std::vector<std::uint8_t> moving; ///< per solver flow: found by migrate()'s search
    /// Bytes of flows stopped by cancel() that were never sent, by link kind (per link).
    std::array<double, topology::kLinkKinds> unsent{};
    std::uint64_t solves = 0;
    std::uint64_t started = 0;
    std::int64_t next_finish = kNoFinish;
};

} // namespace trnsim::network
