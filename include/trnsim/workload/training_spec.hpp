// What to train and how to split it: the workload section of a scenario, as plain values.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/workload/model.hpp"

#include <array>
#include <cstdint>

namespace trnsim::workload {

enum class Schedule { one_f_one_b, interleaved };
enum class Recompute { none, selective, full };

constexpr std::array<EnumName<Schedule>, 2> enum_names(Schedule) {
    return {{
        {Schedule::one_f_one_b, "1f1b"},
        {Schedule::interleaved, "interleaved"},
    }};
}
inline const char* to_string(Schedule v) { return enum_name(v); }
constexpr std::array<EnumName<Recompute>, 3> enum_names(Recompute) {
    return {{
        {Recompute::none, "none"},
        {Recompute::selective, "selective"},
        {Recompute::full, "full"},
    }};
}
inline const char* to_string(Recompute v) { return enum_name(v); }

struct ParallelismSpec {
    int tp = 1;               ///< tensor parallel degree
    int cp = 1;               ///< context parallel degree (the sequence split across ranks)
    int pp = 1;               ///< pipeline stages
    int dp = 0;               ///< data parallel replicas; 0 = all ranks left after tp x cp x pp
    int ep = 1;               ///< expert parallel degree (carved out of dp)
    int zero = 1;             ///< ZeRO stage 0..3
    int microbatch = 1;       ///< sequences per microbatch
    Schedule schedule = Schedule::one_f_one_b;
    int virtual_stages = 1;   ///< model chunks per rank for the interleaved schedule
    Recompute recompute = Recompute::selective;
    bool sequence_parallel = true;
    /// Gradient bucket (bytes per rank): gradients go out for reduction in buckets of this
    /// size as the last microbatch's backward pass produces them.
    Bytes grad_bucket = Bytes(std::int64_t{512} << 20);
};

struct TrainingSpec {
    ModelSpec model;
    std::int64_t sequence_length = 0;
    std::int64_t global_batch = 0; ///< sequences per step
    std::int64_t tokens = 0;       ///< tokens to train on (0 when `steps` is given)
    std::int64_t steps = 0;        ///< steps to run (0 when `tokens` is given)
    compute::Precision precision = compute::Precision::bf16;
    ParallelismSpec parallelism;
    /// MoE routing imbalance: tokens the busiest expert-parallel rank receives relative to the
    /// average (1 = perfectly balanced). Every rank waits for that one in the all-to-all.
    double moe_imbalance = 1.0;
};

} // namespace trnsim::workload
