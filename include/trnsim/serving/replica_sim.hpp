// One replica serving a request stream, without a router: a small sequential event loop
// around a ReplicaScheduler (the fleet simulation, sim/serve.hpp, runs many replicas on the
// parallel engine with the same scheduler).
//
// Requests reach the replica when the client sends them (no network latency). Open-loop
// arrivals come from the RequestSource; closed-loop clients (arrival.concurrency of them) send
// requests 0..c-1 at time 0 and each sends the next request the moment its previous one
// finishes. Events of equal time are handled arrivals first, then the end of a step, so a
// request arriving when an iteration ends joins the next one. A step that runs several
// identical iterations is cut at the first iteration boundary after an arrival
// (ReplicaScheduler::interrupt).
//
// The KV cache use is sampled every `kv_sample` of simulated time (blocks in use at that
// instant / capacity), from time 0 to the last finish.
#pragma once

#include "trnsim/serving/iteration.hpp"
#include "trnsim/serving/metrics.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/scheduler.hpp"
#include "trnsim/serving/spec.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::serving {

struct ReplicaRunOptions {
    bool fast_forward = true;      ///< ReplicaScheduler's fast-forward of decode iterations
    bool check_invariants = false; ///< check the scheduler's invariants after every step
    Duration kv_sample = Duration::zero(); ///< 0: no KV samples
};

struct ReplicaRun {
    std::vector<RequestRecord> records; ///< by request id
    ServingSummary summary;
    SchedulerStats stats;
    std::int64_t capacity_blocks = 0;
    std::vector<double> kv_used_fraction; ///< sample k at k x kv_sample
    std::uint64_t events = 0;             ///< arrivals and step ends handled
};

ReplicaRun simulate_replica(const InferenceSpec& spec, const IterationCost& cost,
                            std::int64_t kv_blocks, const RequestSource& source,
                            std::uint64_t seed, const ReplicaRunOptions& options = {});

/// The same for a given list of requests (ids 0..n-1 in arrival order, open loop).
ReplicaRun simulate_replica(const InferenceSpec& spec, const IterationCost& cost,
                            std::int64_t kv_blocks, const std::vector<Request>& requests,
                            std::uint64_t seed, const ReplicaRunOptions& options = {});

} // namespace trnsim::serving
