#include "support/serving_benchmark.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>
#include <vector>

namespace trnsim::serving {

namespace {

/// Nearest-rank percentile of values given as (value, count) pairs.
double percentile(std::vector<std::pair<double, std::int64_t>> v, double p) {
    std::sort(v.begin(), v.end());
    std::int64_t n = 0;
    for (const auto& [x, c] : v) {
        n += c;
    }
    if (n == 0) {
        return 0.0;
    }
    const auto rank = static_cast<std::int64_t>(std::ceil(p * static_cast<double>(n)));
    std::int64_t seen = 0;
    for (const auto& [x, c] : v) {
        seen += c;
        if (seen >= std::max<std::int64_t>(rank, 1)) {
            return x;
        }
    }
    return v.back().first;
}

double percentile(const std::vector<double>& values, double p) {
    std::vector<std::pair<double, std::int64_t>> v;
    for (double x : values) {
        v.emplace_back(x, 1);
    }
    return percentile(std::move(v), p);
}

IterationShape decode_shape(std::int64_t sequences, std::int64_t max_context, int k) {
    IterationShape s;
    s.decode_sequences = sequences;
    s.decode_context_tokens = sequences * max_context;
    s.decode_max_context = max_context;
    s.speculative_k = k;
    return s;
}

} // namespace

BenchmarkResult static_batch_benchmark(const IterationCostModel& model, int batch,
                                       std::int64_t input, std::int64_t output) {
    TRNSIM_CHECK(batch >= 1 && input >= 1 && output >= 1, "an empty benchmark");
    TRNSIM_CHECK(input + output - 1 <= model.buckets().back(),
                 "the benchmark's sequences exceed max_context");
    BenchmarkResult r;
    IterationShape prefill;
    prefill.prefill_sequences = batch;
    prefill.prefill_tokens = std::int64_t{batch} * input;
    prefill.prefill_max_tokens = input;
    prefill.prefill_max_context = input;
    const double ttft = model.seconds(prefill);
    r.ttft_p50 = r.ttft_p99 = Seconds::of(ttft);
    r.ttft_terms = model.breakdown(prefill);

    // Decode step i = 1 .. output - 1 produces token i + 1 attending to input + i keys; the
    // steps of one bucket cost the same.
    std::vector<std::pair<double, std::int64_t>> steps;
    std::vector<std::int64_t> step_bucket;
    double decode_total = 0.0;
    std::int64_t lo = input + 1;
    const std::int64_t hi = input + output - 1;
    for (std::int64_t b : model.buckets()) {
        if (lo > hi) {
            break;
        }
        if (b < lo) {
            continue;
        }
        const std::int64_t count = std::min(hi, b) - lo + 1;
        const double t = model.seconds(decode_shape(batch, b, 0));
        steps.emplace_back(t, count);
        step_bucket.push_back(b);
        decode_total += t * static_cast<double>(count);
        lo = b + 1;
    }
    if (!steps.empty()) {
        r.tpot_p50 = Seconds::of(percentile(steps, 0.5));
        r.tpot_p99 = Seconds::of(percentile(steps, 0.99));
        r.tpot_mean = Seconds::of(decode_total / static_cast<double>(output - 1));
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (steps[i].first == r.tpot_p50.seconds()) {
                r.tpot_terms = model.breakdown(decode_shape(batch, step_bucket[i], 0));
                break;
            }
        }
    }
    r.output_tokens_per_s = static_cast<double>(std::int64_t{batch} * output) /
                            (ttft + decode_total);
    return r;
}

BenchmarkResult closed_loop_benchmark(const IterationCostModel& model, int concurrency,
                                      int requests, std::int64_t input, std::int64_t output,
                                      double tokens_per_step) {
    TRNSIM_CHECK(concurrency >= 1 && requests >= 1 && input >= 1 && output >= 2,
                 "an empty benchmark");
    TRNSIM_CHECK(tokens_per_step >= 1.0, "a decode step yields at least one token");
    const ServingSpec& spec = model.serving();
    const int k = spec.speculative ? spec.speculative->k : 0;
    const std::int64_t slots = spec.max_batch;
    const std::int64_t max_context = model.buckets().back();

    struct Request {
        double sent = 0.0;
        double first = 0.0;
        double generated = 0.0;
    };
    std::deque<Request> waiting;
    std::vector<Request> running;
    std::vector<double> ttft;
    std::vector<double> tpot;
    int issued = 0;
    for (; issued < std::min(concurrency, requests); ++issued) {
        waiting.push_back({0.0, 0.0, 0.0});
    }
    double t = 0.0;
    BenchmarkResult r;
    while (static_cast<int>(ttft.size()) < requests) {
        IterationShape shape;
        const auto admit = std::min<std::int64_t>(
            static_cast<std::int64_t>(waiting.size()),
            slots - static_cast<std::int64_t>(running.size()));
        if (admit > 0) {
            shape.prefill_sequences = admit;
            shape.prefill_tokens = admit * input;
            shape.prefill_max_tokens = input;
            shape.prefill_max_context = input;
        }
        if (!running.empty()) {
            std::int64_t context = 0;
            for (const Request& q : running) {
                context = std::max(context, input + static_cast<std::int64_t>(q.generated));
            }
            context = std::min(max_context, context + k);
            shape = [&] {
                IterationShape s = decode_shape(static_cast<std::int64_t>(running.size()),
                                                context, k);
                s.prefill_sequences = shape.prefill_sequences;
                s.prefill_tokens = shape.prefill_tokens;
                s.prefill_max_tokens = shape.prefill_max_tokens;
                s.prefill_max_context = shape.prefill_max_context;
                return s;
            }();
        }
        TRNSIM_CHECK(!shape.empty(), "closed loop with nothing to run");
        t += model.seconds(shape);
        // Decode first (the sequences that were running), then admit the prefilled ones.
        std::vector<Request> still;
        for (Request& q : running) {
            q.generated += tokens_per_step;
            if (q.generated >= static_cast<double>(output)) {
                ttft.push_back(q.first - q.sent);
                tpot.push_back((t - q.first) / static_cast<double>(output - 1));
                if (issued < requests) {
                    waiting.push_back({t, 0.0, 0.0});
                    ++issued;
                }
            } else {
                still.push_back(q);
            }
        }
        running = std::move(still);
        for (std::int64_t i = 0; i < admit; ++i) {
            Request q = waiting.front();
            waiting.pop_front();
            q.first = t;
            q.generated = 1.0;
            running.push_back(q);
        }
    }
    r.ttft_p50 = Seconds::of(percentile(ttft, 0.5));
    r.ttft_p99 = Seconds::of(percentile(ttft, 0.99));
    r.tpot_p50 = Seconds::of(percentile(tpot, 0.5));
    r.tpot_p99 = Seconds::of(percentile(tpot, 0.99));
    double sum = 0.0;
    for (double x : tpot) {
        sum += x;
    }
    r.tpot_mean = Seconds::of(sum / static_cast<double>(tpot.size()));
    r.output_tokens_per_s = static_cast<double>(requests) * static_cast<double>(output) / t;
    return r;
}

} // namespace trnsim::serving
