// The detailed kernel model: lower a kernel (lowering.hpp) and simulate it on the detailed
// NeuronCore model (core_model.hpp). Slow and precise; used by `trnsim calibrate` to fit the
// analytic model (cost_model.hpp) and by `trnsim kernel` to compare both, never inside a
// training simulation.
//
// A rank of `lnc` physical cores runs split_across_cores(kernel, lnc) on each core at once;
// the pieces are equal, so the rank's time is one piece's time on one core (the chip's HBM
// bandwidth is shared by all its cores, busy alike).
//
// Matmuls are tiled like a kernel author would: every feasible candidate of matmul_tilings is
// simulated, most promising first (closed-form estimate), except those whose lower bound (their
// busiest engine or DMA queue at full rate) already exceeds the best time found; the fastest is
// kept.
//
// Thread-safety: const methods only; one model may be shared by threads.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_model.hpp"
#include "trnsim/compute/kernel.hpp"

#include <string>

namespace trnsim::compute {

struct DetailedResult {
    /// The piece one core runs, and the number of cores of the rank.
    Kernel piece;
    int cores = 1;
    /// The piece on one core.
    CoreRun core;
    /// The tiling kept (matmuls) or the lowering's layout.
    std::string tiling;
    /// Tilings simulated to find it.
    int simulated = 1;

    double seconds() const { return core.seconds; }
    /// The rank's useful FLOPs and HBM traffic (all its cores).
    double flops() const { return core.flops * cores; }
    double hbm_bytes() const { return core.hbm_bytes * cores; }
};

/// A lower bound on the instructions of the program one core runs for `piece` (a kernel
/// after split_across_cores), from tile counts alone (as doubles: any shape, no overflow):
/// matmul moving tiles, attention score tiles, [128 x 8 KiB] tiles of streaming kernels.
double estimated_instructions(const Kernel& piece);

/// InputError("kernel", ...) when `k` on a rank of `lnc` cores is beyond what the detailed
/// model represents: a program over kMaxProgramInstructions (core_program.hpp) by
/// estimated_instructions. No lowering, no allocation: `trnsim kernel matmul 9e18x9e18x9e18`
/// and `1Mx1Mx1M` are refused at once. DetailedModel::run calls it first.
void check_detailed_size(const Kernel& k, int lnc);

class DetailedModel {
public:
    DetailedModel(const ChipSpec& chip, int lnc);

    /// Simulates `k` on one rank. Throws InputError for shapes the lowerings cannot tile.
    DetailedResult run(const Kernel& k) const;

    int lnc() const { return lnc_; }

private:
    const ChipSpec* chip_;
    int lnc_;
    CoreSimulator sim_;
};

} // namespace trnsim::compute
