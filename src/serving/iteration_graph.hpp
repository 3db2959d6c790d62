// One compiled serving graph, kernel by kernel (private to the serving module): a model's
// dimensions on one rank of a replica (Dims, shard), its parameters, and
// IterationCostModel::Impl, whose graph() adds up one context-encoding or token-generation
// graph's kernels and collectives (iteration_graph.cpp). iteration_cost.cpp composes graphs into
// iterations, their tables and the replica's memory; iteration_cost.hpp describes the model.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/workload/model.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace trnsim::serving {
namespace detail {

inline constexpr const char* kServing = "workload.serving";

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

inline std::string str(std::int64_t v) { return std::to_string(v); }

[[noreturn]] inline void fail(const std::string& path, const std::string& message) {
    throw InputError(path, message);
}

/// One model's dimensions on one rank of the replica (after padding, split, replication).
struct Dims {
    std::int64_t dense_layers = 0;
    std::int64_t moe_layers = 0;
    std::int64_t hidden = 0;
    std::int64_t head_dim = 0;
    std::int64_t heads = 0;   ///< query heads per rank
    std::int64_t kv = 0;      ///< key/value heads per rank
    std::int64_t ffn = 0;     ///< dense MLP width per rank
    std::int64_t vocab = 0;   ///< vocabulary per rank (LM head columns)
    std::int64_t vocab_padded = 0;
    std::int64_t embed_cols = 0; ///< hidden columns of the embedding per rank
    bool swiglu = true;
    bool layernorm = false;
    bool rope = true;
    // MoE
    std::int64_t experts = 0;
    std::int64_t top_k = 0;
    std::int64_t local_experts = 0; ///< experts held by this rank's expert group
    std::int64_t expert_ffn = 0;    ///< one routed expert's width per rank
    std::int64_t shared_ffn = 0;    ///< the shared experts' width per rank

    std::int64_t layers() const { return dense_layers + moe_layers; }
    std::int64_t qkv_out() const { return (heads + 2 * kv) * head_dim; }
};

inline std::int64_t mlp_matrices(const Dims& d) { return d.swiglu ? 3 : 2; }

/// Shards `m` over `tp` ranks (`ep` expert groups), checking what must divide.
Dims shard(const workload::ModelSpec& m, int tp, int ep, GqaLayout gqa, const std::string& what);

/// Matmul weights (elements) and other parameters (norms, embedding, LM head) of one rank.
struct RankParams {
    double matmul = 0.0;
    double other = 0.0;
};

RankParams rank_params(const Dims& d);

/// Every term of `b` times `k` (k graphs of one shape).
IterationBreakdown scaled(IterationBreakdown b, double k);

} // namespace detail

struct IterationCostModel::Impl {
    compute::ChipSpec chip;       ///< owned: the cost model keeps a pointer to it
    compute::CostModel cost;
    ServingSpec serving;
    detail::Dims target;
    std::optional<detail::Dims> draft;
    network::GroupShape tp;       ///< the replica's TP group
    network::GroupShape ep;       ///< one expert-parallel group (ep > 1)
    compute::Precision precision;
    int e = 2;                    ///< activation element bytes
    int lnc = 1;
    /// FLOP/s a context-encoding graph's matmuls reach at most: serving.prefill_efficiency of
    /// the rank's TensorE peak at the compute precision.
    double prefill_peak = 0.0;

    Impl(const compute::ChipSpec& c, int lnc_, const ServingSpec& s)
        : chip(c), cost(chip, lnc_), serving(s), precision(s.precision),
          e(compute::element_bytes(s.precision)), lnc(lnc_),
          prefill_peak(c.serving.prefill_efficiency *
                       cost.tensor_peak_per_rank(s.precision).per_s()) {}

    /// One graph over `sequences` sequences of `q` new tokens attending to `kv` keys each,
    /// with `out` LM-head rows per sequence. `prefill`: a context-encoding graph.
    IterationBreakdown graph(const detail::Dims& d, std::int64_t sequences, std::int64_t q,
                             std::int64_t kv, std::int64_t out, bool prefill) const;
};

} // namespace trnsim::serving
