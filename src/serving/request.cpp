#include "trnsim/serving/request.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace trnsim::serving {

namespace {

std::int64_t clamp_tokens(double v, std::int64_t lo, std::int64_t hi) {
    if (!(v >= static_cast<double>(lo))) { // also NaN
        return lo;
    }
    if (v >= static_cast<double>(hi)) {
        return hi;
    }
    return std::clamp<std::int64_t>(std::llround(v), lo, hi);
}

void check_distribution(const TokenDistribution& d, const std::string& key, bool has_trace) {
    using K = TokenDistribution::Kind;
    switch (d.kind) {
    case K::fixed:
        break;
    case K::normal:
    case K::lognormal:
        if (!(d.b >= 0.0) || (d.kind == K::lognormal && !(d.a > 0.0))) {
            throw InputError(key, "a lognormal needs a positive mean and a normal or lognormal "
                                  "a non-negative standard deviation");
        }
        break;
    case K::uniform:
        if (!(d.b >= d.a)) {
            throw InputError(key, "uniform: the high end must not be below the low end");
        }
        break;
    case K::empirical:
        if (d.values.empty()) {
            throw InputError(key, "empirical: no values");
        }
        break;
    case K::trace:
        if (!has_trace) {
            throw InputError(key, "sizes from a trace need workload.requests.arrival.trace");
        }
        break;
    }
}

} // namespace

std::int64_t draw_tokens(const TokenDistribution& d, std::int64_t max_context,
                         engine::RandomStream& stream) {
    const std::int64_t hi_bound = d.max > 0 ? d.max
                                  : max_context > 0 ? max_context
                                                    : std::numeric_limits<std::int32_t>::max();
    const std::int64_t lo = std::min(d.min, hi_bound);
    using K = TokenDistribution::Kind;
    double v = 0.0;
    switch (d.kind) {
    case K::fixed:
        v = d.a;
        break;
    case K::normal:
        v = stream.normal(d.a, d.b);
        break;
    case K::lognormal: {
        const double s2 = std::log1p((d.b * d.b) / (d.a * d.a));
        v = stream.lognormal(std::log(d.a) - 0.5 * s2, std::sqrt(s2));
        break;
    }
    case K::uniform:
        v = std::floor(d.a + stream.uniform() * (d.b - d.a + 1.0));
        v = std::min(v, d.b); // (b - a + 1) u stays below b - a + 1; this guards rounding
        break;
    case K::empirical:
        v = static_cast<double>(
            d.values[engine::uniform_below(stream.next_u32(),
                                           static_cast<std::uint32_t>(d.values.size()))]);
        break;
    case K::trace:
        v = d.a; // the caller substitutes the trace row
        break;
    }
    return clamp_tokens(v, lo, hi_bound);
}

