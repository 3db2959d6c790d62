#include "trnsim/workload/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace trnsim::workload {

std::vector<PipelineTask> pipeline_schedule(Schedule schedule, int pp, int stage,
                                            std::int64_t microbatches, int chunks) {
    if (pp < 1 || stage < 0 || stage >= pp || microbatches < 1 || chunks < 1) {
        throw std::invalid_argument("pipeline_schedule: bad pipeline shape");
    }
    const auto m = static_cast<std::int32_t>(microbatches);
    std::vector<PipelineTask> out;
    out.reserve(static_cast<std::size_t>(2 * m * chunks));
    if (schedule == Schedule::one_f_one_b || chunks == 1) {
        const std::int32_t warmup = std::min<std::int32_t>(pp - stage - 1, m);
        std::int32_t f = 0, b = 0;
        for (; f < warmup; ++f) {
            out.push_back({true, f, 0});
        }
        while (f < m) {
            out.push_back({true, f++, 0});
            out.push_back({false, b++, 0});
        }
        while (b < m) {
            out.push_back({false, b++, 0});
        }
        return out;
    }
    if (m % pp != 0) {
        throw std::invalid_argument("pipeline_schedule: interleaving needs microbatches % pp == 0");
    }
    const std::int32_t total = m * chunks;
    const auto task = [&](std::int32_t k, bool forward) {
        const std::int32_t in_group = k % (pp * chunks);
        const std::int32_t chunk = in_group / pp;
        const std::int32_t mb = (k / (pp * chunks)) * pp + k % pp;
        return PipelineTask{forward, mb, forward ? chunk : chunks - 1 - chunk};
    };
    std::int32_t warmup = m == pp ? total : (pp - stage - 1) * 2 + (chunks - 1) * pp;
    warmup = std::min(warmup, total);
    std::int32_t f = 0, b = 0;
    for (; f < warmup; ++f) {
        out.push_back(task(f, true));
    }
    while (f < total) {
        out.push_back(task(f++, true));
        out.push_back(task(b++, false));
    }
    while (b < total) {
        out.push_back(task(b++, false));
    }
    return out;
}

} // namespace trnsim::workload
