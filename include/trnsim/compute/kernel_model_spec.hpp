// The kernel classes of the analytic cost model and the coefficients calibrated for one chip.
//
// The analytic model (cost_model.hpp) has one closed form per kernel class: a linear
// combination of a few features (nominal engine and DMA times, fixed latencies) computed from
// the kernel's shape and the chip. `trnsim calibrate` fits the coefficients against the
// detailed core model (core_model.hpp) and stores them, with the held-out error, in the chip
// data file (section `kernel_model`); docs/compute.md describes the features of each class.
#pragma once

#include "trnsim/core/enum_names.hpp"

#include <array>
#include <cstddef>
#include <vector>

namespace trnsim::compute {

/// One closed form each. The order is the order of the error table and of the chip file.
enum class KernelClass {
    matmul,      ///< C = A B, any M, K, N, batch; BF16, FP8 or FP32
    attention,   ///< fused flash attention, causal or not, GQA
    elementwise, ///< activations (SiLU, GELU), SwiGLU product, additions: StreamKind::elementwise
    softmax,     ///< row softmax
    rms_norm,    ///< RMSNorm over rows
    layer_norm,  ///< LayerNorm over rows
    gather,      ///< embedding row gather
    adamw,       ///< AdamW parameter update
    reduce,      ///< local reduction of buffers (the compute part of a reduce collective)
    attention_backward,  ///< flash-attention backward pass (AttentionShape::backward)
    softmax_backward,    ///< row softmax backward
    rms_norm_backward,   ///< RMSNorm backward (input and scale gradients)
    layer_norm_backward, ///< LayerNorm backward (input, scale and shift gradients)
    scatter_add,         ///< embedding backward: gradient rows added into the table
    cross_entropy,       ///< fused vocabulary-parallel cross-entropy (loss and logit gradient)
};
inline constexpr std::size_t kKernelClassCount = 15;

constexpr std::array<EnumName<KernelClass>, 15> enum_names(KernelClass) {
    return {{
        {KernelClass::matmul, "matmul"},
        {KernelClass::attention, "attention"},
        {KernelClass::elementwise, "elementwise"},
        {KernelClass::softmax, "softmax"},
        {KernelClass::rms_norm, "rms_norm"},
        {KernelClass::layer_norm, "layer_norm"},
        {KernelClass::gather, "gather"},
        {KernelClass::adamw, "adamw"},
        {KernelClass::reduce, "reduce"},
        {KernelClass::attention_backward, "attention_backward"},
        {KernelClass::softmax_backward, "softmax_backward"},
        {KernelClass::rms_norm_backward, "rms_norm_backward"},
        {KernelClass::layer_norm_backward, "layer_norm_backward"},
        {KernelClass::scatter_add, "scatter_add"},
        {KernelClass::cross_entropy, "cross_entropy"},
    }};
}
inline const char* to_string(KernelClass v) { return enum_name(v); }
/// Every class, in declaration order.
const std::array<KernelClass, kKernelClassCount>& all_kernel_classes();

/// The calibrated closed form of one class.
struct KernelFit {
    /// One coefficient per feature of the class (kernel_feature_count). Empty: the class is not
    /// calibrated and the model uses its nominal coefficients (a roofline with fixed costs).
    std::vector<double> coefficients;
    /// Held-out error of the analytic model against the detailed model, as fractions:
    /// mean absolute percentage error and maximum absolute relative error.
    double mape = 0.0;
    double max_error = 0.0;
    int train_points = 0;
    int held_out_points = 0;
};

struct KernelModelSpec {
    std::array<KernelFit, kKernelClassCount> fits;

    const KernelFit& fit(KernelClass c) const { return fits[static_cast<std::size_t>(c)]; }
    KernelFit& fit(KernelClass c) { return fits[static_cast<std::size_t>(c)]; }
    /// True when every class carries fitted coefficients.
    bool calibrated() const;
};

} // namespace trnsim::compute
