// The serving fleet's entities, events and engine delays (private to the sim module;
// include/trnsim/sim/serve.hpp describes the model). The parts of the fleet simulation:
//
//   serve_placement  where the replicas sit (chips, units, NeuronLink domains, router shards)
//   serve_records    each request's fleet-wide record, by id, across the router shards
//   serve_transfers  the KV caches that prefill replicas send to decode replicas (flows)
//   serve_router     the router shards: their pools of replicas, arrivals, routing, retries
//   serve_replicas   the replica entities, each driving a serving::ReplicaScheduler
//   serve_failures   the domains' outages: replicas going down and up, the failure figures
//   serve_model      owns the parts and sends each event to the one its entity belongs to
//
// serve.cpp holds the entry points (check_serving_input, simulate_serving).
//
// Entities, in this order (ids break ties between simultaneous events, so the order is part
// of the results): router shard 0, the fabric's wake entity, the replicas, then router shards
// 1 .. K - 1.
#pragma once

#include <algorithm>
#include <cstdint>

#include "trnsim/engine/simulator.hpp"
#include "trnsim/sim/serve.hpp"

namespace trnsim::sim::detail {

/// The handlers are ordinary functions on this one queue type, so they live in .cpp files.
/// Few pending events per partition (a step end per replica, requests in flight): a heap
/// beats the calendar queue's bucket scans here.
using ServeQueue = engine::QuaternaryHeap;
using ServeContext = engine::Context<ServeQueue>;
using ServeEdge = engine::WindowEdge<ServeQueue>;

constexpr engine::EntityId kRouter = 0;
constexpr engine::EntityId kWake = 1;
constexpr engine::EntityId kFirstReplica = 2;

enum : engine::EventType {
    kStart = 1,    ///< router, time 0
    kArrival = 2,  ///< router to itself: open-loop request `payload` arrives
    kRequest = 3,  ///< router to replica: request `payload`
    kStep = 4,     ///< replica to itself: end of a step or a kick; payload: generation
    kReport = 5,   ///< replica to router: payload replica, aux kFinished or kPrefilled (a
                   ///< one-token request finishes on its prefill replica: kFinished from it)
    kKvArrived = 6, ///< fabric to decode replica: the KV cache of a request is there; payload
                    ///< transfer_tag(request, attempt)
    kRelease = 7,  ///< decode replica to prefill replica: free hand-off `payload`
    kWakeUp = 8,   ///< the fabric's wake-up (ignored)
    kOutage = 9,   ///< router to itself: the next domain transition (OutageSchedule)
    kDetect = 10,  ///< router to itself: it notices that domain `payload` is down
    kEnable = 11,  ///< router to itself: domain `payload` serves again
    kDown = 12,    ///< router to replica: its domain failed
    kUp = 13,      ///< router to replica: its domain serves again
    kRetry = 14,   ///< replica to router: request `payload` was dropped by a failure; aux
                   ///< kAtPrefill or kAtDecode
    kKvLost = 15,  ///< prefill replica to decode replica: it failed holding the KV cache of
                   ///< request `payload`, attempt aux (its retries mod 2^16)
    kKvCancelled = 16, ///< fabric to decode replica: a transfer was cancelled before it
                       ///< arrived (its source or the replica itself failed); payload as
                       ///< kKvArrived
    kDrain = 17,   ///< router to itself: domain `payload` takes no more requests (availability)
};
constexpr std::uint16_t kFinished = 0;
constexpr std::uint16_t kPrefilled = 1;
/// Where a failure dropped a request: before its first token (a unified or prefill replica,
/// which the router counted with the decode replica it chose) or after (a decode replica:
/// the KV cache it was sent or held was lost; `rec.replica` names the replica that failed).
constexpr std::uint16_t kAtPrefill = 0;
constexpr std::uint16_t kAtDecode = 1;
constexpr std::uint32_t kStepPriority = 1; ///< after the arrivals of the same instant
constexpr std::uint32_t kUpPriority = 2;   ///< after a failure of the same instant
constexpr std::uint32_t kNoReplica = 0xffffffffu;

/// The entity of replica r.
constexpr engine::EntityId replica_entity(std::uint32_t replica) {
    return kFirstReplica + replica;
}
/// The router entity of shard k (shard 0: entity 0; the others after the replicas).
constexpr engine::EntityId router_entity(std::uint32_t k, std::uint32_t replicas) {
    return k == 0 ? kRouter : kFirstReplica + replicas + (k - 1);
}

/// The engine's window with more than one router: no event crosses partitions (a router
/// shares its partition with its replicas), so the windows need not follow the router
/// window; a simulated second keeps the barriers rare (a few milliseconds of work apart on a
/// large fleet) and the partitions' work per window even.
constexpr std::int64_t kShardedWindowNs = 1'000'000'000;

/// Attempts after which the router gives a request up (it stays unfinished and the run's
/// results are partial): a request dropped by failures this often will not get through. Also
/// the expected attempts beyond which check_progress refuses a fleet (serve_bounds.hpp).
constexpr std::uint32_t kMaxAttempts = 1000;

/// The engine delay of the events between router and replicas, W = max(router_window,
/// router_latency L), which is the lookahead. The router works at the requests' arrival times;
/// the replicas run W - L behind it in engine time, so a request sent at its arrival t reaches
/// its replica at engine t + W, replica time t + L. W = L is exact; with W > L the router
/// decides each request as it arrives but hears of a finish 2W - L after it (instead of L),
/// and a closed-loop client sends its next request then.
inline std::int64_t hop_ns(const ServeInput& in) {
    const std::int64_t l = std::max<std::int64_t>(in.spec.serving.router_latency.ns(), 1);
    return std::max(l, in.options.router_window.ns());
}

} // namespace trnsim::sim::detail
