// Running a `workload.type: inference` scenario: the replica's iteration cost from the chip,
// the model and workload.serving (serving::IterationCostModel), its KV cache in the HBM left
// after the weights, the fleet on the engine (simulate_serving, serve.hpp), and the figures a
// capacity planner asks for: latency percentiles, throughput, SLO attainment, memory-bandwidth
// utilisation and cost (docs/serving.md defines each).
//
//   chips, instances     the cluster's (every instance is paid for, serving or not)
//   instance_hours       instances x the simulated span (time 0 to the last finish)
//   cost_usd             instance_hours x cost.instance_hour
//   cost per million output tokens   cost_usd / output tokens x 10^6
//   mbu                  HBM bandwidth utilisation measured over the run: the bytes the
//                        simulated iterations had to read or write on a rank (the rank's
//                        weights once per iteration, the KV cache each decode iteration reads
//                        and each prefill writes) over the replicas' time in service (replicas
//                        x the simulated span, less the time they were down) times the rank's
//                        share of the chip's HBM bandwidth. An idle fleet shows little.
//   mbu_busy             the same bytes over the time the replicas were running iterations
//   mfu                  model FLOPs (2 x active parameters per computed token, prefill and
//                        decode; the prefix-cache hits are not computed) over the replicas'
//                        time in service times the chip's peak at the compute precision
//   decode_mbu           the configuration's decode efficiency: the MBU of one decode
//                        iteration at the compiled batch (max_batch sequences) and the served
//                        requests' mean context (prompt + half the output), not a time average
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::sim {

struct ServingScenarioRun {
    ServingRun run;
    std::int64_t chips = 0;
    std::int64_t instances = 0;
    std::int64_t ultraservers = 0;
    int tp = 1;
    int lnc = 1;
    std::int64_t kv_blocks_per_replica = 0;
    serving::ReplicaMemory memory;           ///< per rank of a replica
    std::vector<std::int64_t> buckets;       ///< the compiled sequence buckets
    Seconds decode_iteration;                ///< decode_mbu's iteration (see above)
    double mean_decode_context = 0.0;        ///< its context per sequence, tokens
    double decode_mbu = 0.0;
    double mbu = 0.0;                        ///< measured (see above)
    double mbu_busy = 0.0;
    double mfu = 0.0;
    double instance_hours = 0.0;
    double cost_usd = 0.0;
    double cost_per_million_output_tokens_usd = 0.0;
    Seconds wall;                            ///< host time of the fleet simulation
};

/// What a serving scenario's fleet looks like before it runs.
struct ServingLayout {
    int lnc = 1;
    std::uint32_t replicas = 0;
    std::uint32_t prefill_replicas = 0;
    std::int64_t kv_blocks_per_replica = 0;
    serving::ReplicaMemory memory;           ///< per rank of a replica
    std::vector<std::int64_t> buckets;
    std::uint32_t router_shards = 1; ///< resolved (workload.serving.router_shards: auto)
};

/// Every check run_serving makes before it simulates (the cost model: heads, buckets, HBM;
/// the placement; the fabric; the trace and the request source), without simulating; returns
/// the fleet's layout. InputError with a key path (not yet located in the file).
ServingLayout check_serving(const config::ScenarioSpec& spec);

/// Seconds a request of the scenario's mean sizes takes alone on one of its replicas (its
/// prefill, then one decode iteration at batch 1 per further output token): the shortest a
/// request stays in the fleet (serve_bounds.hpp).
double mean_request_alone_seconds(const config::ScenarioSpec& spec);

/// Simulated seconds open-loop arrivals may take (serving::kArrivalHorizonNs, 146 years), for
/// the checks of a plan's rates.
double arrival_horizon_s();

/// Runs the scenario on `threads` threads (0: simulation.threads, auto: the engine's
/// default). InputError as check_serving.
ServingScenarioRun run_serving(const config::ScenarioSpec& spec, int threads = 0);

} // namespace trnsim::sim
