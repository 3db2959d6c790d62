// The kernel_model section of a chip data file as text: what `trnsim calibrate` writes.
//
// The section is generated, so it is rendered byte for byte from the fitted model (fixed number
// formats, fixed order) and replaces the previous one in place; everything above it in the chip
// file (the hand-written hardware data and its source comments) is kept as it is.
#pragma once

#include "trnsim/compute/kernel_model_spec.hpp"

#include <string>

namespace trnsim::config {

/// The section, with a comment header naming the command that wrote it. Coefficients print
/// with 6 significant digits (the precision calibration rounds them to), errors as percentages
/// with 2 decimals.
std::string kernel_model_yaml(const compute::KernelModelSpec& model, const std::string& command);

/// `chip_text` with its kernel_model section (from the generated header or the
/// `kernel_model:` line to the end of the file) replaced by `section`, or with `section`
/// appended when there is none. Throws InputError at `kernel_model` when another top-level key
/// follows the section (it must be the file's last).
std::string replace_kernel_model(const std::string& chip_text, const std::string& section);

} // namespace trnsim::config
