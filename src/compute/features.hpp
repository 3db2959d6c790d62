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

struct Features {
    std::array<double, kMaxFeatures> x{};
    std::size_t count = 0;
    Nominal nominal;
};

std::size_t feature_count(KernelClass c);
/// Short names of the features of a class (for docs and the calibration data).
std::vector<const char*> feature_names(KernelClass c);
/// The coefficients of an uncalibrated model: the bottleneck resource plus fill and drain.
std::vector<double> nominal_coefficients(KernelClass c);
/// The features of a kernel piece on one core of the rates' chip.
Features features(const Kernel& piece, const ChipRates& rates);

} // namespace trnsim::compute::detail
