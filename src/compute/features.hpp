// The features of the analytic model's closed forms (private to the compute module).
//
// For a kernel piece on one core, each class's closed form is a linear combination
//     seconds = sum_i c_i x_i
// of features x_i built from the lowering's closed-form resource totals (nominal.hpp). The
// coefficients c_i are fitted by calibration (non-negative, so more work never costs less);
// docs/compute.md lists the features of each class.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"

#include "closed_forms.hpp"
#include "nominal.hpp"

#include <array>
#include <cstddef>
#include <vector>

namespace trnsim::compute::detail {

inline constexpr std::size_t kMaxFeatures = 8;

/// Feature values of a class; the first feature_count(class) are used, the others are 0.
using FeatureRow = std::array<double, kMaxFeatures>;

std::size_t feature_count(KernelClass c);
/// Short names of the features of a class (for docs and the calibration data).
std::vector<const char*> feature_names(KernelClass c);
/// The coefficients of an uncalibrated model: the bottleneck resource plus fill and drain.
std::vector<double> nominal_coefficients(KernelClass c);

/// The features of a piece of class `c` whose terms are `n`:
///   matmul, attention: pipeline bound, pipelined steps, runner-up resource, 1 us;
///   attention_backward: the same, the sum of the other resources (imperfect overlap of its
///   more evenly loaded engines), TensorE's busy time (five dependent matmuls per tile) and
///   the first block's wait for its resident query-tile loads (no earlier work hides it);
///   streaming kernels and AdamW: pipeline bound, pipelined steps, two-pass bound, buffer
///   turns, the other resources' sum, 1 us; cross_entropy adds the busiest compute engine's
///   time (its chunks pass from VectorE to ScalarE to VectorE to GpSimdE, so a compute-bound
///   loss waits on that chain where a DMA-bound one overlaps its transfers).
/// "Pipelined steps" is one step's path (fill and drain) plus the other steps at the pace of
/// the bottleneck. Inline: the analytic model evaluates it on every cost.
inline FeatureRow feature_values(KernelClass c, const Nominal& n) {
    constexpr double kMicrosecond = 1e-6;
    const Nominal::Ranked busy = n.ranked();
    const double pipelined = n.path + busy.first * (n.steps - 1.0) / n.steps;
    if (c == KernelClass::matmul || c == KernelClass::attention) {
        return {n.pipeline, pipelined, busy.second, kMicrosecond, 0.0, 0.0, 0.0, 0.0};
    }
    if (c == KernelClass::attention_backward) {
        return {n.pipeline, pipelined, busy.second, busy.sum - busy.first, n.tensor,
                kMicrosecond, n.resident_wait, 0.0};
    }
    const double compute = c == KernelClass::cross_entropy
                               ? std::max({n.vector, n.scalar, n.gpsimd})
                               : 0.0;
    return {n.pipeline, pipelined, n.passes, n.buffers, busy.sum - busy.first, kMicrosecond,
            compute, 0.0};
}

/// sum_i coefficients_i x_i over the class's features.
inline double predict(KernelClass c, const Nominal& n, const FeatureRow& coefficients) {
    const FeatureRow x = feature_values(c, n);
    // Summed pairwise: a short dependency chain.
    static_assert(kMaxFeatures == 8);
    const auto term = [&](std::size_t i) { return coefficients[i] * x[i]; };
    return ((term(0) + term(1)) + (term(2) + term(3))) + ((term(4) + term(5)) + (term(6) + term(7)));
}

} // namespace trnsim::compute::detail
