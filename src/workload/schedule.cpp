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

double pipeline_makespan(Schedule schedule, std::int64_t microbatches, int chunks,
                         const std::vector<double>& forward_s,
                         const std::vector<double>& backward_s) {
    const int pp = static_cast<int>(forward_s.size());
    const std::int64_t m = microbatches;
    const std::int64_t virtual_stages = std::int64_t{pp} * chunks;
    std::vector<std::vector<PipelineTask>> order(static_cast<std::size_t>(pp));
    for (int s = 0; s < pp; ++s) {
        order[static_cast<std::size_t>(s)] = pipeline_schedule(schedule, pp, s, m, chunks);
    }
    // Finish times per (virtual stage, microbatch); -1 until done (times are >= 0).
    std::vector<double> forward_done(static_cast<std::size_t>(virtual_stages * m), -1.0);
    std::vector<double> backward_done(forward_done.size(), -1.0);
    std::vector<double> clock(static_cast<std::size_t>(pp), 0.0);
    std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
    std::int64_t left = 2 * virtual_stages * m;
    while (left > 0) {
        bool progress = false;
        for (int s = 0; s < pp; ++s) {
            const auto si = static_cast<std::size_t>(s);
            const auto& tasks = order[si];
            // Run the stage's tasks in order until one waits for an input not yet there.
            while (next[si] < tasks.size()) {
                const PipelineTask& t = tasks[next[si]];
                const std::int64_t u = virtual_stage(pp, s, t.chunk);
                const auto at = [&](std::int64_t stage) {
                    return static_cast<std::size_t>(stage * m + t.microbatch);
                };
                double ready = 0.0;
                if (t.forward) {
                    ready = u == 0 ? 0.0 : forward_done[at(u - 1)];
                } else {
                    ready = u == virtual_stages - 1 ? forward_done[at(u)]
                                                    : backward_done[at(u + 1)];
                }
                if (ready < 0.0) {
                    break;
                }
                const double end = std::max(clock[si], ready) +
                                   (t.forward ? forward_s[si] : backward_s[si]);
                clock[si] = end;
                (t.forward ? forward_done : backward_done)[at(u)] = end;
                ++next[si];
                --left;
                progress = true;
            }
        }
        if (!progress) {
            throw std::logic_error("pipeline_makespan: the schedules wait on each other");
        }
    }
    return *std::max_element(clock.begin(), clock.end());
}

} // namespace trnsim::workload
