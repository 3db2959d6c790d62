// What a serving scenario asks for, as plain validated values: the model and how one replica
// holds it (serving), the request stream (requests) and the latency objective (slo). The
// config module builds these from `workload.type: inference` (docs/scenario-schema.md); the
// serving module and the fleet simulation receive only these values, never YAML.
//
// Terms, as in the Neuron serving stack (NxD Inference, vLLM on Neuron):
//   replica   one copy of the model on `tp` ranks (logical NeuronCores), serving its own batch;
//   bucket    a compiled sequence length: Neuron graphs have static shapes, so a prompt or a
//             context is padded up to the smallest bucket that holds it;
//   max_batch the compiled batch of the decode graph: sequences decoded together per iteration.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/workload/model.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::serving {

enum class RouterPolicy { round_robin, least_loaded, prefix_affinity };

constexpr std::array<EnumName<RouterPolicy>, 3> enum_names(RouterPolicy) {
    return {{
        {RouterPolicy::round_robin, "round_robin"},
        {RouterPolicy::least_loaded, "least_loaded"},
        {RouterPolicy::prefix_affinity, "prefix_affinity"},
    }};
}
inline const char* to_string(RouterPolicy v) { return enum_name(v); }

/// How a grouped-query model's key/value heads are laid out on the tp ranks when there are
/// fewer of them than ranks.
///   replicate_to_tp  each key/value head on tp / kv_heads ranks: one per rank (NxD Inference's
///                    default, GQA.REPLICATE_TO_TP_DEGREE; tp must be a multiple of kv_heads);
///   convert_to_mha   the key/value heads repeated up to the query heads, then sharded with
///                    them (and padded like them): a rank holds as many key/value heads as
///                    query heads, in its K/V projection weights and its KV cache (Transformers
///                    NeuronX's GQA.REPLICATED_HEADS, which its decoder.py check_gqa_fallback
///                    chooses whenever kv_heads is not a multiple of tp; NxD Inference's
///                    GQA.CONVERT_TO_MHA).
enum class GqaLayout { replicate_to_tp, convert_to_mha };

constexpr std::array<EnumName<GqaLayout>, 2> enum_names(GqaLayout) {
    return {{
        {GqaLayout::replicate_to_tp, "replicate_to_tp"},
        {GqaLayout::convert_to_mha, "convert_to_mha"},
    }};
}
inline const char* to_string(GqaLayout v) { return enum_name(v); }

/// Speculative decoding: a draft model proposes `k` tokens, the target model verifies them in
/// one iteration. acceptance[i] is the fraction of iterations in which draft position i is
/// accepted (vLLM's per-position acceptance rate; non-increasing, since a position is only
/// accepted after every earlier one): the mean acceptance length is 1 + sum_i acceptance[i].
struct SpeculativeSpec {
    std::string draft_ref;            ///< preset name or file as written
    workload::ModelSpec draft;        ///< the draft model's dimensions
    int k = 0;                        ///< draft tokens per iteration (0: no speculation)
    std::vector<double> acceptance;   ///< k values in [0, 1]
    /// The draft and the target compiled into one graph (NxD Inference's
    /// enable_fused_speculation): an iteration's k draft steps and its verification run as one
    /// graph, so the costs per graph are paid once per iteration instead of 1 + k times, and
    /// the two prefills are one context-encoding graph. false: the draft is a graph of its own
    /// (vLLM Neuron's EAGLE-3 proposer, Transformers NeuronX's speculative sampler).
    bool fused = false;
};

/// Prefill and decode on separate replicas; the KV cache of a prompt moves from its prefill
/// replica to a decode replica as a flow over NeuronLink or EFA.
struct DisaggregationSpec {
    int prefill_replicas = 0; ///< 0: not disaggregated (every replica does both)
};

/// Microscaling weight formats (workload.serving.weights: mxfp8, mxfp4).
enum class MxFormat : std::uint8_t { none, mxfp8, mxfp4 };

