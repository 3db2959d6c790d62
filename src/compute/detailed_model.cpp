#include "trnsim/compute/detailed_model.hpp"

#include "trnsim/compute/lowering.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include "nominal.hpp"

#include <algorithm>
#include <numeric>

namespace trnsim::compute {

DetailedModel::DetailedModel(const ChipSpec& chip, int lnc)
    : chip_(&chip), lnc_(lnc), sim_(chip) {
    TRNSIM_CHECK(lnc >= 1, "a rank has at least one core");
}

DetailedResult DetailedModel::run(const Kernel& k) const {
    DetailedResult r;
    r.cores = lnc_;
    r.piece = split_across_cores(k, lnc_);
    if (is_empty(r.piece)) {
        r.simulated = 0;
        return r;
    }
    const auto* m = std::get_if<MatmulShape>(&r.piece);
    if (m == nullptr) {
        const Program p = lower(r.piece, *chip_);
        r.core = sim_.run(p);
        r.tiling = p.description;
        return r;
    }
    // Every feasible tiling, most promising first (closed-form estimate); a tiling whose lower
    // bound (the busiest resource at full rate) cannot beat the best run so far is skipped.
    const std::vector<MatmulTiling> tilings = matmul_tilings(*m, *chip_);
    std::vector<detail::Nominal> nominal;
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < tilings.size(); ++i) {
        nominal.push_back(detail::nominal_matmul(*m, tilings[i], *chip_));
        if (nominal.back().feasible) {
            order.push_back(i);
        }
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return nominal[a].estimate() < nominal[b].estimate();
    });
    r.simulated = 0;
    for (std::size_t i : order) {
        if (r.simulated > 0 && nominal[i].bound() >= r.core.seconds) {
            continue;
        }
        const std::optional<Program> p = lower_matmul(*m, tilings[i], *chip_);
        if (!p) {
            continue;
        }
        const CoreRun run = sim_.run(*p);
        if (r.simulated == 0 || run.seconds < r.core.seconds) {
            r.core = run;
            r.tiling = p->description;
        }
        ++r.simulated;
    }
    if (r.simulated == 0) {
        throw InputError("kernel", "no tiling of matmul " + describe(r.piece) +
                                       " fits one core's SBUF and PSUM");
    }
    return r;
}

} // namespace trnsim::compute
