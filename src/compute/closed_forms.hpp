// The analytic model's closed forms (private to the compute module).
//
// For a kernel piece on one core these compute, in O(1) and without allocating, the quantities
// the features of cost_model.hpp are made of: each engine's busy time, the DMA time (engine
// time over the usable engines, issue time over the descriptor generators, transfers limited
// to one engine per partition), the path of one pipeline step, the pipeline bound and, for
// streaming kernels, the two-pass and buffer bounds. They follow the lowerings (lowering.hpp):
// the same tiling, the same buffering depth, the same instruction mix per tile; the streaming
// kernels share their plan (geometry, depth, per-pass profile) with the lowering itself, and a
// test checks the profiles against the lowering's step lists.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"

#include "lowering_common.hpp"
#include "nominal.hpp"

#include <array>

namespace trnsim::compute::detail {

// The closed forms are chains of floating-point divisions, roundings and conversions. Where the
// compiler supports it, `terms`, with everything it calls inlined, is also compiled for AVX2 and
// chosen when the program is loaded on a CPU that has it (about 1.7 times faster on the
// benchmark of docs/performance.md). AVX2 without FMA rounds every operation as SSE2 does, so
// both versions give the same bits. Not in sanitizer builds: the loader runs the clones'
// resolver before the sanitizer's runtime starts, and the instrumented resolver crashes.
// The streaming plans and terms, in a file of their own, are compiled the same way: `terms`
// cannot inline them, and its AVX2 clone calls theirs.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define TRNSIM_CLOSED_FORMS_CLONES __attribute__((target_clones("avx2", "default"), flatten))
#else
#define TRNSIM_CLOSED_FORMS_CLONES
#endif

/// Chip quantities the closed forms use, precomputed once (reciprocals, not divisions).
struct ChipRates {
    explicit ChipRates(const ChipSpec& chip);

    const ChipSpec* chip;
    double partitions;
    /// VectorE, ScalarE, GpSimdE: seconds per cycle, lanes per partition, overhead cycles.
    std::array<double, 3> cycle{};
    std::array<double, 3> inv_lanes{};
    std::array<double, 3> overhead{};
    /// VectorE's performance mode: whether the chip has one, and its lanes per partition
    /// (inv_lanes[0] when it has none).
    bool perf_mode = false;
    double inv_perf_lanes = 1.0;
    double pe_cycle;      ///< TensorE seconds per cycle
    double usable;        ///< DMA engines usable at once
    double inv_usable;
    double inv_bandwidth; ///< seconds per byte of one DMA engine
    double descriptor;    ///< seconds per descriptor
    double latency;       ///< DMA issue + setup, seconds
    double issue;         ///< issue seconds per DMA over the descriptor generators
    double warmup;        ///< TensorE warm-up loss, seconds
    std::int64_t sbuf;    ///< SBUF bytes per partition
};

StreamPlan plan_stream(const StreamShape& s, const ChipRates& rates);
StreamPlan plan_adamw(const OptimizerShape& s, const ChipRates& rates);

/// Closed-form terms per class.
Nominal stream_terms(const StreamPlan& plan, const ChipRates& rates);
Nominal matmul_terms(const MatmulShape& s, const ChipRates& rates);
Nominal attention_terms(const AttentionShape& s, const ChipRates& rates);
Nominal attention_backward_terms(const AttentionShape& s, const ChipRates& rates);
/// The terms of any kernel piece on one core of the rates' chip.
Nominal terms(const Kernel& piece, const ChipRates& rates);


} // namespace trnsim::compute::detail
