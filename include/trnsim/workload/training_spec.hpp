// What to train and how to split it: the workload section of a scenario, as plain values.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/workload/model.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::workload {

enum class Schedule { one_f_one_b, interleaved };

/// How the pipeline stages share the layers when workload.parallelism.stage_layers is not
/// given (stage_layer_counts in plan.hpp has the rule in full).
enum class StageBalance {
    even,   ///< layers / pp each; the remainder r, one more layer each on stages 1 to r
    llama3, ///< the first and the last stage one layer fewer than the others (Llama 3 405B:
            ///< Llama Team 2024, "The Llama 3 Herd of Models", section 3.3.2)
};
enum class Recompute { none, selective, full };

/// What selective recomputation recomputes in the backward pass (the frameworks differ:
/// docs/workload.md, "Recomputation"):
///   core_attention  the attention core: Q K^T, softmax (with its dropout), P V, or the fused
///                   flash-attention kernel, and a context-parallel gather of keys and values
///                   (Megatron-LM's and NeMo's "selective", NxD's CoreAttention);
///   norm            the layer norms before attention and MLP (NeMo on Neuron checkpoints them
///                   with the core attention under "selective");
///   mlp_activation  the MLP's activation: SiLU and the gate product, or GELU (NxD's Llama
///                   examples checkpoint act_fn(gate) * up under selective_checkpoint);
///   mlp             the whole MLP: its projections, activation and tensor-parallel gather and
///                   reduce-scatter (NxD's LlamaMLP module at sequence length 8192).
enum class RecomputePart { core_attention, norm, mlp_activation, mlp };

/// How the framework builds the attention core of its compiled graph.
enum class AttentionKernel {
    flash,        ///< one fused kernel (NKI flash attention; compute::AttentionShape)
    materialized, ///< Q K^T, softmax and P V as separate kernels through HBM (XLA graphs
                  ///< without a flash kernel: the scores and probabilities are S x S tensors)
};

/// The buffer each microbatch's parameter gradients are added into until the optimizer step
/// (workload.graph.grad_accumulator; docs/workload.md, "Gradient accumulation").
enum class GradAccumulator {
    /// The parameters' own gradients in the working precision: PyTorch's autograd adds each
    /// microbatch's gradient into param.grad, which XLA_USE_BF16 / XLA_DOWNCAST_BF16 keep in
    /// BF16 on the device (NeMo without megatron_amp_O2, NxD without use_fp32_grad_acc).
    bf16,
    /// An FP32 main gradient per parameter that a hook adds each gradient into (torch_xla's
    /// ZeroRedundancyOptimizer with use_grad_acc_hook, which NxD's use_fp32_grad_acc sets); the
    /// gradient reduction and the optimizer then read FP32 gradients too.
    fp32,
};

/// Where the optimizer keeps the weights it updates (workload.optimizer.master_weights).
enum class MasterWeights {
    /// An FP32 copy of every parameter beside the working (BF16, FP8) weights: the usual
    /// mixed-precision optimizer (NxD's ZeRO-1 optimizer, Megatron's main params).
    fp32,
    /// No copy: the optimizer updates the BF16 weights in place with stochastic rounding, which
    /// lets small updates accumulate (the Neuron rounding-modes page: NeuronCore-v2 and later;
    /// PyTorch-Neuron turns it on under XLA_USE_BF16=1). Needs a chip with stochastic rounding.
    none,
};

/// The precision of the optimizer's two moments (workload.optimizer.moments).
enum class OptimizerMoments { fp32, bf16 };

/// The optimizer's state: its master weights and moments (memory, checkpoint, AdamW's bytes).
struct OptimizerSpec {
    MasterWeights master_weights = MasterWeights::fp32;
    OptimizerMoments moments = OptimizerMoments::fp32;
};

constexpr std::array<EnumName<MasterWeights>, 2> enum_names(MasterWeights) {
    return {{
        {MasterWeights::fp32, "fp32"},
        {MasterWeights::none, "none"},
    }};
}
inline const char* to_string(MasterWeights v) { return enum_name(v); }

constexpr std::array<EnumName<OptimizerMoments>, 2> enum_names(OptimizerMoments) {
    return {{
        {OptimizerMoments::fp32, "fp32"},
        {OptimizerMoments::bf16, "bf16"},
    }};
}
inline const char* to_string(OptimizerMoments v) { return enum_name(v); }

constexpr std::array<EnumName<Schedule>, 2> enum_names(Schedule) {
    return {{
        {Schedule::one_f_one_b, "1f1b"},
        {Schedule::interleaved, "interleaved"},
    }};
}
inline const char* to_string(Schedule v) { return enum_name(v); }
constexpr std::array<EnumName<StageBalance>, 2> enum_names(StageBalance) {
    return {{
        {StageBalance::even, "even"},
        {StageBalance::llama3, "llama3"},
    }};
}
inline const char* to_string(StageBalance v) { return enum_name(v); }
constexpr std::array<EnumName<Recompute>, 3> enum_names(Recompute) {
    return {{
        {Recompute::none, "none"},
        {Recompute::selective, "selective"},
        {Recompute::full, "full"},
    }};
}
inline const char* to_string(Recompute v) { return enum_name(v); }
constexpr std::array<EnumName<RecomputePart>, 4> enum_names(RecomputePart) {
    return {{
        {RecomputePart::core_attention, "core_attention"},
        {RecomputePart::norm, "norm"},
        {RecomputePart::mlp_activation, "mlp_activation"},
        {RecomputePart::mlp, "mlp"},
    }};
}
inline const char* to_string(RecomputePart v) { return enum_name(v); }
constexpr std::array<EnumName<AttentionKernel>, 2> enum_names(AttentionKernel) {
    return {{
        {AttentionKernel::flash, "flash"},
        {AttentionKernel::materialized, "materialized"},
    }};
}
inline const char* to_string(AttentionKernel v) { return enum_name(v); }
constexpr std::array<EnumName<GradAccumulator>, 2> enum_names(GradAccumulator) {
    return {{
        {GradAccumulator::bf16, "bf16"},
        {GradAccumulator::fp32, "fp32"},
    }};
}
inline const char* to_string(GradAccumulator v) { return enum_name(v); }

