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

/// Virtual stage of a chunk: chunk x pp + stage (the model's layers run in this order).
inline int virtual_stage(int pp, int stage, int chunk) { return chunk * pp + stage; }

} // namespace trnsim::workload
