// Closed-form resource totals of the kernel lowerings (private to the compute module).
//
// For each lowering (lowering.hpp) these functions add up, without building the program, what
// its instructions cost on each engine at full rate: the busy time of TensorE's array, VectorE,
// ScalarE and GpSimdE, and the DMA engine time over the engines a core may use. They are exact
// for TensorE and DMA (tests compare them with the detailed model's busy times) and close for
// the other engines. The analytic model's features (cost_model.cpp) are built from them, and the
// matmul tiling search ranks its candidates by them. O(1) each.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"
#include "trnsim/compute/lowering.hpp"

#include <algorithm>
#include <array>
#include <functional>

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
    /// Attention: steady state of the key tiles after each query tile's first, and each query
    /// tile's first key tile through the whole chain.
    double steady = 0.0;
    double serial = 0.0;
    /// The pipeline bound: over every resource, the time before its first use on the critical
    /// path, plus its busy time, plus the time after its last use (PathTally).
    double pipeline = 0.0;
    /// Streaming kernels: steps over buffers in flight times the path (Little's law).
    double buffers = 0.0;
    /// Two-pass row kernels: a row tile's second pass waits for its first, so row tiles
    /// overlap one pass with the other at best (0 for one-pass kernels).
    double passes = 0.0;
    /// False when the lowering's buffers do not fit the core (matmul tilings).
    bool feasible = true;

    double bound() const { return std::max({tensor, vector, scalar, gpsimd, dma}); }
    double rest() const { return tensor + vector + scalar + gpsimd + dma - bound(); }
    /// The second busiest resource (contention with the bottleneck).
    double runner_up() const {
        std::array<double, 5> t{tensor, vector, scalar, gpsimd, dma};
        std::partial_sort(t.begin(), t.begin() + 2, t.end(), std::greater<>());
        return t[1];
    }
    double estimate() const { return bound() + path + fixed + warmup; }
};

/// Resources of a core, as indices: TensorE, VectorE, ScalarE, GpSimdE, DMA engines.
/// kLatency marks waiting on the path that occupies no resource (DMA issue and setup).
/// DMA loads and stores share the DMA engines but are separate steps of a pipeline.
enum Resource : int {
    kTensor = 0,
    kVector = 1,
    kScalar = 2,
    kGpsimd = 3,
    kDma = 4,
    kDmaOut = 5,
    kLatency = 6
};
inline constexpr std::size_t kResources = 6;

/// The critical path of one pipeline step as a sequence of (resource, seconds), and the
/// pipeline bound it gives with the resources' totals.
class PathTally {
public:
    void add(int resource, double seconds);
    double seconds() const { return total_; }
    /// max over resources r of (path before its first use + total[r] + path after its last
    /// use), and total[r] alone for resources off the path; `dma` is the time of loads and
    /// stores together (they share the DMA engines). Steps of a path may overlap (a tile's
    /// second input loads while the first is processed), so the path itself is no bound.
    double pipeline(const std::array<double, kResources>& totals, double dma) const;

private:
    static constexpr int kMaxStages = 64;
    std::array<int, kMaxStages> resource_{};
    std::array<double, kMaxStages> seconds_{};
    int count_ = 0;
    double total_ = 0.0;
};

/// Adds up DMA transfers per queue.
class DmaTally {
public:
    explicit DmaTally(const ChipSpec& chip);
    /// `count` transfers of `bytes` in `descriptors` runs each on `queue`; `store`: SBUF to
    /// HBM.
    void add(int queue, double count, double bytes, double descriptors, bool store = false);
    /// Seconds one such transfer takes alone (at most one engine per descriptor).
    double transfer_seconds(double bytes, double descriptors) const;
    /// DMA time of all transfers, of the loads and of the stores.
    double seconds() const;
    double load_seconds() const { return part_seconds(0); }
    double store_seconds() const { return part_seconds(1); }
    double bytes() const { return bytes_; }

private:
    double part_seconds(std::size_t part) const;

    const ChipSpec* chip_;
    double usable_;
    std::array<double, 2> engine_seconds_{};
    std::array<double, 2> issues_{};
    double bytes_ = 0.0;
    std::array<std::array<double, 4>, 2> queue_seconds_{};
};

/// The closed-form costs of one tiling of a matmul (the detailed model's ranking of tilings).
Nominal nominal_matmul(const MatmulShape& s, const MatmulTiling& t, const ChipSpec& chip);

} // namespace trnsim::compute::detail
