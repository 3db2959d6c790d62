// Closed-form drivers of the published Neuron serving benchmarks on one replica: what the
// benchmark client does, iteration by iteration, costed by an IterationCostModel. They are
// the fast path for fitting the chip's serving coefficients and for the accuracy table
// (docs/validation.md, "Serving"); the fleet simulation runs the same requests through the
// scheduler on the engine.
//
// Static batch (Transformers NeuronX sampling loop, INF-T1): `batch` prompts of `input`
// tokens are encoded by one context-encoding graph per serving.prefill_batch sequences, and
// every sequence's first token comes out when the last graph ends (so TTFT p50 = p99 = the
// prefill time, as the published throughput rows show); then output - 1 decode steps of the
// whole batch, step i attending to input + i keys (its compiled bucket). TPOT p50 and p99 are
// percentiles of the per-token step times (the published Llama-3-8B rows, 128 + 8064 and
// 4096 + 4096 tokens at max_context 8192, have equal TPOT p50: the median token of both
// falls in the 8192 bucket, while their means differ). Output tokens/s = batch x output /
// (TTFT + sum of the steps).
//
// Closed loop (vLLM bench serve with --max-concurrency, INF-T2): `concurrency` clients, each
// sending its next request when the previous one finishes, `requests` in all, every prompt
// `input` tokens and every answer `output` tokens. Each iteration prefills the waiting
// requests (while the replica has free sequence slots) and decodes the running ones, as one
// iteration of a continuous-batching scheduler; with speculation a decode iteration yields
// `tokens_per_step` tokens per sequence on average (the acceptance length). TTFT is a
// request's send to the end of its prefill iteration, TPOT its (last token - first token) /
// (output - 1), p50/p99 over the requests; output tokens/s over the whole run.
//
// Test code (tests/CMakeLists.txt: the library trnsim_test_serving, linked by the serving and
// sim tests); nothing in src/ uses it.
#pragma once

#include "trnsim/serving/iteration_cost.hpp"

#include <cstdint>

namespace trnsim::serving {

struct BenchmarkResult {
    Seconds ttft_p50;
    Seconds ttft_p99;
    Seconds tpot_p50;
    Seconds tpot_p99;
    Seconds tpot_mean;
    double output_tokens_per_s = 0.0;
    /// The iteration terms behind the p50 figures (the static batch's prefill and its median
    /// decode step), for fitting coefficients that enter them linearly.
    IterationBreakdown ttft_terms;
    IterationBreakdown tpot_terms;
};

BenchmarkResult static_batch_benchmark(const IterationCostModel& model, int batch,
                                       std::int64_t input, std::int64_t output);

BenchmarkResult closed_loop_benchmark(const IterationCostModel& model, int concurrency,
                                      int requests, std::int64_t input, std::int64_t output,
                                      double tokens_per_step = 1.0);

} // namespace trnsim::serving
