// The order in which one pipeline stage runs its microbatches: forward and backward passes of
// each model chunk, as the training frameworks issue them.
//
// 1F1B (PipeDream-Flush, Narayanan et al. 2021): stage s of pp runs min(pp - s - 1, m) forward
// passes to fill the pipeline, then alternates one forward and one backward, then drains the
// remaining backward passes.
//
// Interleaved 1F1B (Megatron-LM, Narayanan et al. 2021 §2.2): each rank holds v model chunks;
// chunk c of stage s is virtual stage c x pp + s. Forward passes go in groups of pp
// microbatches per chunk: the k-th forward runs chunk (k mod (pp v)) / pp of microbatch
// (k / (pp v)) pp + k mod pp; the k-th backward runs chunk v - 1 - that, on the same
// microbatch. Warm-up is (pp - s - 1) x 2 + (v - 1) x pp forwards (all of them when m = pp).
// It needs m to be a multiple of pp (the plan checks).
#pragma once

#include "trnsim/workload/training_spec.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::workload {

struct PipelineTask {
    bool forward = true;
    std::int32_t microbatch = 0;
    std::int32_t chunk = 0; ///< model chunk on this rank (0 for 1F1B)
};

/// The tasks of `stage` in the order it runs them: 2 x microbatches x chunks entries.
std::vector<PipelineTask> pipeline_schedule(Schedule schedule, int pp, int stage,
                                            std::int64_t microbatches, int chunks);

/// The time from the first task's start to the last task's end when every stage runs its
/// schedule (pipeline_schedule) in order, one task at a time, and a task starts once its stage
/// is free and its input is there: a forward pass of virtual stage u after the forward pass of
/// the same microbatch on u - 1, a backward pass after the backward pass on u + 1 (the last
/// virtual stage's after its own forward pass). `forward_s[s]` and `backward_s[s]` are the
/// times of one task of one model chunk on stage s, seconds (transfers to the next stage
/// included). Equal stages give the closed forms (m + pp - 1)(t_f + t_b) for 1F1B and
/// m (t_f + t_b) v + (pp - 1)(t_f + t_b) for interleaving, with per-chunk times; unequal
/// stages less than m t_max + sum of the others' t_i when a slow stage hides part of the fill
/// and drain behind its own warm-up and cool-down. Work: 2 m v pp tasks.
double pipeline_makespan(Schedule schedule, std::int64_t microbatches, int chunks,
                         const std::vector<double>& forward_s,
                         const std::vector<double>& backward_s);

/// Virtual stage of a chunk: chunk x pp + stage (the model's layers run in this order).
inline int virtual_stage(int pp, int stage, int chunk) { return chunk * pp + stage; }

} // namespace trnsim::workload
