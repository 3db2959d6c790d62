// Closed-form resource totals (private to the compute module): `Nominal`, the terms the
// analytic closed forms (closed_forms.hpp) compute for a kernel piece, and `nominal_matmul`, the
// same for one given matmul tiling, by which the detailed model ranks the tilings it simulates.
// Without building the program they add up what its instructions cost on each engine at full
// rate: the busy time of TensorE's array, VectorE, ScalarE and GpSimdE, and the DMA engine time
// over the engines a core may use. They are exact for TensorE and DMA (tests compare them with
// the detailed model's busy times) and close for the other engines. O(1) each.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"
#include "trnsim/compute/lowering.hpp"

#include <algorithm>
#include <array>

namespace trnsim::compute::detail {

struct Nominal {
    double tensor = 0.0; ///< TensorE array busy, seconds
    double vector = 0.0;
    double scalar = 0.0;
    double gpsimd = 0.0;
    /// DMA: the largest of all transfers' engine time over the usable engines, the busiest
    /// queue's serial time (transfers limited to one engine per descriptor) and the issue time
    /// over the descriptor generators.
    double dma = 0.0;
    double hbm_bytes = 0.0; ///< bytes read from and written to HBM
    double steps = 1.0;     ///< pipeline steps (tiles, blocks, key tiles)
    /// The critical path of one step through the pipeline (its loads, instructions and store
    /// back to back): what fill and drain add to the steady state.
    double path = 0.0;
    /// DMA issue and setup latencies on the critical path.
    double fixed = 0.0;
    /// TensorE warm-up: the work lost while the array ramps up.
    double warmup = 0.0;
    /// The pipeline bound: over every resource, the time before its first use on the critical
    /// path, plus its busy time, plus the time after its last use (analytic model only).
    double pipeline = 0.0;
    /// Streaming kernels: steps over buffers in flight times the path (Little's law).
    double buffers = 0.0;
    /// Two-pass row kernels: a row tile's second pass waits for its first, so row tiles
    /// overlap one pass with the other at best (0 for one-pass kernels).
    double passes = 0.0;
    /// Attention backward: the first block's wait for its resident query-tile loads in its
    /// first key tile (the larger of their DMA engine time over the usable engines and their
    /// issue time over the descriptor generators), which no earlier work hides.
    double resident_wait = 0.0;
    /// False when the lowering's buffers do not fit the core (matmul tilings).
    bool feasible = true;

    double bound() const { return std::max({tensor, vector, scalar, gpsimd, dma}); }
    /// The busiest resource's time, the second busiest's (contention with the bottleneck) and
    /// the sum over all resources.
    struct Ranked {
        double first = 0.0;
        double second = 0.0;
        double sum = 0.0;
    };
    Ranked ranked() const {
        Ranked r;
        for (double t : {tensor, vector, scalar, gpsimd, dma}) {
            r.second = std::max(r.second, std::min(r.first, t));
            r.first = std::max(r.first, t);
            r.sum += t;
        }
        return r;
    }
    double estimate() const { return bound() + path + fixed + warmup; }
};

/// Adds up DMA transfers per queue (the four queues of a core).
class DmaTally {
public:
    explicit DmaTally(const ChipSpec& chip);
    /// `count` transfers of `bytes` in `descriptors` runs each on `queue`.
    void add(int queue, double count, double bytes, double descriptors);
    /// Seconds one such transfer takes alone (at most one engine per descriptor).
    double transfer_seconds(double bytes, double descriptors) const;
    /// DMA time of all transfers.
    double seconds() const;
    double bytes() const { return bytes_; }

private:
    const ChipSpec* chip_;
    double usable_;
    double engine_seconds_ = 0.0;
    double issues_ = 0.0;
    double bytes_ = 0.0;
    std::array<double, 4> queue_seconds_{};
};

/// The closed-form costs of one tiling of a matmul (the detailed model's ranking of tilings).
Nominal nominal_matmul(const MatmulShape& s, const MatmulTiling& t, const ChipSpec& chip);

} // namespace trnsim::compute::detail