/// What is recomputed, resolved from the recompute mode and its parts.
struct RecomputeSet {
    bool full = false; ///< whole layers (everything but overlapped collectives)
    bool core_attention = false;
    bool norm = false;
    bool mlp_activation = false;
    bool mlp = false;

    /// none: nothing; full: everything; selective: `parts`, or the attention core alone when
    /// `parts` is empty.
    static RecomputeSet of(Recompute r, const std::vector<RecomputePart>& parts = {});
    bool has(RecomputePart p) const;
    bool any() const { return full || core_attention || norm || mlp_activation || mlp; }
};

struct ParallelismSpec {
    int tp = 1;               ///< tensor parallel degree
    int cp = 1;               ///< context parallel degree (the sequence split across ranks)
    int pp = 1;               ///< pipeline stages
    /// Layers of each pipeline stage, first to last (empty: from `balance`). When given: pp
    /// entries, each >= 1, summing to the model's layers.
    std::vector<int> stage_layers;
    StageBalance balance = StageBalance::even; ///< the layout when stage_layers is empty
    int dp = 0;               ///< data parallel replicas; 0 = all ranks left after tp x cp x pp
    int ep = 1;               ///< expert parallel degree (carved out of dp)
    int zero = 1;             ///< ZeRO stage 0..3
    int microbatch = 1;       ///< sequences per microbatch
    Schedule schedule = Schedule::one_f_one_b;
    int virtual_stages = 1;   ///< model chunks per rank for the interleaved schedule
    Recompute recompute = Recompute::selective;
    /// Parts recomputed by selective recomputation (empty: the attention core).
    std::vector<RecomputePart> recompute_parts;
    bool sequence_parallel = true;
    /// Gradient bucket (bytes per rank): gradients go out for reduction in buckets of this
    /// size as the last microbatch's backward pass produces them.
    Bytes grad_bucket = Bytes(std::int64_t{512} << 20);
};

/// How the framework builds the compiled training graph, where it changes the kernels
/// (workload.graph).
struct GraphSpec {
    AttentionKernel attention = AttentionKernel::flash;
    /// Dropout probability on the attention probabilities (materialized attention: one more
    /// pass over the S x S probabilities, and its mask kept for the backward pass).
    double attention_dropout = 0.0;
    /// Dropout probability on each block's output before the residual addition (one more pass
    /// over the residual stream, and its mask kept).
    double hidden_dropout = 0.0;
    /// Where each microbatch's parameter gradients are accumulated (its element size: 2 or 4
    /// bytes; grad_accumulator_bytes).
    GradAccumulator grad_accumulator = GradAccumulator::bf16;
};

struct TrainingSpec {
    ModelSpec model;
    std::int64_t sequence_length = 0;
    std::int64_t global_batch = 0; ///< sequences per step
    std::int64_t tokens = 0;       ///< tokens to train on (0 when `steps` is given)
    std::int64_t steps = 0;        ///< steps to run (0 when `tokens` is given)
    compute::Precision precision = compute::Precision::bf16;
    ParallelismSpec parallelism;
    GraphSpec graph;
    OptimizerSpec optimizer;
    /// MoE routing imbalance: tokens the busiest expert-parallel rank receives relative to the
    /// average (1 = perfectly balanced). Every rank waits for that one in the all-to-all.
    double moe_imbalance = 1.0;
};

/// Bytes per element of the gradient accumulator: 4 for an FP32 accumulator or FP32 training,
/// else 2 (BF16; FP8 training keeps BF16 gradients).
inline int grad_accumulator_bytes(const TrainingSpec& t) {
    return t.graph.grad_accumulator == GradAccumulator::fp32 ||
                   t.precision == compute::Precision::fp32
               ? 4
               : 2;
}

/// Bytes per parameter of the optimizer's master copy: 4 for an FP32 copy beside BF16 or FP8
/// weights; 0 for FP32 training (the weights are the master) or master_weights: none.
inline int master_weight_bytes(const TrainingSpec& t) {
    return t.precision == compute::Precision::fp32 ||
                   t.optimizer.master_weights == MasterWeights::none
               ? 0
               : 4;
}

/// Why `master_weights` cannot be used for training at `t`'s precision on `chip` (none needs
/// BF16 or FP8 weights and a chip that rounds stochastically); empty when it can.
inline std::string master_weights_refusal(MasterWeights master_weights, const TrainingSpec& t,
                                          const compute::ChipSpec& chip) {
    if (master_weights != MasterWeights::none) {
        return {};
    }
    if (t.precision == compute::Precision::fp32) {
        return "FP32 training keeps no master copy: none applies to BF16 and FP8 weights";
    }
    if (!chip.core.stochastic_rounding) {
        return "none updates the BF16 weights with stochastic rounding, which chip " +
               chip.name + " does not have (core.stochastic_rounding)";
    }
    return {};
}

/// Bytes per parameter of each of the optimizer's two moments (4 in FP32, 2 in BF16).
inline int moment_bytes(const TrainingSpec& t) {
    return t.optimizer.moments == OptimizerMoments::bf16 ? 2 : 4;
}

} // namespace trnsim::workload
