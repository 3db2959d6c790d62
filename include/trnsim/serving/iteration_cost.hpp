// The cost of one iteration of a serving replica on Trainium / Inferentia chips
// (serving::IterationCost, iteration.hpp), from the model's dimensions, the chip data and the
// replica's compiled shapes. docs/serving.md explains every term; in short:
//
// A replica holds the model on `tp` ranks (logical NeuronCores). An iteration runs compiled
// graphs: context encoding (prefill) graphs for the prompts of the shape, then one token
// generation (decode) graph for its decode sequences, or with speculative decoding k draft
// decode steps of the draft model and one target graph verifying 1 + k tokens per sequence.
// Every graph is the model's forward pass over padded static shapes:
//
//   prefill   sequences per graph: serving.prefill_batch (padded); new tokens padded up to
//             the compiled bucket that holds them (serving.buckets, default powers of two from
//             128 to max_context, the last max_context); keys attended: the bucket of the
//             longest cached + new span;
//   decode    sequences: the compiled batch max_batch, whatever decode_sequences is; keys
//             attended: the bucket holding decode_max_context (the KV cache slice read).
//
// One graph costs, per rank (all ranks of the replica do the same work):
//
//   sum over its kernels of CostModel seconds (a prefill matmul or attention kernel at least
//     its FLOPs at serving.prefill_efficiency of the TensorE peak)
//   + kernels x serving.kernel_overhead
//   + sum over its collectives of network::collective_seconds over the TP group
//   + serving.iteration_overhead
//   + serving.prefill_graph_overhead (context-encoding graphs only)
//
// Kernels per layer: norm, QKV projection, rotary embedding, KV cache write, attention
// (a fused flash kernel, or with serving.materialized_attention the score matmul, mask,
// softmax and value matmul through HBM), output projection, TP all-reduce, residual add, norm,
// MLP (gate/up, activation, product, down; or router, top-k and the routed experts), TP
// all-reduce, residual add; then the final norm, the LM head over the last token of each
// sequence (1 + k with speculation) and the all-gather of the logits; the embedding gather
// and its all-gather before the layers. Matmuls at small M are HBM-bound in the kernel model
// (every iteration reads the rank's weights); int8/fp8 weight storage halves the bytes and
// adds the VectorE dequantisation that runs beside the DMA.
//
// Tensor parallelism (as NxD Inference and Transformers NeuronX shard): query heads padded up
// to a multiple of tp and split; key/value heads split when kv_heads >= tp (padded like the
// query heads), replicated to one per rank when kv_heads < tp (tp must then be a multiple of
// kv_heads); MLP and vocabulary split with padding. MoE: with ep = 1 every expert is split
// over the tp ranks; with ep > 1 each of ep groups of tp / ep consecutive ranks holds
// experts / ep experts split over its ranks, tokens reach them through an all-to-all over
// the ep group and back. Routed experts read their weights only when a token is routed to
// them (uniform top-k routing: a rank's expected experts touched).
//
// Memory per rank: weights (target and draft), the runtime reserve (hardware.hbm_reserve per
// chip, shared by its ranks), a workspace for the largest graph's activations, and the KV
// cache in what is left. The replica must hold max_batch x max_context tokens of KV cache.
//
// Memoisation: every distinct graph cost (prefill per pair of compiled buckets, decode per
// bucket and draft length) is computed at construction into tables; time() looks them up.
// The object is immutable after construction, so concurrent readers need no locking.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/serving/iteration.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/cluster/shape.hpp"
#include "trnsim/workload/model.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace trnsim::serving {

/// Where a replica's ranks sit. Ranks are numbered as in a training plan (consecutive ranks
/// fill a chip, chips fill an instance, instances an UltraServer); the replica's tp ranks are
/// first_rank, ..., first_rank + tp - 1.
struct ReplicaPlacement {
    cluster::ClusterShape cluster;
    std::int64_t first_rank = 0;

    /// The smallest cluster holding one replica of `tp` ranks from rank 0: one instance when it
    /// fits, else one UltraServer when the chip has them and it fits, else plain instances
    /// (tensor parallelism across EFA).
    static ReplicaPlacement single(const compute::ChipSpec& chip, int lnc, int tp);
};

/// HBM per rank of a replica.
struct ReplicaMemory {
    Bytes capacity_per_rank;
    Bytes reserve_per_rank;        ///< hardware.hbm_reserve of a chip / its ranks
    Bytes weights_per_rank;        ///< target and draft weights this rank holds
    Bytes workspace_per_rank;      ///< activations of the largest compiled graph
    Bytes kv_free_per_rank;        ///< what is left for the KV cache
    /// Keys and values of one token over every layer of the model, unsharded and without
    /// replication: 2 x layers x kv_heads x head_dim x element bytes (Llama-3-70B BF16:
    /// 327,680 B).
    Bytes kv_per_token;
    /// The same on one rank: its kv heads after the split or replication (target + draft).
    Bytes kv_per_token_per_rank;
    /// Tokens of KV cache the replica holds: kv_free_per_rank / kv_per_token_per_rank.
    std::int64_t kv_capacity_tokens = 0;
};