/// How one replica holds and runs the model (workload.serving).
struct ServingSpec {
    int tp = 1;                        ///< ranks per replica
    int ep = 1;                        ///< expert parallel degree inside the replica (MoE)
    int replicas = 0;                  ///< 0 = auto: as many as the cluster holds
    int max_batch = 1;                 ///< compiled decode batch (concurrent sequences)
    std::int64_t max_context = 0;      ///< compiled maximum sequence length (prompt + output)
    /// Compiled sequence-length buckets, ascending, the last == max_context. Empty = auto
    /// (the Neuron default: powers of two from 128 up to max_context).
    std::vector<std::int64_t> buckets;
    std::int64_t prefill_chunk = 0;    ///< chunked prefill tokens per iteration (0: whole prompt)
    std::int64_t kv_block = 32;        ///< paged KV cache block, tokens
    bool prefix_caching = false;
    compute::Precision precision = compute::Precision::bf16; ///< activations and matmuls
    /// Storage of the weights: bf16, fp8 or int8 (1 byte, dequantised to `precision`).
    int weight_bytes = 2;
    /// Microscaling weights (OCP MX, NKI3): MXFP8 or MXFP4 elements with an 8-bit scale a block
    /// of 32, multiplied by TensorE at its MX rate against activations VectorE quantizes to
    /// MXFP8 (NeuronCore-v4 only). weight_bytes is 1 for both; stored_weight_bytes() is
    /// their size in memory and in the weight stream.
    MxFormat mx = MxFormat::none;
    /// Structured sparsity of the matmul weights (workload.serving.sparsity, N:M: N of every M
    /// consecutive elements kept; 0:0 dense): they hold N/M of their elements, each with its
    /// position in the group (ceil(log2 M) bits), and TensorE skips the rest up to the chip's
    /// sparse peak.
    int sparse_n = 0, sparse_m = 0;
    bool sparse() const { return sparse_m > 0; }
    /// The kept fraction of the weights (1 when dense).
    double density() const {
        return sparse() ? static_cast<double>(sparse_n) / static_cast<double>(sparse_m) : 1.0;
    }
    /// The weights' storage as workload.serving.weights names it (bf16, fp8, fp32, mxfp8,
    /// mxfp4; 1-byte int8 storage reads as fp8: the model does not tell them apart), and
    /// the sparsity as workload.serving.sparsity does (dense, N:M).
    std::string weights_name() const {
        return mx == MxFormat::mxfp4   ? "mxfp4"
               : mx == MxFormat::mxfp8 ? "mxfp8"
               : weight_bytes == 0     ? "auto"
               : weight_bytes == 1     ? "fp8"
               : weight_bytes == 4     ? "fp32"
                                       : "bf16";
    }
    std::string sparsity_name() const {
        return sparse() ? std::to_string(sparse_n) + ":" + std::to_string(sparse_m) : "dense";
    }
    /// Bytes of one matmul weight element as stored: its format's, times the kept fraction
    /// plus the kept elements' positions when sparse.
    double stored_weight_bytes() const {
        const double element = mx == MxFormat::mxfp4   ? 0.5 + 1.0 / 32.0
                               : mx == MxFormat::mxfp8 ? 1.0 + 1.0 / 32.0
                                                       : static_cast<double>(weight_bytes);
        if (!sparse()) {
            return element;
        }
        const int bits = std::bit_width(static_cast<unsigned>(sparse_m - 1)); // ceil(log2 M)
        return density() * (element + bits / 8.0);
    }
    std::optional<SpeculativeSpec> speculative;
    DisaggregationSpec disaggregated;
    RouterPolicy router = RouterPolicy::least_loaded;
    // ---- appended by the iteration cost model (docs/serving.md) ----
    /// Sequences per compiled context-encoding graph. 1: each prompt is its own prefill graph
    /// (NxD Inference and vLLM continuous batching); max_batch: the prompts of a static batch
    /// are prefilled together (Transformers NeuronX static batching). 0 = max_batch.
    int prefill_batch = 1;
    /// Attention as separate operators over a materialised score matrix (Q K^T, mask,
    /// softmax, times V, each through HBM), as Transformers NeuronX compiled it up to Neuron
    /// SDK 2.18; false: a fused flash-attention kernel (SDK 2.19 and later, NxD Inference).
    bool materialized_attention = false;
    /// Key/value heads on the ranks when kv_heads < tp (GqaLayout).
    GqaLayout gqa = GqaLayout::replicate_to_tp;
    /// Tiles along the tokens of a context-encoding graph compiled with collective-compute
    /// tiling, a tile's collectives running while the next computes (NxD Inference's
    /// cc_pipeline_tiling_factor, passed to neuronx-cc with --enable-ccop-compute-overlap;
    /// models/model_wrapper.py since SDK 2.21). 1, the default: each collective waits for its
    /// compute and the next compute for it, as Transformers NeuronX compiles (no overlap flag)
    /// and as AWS's Llama 3.3 70B configurations for Trainium2 compile beside their NKI
    /// kernels (the INF-T2b tutorial, the model card: factor 1), which the trn2 serving
    /// coefficients are fitted on; 2 is NxD Inference's library default. Decode graphs pay
    /// their collectives in full (one token to tile).
    int collective_tiling = 1;
    // ---- appended for the Transformers NeuronX context buckets (docs/serving.md) ----
    /// Compiled context-encoding buckets, ascending, each at most max_context. Empty: prefill
    /// graphs use `buckets` and attend to the bucket holding cached + new tokens (NxD Inference,
    /// vLLM). Given: Transformers NeuronX context encoding (transformers_neuronx/bucket.py
    /// context_sizes, base.py context): a prompt pads to the smallest of these that holds it
    /// and its graph attends only to its own tokens; a prompt longer than the largest is
    /// encoded up to the largest and its remaining tokens run one by one through the decode
    /// graph. TNx's default is half of each token-generation bucket.
    std::vector<std::int64_t> prefill_buckets;
    /// One-way latency of a request from the router to a replica, and of a replica's report
    /// back to the router (a network hop through the serving front end). The fleet simulation
    /// uses it as its lookahead.
    Duration router_latency = Duration::from_ns(1'000'000);
    // ---- appended for the sharded router (docs/serving.md "Router shards") ----
    /// Independent routers, each owning a fixed block of the NeuronLink domains (UltraServers,
    /// else instances) and every K-th request by id (request i goes to router i mod K, as a
    /// front end spreading requests over K load balancers). 1: one router for the fleet.
    /// K > 1 needs a closed-loop client per router, at least K domains with replicas and,
    /// disaggregated, prefill and decode replicas under every router; each router and its
    /// replicas then share an engine partition. 0: auto, one router per 128 replicas within
    /// those limits (sim::detail::auto_router_shards), from the fleet only.
    int router_shards = 0;
};

