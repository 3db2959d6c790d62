#include "trnsim/workload/schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

namespace trnsim::workload {
namespace {

std::string text(const std::vector<PipelineTask>& tasks) {
    std::string s;
    for (const auto& t : tasks) {
        s += (t.forward ? "F" : "B") + std::to_string(t.microbatch);
        if (t.chunk > 0) {
            s += "." + std::to_string(t.chunk);
        }
        s += " ";
    }
    return s;
}

TEST(PipelineSchedule, OneFOneBByHand) {
    // pp = 4, m = 6: stage 0 warms up with 3 forwards, stage 3 with none.
    EXPECT_EQ(text(pipeline_schedule(Schedule::one_f_one_b, 4, 0, 6, 1)),
              "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
    EXPECT_EQ(text(pipeline_schedule(Schedule::one_f_one_b, 4, 3, 6, 1)),
              "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
    // Fewer microbatches than stages: all forwards, then all backwards.
    EXPECT_EQ(text(pipeline_schedule(Schedule::one_f_one_b, 4, 0, 2, 1)), "F0 F1 B0 B1 ");
}

TEST(PipelineMakespan, EqualStagesGiveTheClosedForms) {
    // 1F1B, pp 4, m 6, t_f 1, t_b 2: (m + pp - 1)(t_f + t_b) = 9 x 3 = 27.
    EXPECT_DOUBLE_EQ(pipeline_makespan(Schedule::one_f_one_b, 6, 1, {1, 1, 1, 1}, {2, 2, 2, 2}),
                     27.0);
    // Fewer microbatches than stages: pp 4, m 2: (2 + 3) x 3 = 15.
    EXPECT_DOUBLE_EQ(pipeline_makespan(Schedule::one_f_one_b, 2, 1, {1, 1, 1, 1}, {2, 2, 2, 2}),
                     15.0);
    // Interleaved, pp 2, v 2, m 4, per chunk t_f 1, t_b 2: m v t + (pp - 1) t = 24 + 3 = 27.
    EXPECT_DOUBLE_EQ(pipeline_makespan(Schedule::interleaved, 4, 2, {1, 1}, {2, 2}), 27.0);
}

TEST(PipelineMakespan, UnequalStagesByHand) {
    // pp 2, m 2; stage 0 (f 1, b 2), stage 1 (f 3, b 6). Stage 0 runs F0 F1 B0 B1, stage 1
    // F0 B0 F1 B1:
    //   s0 F0 [0, 1], F1 [1, 2]; s1 F0 [1, 4], B0 [4, 10], F1 [10, 13], B1 [13, 19];
    //   s0 B0 [10, 12], B1 [19, 21].
    // 21 = m t_max + t_0 = 2 x 9 + 3: with two stages the closed form is exact.
    EXPECT_DOUBLE_EQ(pipeline_makespan(Schedule::one_f_one_b, 2, 1, {1, 3}, {2, 6}), 21.0);
    // pp 3, m 2; a slow first stage (f 2, b 4) before two fast ones (f 1, b 2). Stage 0 runs
    // F0 F1 B0 B1, stage 1 F0 F1 B0 B1, stage 2 F0 B0 F1 B1:
    //   s0 F0 [0, 2], F1 [2, 4]; s1 F0 [2, 3], F1 [4, 5];
    //   s2 F0 [3, 4], B0 [4, 6], F1 [6, 7], B1 [7, 9];
    //   s1 B0 [6, 8], B1 [9, 11]; s0 B0 [8, 12], B1 [12, 16].
    // 16, less than m t_max + t_1 + t_2 = 12 + 3 + 3 = 18: stage 0 waits 4 to 8 for its first
    // gradient, while the fast stages' fill and drain overlap its second forward pass.
    EXPECT_DOUBLE_EQ(pipeline_makespan(Schedule::one_f_one_b, 2, 1, {2, 1, 1}, {4, 2, 2}), 16.0);
}

TEST(PipelineSchedule, InterleavedByHand) {
    // pp = 2, v = 2, m = 4 (Megatron's ordering): forwards in groups of pp microbatches per
    // chunk; stage 1 warms up with (pp - 1 - 1) * 2 + (v - 1) * pp = 2 forwards.
    EXPECT_EQ(text(pipeline_schedule(Schedule::interleaved, 2, 1, 4, 2)),
              "F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3 ");
    EXPECT_THROW(pipeline_schedule(Schedule::interleaved, 4, 0, 6, 2), std::invalid_argument);
}

/// Runs every stage's schedule with unit forward time tf and backward time tb per chunk, free
/// transfers, and returns the makespan (or -1 on a deadlock).
double makespan(Schedule s, int pp, int m, int v, double tf, double tb) {
    std::vector<std::vector<PipelineTask>> tasks;
    for (int i = 0; i < pp; ++i) {
        tasks.push_back(pipeline_schedule(s, pp, i, m, v));
    }
    std::map<std::tuple<bool, int, int>, double> done; // (forward, mb, virtual stage) -> end
    std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
    std::vector<double> clock(static_cast<std::size_t>(pp), 0.0);
    bool progress = true;
    while (progress) {
        progress = false;
        for (int i = 0; i < pp; ++i) {
            auto& k = next[static_cast<std::size_t>(i)];
            while (k < tasks[static_cast<std::size_t>(i)].size()) {
                const PipelineTask& t = tasks[static_cast<std::size_t>(i)][k];
                const int vs = virtual_stage(pp, i, t.chunk);
                double ready = clock[static_cast<std::size_t>(i)];
                if (t.forward && vs > 0) {
                    auto it = done.find({true, t.microbatch, vs - 1});
                    if (it == done.end()) {
                        break;
                    }
                    ready = std::max(ready, it->second);
                }
                if (!t.forward && vs < pp * v - 1) {
                    auto it = done.find({false, t.microbatch, vs + 1});
                    if (it == done.end()) {
                        break;
                    }
                    ready = std::max(ready, it->second);
                }
                const double end = ready + (t.forward ? tf : tb);
                done[{t.forward, t.microbatch, vs}] = end;
                clock[static_cast<std::size_t>(i)] = end;
                ++k;
                progress = true;
            }
        }
    }
    for (int i = 0; i < pp; ++i) {
        if (next[static_cast<std::size_t>(i)] != tasks[static_cast<std::size_t>(i)].size()) {
            return -1.0;
        }
    }
    return *std::max_element(clock.begin(), clock.end());
}

TEST(PipelineSchedule, EveryTaskOnceAndForwardBeforeBackward) {
    for (auto [s, pp, m, v] : {std::tuple{Schedule::one_f_one_b, 4, 8, 1},
                               std::tuple{Schedule::one_f_one_b, 8, 3, 1},
                               std::tuple{Schedule::interleaved, 4, 8, 2},
                               std::tuple{Schedule::interleaved, 4, 4, 3}}) {
        for (int stage = 0; stage < pp; ++stage) {
            const auto tasks = pipeline_schedule(s, pp, stage, m, v);
            ASSERT_EQ(tasks.size(), static_cast<std::size_t>(2 * m * v));
            std::set<std::tuple<bool, int, int>> seen;
            for (const auto& t : tasks) {
                EXPECT_TRUE(seen.insert({t.forward, t.microbatch, t.chunk}).second);
                if (!t.forward) {
                    EXPECT_TRUE(seen.count({true, t.microbatch, t.chunk}))
                        << "backward before forward";
                }
            }
        }
    }
}

TEST(PipelineSchedule, MakespanMatchesTheClosedForms) {
    // 1F1B: (m + pp - 1)(tf + tb). Interleaved with v chunks of 1/v of the work each:
    // m (tf + tb) + (pp - 1)(tf + tb) / v (Narayanan et al. 2021).
    const double tf = 1.0, tb = 2.0;
    for (auto [pp, m] : {std::pair{4, 8}, std::pair{2, 16}, std::pair{8, 8}, std::pair{6, 1}}) {
        EXPECT_DOUBLE_EQ(makespan(Schedule::one_f_one_b, pp, m, 1, tf, tb),
                         (m + pp - 1) * (tf + tb))
            << pp << " " << m;
    }
    for (auto [pp, m, v] : {std::tuple{4, 8, 2}, std::tuple{2, 8, 4}, std::tuple{4, 16, 2}}) {
        EXPECT_NEAR(makespan(Schedule::interleaved, pp, m, v, tf / v, tb / v),
                    m * (tf + tb) + (pp - 1) * (tf + tb) / v, 1e-9)
            << pp << " " << m << " " << v;
    }
}

} // namespace
} // namespace trnsim::workload
