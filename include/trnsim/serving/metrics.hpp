// Per-request records of a serving run and the summary figures computed from them.
//
// Definitions (times in seconds of simulated time):
//   TTFT  first_token - arrival (the first token comes out of the prefill that completes the
//         prompt; arrival is when the client sent the request, so the router's latency counts)
//   TPOT  (finish - first_token) / (output_tokens - 1), the mean time per output token after
//         the first; a request of one output token has none (it is left out of the TPOT
//         percentiles and meets any TPOT objective)
//   E2E   finish - arrival
//   SLO   a request meets it when TTFT <= slo.ttft and TPOT <= slo.tpot (a zero bound is no
//         bound)
//   ITL   inter-token latency: for every delivery of tokens to a request after its first token,
//         the time since its previous delivery (one value per token; with speculative
//         decoding the tokens one iteration accepts arrive together and count once, as vLLM's
//         benchmark counts a streamed chunk). Percentiles over every delivery of every
//         request: what Transformers NeuronX's benchmark reports as per-token latency, where
//         TPOT above is vLLM's per-request mean. The scheduler records the gaps
//         (ReplicaScheduler::token_gaps); summarize() leaves the itl_ fields 0 and
//         add_itl() fills them.
//   span  from the first arrival to the last finish; output_tokens_per_s and
//         goodput_requests_per_s (requests meeting the SLO) are per second of span
//
// Percentiles: linear interpolation between closest ranks (Hyndman and Fan's type 7, the
// default of numpy.percentile and of R): for n sorted values x_0 <= ... <= x_{n-1} and a
// fraction p, h = (n - 1) p and P = x_floor(h) + (h - floor(h)) (x_floor(h)+1 - x_floor(h)).
// One value gives itself; no value gives 0.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/serving/spec.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace trnsim::serving {

struct RequestRecord {
    std::uint64_t id = 0;
    SimTime arrival;
    SimTime first_token = SimTime::from_ns(-1);
    SimTime finish = SimTime::from_ns(-1); ///< -1 ns: not finished
    std::int32_t input_tokens = 0;     ///< as served (after the cut to max_context)
    std::int32_t output_tokens = 0;
    std::uint32_t replica = 0;         ///< the replica that finished it
    std::uint32_t prefill_replica = 0; ///< where it was prefilled (== replica unless disaggregated)
    std::uint32_t preemptions = 0;
    /// Times a replica failure dropped it and the router sent it again (its first token and
    /// finish are those of the attempt that finished; arrival stays the original).
    std::uint32_t retries = 0;

    bool finished() const { return finish >= SimTime::zero(); }
    double ttft_s() const { return (first_token - arrival).seconds(); }
    double e2e_s() const { return (finish - arrival).seconds(); }
    /// Undefined (NaN) for a single output token: there is no time between output tokens.
    double tpot_s() const {
        return output_tokens > 1
                   ? (finish - first_token).seconds() / static_cast<double>(output_tokens - 1)
                   : std::numeric_limits<double>::quiet_NaN();
    }
};

/// The type 7 percentile (above) of values sorted ascending; p in [0, 1].
double percentile_sorted(std::span<const double> sorted, double p);

struct ServingSummary {
    std::uint64_t requests = 0;        ///< finished requests
    std::uint64_t unfinished = 0;      ///< records without a finish (left out of the figures)
    /// Finished requests of one output token: no TPOT, judged on TTFT alone against the SLO.
    std::uint64_t one_token = 0;
    std::uint64_t output_tokens = 0;
    std::uint64_t input_tokens = 0;   ///< prompt tokens of the finished requests, as served
    std::uint64_t met_slo = 0;
    std::uint64_t preempted_requests = 0; ///< requests preempted at least once
    std::uint64_t retried_requests = 0;   ///< requests a replica failure dropped at least once
    Seconds ttft_p50, ttft_p90, ttft_p99;
    Seconds tpot_p50, tpot_p90, tpot_p99;
    Seconds e2e_p50, e2e_p99;
    Seconds ttft_mean, tpot_mean;
    Seconds span;
    double output_tokens_per_s = 0.0;
    double goodput_requests_per_s = 0.0;
    double slo_attainment = 0.0;       ///< met_slo / requests
    Seconds itl_p50, itl_p90, itl_p99, itl_mean;
    std::uint64_t itl_count = 0;       ///< deliveries behind the itl_ figures
};

/// `count` deliveries that each came `ns` nanoseconds after the request's previous one.
struct TokenGap {
    std::int64_t ns = 0;
    std::int64_t count = 0;
};

/// Sorts `gaps` by ns and merges equal ones (counts added; zero counts dropped).
void compact_gaps(std::vector<TokenGap>& gaps);

/// The type 7 percentile (above) of the multiset the gaps describe (each ns repeated count
/// times), in seconds; `gaps` compacted. 0 for no gaps.
double gap_percentile_s(std::span<const TokenGap> gaps, double p);

/// Fills summary's itl_ fields from the gaps (compacted first).
void add_itl(ServingSummary& summary, std::vector<TokenGap> gaps);

ServingSummary summarize(std::span<const RequestRecord> records, const SloSpec& slo);

/// The replica whose finished requests took longest end to end: the highest mean E2E over the
/// requests it finished (RequestRecord::replica), against the fleet median of those means over
/// every replica that finished at least one request (type 7, above). Ties go to the lowest
/// index. A replica slowed down (a straggler chip, a hot router bucket) shows as a slowdown
/// above 1; in a uniform fleet the spread comes from the requests each replica drew.
struct SlowestReplica {
    std::uint32_t replica = 0;
    std::uint64_t requests = 0;    ///< finished requests of this replica
    Seconds mean_e2e;              ///< their mean E2E
    Seconds median_e2e;            ///< the median over the replicas of their mean E2E
    Seconds tpot_p50;              ///< TPOT p50 over its requests of more than one token
    Seconds fleet_tpot_p50;        ///< the median over the replicas of their TPOT p50
    double slowdown = 1.0;         ///< mean_e2e / median_e2e (1 when the median is 0)
    std::uint32_t replicas = 0;    ///< replicas that finished a request
};

/// Nothing when no request finished.
std::optional<SlowestReplica> slowest_replica(std::span<const RequestRecord> records);

} // namespace trnsim::serving
