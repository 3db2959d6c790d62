// The analytic step model (simulation.fidelity: analytic): a closed-form estimate of one
// training step from the op program, the kernel cost model and the collective costs.
//
// Per pipeline stage and microbatch, each block (layer, embedding, head) costs
//     max( sum of compute ops + sum of exposed collectives,  sum of overlapped collectives )
// forward and backward; tensor-parallel, context-parallel (key/value exchange, at the closed form
// of its group), expert-parallel and pipeline transfers are exposed,
// ZeRO-3 parameter gathers and gradient reduce-scatters overlap. With m microbatches, pp stages
// with times per microbatch t_i = t_fwd,i + t_bwd,i, the slowest t_max, and v model chunks per
// rank, the slowest stage paces the microbatches and filling and draining the pipeline crosses
// every other stage once:
//     pipeline = m t_max + bubble,      bubble = (sum_i t_i - t_max) / v
// which is (m + (pp - 1) / v) t for equal stages (1F1B and interleaved 1F1B, Narayanan et al.
// 2021); stages differ by the embedding and the output head. When the stages hold different
// numbers of layers (workload.parallelism.stage_layers, balance, or pp not dividing the
// layers), a slow stage hides part of the fill and drain behind its own warm-up and
// cool-down, so the pipeline is instead the makespan of the schedule run with each stage's
// task times (workload::pipeline_makespan: 2 m v pp tasks), and bubble = pipeline - m t_max. Gradient reduction overlaps the last
// microbatch's backward pass; what is left of it is exposed, and so are the optimizer update
// and the ZeRO-1/2 parameter all-gather:
//     step = pipeline + max(0, grad_sync - t_bwd) + optimizer + param_gather
// (the maximum over stages of the part after the pipeline).
//
// exposed_comm is the step time minus the step time of the same program with every
// collective free: the time communication adds to the step.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/workload/plan.hpp"

#include <string>
#include <vector>

namespace trnsim::sim {

/// Time of one op summed over a step, for the breakdown table.
struct OpTime {
    std::string name;
    bool collective = false;
    double seconds = 0.0; ///< per step, on the slowest stage's critical path
};

/// The step of a plan. Times are real seconds (Seconds), not engine ticks: each is a sum of up
/// to millions of analytic kernel and collective costs kept at full precision; the run
/// simulation turns the step time into ticks once (Duration::from_seconds_ceil).
struct StepEstimate {
    Seconds step_time;         ///< one training step
    Seconds forward;           ///< one microbatch forward on the slowest stage
    Seconds backward;          ///< one microbatch backward on the slowest stage
    Seconds pipeline;          ///< all microbatches through the pipeline
    Seconds bubble;            ///< pipeline fill and drain, per step
    /// Gradient reduction not hidden by the backward pass, its engine and HBM time beside the
    /// kernels included.
    Seconds grad_sync_exposed;
    Seconds optimizer;         ///< the optimizer update, per step
    Seconds param_gather;      ///< ZeRO parameter all-gather, per step
    Seconds exposed_comm;      ///< communication not overlapped with compute, per step
    int slowest_stage = 0;
    /// Per pipeline stage, first to last: the forward and the backward pass of one microbatch
    /// (all the stage's model chunks, with its pipeline transfers). The slowest stage has the
    /// largest sum.
    std::vector<Seconds> stage_forward;
    std::vector<Seconds> stage_backward;

    double model_flops = 0.0;    ///< per step, whole cluster (6 N + attention convention)
    double hardware_flops = 0.0; ///< model FLOPs plus recomputation
    double hbm_bytes_per_rank = 0.0;

    double tokens_per_s = 0.0;   ///< tokens per second of step time
    double mfu = 0.0;
    double hfu = 0.0;
    double mbu = 0.0;
    double bubble_fraction = 0.0;

    std::vector<OpTime> breakdown;
};

/// Costs one step of the plan. Pure function of the plan.
StepEstimate estimate_step(const workload::Plan& plan);

} // namespace trnsim::sim
