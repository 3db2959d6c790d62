// The analytic kernel cost model: one closed form per kernel class, calibrated against the
// detailed core model (detailed_model.hpp). This is the model the workload module and the
// training simulations use; it costs one kernel in about a hundred nanoseconds.
//
// For a kernel k on a rank of `lnc` cores, each core runs the piece p = split_across_cores(k)
// and
//     seconds(k) = max( sum_i c_i x_i(p),
//                       useful FLOPs / TensorE peak of the rank      (matmul, attention),
//                       minimum HBM bytes / HBM bandwidth per rank )
// where x_i are the class's features, computed in closed form from the kernel's lowering
// (lowering.hpp) without building it: the busy time of the bottleneck resource among TensorE,
// VectorE, ScalarE, GpSimdE and the DMA engines (tile-quantised TensorE cycles, per-instruction
// engine overheads, DMA bytes plus per-descriptor costs over the core's share of HBM), the sum
// of the other resources' times (imperfect overlap), the pipeline's fill and drain (DMA issue
// and setup latencies, first loads, last stores, TensorE warm-up), the number of pipeline
// steps and a constant. docs/compute.md details them per class. The coefficients c_i come from
// the chip's `kernel_model` section (written by `trnsim calibrate`, non-negative); a chip file
// without one gets nominal coefficients (the bottleneck plus fill and drain).
//
// The two floors make the model never faster than the hardware's peaks, whatever the fit.
//
// Thread-safety: const methods only; one instance may be shared by threads.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_model.hpp"
#include "trnsim/compute/kernel.hpp"

#include <array>
#include <cstddef>
#include <memory>

namespace trnsim::compute {

namespace detail {
struct ChipRates;
}

/// Features per class (the length of KernelFit::coefficients).
std::size_t kernel_feature_count(KernelClass c);

class CostModel {
public:
    /// `lnc` physical cores form one rank.
    CostModel(const ChipSpec& chip, int lnc);
    ~CostModel();
    CostModel(CostModel&&) noexcept;
    CostModel& operator=(CostModel&&) noexcept;

    KernelCost cost(const Kernel& k) const;
    KernelCost matmul(const MatmulShape& s) const { return cost(Kernel{s}); }
    KernelCost attention(const AttentionShape& s) const { return cost(Kernel{s}); }
    KernelCost stream(const StreamShape& s) const { return cost(Kernel{s}); }
    KernelCost optimizer(const OptimizerShape& s) const { return cost(Kernel{s}); }

    /// Nominal busy seconds of each engine of one core for k's piece (TensorE array, VectorE,
    /// ScalarE, GpSimdE, DMA engines at the core's HBM share): utilisation estimates.
    std::array<double, kEngineKinds> engine_seconds(const Kernel& k) const;

    Bandwidth hbm_bandwidth_per_rank() const { return hbm_per_rank_; }
    FlopRate tensor_peak_per_rank(Precision p) const;
    int lnc() const { return lnc_; }
    /// True when the chip's coefficients were fitted (else nominal).
    bool calibrated() const { return calibrated_; }

private:
    static constexpr std::size_t kMaxFeatures = 8;

    const ChipSpec* chip_;
    std::unique_ptr<const detail::ChipRates> rates_;
    int lnc_;
    Bandwidth hbm_per_rank_;
    double seconds_per_hbm_byte_;
    /// Seconds per useful FLOP at the rank's TensorE peak, per Precision.
    std::array<double, 3> seconds_per_flop_{};
    bool calibrated_ = false;
    std::array<std::array<double, kMaxFeatures>, kKernelClassCount> coefficients_{};
};

} // namespace trnsim::compute
