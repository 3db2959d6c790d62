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

/// Feature values of a class; the first feature_count(class) are used.
using FeatureRow = std::array<double, kMaxFeatures>;

std::size_t feature_count(KernelClass c);
/// Short names of the features of a class (for docs and the calibration data).
std::vector<const char*> feature_names(KernelClass c);
/// The coefficients of an uncalibrated model: the bottleneck resource plus fill and drain.
std::vector<double> nominal_coefficients(KernelClass c);
/// The features of a piece of class `c` whose terms are `n`.
FeatureRow feature_values(KernelClass c, const Nominal& n);
/// sum_i coefficients_i x_i over the class's features.
double predict(KernelClass c, const Nominal& n, const FeatureRow& coefficients);

} // namespace trnsim::compute::detail
