#include "trnsim/compute/cost_model.hpp"

#include "trnsim/core/assert.hpp"

#include "features.hpp"

#include <algorithm>

namespace trnsim::compute {

std::size_t kernel_feature_count(KernelClass c) { return detail::feature_count(c); }

CostModel::CostModel(const ChipSpec& chip, int lnc)
    : chip_(&chip), rates_(std::make_unique<const detail::ChipRates>(chip)), lnc_(lnc),
      hbm_per_rank_(chip.hbm_bandwidth / static_cast<double>(chip.ranks_per_chip(lnc))),
      seconds_per_hbm_byte_(1.0 / hbm_per_rank_.bytes_per_s()) {
    TRNSIM_CHECK(lnc >= 1, "a rank has at least one core");
    for (Precision p : {Precision::fp8, Precision::bf16, Precision::fp32}) {
        seconds_per_flop_[static_cast<std::size_t>(p)] = 1.0 / tensor_peak_per_rank(p).per_s();
    }
    calibrated_ = chip.kernel_model.calibrated();
    for (KernelClass c : all_kernel_classes()) {
        const auto& fitted = chip.kernel_model.fit(c).coefficients;
        const std::vector<double> coef =
            fitted.empty() ? detail::nominal_coefficients(c) : fitted;
        static_assert(kMaxFeatures == detail::kMaxFeatures);
        TRNSIM_CHECK(coef.size() == detail::feature_count(c) && coef.size() <= kMaxFeatures,
                     "coefficient count (checked when the chip is loaded)");
        std::copy(coef.begin(), coef.end(), coefficients_[static_cast<std::size_t>(c)].begin());
    }
}

CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

FlopRate CostModel::tensor_peak_per_rank(Precision p) const {
    return chip_->tensor_peak_per_core(p) * static_cast<double>(lnc_);
}

KernelCost CostModel::cost(const Kernel& k) const {
    KernelCost c;
    if (is_empty(k)) {
        return c;
    }
    const KernelClass cls = class_of(k);
    const detail::Nominal n = detail::terms(split_across_cores(k, lnc_), *rates_);
    c.flops = useful_flops(k);
    c.hbm_bytes = n.hbm_bytes * lnc_;
    const detail::Nominal::Ranked ranked = n.ranked();
    c.beside_seconds = ranked.sum - ranked.first;
    double floor = minimum_hbm_bytes(k) * seconds_per_hbm_byte_;
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        floor = std::max(floor, c.flops * seconds_per_flop_[static_cast<std::size_t>(m->precision)]);
    } else if (const auto* a = std::get_if<AttentionShape>(&k)) {
        floor = std::max(floor, c.flops * seconds_per_flop_[static_cast<std::size_t>(a->precision)]);
    }
    c.seconds = std::max(detail::predict(cls, n, coefficients_[static_cast<std::size_t>(cls)]), floor);
    return c;
}

std::array<double, kEngineKinds> CostModel::engine_seconds(const Kernel& k) const {
    if (is_empty(k)) {
        return {};
    }
    const detail::Nominal n = detail::terms(split_across_cores(k, lnc_), *rates_);
    return {n.tensor, n.vector, n.scalar, n.gpsimd, n.dma};
}

} // namespace trnsim::compute
