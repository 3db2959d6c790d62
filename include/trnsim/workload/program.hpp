// The op program of a training step: the kernels and collectives one rank executes, per block
// (a dense layer, a MoE layer, the embedding, the output head) and per step (gradient
// synchronisation and the optimizer). All ranks of one role share one program; pipeline stages
// differ only in which blocks they run and how many times (StageLayout).
//
// Forward blocks follow Megatron-style tensor and sequence parallelism (Korthikanti et al. 2022):
// the residual stream is split along the sequence between TP ranks, all-gathered before each
// attention or MLP block and reduce-scattered after it (all-reduce instead when sequence
// parallelism is off). MoE layers use the all-to-all token dispatcher: route the local tokens,
// all-to-all within the expert-parallel group, all-gather within the TP group, run the local
// experts (each split like a dense MLP across TP), and reverse.
//
// Backward blocks are derived from the forward ones: a matmul becomes its data-gradient and its
// weight-gradient matmuls, fused attention costs 2.5x its forward (FlashAttention-2: five
// matmuls instead of two), a streaming op costs 2x (it reads the output gradient and the saved
// input), and each tensor-parallel all-gather becomes a reduce-scatter and vice versa.
// Activation recomputation prepends forward work to the backward block: the attention core
// (selective) or the whole layer (full).
#pragma once

#include "trnsim/compute/kernel.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/workload/plan.hpp"

#include <string>
#include <vector>

namespace trnsim::workload {

struct ProgramOp {
    enum class Kind { matmul, attention, stream, optimizer, collective };

    Kind kind = Kind::stream;
    std::string name;
    compute::MatmulShape matmul;
    compute::AttentionShape attention;
    compute::StreamShape stream;
    compute::OptimizerShape optimizer;
    network::CollectiveOp collective = network::CollectiveOp::all_reduce;
    CommGroup group = CommGroup::tp;
    double bytes = 0.0; ///< collective size per rank (see collective_seconds)
    /// The op's cost is multiplied by this (backward of fused attention: 2.5).
    double repeat = 1.0;
    /// Runs on the collective engines beside compute (ZeRO-3 prefetch, gradient reduction).
    bool overlapped = false;
    /// Forward work repeated in the backward pass for activation recomputation.
    bool recompute = false;

    bool is_collective() const { return kind == Kind::collective; }
};

struct BlockProgram {
    std::vector<ProgramOp> forward;
    std::vector<ProgramOp> backward;
};

struct StepProgram {
    BlockProgram dense_layer;
    BlockProgram moe_layer;
    BlockProgram embedding;
    BlockProgram head;
    /// Activation (forward) and gradient (backward) transfer to the neighbouring stage, per
    /// microbatch and model chunk.
    ProgramOp pipeline_send;
};

/// Once per step on each stage, after the last microbatch's backward pass.
struct StageStepOps {
    /// Gradient reduction (overlaps the last microbatch's backward pass).
    std::vector<ProgramOp> gradient_sync;
    ProgramOp optimizer;
    /// Parameter all-gather after the optimizer (ZeRO-1 and 2).
    std::vector<ProgramOp> parameter_gather;
};

StepProgram build_program(const Plan& plan);
StageStepOps build_stage_step_ops(const Plan& plan, int stage);

} // namespace trnsim::workload