/// The terms of one iteration's time, seconds summed over its graphs, so a fit can recombine
/// the fixed costs with other coefficients: total = decode_kernel + prefill_kernel +
/// collective_time + kernels x kernel_overhead + graphs x iteration_overhead + prefill_graphs x
/// prefill_graph_overhead (the prefill efficiency is already inside prefill_kernel).
struct IterationBreakdown {
    Seconds decode_kernel;          ///< kernels of decode, verification and draft graphs
    Seconds prefill_kernel;         ///< kernels of context-encoding graphs
    Seconds collective_time;        ///< the collectives (`collectives` counts them)
    Seconds matmul;                 ///< of the kernel seconds: matmuls (weights)
    Seconds attention;              ///< of the kernel seconds: attention
    double kernels = 0.0;     ///< expected counts (fractional for routed experts)
    double collectives = 0.0;
    double graphs = 0.0;
    double prefill_graphs = 0.0; ///< of the graphs: context-encoding graphs

    /// The time with these coefficients.
    double seconds(const compute::ServingCosts& c) const;
    IterationBreakdown& operator+=(const IterationBreakdown& o);
};

class IterationCostModel final : public IterationCost {
public:
    /// Validates the replica against the model and the chip and builds the tables. Throws
    /// InputError: workload.serving.tp (heads, key/value heads or the chip's ranks do not
    /// divide as required), workload.serving.ep, workload.serving.buckets,
    /// workload.serving.weight_bytes, hardware.lnc, workload.model (an unsupported
    /// architecture) and workload.serving (the weights and the minimum KV cache of
    /// max_batch x max_context tokens do not fit in HBM).
    IterationCostModel(const workload::ModelSpec& model, const compute::ChipSpec& chip, int lnc,
                       const ServingSpec& serving, const ReplicaPlacement& placement,
                       Bytes hbm_reserve_per_chip);
    ~IterationCostModel() override;
    IterationCostModel(const IterationCostModel&) = delete;
    IterationCostModel& operator=(const IterationCostModel&) = delete;

    /// Table lookups only (a few tens of nanoseconds).
    Duration time(const IterationShape& shape) const override;
    std::int64_t bucket_end(std::int64_t context) const override;

    /// time() before rounding up to the nanosecond.
    double seconds(const IterationShape& shape) const;
    /// Every term of the iteration, recomputed from the kernel and collective models without
    /// the tables (slow: for reports, fits and tests).
    IterationBreakdown breakdown(const IterationShape& shape) const;

    /// The compiled sequence buckets, ascending (the last is max_context).
    const std::vector<std::int64_t>& buckets() const { return buckets_; }
    /// The context-encoding buckets: serving.prefill_buckets, or buckets() when not given.
    const std::vector<std::int64_t>& prefill_buckets() const { return prefill_buckets_; }
    const ReplicaMemory& memory() const { return memory_; }
    /// The replica's tensor-parallel group over chip, instance, UltraServer and fabric.
    const network::GroupShape& tp_group() const { return tp_group_; }
    /// Query and key/value heads per rank after padding, split or replication.
    std::int64_t heads_per_rank() const;
    std::int64_t kv_heads_per_rank() const;
    const ServingSpec& serving() const { return serving_; }
    const compute::ChipSpec& chip() const { return chip_; }

    struct Impl;

private:
    struct PrefillShape {
        std::size_t q = 0;  ///< prefill bucket index of the new tokens
        std::size_t kv = 0; ///< kv_buckets_ index of the keys attended (>= the q bucket)
        std::int64_t graphs = 0;
        /// Transformers NeuronX: prompt tokens beyond the largest prefill bucket, encoded one
        /// by one by the decode graph (at the decode bucket `leftover_bucket`).
        std::int64_t leftover = 0;
        std::size_t leftover_bucket = 0;
    };
    std::size_t bucket_index(std::int64_t context) const;
    PrefillShape prefill_shape(const IterationShape& shape) const;
    IterationBreakdown prefill_graph(std::size_t qi, std::size_t ki) const;

    compute::ChipSpec chip_;
    ServingSpec serving_;
    std::vector<std::int64_t> buckets_;
    std::vector<std::int64_t> prefill_buckets_;
    /// Key counts a prefill graph can attend to: buckets_ and prefill_buckets_ together.
    std::vector<std::int64_t> kv_buckets_;
    bool tnx_context_ = false; ///< serving.prefill_buckets given (TNx context encoding)
    ReplicaMemory memory_;
    network::GroupShape tp_group_;
    int prefill_batch_ = 1;
    int max_k_ = 0;
    /// Seconds of one prefill graph per (prefill bucket i, key bucket j of kv_buckets_ at
    /// least bucket i), row major over prefill_buckets_.size() x kv_buckets_.size() (other
    /// entries unused), and of one decode iteration per (bucket, draft length 0..max_k_).
    std::vector<double> prefill_table_;
    std::vector<double> decode_table_;
    std::unique_ptr<const Impl> impl_;
};

/// The Neuron default buckets: powers of two from 128 while below max_context, then
/// max_context itself (Transformers NeuronX / NxD Inference); {max_context} when it is at
/// most 128.
std::vector<std::int64_t> default_buckets(std::int64_t max_context);

} // namespace trnsim::serving
