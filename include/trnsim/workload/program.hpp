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
// Context parallelism (cp > 1; Megatron-LM CP, ring attention). A rank processes
// microbatch x sequence_length / cp tokens, so every per-token op (projections, norms, MLP,
// MoE dispatch, embedding, head, the TP collectives and the pipeline transfer) is 1 / cp of
// its size without CP. With the load-balanced causal split (plan.hpp) a rank's attention is
// one causal kernel of its S / cp queries against its own S / cp keys and cp - 1 unmasked
// kernels of its S / cp queries against S / (2 cp) keys of another rank's block: exactly 1 / cp
// of the causal work of the sequence. The ring that brings the other ranks' keys and values
// is modelled as an all-gather over the CP group (cp_kv_all_gather, exposed; its size is the
// gathered keys and values, cp x 2 x S / cp x kv heads / tp x head_dim x element size x
// microbatch), and the gradients of keys and values go back as a reduce-scatter
// (cp_kv_reduce_scatter). The gathered keys and values are not kept: the backward pass
// gathers them again (as part of the recomputation when the attention core is recomputed).
// Model FLOPs do not change: it is the same model over the same tokens.
//
// Backward blocks are derived from the forward ones: a matmul becomes its data-gradient and its
// weight-gradient matmuls; fused attention becomes the flash-attention backward kernel
// (compute::AttentionShape::backward: the probabilities recomputed from the saved log-sum-exp,
// five matmuls per tile); every streaming op lists the kernels of its own backward
// (ProgramOp::grads): a norm its norm-backward kernel (input and scale gradients), an
// activation the product of the output gradient with its derivative, SwiGLU's gate product the
// two gradient products, the embedding lookup the scatter-add of its gradient rows into the
// table, the cross-entropy the scaling of its saved softmax - one-hot, rotary embedding the
// inverse rotation, a residual addition the sum of the two gradient paths. Each tensor- or
// context-parallel all-gather becomes a reduce-scatter and vice versa. Activation
// recomputation prepends forward work to the backward block: the whole layer (full, but for the
// ZeRO-3 gathers) or, selective, the parts of workload.parallelism.recompute_parts
// (RecomputeSet): the attention core with its key/value gather, the norms, the MLP activation
// or the whole MLP with its TP collectives.
//
// Gradient accumulation: in every microbatch each block's backward pass adds its parameter
// gradients into the accumulator the gradient reduction and the optimizer read after the last
// microbatch (op "grad_accumulate", right after the block's last weight-gradient matmul): an
// elementwise kernel over the block's parameters on the rank (the ZeRO-3 shard with zero 3),
// two inputs (accumulator, new gradient) and one output at the accumulator's element size
// (workload.graph.grad_accumulator, grad_accumulator_bytes). With an FP32 accumulator the
// gradient reduction and the optimizer's gradient are FP32 as well.
//
// Materialized attention (workload.graph.attention) replaces the fused kernel by the scores
// matmul Q K^T (a batched matmul per query head over all S x S pairs, causal or not), the row
// softmax (the mask and the scaling fused into it), the attention dropout when there is one,
// and the P V matmul; their backward passes are the matmuls' gradients and the softmax and
// dropout backward kernels. Hidden dropout adds a dropout before each residual addition.
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
    /// The op's cost is multiplied by this (the cp - 1 off-diagonal attention blocks of
    /// context parallelism: cp - 1).
    double repeat = 1.0;
    /// Streaming ops: the kernels of the op's backward pass (empty: its gradient needs no
    /// kernel of its own).
    std::vector<compute::StreamShape> grads;
    /// Runs on the collective engines beside compute (ZeRO-3 prefetch, gradient reduction).
    bool overlapped = false;
    /// Forward work repeated in the backward pass for activation recomputation.
    bool recompute = false;
    /// An all-gather whose output the forward pass does not keep (the context-parallel keys and
    /// values): the backward pass, or the recomputation before it, gathers again.
    bool regather = false;
    /// The parts of the layer the op belongs to (bit 1 << RecomputePart): what selective
    /// recomputation may recompute.
    std::uint8_t parts = 0;
    bool in(RecomputePart p) const { return (parts >> static_cast<int>(p)) & 1u; }
    /// Name of the collective's backward counterpart; empty: name + " backward".
    std::string backward_name;

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
