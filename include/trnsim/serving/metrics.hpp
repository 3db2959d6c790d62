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

#include "trnsim/serving/spec.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace trnsim::serving {

struct RequestRecord {
    std::uint64_t id = 0;
    std::int64_t arrival_ns = 0;
    std::int64_t first_token_ns = -1;
    std::int64_t finish_ns = -1;       ///< -1: not finished
    std::int32_t input_tokens = 0;     ///< as served (after the cut to max_context)
    std::int32_t output_tokens = 0;
    std::uint32_t replica = 0;         ///< the replica that finished it
    std::uint32_t prefill_replica = 0; ///< where it was prefilled (== replica unless disaggregated)
    std::uint32_t preemptions = 0;
    /// Times a replica failure dropped it and the router sent it again (its first token and
    /// finish are those of the attempt that finished; arrival stays the original).
    std::uint32_t retries = 0;

    bool finished() const { return finish_ns >= 0; }
    double ttft_s() const { return static_cast<double>(first_token_ns - arrival_ns) * 1e-9; }
    double e2e_s() const { return static_cast<double>(finish_ns - arrival_ns) * 1e-9; }
    /// Undefined (NaN) for a single output token: there is no time between output tokens.
    double tpot_s() const {
        return output_tokens > 1 ? static_cast<double>(finish_ns - first_token_ns) * 1e-9 /
                                       static_cast<double>(output_tokens - 1)
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
    double ttft_p50_s = 0.0, ttft_p90_s = 0.0, ttft_p99_s = 0.0;
    double tpot_p50_s = 0.0, tpot_p90_s = 0.0, tpot_p99_s = 0.0;
    double e2e_p50_s = 0.0, e2e_p99_s = 0.0;
    double ttft_mean_s = 0.0, tpot_mean_s = 0.0;
    double span_s = 0.0;
    double output_tokens_per_s = 0.0;
    double goodput_requests_per_s = 0.0;
    double slo_attainment = 0.0;       ///< met_slo / requests
    double itl_p50_s = 0.0, itl_p90_s = 0.0, itl_p99_s = 0.0, itl_mean_s = 0.0;
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
    double mean_e2e_s = 0.0;       ///< their mean E2E
    double median_e2e_s = 0.0;     ///< the median over the replicas of their mean E2E
    double tpot_p50_s = 0.0;       ///< TPOT p50 over its requests of more than one token
    double fleet_tpot_p50_s = 0.0; ///< the median over the replicas of their TPOT p50
    double slowdown = 1.0;         ///< mean_e2e_s / median_e2e_s (1 when the median is 0)
    std::uint32_t replicas = 0;    ///< replicas that finished a request
};

/// Nothing when no request finished.
std::optional<SlowestReplica> slowest_replica(std::span<const RequestRecord> records);

} // namespace trnsim::serving
