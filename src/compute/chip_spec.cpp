#include "trnsim/compute/chip_spec.hpp"

namespace trnsim::compute {

int element_bytes(Precision p) {
    switch (p) {
    case Precision::fp8:
        return 1;
    case Precision::bf16:
        return 2;
    case Precision::fp32:
        return 4;
    }
    return 2;
}

FlopRate ChipSpec::peak(Precision p) const {
    switch (p) {
    case Precision::fp8:
        return peak_fp8;
    case Precision::bf16:
        return peak_bf16;
    case Precision::fp32:
        return peak_fp32;
    }
    return peak_bf16;
}

FlopRate ChipSpec::tensor_peak_per_core(Precision p) const {
    const auto& t = core.tensor;
    // One multiply-accumulate (2 FLOP) per processing element per cycle.
    const double bf16 = 2.0 * t.rows * t.cols * t.clock.hz();
    switch (p) {
    case Precision::fp8:
        return FlopRate::per_s(bf16 * t.fp8_rate_multiplier);
    case Precision::bf16:
        return FlopRate::per_s(bf16);
    case Precision::fp32:
        return FlopRate::per_s(bf16 / t.fp32_rate_divisor);
    }
    return FlopRate::per_s(bf16);
}

} // namespace trnsim::compute

namespace trnsim::compute {

const std::array<KernelClass, kKernelClassCount>& all_kernel_classes() {
    static constexpr std::array<KernelClass, kKernelClassCount> kAll{
        KernelClass::matmul,     KernelClass::attention, KernelClass::elementwise,
        KernelClass::softmax,    KernelClass::rms_norm,  KernelClass::layer_norm,
        KernelClass::gather,     KernelClass::adamw,     KernelClass::reduce,
        KernelClass::attention_backward, KernelClass::softmax_backward,
        KernelClass::rms_norm_backward,  KernelClass::layer_norm_backward,
        KernelClass::scatter_add,        KernelClass::cross_entropy};
    return kAll;
}

bool KernelModelSpec::calibrated() const {
    for (const auto& f : fits) {
        if (f.coefficients.empty()) {
            return false;
        }
    }
    return true;
}

} // namespace trnsim::compute
