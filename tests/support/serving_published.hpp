// The published Neuron serving measurements (tests/data/inference/neuron-published.csv,
// source keys INF-T1 and INF-T2 of shared/reference/inference.md), the replica and benchmark
// client each row describes, and the fit of a chip's serving coefficients to named rows.
//
// The fit (fit_serving_costs): for a given prefill efficiency every benchmark figure the
// driver predicts is linear in the other three coefficients,
//     kernel + collective_time + kernels x kernel_overhead + graphs x iteration_overhead
//       + prefill_graphs x prefill_graph_overhead
// (IterationBreakdown); for each efficiency the three are the non-negative least-squares
// minimiser of the squared relative errors of TTFT p50 and TPOT p50 over the rows given
// (solved exactly on every set of active constraints), and the efficiency is searched on a
// fixed grid from 0.05 to 1 refined to 0.001. Deterministic: the same chip data and rows give
// the same coefficients to the last bit.
//
// Test code (tests/CMakeLists.txt: the library trnsim_test_serving, linked by the serving and
// sim tests); nothing in src/ uses it.
#pragma once

#include "support/serving_benchmark.hpp"

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/workload/model.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::serving {

struct PublishedRow {
    std::string key;          ///< INF-T1, INF-I1, INF-T2
    std::string table;        ///< latency, throughput, vllm
    std::string model;        ///< as published
    std::string preset;       ///< scenarios/models/ preset
    std::string chip;         ///< chip preset
    int lnc = 1;
    int tp = 1;
    int batch = 1;            ///< static batch, or concurrency with requests > 0
    std::int64_t max_context = 0;
    std::int64_t input = 0;
    std::int64_t output = 0;
    int weight_bytes = 2;
    std::string stack;        ///< tnx-2.18 or vllm-nxdi-2.32
    int requests = 0;         ///< > 0: closed-loop client
    std::string draft;        ///< draft preset (speculative decoding)
    int speculative_k = 0;
    double acceptance_length = 1.0;
    double ttft_p50_ms = 0.0, ttft_p99_ms = 0.0, tpot_p50_ms = 0.0, tpot_p99_ms = 0.0;
    double output_tok_s = 0.0;
    std::vector<std::int64_t> buckets;         ///< compiled token-generation buckets (empty: default)
    std::vector<std::int64_t> prefill_buckets; ///< compiled context-encoding buckets (empty: default)
    int collective_tiling = 1; ///< context graphs' collective-compute tiles as compiled
    bool fused_speculation = false; ///< the draft compiled into the target's graphs
    std::string note;

    /// "INF-T1 latency Llama-2-70b 128+128 @256 b1".
    std::string label() const;
    /// The published output tokens/s disagrees by more than 10% with the published TTFT and
    /// TPOT p50 (batch x output / (TTFT + (output - 1) TPOT)).
    bool throughput_inconsistent() const;
    /// The data file marks the row's TTFT as contradicting the release's other rows (its note
    /// starts with "unreproducible").
    bool ttft_unreproducible() const { return note.rfind("unreproducible", 0) == 0; }
    /// The source gives a TTFT (INF-T2c's Qwen3 row does not).
    bool ttft_published() const { return ttft_p50_ms > 0.0; }
};

/// A speculative row whose acceptance is not published (acceptance_length 0): the mean tokens
/// per step the model needs to give the published TPOT p50, its decode step with k draft
/// tokens at the benchmark's median context over that TPOT. The model explains the row only
/// when this lies in [1, 1 + k].
double implied_acceptance_length(const PublishedRow& row, const IterationCostModel& model);

/// Reads the CSV (lines starting with '#' are comments). Throws InputError naming the file.
std::vector<PublishedRow> read_published_rows(const std::filesystem::path& file);

/// The context-encoding buckets a TNx row may have been compiled with. `half`: TNx 0.10's
/// default without context_length_estimate (half of each token-generation bucket,
/// transformers_neuronx/bucket.py context_sizes), what the published samples set. `full`: one
/// context bucket at the compiled length (context_length_estimate = n_positions), to which
/// every prompt is right-padded (base.py, context()). The benchmark pages publish neither.
enum class ContextBuckets { half, full };

/// The replica a row ran: tp, lnc, max_batch = batch, max_context, default buckets, BF16
/// compute, the row's weight storage; the stack decides prefill batching and attention
/// (tnx-2.18: the static batch prefilled together, materialised attention, context buckets
/// half of the token buckets; otherwise one prompt per prefill graph, fused attention), and
/// the draft when the row speculates.
ServingSpec serving_spec_for(const PublishedRow& row,
                             const std::optional<workload::ModelSpec>& draft,
                             ContextBuckets buckets = ContextBuckets::half);

/// The row's benchmark on a replica built by the caller from serving_spec_for.
BenchmarkResult run_published_row(const PublishedRow& row, const IterationCostModel& model);

/// One row's predicted p50 terms and its published figures.
struct FitPoint {
    IterationBreakdown ttft;
    IterationBreakdown tpot;
    double ttft_s = 0.0;      ///< published
    double tpot_s = 0.0;      ///< published
};

/// The fit above. `points(efficiency)` returns the fit rows' terms with the replicas built at
/// that prefill efficiency. Throws std::invalid_argument when it returns no points. The
/// result is rounded as a chip file stores it (efficiency to 0.001, durations to 10 ns).
compute::ServingCosts fit_serving_costs(
    const std::function<std::vector<FitPoint>(double prefill_efficiency)>& points);

/// The relative squared error sum of `points` under `c` (what the fit minimises).
double fit_residual(const std::vector<FitPoint>& points, const compute::ServingCosts& c);

} // namespace trnsim::serving
