// Calibration of the analytic kernel model (cost_model.hpp) against the detailed core model
// (detailed_model.hpp): `trnsim calibrate`.
//
// For each kernel class:
//   1. a training grid of shapes (log-spaced dimensions, both precisions and layouts the class
//      has) and a held-out set of other shapes (dimensions drawn log-uniformly from a fixed
//      splitmix64 stream, so never on the training grid) are simulated on one core;
//   2. the coefficients c >= 0 minimise the squared relative error
//          sum_i ((sum_j c_j x_ij - t_i) / t_i)^2
//      over the training shapes (non-negative least squares, Lawson-Hanson active set, with
//      Eigen's column-pivoting QR for each subproblem); non-negative coefficients on
//      non-decreasing features keep the model monotone (more work never costs less);
//   3. the coefficients are rounded to 6 significant digits (what the chip file stores) and the
//      held-out error of the rounded model is measured: the mean absolute percentage error and
//      the largest absolute relative error.
// Everything is deterministic: the grids, the fit and the rounding depend only on the chip's
// hardware data (not on any coefficients already in it), so running calibrate twice gives the
// same bytes. The simulations run on `threads` threads; each result lands in its own slot, so
// the thread count changes nothing but the wall time.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"
#include "trnsim/core/units.hpp"

#include <functional>
#include <string>
#include <vector>

namespace trnsim::compute {

/// `full`: the grids of the checked-in calibration. `quick`: a few small shapes per class (for
/// tests and smoke runs; seconds).
enum class CalibrationGrid { quick, full };

struct CalibrationPoint {
    KernelClass cls = KernelClass::matmul;
    bool held_out = false;
    Kernel kernel; ///< one core's piece
    Seconds detailed; ///< the detailed core model
    Seconds analytic; ///< the fitted analytic model

    double relative_error() const { return (analytic - detailed) / detailed; }
};

struct Calibration {
    std::string chip;
    CalibrationGrid grid = CalibrationGrid::full;
    /// The fitted model, with the held-out error of each class.
    KernelModelSpec model;
    /// Every simulated shape, training and held-out, in a fixed order.
    std::vector<CalibrationPoint> points;
};

/// Progress: the class being simulated, shapes done and total for that class.
using CalibrationProgress = std::function<void(KernelClass cls, int done, int total)>;

/// The shapes of one class (one core's pieces).
std::vector<Kernel> calibration_shapes(KernelClass cls, CalibrationGrid grid, bool held_out);

/// Simulates both grids of every class and fits the model. `threads` >= 1.
Calibration calibrate(const ChipSpec& chip, CalibrationGrid grid, int threads,
                      const CalibrationProgress& progress = {});

/// The error table: one line per class, "matmul: MAPE 2.31%, max 7.90%".
std::string error_table(const KernelModelSpec& model);

/// The points as CSV (class, set, shape, detailed_s, analytic_s, relative_error), for
/// analysis/calibration_plot.py.
std::string calibration_csv(const Calibration& c);

/// `v` rounded to `digits` significant decimal digits (as printed with %.{digits}g).
double round_significant(double v, int digits);

} // namespace trnsim::compute
