// Requests: their sizes and their arrival times, drawn from counter-based random streams.
//
// A request is identified by its index in arrival order (0, 1, 2, ...). Every random draw that
// shapes request i uses a stream keyed by (seed, purpose, i) (engine/rng.hpp), so a request's
// sizes, prefix and inter-arrival gap depend on nothing else: adding replicas, changing the
// router or the thread count never changes the requests. The stream purposes are the
// ServingStream values below (0x5e01...: distinct from the other modules' stream kinds).
//
// Sizes (TokenDistribution, spec.hpp), each draw rounded to the nearest integer and clamped to
// [min, max] (max 0: max_context):
//   fixed      a
//   normal     mean a, standard deviation b (Box-Muller)
//   lognormal  mean a and standard deviation b of the tokens themselves: the underlying normal
//              has sigma^2 = ln(1 + b^2 / a^2) and mu = ln a - sigma^2 / 2
//   uniform    integers a..b with equal probability: floor(a + u (b - a + 1)), u in [0, 1)
//   empirical  one of `values` with equal probability
//   trace      the row's ContextTokens / GeneratedTokens (row i mod rows)
//
// A shared prefix (PrefixSpec) is put in front of the drawn input: with probability
// `fraction`, request i starts with prefix 1 + uniform(groups) of `tokens` tokens.
//
// Compiled maximum: the input is then cut to max_context - 1 tokens and the output to
// max_context - input (vLLM stops a sequence at its maximum model length), so prompt plus
// output always fit the compiled context. Every request has at least one input and one output
// token.
//
// Arrivals (ArrivalSpec), request 0 at time 0 and then:
//   poisson    exponential gaps of mean 1 / rate
//   gamma      gamma gaps of mean 1 / rate and coefficient of variation cv: shape 1 / cv^2,
//              scale cv^2 / rate (Marsaglia and Tsang's method, below)
//   trace      the trace's arrival times (relative to its first row, divided by the speed-up);
//              past the last row it repeats, pass k shifted by k x (span + mean gap), so a
//              count or duration longer than the trace keeps its pattern and its rate
//   closed_loop  no arrival times: the simulation issues request i when a client is free
//
// Gamma variates: G. Marsaglia and W. W. Tsang, "A simple method for generating gamma
// variables", ACM TOMS 26(3), 2000: for shape a >= 1, d = a - 1/3, c = 1 / sqrt(9 d); draw a
// standard normal x and v = (1 + c x)^3, accept d v when v > 0 and a uniform u satisfies
// u < 1 - 0.0331 x^4 or ln u < x^2 / 2 + d (1 - v + ln v). For a < 1: Gamma(a + 1) u^(1/a).
//
// Thread-safety: RequestSource is immutable after construction and safe to share.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/engine/event.hpp"
#include "trnsim/engine/rng.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/serving/trace.hpp"

#include <cstdint>
#include <memory>

namespace trnsim::serving {

/// Simulated time open-loop arrivals may take: half of what an int64 of nanoseconds holds
/// (146 years), leaving the other half for the requests to finish. RequestSource refuses
/// arrivals that would need more.
inline constexpr std::int64_t kArrivalHorizonNs = engine::kNever / 2;
inline constexpr double kSecondsPerYear = 365.25 * 86400.0;

/// Purposes of the serving module's random streams (engine::StreamKind values).
enum class ServingStream : std::uint32_t {
    input_tokens = 0x5e01,
    output_tokens = 0x5e02,
    arrival_gap = 0x5e03,
    prefix = 0x5e04,
    speculation = 0x5e05, ///< per sequence (request index), one block per speculative iteration
};

inline engine::StreamKind stream_kind(ServingStream s) { return static_cast<std::uint32_t>(s); }

/// A stream of request `index` for one purpose. Requests are numbered below 2^32.
inline engine::RandomStream request_stream(std::uint64_t seed, ServingStream purpose,
                                           std::uint64_t index) {
    return engine::RandomStream(seed, stream_kind(purpose), static_cast<std::uint32_t>(index));
}

struct Request {
    std::uint64_t id = 0;            ///< index in arrival order
    SimTime arrival;                 ///< when the client sent it
    std::int64_t input_tokens = 1;   ///< prompt tokens, the shared prefix included
    std::int64_t output_tokens = 1;  ///< tokens to generate (>= 1)
    std::uint32_t prefix_id = 0;     ///< 0: no shared prefix; else 1..groups
    std::int64_t prefix_tokens = 0;  ///< tokens of the shared prefix (< input_tokens)
};

/// One size from `d` (see above); `max_context` replaces a max of 0 (0: no bound).
std::int64_t draw_tokens(const TokenDistribution& d, std::int64_t max_context,
                         engine::RandomStream& stream);

/// A gamma variate of the given shape (> 0) and scale (Marsaglia-Tsang).
double draw_gamma(double shape, double scale, engine::RandomStream& stream);

/// The requests of a RequestSpec as pure functions of (seed, request index).
class RequestSource {
public:
    /// `trace` is needed (and kept) when the arrivals or a size come from a trace. Throws
    /// InputError (workload.requests...) for values that cannot make requests: a
    /// non-positive rate, a gamma cv <= 0, neither or both of count and duration (a trace
    /// may give neither: then every row once), an empty empirical list, a prefix that leaves
    /// no room in max_context, and a count whose arrivals would not fit in kArrivalHorizonNs:
    /// Poisson or gamma arrivals whose mean span (count - 1) / rate plus six standard
    /// deviations (cv sqrt(count - 1) / rate) exceeds it (at workload.requests.arrival.rate),
    /// a trace whose repeats reach past it (at workload.requests.count).
    RequestSource(const RequestSpec& spec, std::int64_t max_context, std::uint64_t seed,
                  std::shared_ptr<const AzureTrace> trace = nullptr);

    const RequestSpec& spec() const { return spec_; }
    bool closed_loop() const { return spec_.arrival.kind == ArrivalSpec::Kind::closed_loop; }

    /// Sizes and prefix of request `index`, arriving at `arrival`.
    Request request(std::uint64_t index, SimTime arrival) const;

    /// Open-loop arrivals: the time of request `index` (request 0 at zero). Gaps are summed by
    /// the caller through next_arrival(); arrival() of a trace is direct.
    SimTime next_arrival(std::uint64_t index, SimTime previous) const;

    /// Whether request `index` arriving at `arrival` is issued (count and duration limits).
    bool issued(std::uint64_t index, SimTime arrival) const;
    /// Requests issued by count (0 when limited by duration).
    std::uint64_t count() const { return count_; }

private:
    void check_arrival_span() const;

    RequestSpec spec_;
    std::int64_t max_context_;
    std::uint64_t seed_;
    std::shared_ptr<const AzureTrace> trace_;
    std::uint64_t count_ = 0;
    std::int64_t duration_ns_ = 0;
    std::int64_t trace_period_ns_ = 0; ///< span + mean gap: the shift between repeats
};

} // namespace trnsim::serving
