#include "trnsim/compute/detailed_model.hpp"

#include "trnsim/compute/lowering.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"

#include "nominal.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trnsim::compute {

DetailedModel::DetailedModel(const ChipSpec& chip, int lnc)
    : chip_(&chip), lnc_(lnc), sim_(chip) {
    TRNSIM_CHECK(lnc >= 1, "a rank has at least one core");
}

namespace {

double tiles(double extent, double tile) { return std::ceil(std::max(extent, 1.0) / tile); }

} // namespace

double estimated_instructions(const Kernel& piece) {
    if (const auto* m = std::get_if<MatmulShape>(&piece)) {
        // One MultiplyMoving per (128-row contraction tile, stationary tile, moving tile):
        // A stationary with 512-column moving tiles of B, or (small M) B stationary in
        // 128-column tiles with A moving.
        const double k = tiles(static_cast<double>(m->k), 128.0);
        double moving = tiles(static_cast<double>(m->m), 128.0) * k *
                        tiles(static_cast<double>(m->n), 512.0);
        if (m->m < 128) {
            moving = std::min(moving, k * tiles(static_cast<double>(m->n), 128.0));
        }
        return static_cast<double>(m->batch) * moving;
    }
    if (const auto* a = std::get_if<AttentionShape>(&piece)) {
        // Per (head, 128-query tile, 512-key tile): the scores matmul, the running max, the
        // exponentials, the transposes of P and the P V matmul, at least 8 (the lowering
        // writes about 50); causal masking skips about half.
        const double score_tiles = static_cast<double>(a->batch) * static_cast<double>(a->heads) *
                                   tiles(static_cast<double>(a->q_len), 128.0) *
                                   tiles(static_cast<double>(a->kv_len), 512.0);
        return 8.0 * score_tiles * (a->causal ? 0.5 : 1.0);
    }
    if (const auto* o = std::get_if<OptimizerShape>(&piece)) {
        // [128 x 1024] tiles of FP32 master weights and moments: four loads, two stores and
        // the update's instructions, at least 16 per tile (the lowering writes about 40).
        return 16.0 * tiles(static_cast<double>(o->params), 128.0 * 1024.0);
    }
    const auto& s = std::get<StreamShape>(piece);
    // [128 x F] tiles of at most 8 KiB per partition; one DMA per input and output and one
    // instruction per pass each.
    const double per_tile = static_cast<double>(std::max(1, s.inputs + s.outputs + s.passes));
    const double elements = static_cast<double>(s.elements);
    double t = tiles(elements * static_cast<double>(std::max(1, s.element_bytes)),
                     128.0 * 8192.0);
    if (s.row > 0) {
        t = std::max(t, tiles(elements / static_cast<double>(s.row), 128.0)); // rows per tile
    }
    return per_tile * t;
}

void check_detailed_size(const Kernel& k, int lnc) {
    const Kernel piece = split_across_cores(k, std::max(1, lnc));
    if (is_empty(piece)) {
        return;
    }
    const double need = estimated_instructions(piece);
    if (!(need <= static_cast<double>(kMaxProgramInstructions))) {
        throw InputError("kernel", describe(k) + " needs at least " + fmt::count(need) +
                                       " instructions on one core; the detailed model simulates "
                                       "at most " + std::to_string(kMaxProgramInstructions) +
                                       " (give a smaller shape)");
    }
}

DetailedResult DetailedModel::run(const Kernel& k) const {
    check_detailed_size(k, lnc_);
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
