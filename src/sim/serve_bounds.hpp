// What a serving run will cost before it starts (private to the sim module): the checks that
// refuse, with the key that drives them, a run that cannot finish or would not fit in memory.
//
// Progress under failures (check_progress). A request alone on a replica takes t: its prefill
// plus one decode iteration (batch 1) per further output token, at the requests' mean sizes
// (fixed: the size; normal and lognormal: the mean; uniform: the midpoint; empirical: the mean
// of the values; a trace: its mean row), cut to max_context as the requests are. After a
// failure its domain (or the spare taking over) returns w = detection + restart later, and a
// failure meanwhile starts the return over. A domain whose components were all just renewed
// survives t + w with probability
//   S(t + w) = prod over the processes p that take a replica down of
//              S_p(t + w)^(components of p's class in a domain)
// where S_p is the process's survival function at its mean m for a good component (for a bad
// one when every component is bad): exp(-x / m) exponential, exp(-(x / (m s))^k) Weibull of
// shape k (s = 1 / Gamma(1 + 1/k)), 1 - Phi((ln x - mu) / sigma) lognormal (mu = ln m -
// sigma^2 / 2); a power process counts once per domain. An attempt of the request (and the
// return before it) succeeds with probability S(t + w), so it needs 1 / S(t + w) attempts on
// average, each costing the domain a failure and its recovery. Beyond kMaxAttempts
// (serve_layout.hpp; e^6.9: t + w is about seven of the domain's mean times between failures)
// the fleet would retry nearly forever: the scenario is refused at the failure entry (or
// reliability.failures) that dominates.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve.hpp"

#include "serve_layout.hpp"

namespace trnsim::sim::detail {

/// The seconds a request of `input` + `output` tokens takes alone on a replica.
double alone_seconds(const serving::IterationCostModel& cost, std::int64_t input,
                     std::int64_t output);

/// The requests' mean input and output tokens (see above; a trace: its mean row).
std::pair<std::int64_t, std::int64_t> mean_request(const ServeInput& in);

/// Throws InputError when the failures of `in` make a mean request need more than
/// kMaxAttempts attempts (see above).
void check_progress(const ServeInput& in, const serving::IterationCostModel& cost);

/// What a run of the fleet is estimated to hold in memory, by what drives it (see check_memory).
struct MemoryEstimate {
    double requests = 0.0;        ///< requests issued
    double request_bytes = 0.0;   ///< their records, scheduler state and result rows
    double replica_bytes = 0.0;   ///< replicas and the engine's partitions
    double samples = 0.0;         ///< KV samples per replica
    double sample_bytes = 0.0;
    double failure_bytes = 0.0;   ///< the failure layout's components (spares included)
    double total() const { return request_bytes + replica_bytes + sample_bytes + failure_bytes; }
};

/// Memory estimate of a run of `spec`'s fleet `in` (placement already checked):
///   requests    count; or by duration: rate x duration x 1.1 + 10 (open loop), clients x
///               duration / t (closed loop, t: a mean request alone), duration / trace period
///               x rows (a trace); a trace alone: its rows. kRequestBytes each (measured: a
///               record, the scheduler's sequence, a result row).
///   replicas    kReplicaBytes each, plus kPartitionPairBytes per pair of engine partitions
///               (the engine's mailboxes: a partition per NeuronLink domain with replicas).
///   KV samples  span / kv_sample + 1 per replica (4 bytes) and fleet-wide (16 bytes), span:
///               the arrivals' mean span plus t (closed loop: requests x t / min(clients,
///               replicas x max_batch)).
///   failures    kComponentBytes per failing component of the cluster's and the spare
///               domains, per router shard (each follows its own outage schedule).
MemoryEstimate estimate_memory(const config::ScenarioSpec& spec, const ServeInput& in,
                               const serving::IterationCostModel& cost);

/// Throws InputError when estimate_memory exceeds simulation.max_memory, at the key that
/// drives the largest term (workload.requests.count or .duration, cluster.instances or
/// .ultraservers, simulation.kv_sample, reliability.spares...).
void check_memory(const config::ScenarioSpec& spec, const ServeInput& in,
                  const serving::IterationCostModel& cost);

inline constexpr double kRequestBytes = 320.0;
inline constexpr double kReplicaBytes = 4096.0;
inline constexpr double kPartitionPairBytes = 25.0;
inline constexpr double kComponentBytes = 112.0;

} // namespace trnsim::sim::detail
