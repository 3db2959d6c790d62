// Per-rank kernel cost model.
//
// This first model is a roofline over the engines of a rank with TensorE tile quantisation:
//
//   time = max( TensorE cycles / (clock x cores),
//               VectorE or ScalarE element passes / (clock x elements per cycle x cores),
//               HBM bytes / (chip HBM bandwidth / ranks per chip) )
//
// TensorE cycles follow the instruction costs of the NKI guides (NKI1, PERF): the contraction dim
// is cut into rows-sized partitions (2 x rows for FP8 double-row), the stationary free dim into
// cols-sized tiles, the moving free dim into tiles of at most moving_free_max columns, and each
// MultiplyMoving costs max(tile columns, min_matmul_cycles) cycles (x fp32_rate_divisor for
// FP32). The orientation (which operand is stationary) with fewer cycles is chosen. The engines
// are assumed to overlap perfectly and every instruction's fixed overhead is ignored: this is an
// optimistic bound. The calibrated analytic model (docs/compute.md) replaces it behind the same
// interface.
//
// Thread-safety: const methods only; one instance may be shared by threads.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel.hpp"

namespace trnsim::compute {

class CostModel {
public:
    /// `lnc` physical cores form one rank.
    CostModel(const ChipSpec& chip, int lnc);

    KernelCost matmul(const MatmulShape& s) const;
    KernelCost attention(const AttentionShape& s) const;
    KernelCost stream(const StreamShape& s) const;
    KernelCost optimizer(const OptimizerShape& s) const;

    /// TensorE cycles of one matmul (one batch element) on one core, with tile quantisation.
    double matmul_cycles(std::int64_t m, std::int64_t k, std::int64_t n, Precision p) const;

    Bandwidth hbm_bandwidth_per_rank() const { return hbm_per_rank_; }
    FlopRate tensor_peak_per_rank(Precision p) const;

private:
    double stream_seconds(double elements, StreamEngine e) const;

    const ChipSpec* chip_;
    int lnc_;
    Bandwidth hbm_per_rank_;
};

} // namespace trnsim::compute