double draw_gamma(double shape, double scale, engine::RandomStream& stream) {
    if (shape < 1.0) {
        // Gamma(a) = Gamma(a + 1) U^(1/a) (Marsaglia and Tsang, section 6).
        const double g = draw_gamma(shape + 1.0, 1.0, stream);
        const double u = 1.0 - stream.uniform(); // (0, 1]
        return scale * g * std::pow(u, 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
        const double x = stream.normal();
        double v = 1.0 + c * x;
        if (v <= 0.0) {
            continue;
        }
        v = v * v * v;
        const double u = 1.0 - stream.uniform(); // (0, 1]: ln u is finite
        const double x2 = x * x;
        if (u < 1.0 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
            return scale * d * v;
        }
    }
}

RequestSource::RequestSource(const RequestSpec& spec, std::int64_t max_context,
                             std::uint64_t seed, std::shared_ptr<const AzureTrace> trace)
    : spec_(spec), max_context_(max_context), seed_(seed), trace_(std::move(trace)) {
    using A = ArrivalSpec::Kind;
    const bool has_trace = trace_ && trace_->size() > 0;
    check_distribution(spec.input, "workload.requests.input", has_trace);
    check_distribution(spec.output, "workload.requests.output", has_trace);
    switch (spec.arrival.kind) {
    case A::poisson:
    case A::gamma:
        if (!(spec.arrival.rate_per_s > 0.0) || !std::isfinite(spec.arrival.rate_per_s)) {
            throw InputError("workload.requests.arrival.rate", "the rate must be positive");
        }
        if (spec.arrival.kind == A::gamma && !(spec.arrival.gamma_cv > 0.0)) {
            throw InputError("workload.requests.arrival.cv", "the cv must be positive");
        }
        break;
    case A::trace:
        if (!has_trace) {
            throw InputError(kTraceKey, "trace arrivals need a trace");
        }
        break;
    case A::closed_loop:
        if (spec.arrival.concurrency < 1) {
            throw InputError("workload.requests.arrival.concurrency",
                             "at least one request must be in flight");
        }
        break;
    }
    const bool by_count = spec.count > 0;
    const bool by_duration = spec.duration > Duration::zero();
    if (by_count && by_duration) {
        throw InputError("workload.requests", "give count or duration, not both");
    }
    if (!by_count && !by_duration) {
        if (spec.arrival.kind != A::trace) {
            throw InputError("workload.requests", "give count or duration");
        }
        count_ = trace_->size();
    } else {
        count_ = by_count ? static_cast<std::uint64_t>(spec.count) : 0;
        duration_ns_ = by_duration ? spec.duration.ns() : 0;
    }
    if (count_ > std::numeric_limits<std::uint32_t>::max()) {
        throw InputError("workload.requests.count", "at most 2^32 - 1 requests");
    }
    if (spec.prefix.groups < 0 || (spec.prefix.groups > 0 && spec.prefix.tokens < 1) ||
        !(spec.prefix.fraction >= 0.0 && spec.prefix.fraction <= 1.0)) {
        throw InputError("workload.requests.prefix",
                         "groups >= 0, tokens >= 1 with groups, fraction in [0, 1]");
    }
    if (spec.prefix.groups > 0 && max_context > 0 && spec.prefix.tokens > max_context - 2) {
        throw InputError("workload.requests.prefix.tokens",
                         "a prefix of " + std::to_string(spec.prefix.tokens) +
                             " tokens leaves no room for a prompt and an output in max_context " +
                             std::to_string(max_context));
    }
    if (has_trace) {
        const std::size_t n = trace_->size();
        const std::int64_t mean_gap = n > 1 ? trace_->span_ns() / static_cast<std::int64_t>(n - 1)
                                            : 1'000'000'000;
        trace_period_ns_ = trace_->span_ns() + std::max<std::int64_t>(mean_gap, 1);
    }
    check_arrival_span();
}

namespace {

std::string years(double seconds) {
    const double y = seconds / kSecondsPerYear;
    char text[48];
    if (y >= 100.0 && y < 1e15) {
        return fmt::integer(std::llround(y)) + " years";
    }
    std::snprintf(text, sizeof text, "%.3g years", y);
    return text;
}

std::string rate_text(double per_s) {
    char text[48];
    std::snprintf(text, sizeof text, "%g/s", per_s);
    return text;
}

} // namespace

void RequestSource::check_arrival_span() const {
    using A = ArrivalSpec::Kind;
    if (count_ < 2) {
        return; // by duration (at most a year), or one request at time 0
    }
    const double horizon_s = static_cast<double>(kArrivalHorizonNs) * 1e-9;
    const double gaps = static_cast<double>(count_ - 1);
    const std::string requests = std::to_string(count_) + " requests";
    if (spec_.arrival.kind == A::poisson || spec_.arrival.kind == A::gamma) {
        const double cv = spec_.arrival.kind == A::gamma ? spec_.arrival.gamma_cv : 1.0;
        const double mean_s = gaps / spec_.arrival.rate_per_s;
        const double reach_s = mean_s + 6.0 * cv * std::sqrt(gaps) / spec_.arrival.rate_per_s;
        if (!(reach_s <= horizon_s)) {
            throw InputError("workload.requests.arrival.rate",
                             requests + " at " + rate_text(spec_.arrival.rate_per_s) +
                                 " arrive over " + years(mean_s) +
                                 " on average (" + years(reach_s) +
                                 " six standard deviations out), beyond the " +
                                 years(horizon_s) +
                                 " of simulated time arrivals may take: raise the rate or "
                                 "lower workload.requests.count");
        }
    } else if (spec_.arrival.kind == A::trace && trace_period_ns_ > 0) {
        const double passes = std::floor(gaps / static_cast<double>(trace_->size()));
        const double last_s = (passes * static_cast<double>(trace_period_ns_) +
                               static_cast<double>(trace_->span_ns())) *
                              1e-9;
        if (!(last_s <= horizon_s)) {
            throw InputError("workload.requests.count",
                             requests + " replay the trace's " +
                                 std::to_string(trace_->size()) + " rows over " +
                                 years(last_s) + ", beyond the " + years(horizon_s) +
                                 " of simulated time arrivals may take: lower the count or "
                                 "raise workload.requests.arrival.speedup");
        }
    }
}

Request RequestSource::request(std::uint64_t index, SimTime arrival) const {
    Request r;
    r.id = index;
    r.arrival = arrival;
    const std::int64_t ceiling = max_context_ > 0 ? max_context_ : std::numeric_limits<std::int32_t>::max();
    const std::size_t row = trace_ ? static_cast<std::size_t>(index % trace_->size()) : 0;

    std::int64_t in = 0;
    if (spec_.input.kind == TokenDistribution::Kind::trace) {
        TokenDistribution d = spec_.input;
        d.kind = TokenDistribution::Kind::fixed;
        d.a = static_cast<double>(trace_->input_tokens[row]);
        engine::RandomStream unused(seed_, 0, 0);
        in = draw_tokens(d, max_context_, unused);
    } else {
        engine::RandomStream s = request_stream(seed_, ServingStream::input_tokens, index);
        in = draw_tokens(spec_.input, max_context_, s);
    }
    std::int64_t out = 0;
    if (spec_.output.kind == TokenDistribution::Kind::trace) {
        TokenDistribution d = spec_.output;
        d.kind = TokenDistribution::Kind::fixed;
        d.a = static_cast<double>(trace_->output_tokens[row]);
        engine::RandomStream unused(seed_, 0, 0);
        out = draw_tokens(d, max_context_, unused);
    } else {
        engine::RandomStream s = request_stream(seed_, ServingStream::output_tokens, index);
        out = draw_tokens(spec_.output, max_context_, s);
    }
    if (spec_.prefix.groups > 0) {
        engine::RandomStream s = request_stream(seed_, ServingStream::prefix, index);
        const double u = s.uniform();
        const std::uint32_t g =
            engine::uniform_below(s.next_u32(), static_cast<std::uint32_t>(spec_.prefix.groups));
        if (u < spec_.prefix.fraction) {
            r.prefix_id = g + 1;
            r.prefix_tokens = spec_.prefix.tokens;
            in += spec_.prefix.tokens;
        }
    }
    in = std::clamp<std::int64_t>(in, std::max<std::int64_t>(r.prefix_tokens + 1, 1),
                                  std::max<std::int64_t>(ceiling - 1, 1));
    out = std::clamp<std::int64_t>(out, 1, std::max<std::int64_t>(ceiling - in, 1));
    r.input_tokens = in;
    r.output_tokens = out;
    return r;
}

SimTime RequestSource::next_arrival(std::uint64_t index, SimTime previous) const {
    using A = ArrivalSpec::Kind;
    switch (spec_.arrival.kind) {
    case A::poisson:
    case A::gamma: {
        if (index == 0) {
            return SimTime::zero();
        }
        engine::RandomStream s = request_stream(seed_, ServingStream::arrival_gap, index);
        const double mean = 1.0 / spec_.arrival.rate_per_s;
        double gap = 0.0;
        if (spec_.arrival.kind == A::poisson) {
            gap = s.exponential(mean);
        } else {
            const double cv2 = spec_.arrival.gamma_cv * spec_.arrival.gamma_cv;
            gap = draw_gamma(1.0 / cv2, mean * cv2, s);
        }
        const Duration step = Duration::from_seconds_ceil(gap);
        // Saturates instead of overflowing (check_arrival_span makes it a six-sigma event).
        if (step.ns() > engine::kNever - previous.ns()) {
            return SimTime::max();
        }
        return previous + step;
    }
    case A::trace: {
        const std::uint64_t n = trace_->size();
        const auto pass = static_cast<std::int64_t>(index / n);
        return SimTime::from_ns(pass * trace_period_ns_ +
                                trace_->arrival[static_cast<std::size_t>(index % n)].ns());
    }
    case A::closed_loop:
        break;
    }
    return previous;
}

bool RequestSource::issued(std::uint64_t index, SimTime arrival) const {
    if (index >= std::numeric_limits<std::uint32_t>::max() || arrival.ns() > kArrivalHorizonNs) {
        return false;
    }
    if (count_ > 0) {
        return index < count_;
    }
    return arrival.ns() < duration_ns_;
}

} // namespace trnsim::serving