/// A size (tokens) drawn per request.
struct TokenDistribution {
    enum class Kind { fixed, normal, lognormal, uniform, empirical, trace };
    Kind kind = Kind::fixed;
    double a = 0.0;              ///< fixed value; normal/lognormal mean (of the tokens); uniform low
    double b = 0.0;              ///< normal/lognormal standard deviation; uniform high
    std::int64_t min = 1;        ///< draws are clamped to [min, max]
    std::int64_t max = 0;        ///< 0: max_context
    std::vector<std::int64_t> values; ///< empirical: values drawn with equal weight
};

/// How requests arrive.
struct ArrivalSpec {
    enum class Kind { closed_loop, poisson, gamma, trace };
    Kind kind = Kind::closed_loop;
    int concurrency = 1;         ///< closed_loop: requests in flight (a benchmark client)
    double rate_per_s = 0.0;     ///< poisson, gamma: mean arrivals per second
    double gamma_cv = 1.0;       ///< gamma: coefficient of variation of inter-arrival times
    std::string trace_file;      ///< trace: an Azure LLM inference trace CSV (resolved path)
    double speedup = 1.0;        ///< trace: timestamps divided by this
};

/// Shared prompt prefixes (a system prompt or few-shot header reused by many requests):
/// `groups` distinct prefixes of `tokens` tokens each; a `fraction` of the requests start with
/// one of them, chosen uniformly. The prefix goes in front of the drawn input tokens.
struct PrefixSpec {
    int groups = 0;            ///< 0: no shared prefixes
    std::int64_t tokens = 0;   ///< tokens of each prefix
    double fraction = 1.0;     ///< of the requests, in [0, 1]
};

/// workload.requests
struct RequestSpec {
    TokenDistribution input;
    TokenDistribution output;
    ArrivalSpec arrival;
    std::int64_t count = 0;      ///< requests to issue (0 when `duration` is given)
    Duration duration;           ///< arrivals stop after this (zero when `count` is given)
    PrefixSpec prefix;           ///< shared prefixes (none by default)
};

/// workload.slo: a request meets the SLO when both hold (a zero value is not allowed).
struct SloSpec {
    Duration ttft;               ///< time to first token
    Duration tpot;               ///< time per output token after the first (mean over the request)
};

/// The whole inference workload.
struct InferenceSpec {
    workload::ModelSpec model;
    ServingSpec serving;
    RequestSpec requests;
    SloSpec slo;
};

/// The checks of an inference workload's values against each other, in this order: a
/// speculative draft's acceptance rates (k of them, not increasing), the compiled buckets
/// (ascending strictly, the last max_context), sizes from a trace only with arrivals from it,
/// and fixed input + output (+ a shared prefix) tokens within max_context. Throws an
/// InputError with the key path of the scenario file (workload.serving..., workload.requests...)
/// and no location: the caller locates it (InputError::located with the scenario's sources).
/// Which keys must be given is the config module's check.
void check_inference(const InferenceSpec& inference);

} // namespace trnsim::serving
