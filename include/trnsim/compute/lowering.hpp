// Kernel lowerings: a kernel shape (kernel.hpp) becomes the instruction streams of one
// NeuronCore (core_program.hpp), tiled and blocked the way an NKI kernel author would
// (NKI1/NKI2 architecture guides, PERF, DMAG):
//
//   matmul     A^T chunks and B chunks stream through SBUF (one operand's panel for the whole
//              contraction stays resident when it fits, double-buffered); per contraction tile
//              a LoadStationary of a 128-column A^T tile is reused by the MultiplyMovings of up
//              to `block_n` 512-column B tiles, accumulating a block of up to 8 PSUM banks;
//              VectorE and ScalarE take turns evacuating PSUM (with the cast) and a DMA stores
//              each 128-row slab. Small M (< 128) may swap the operands (B stationary, the
//              vector-like A moving: ~max(M, 64) cycles per tile instead of 512, PERF), then
//              transposes the result on TensorE. `matmul_tilings` lists the candidates;
//              DetailedModel simulates the most promising and keeps the fastest.
//   attention  flash attention per (key/value head, query head, 128-query tile): S = Q K^T on
//              TensorE per 512-key tile, running max on VectorE, exp with row sums on ScalarE
//              (causal diagonal tiles masked by GpSimdE), P transposed on TensorE, O += P V,
//              rescaled on VectorE; K and V of a key/value head stay resident for its query
//              heads (GQA) when they fit, else stream per query tile.
//   softmax, rms_norm, layer_norm
//              one row per partition, 128 rows per tile; rows wider than a chunk (8192
//              elements, 4096 for FP32) take two passes (statistics, then output).
//   elementwise, reduce, adamw
//              [128 x F] tiles (F up to 8 KiB per partition), inputs on two DMA queues,
//              outputs on two others, triple-buffered.
//   gather     one DMA descriptor per token row (indices loaded once), descriptors generated
//              on GpSimdE (software DGE), then stored.
//
// Every lowering checks its SBUF and PSUM use against the core (ProgramBuilder::fits).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_program.hpp"
#include "trnsim/compute/kernel.hpp"

#include <optional>
#include <string>
#include <vector>

namespace trnsim::compute {

/// How a matmul is tiled.
struct MatmulTiling {
    /// B stationary and A moving (only for M < 128); the result is transposed on TensorE.
    bool swapped = false;
    /// Stationary tiles (128 columns) and moving tiles (512 columns, or M when swapped) per
    /// PSUM block; block_stationary x block_moving <= PSUM banks.
    int block_stationary = 1;
    int block_moving = 1;
    /// Loop order: stationary blocks outer (the stationary panel stays resident) or moving
    /// blocks outer (the moving panel stays resident).
    bool stationary_outer = false;

    std::string describe() const;
};

/// The candidate tilings of `s` on one core, in a fixed order.
std::vector<MatmulTiling> matmul_tilings(const MatmulShape& s, const ChipSpec& chip);

/// The program of one tiling of a matmul on one core; nullopt when its buffers do not fit.
std::optional<Program> lower_matmul(const MatmulShape& s, const MatmulTiling& t,
                                    const ChipSpec& chip);

/// The program of any other kernel on one core (attention, streaming kernels, AdamW).
/// Throws InputError when a shape cannot be tiled into the core's SBUF.
Program lower(const Kernel& k, const ChipSpec& chip);

} // namespace trnsim::compute
