// FlowNetwork's shards (private to the network module; flow_network.hpp describes them): each
// shard has its own max-min solver on the shared link table, its flow records, the flows
// placed on it at this edge and not yet in its solver, and its heap of transmission ends. At a
// window edge a shard admits its queued flows, stops cancelled ones, releases those whose
// transmission has ended and re-solves (flow_shard.cpp). Which shard owns each link is in
// LinkOwners; flow_placement.cpp places new flows on shards and moves components between them.
#pragma once

#include "flow_groups.hpp"

#include "trnsim/network/maxmin.hpp"
#include "trnsim/topology/fabric.hpp"

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

/// Per link: the shard whose flows cross it (kFree when none), and how many do (a flow queued
/// at this edge counts once its shard admits it; placement sets the owner at once).
struct LinkOwners {
    static constexpr std::uint16_t kFree = 0xffff;
    explicit LinkOwners(std::size_t links) : owner(links, kFree), users(links, 0) {}
    /// One user of each of `links` leaves; a link without users becomes free.
    void release(std::span<const std::uint32_t> links) {
        for (const std::uint32_t l : links) {
            if (--users[l] == 0) {
                owner[l] = kFree;
            }
        }
    }
    std::vector<std::uint16_t> owner;
    std::vector<std::uint32_t> users;
};

/// The shard a flow of group `p` from chip `src` over `route` joins when all its links are
/// free, out of `shards`: over EFA, the block of chips of the group's first source; over
/// NeuronLink, its own source's block.
inline std::uint32_t home_shard(const topology::Fabric& fabric, std::size_t shards,
                                const FlowGroups::Pending& p,
                                std::span<const std::uint32_t> route, std::uint32_t src) {
    // Over EFA, every flow of a group starts in the block of the group's first source. A
    // ring that runs both directions shares each member's host and NIC links between its two
    // directions, so its flows form one component across the fabric; homed by their own
    // sources, the members of each block would start in its shard and each flow crossing
    // into the next block would move one of them over at placement (on the 98,304-chip step:
    // 810,000 moves, one flow each, serial). Over NeuronLink (no link in common with EFA
    // routes) a flow starts in its own source's block.
    const bool efa = !route.empty() && fabric.kind()[route.front()] == topology::LinkKind::host;
    const std::uint32_t chip = efa ? p.flows.front().src : src;
    return static_cast<std::uint32_t>(std::uint64_t{chip} * shards / fabric.chips());
}

struct FlowShard {
    FlowShard(std::shared_ptr<MaxMinSolver::LinkTable> links, std::uint32_t phase,
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
                remaining =
                    std::max(0.0, remaining - rate * static_cast<double>(now - last) * 1e-9);
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
        bool counted; ///< its links' users include it already (a flow moved from a shard)
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
    /// earlier flows carry older ones). `counted`: its links' users include it already.
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
    /// True when the shard has work at the edge `now`: flows to admit, flows left for another
    /// shard, a transmission ending by now, or (`cancel_scan`) flows that a cancel may stop.
    bool busy(std::int64_t now, bool cancel_scan) const {
        return !queued.empty() || dirty || lost || next_finish <= now ||
               (cancel_scan && solver.active_flows() > 0);
    }

    /// The shard's part of the edge `now`: admits its queued flows, stops (`cancel_scan`) the
    /// flows of cancelled groups, releases the flows whose transmission has ended and
    /// re-solves until none ends before `now`; their arrivals go to `arrivals`, the next end
    /// of transmission to `next_finish`. Touches only its own flows and links.
    void resolve(std::int64_t now, bool cancel_scan, const FlowGroups& groups,
                 const topology::Fabric& fabric, LinkOwners& owners);

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
    std::vector<FlowArrival> arrivals;
    std::vector<MaxMinSolver::FlowId> leaving;
    std::vector<std::uint8_t> moving; ///< per solver flow: found by migrate()'s search
    /// Bytes of flows stopped by cancel() that were never sent, by link kind (per link).
    std::array<double, topology::kLinkKinds> unsent{};
    std::uint64_t solves = 0;
    std::uint64_t started = 0;
    std::int64_t next_finish = kNoFinish;

private:
    /// Stops the flows of cancelled groups still transmitting at the cancel's time. True when
    /// it removed any.
    bool stop_cancelled(const FlowGroups& groups, const topology::Fabric& fabric,
                        LinkOwners& owners);
};

} // namespace trnsim::network
