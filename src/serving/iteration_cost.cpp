#include "trnsim/serving/iteration_cost.hpp"

#include "replica_checks.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/workload/plan.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>
#include <string>

namespace trnsim::serving {

namespace {

constexpr const char* kServing = "workload.serving";

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::string str(std::int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(const std::string& path, const std::string& message) {
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

std::int64_t mlp_matrices(const Dims& d) { return d.swiglu ? 3 : 2; }

/// Shards `m` over `tp` ranks (`ep` expert groups), checking what must divide.
Dims shard(const workload::ModelSpec& m, int tp, int ep, GqaLayout gqa, const std::string& what) {
    if (m.attention == workload::AttentionKind::mla) {
        fail("workload.model", what + " " + m.name +
                                   " uses multi-head latent attention, which the serving cost "
                                   "model does not support (GQA/MHA models only)");
    }
    const bool mha = gqa == GqaLayout::convert_to_mha && m.kv_heads < m.heads;
    if (!mha && m.kv_heads < tp && tp % m.kv_heads != 0) {
        fail(std::string(kServing) + ".tp",
             "tp = " + str(tp) + " must be a multiple of the " + str(m.kv_heads) +
                 " key/value heads of " + what + " " + m.name +
                 " (each key/value head is replicated on tp / kv_heads ranks)");
    }
    Dims d;
    d.hidden = m.hidden;
    d.head_dim = m.head_dim;
    // Query heads padded up to a multiple of tp (neuronx-distributed parallel_layers/pad.py,
    // get_number_of_extra_heads): with fewer heads than ranks, one per rank, the rest padding.
    d.heads = ceil_div(m.heads, tp);
    // convert_to_mha: the key/value heads repeated up to the query heads and sharded (and
    // padded) with them.
    d.kv = mha ? d.heads : m.kv_heads >= tp ? ceil_div(m.kv_heads, tp) : 1;
    d.ffn = ceil_div(m.ffn_hidden, tp);
    d.vocab = ceil_div(m.vocab, tp);
    d.vocab_padded = d.vocab * tp;
    d.embed_cols = ceil_div(m.hidden, tp);
    d.swiglu = m.mlp == workload::MlpKind::swiglu;
    d.layernorm = m.norm == workload::NormKind::layernorm;
    d.rope = m.position == workload::PositionKind::rope;
    d.moe_layers = m.moe_layers();
    d.dense_layers = m.dense_layers();
    if (m.is_moe()) {
        d.experts = m.moe.experts;
        d.top_k = m.moe.top_k;
        d.local_experts = m.moe.experts / ep;
        d.expert_ffn = ceil_div(m.moe.expert_ffn_hidden, tp / ep);
        d.shared_ffn = ceil_div(m.moe.shared_experts * m.moe.expert_ffn_hidden, tp);
    }
    return d;
}

/// Matmul weights (elements) and other parameters (norms, embedding, LM head) of one rank.
struct RankParams {
    double matmul = 0.0;
    double other = 0.0;
};

RankParams rank_params(const Dims& d) {
    const double h = static_cast<double>(d.hidden);
    const double attn = h * static_cast<double>(d.qkv_out()) +
                        static_cast<double>(d.heads * d.head_dim) * h;
    const double dense = static_cast<double>(mlp_matrices(d)) * h * static_cast<double>(d.ffn);
    const double moe = h * static_cast<double>(d.experts) +
                       static_cast<double>(d.local_experts * mlp_matrices(d)) * h *
                           static_cast<double>(d.expert_ffn) +
                       static_cast<double>(mlp_matrices(d)) * h * static_cast<double>(d.shared_ffn);
    RankParams p;
    p.matmul = static_cast<double>(d.layers()) * attn +
               static_cast<double>(d.dense_layers) * dense +
               static_cast<double>(d.moe_layers) * moe;
    p.other = static_cast<double>(d.layers()) * 2.0 * h + h                  // norms
              + static_cast<double>(d.vocab_padded * d.embed_cols)           // embedding
              + h * static_cast<double>(d.vocab);                            // LM head
    return p;
}

/// The collective time a graph of `kernel` seconds of compute and `collective` seconds of
/// collectives (`count` of them) leaves exposed when compiled with collective-compute overlap
/// over `tiles` >= 2 tiles (neuronx-cc --enable-ccop-compute-overlap
/// --cc-pipeline-tiling-factor, as NxD Inference compiles its graphs): each layer's work is
/// split along the tokens, and a tile's collective runs while the next tile computes. Through
/// the chain of layers (compute, collective, compute, ...) two tiles keep both engines busy
/// once the pipeline has filled, so the graph takes the longer of its compute and its
/// collectives plus one tile of one segment of the shorter (the fill).
double exposed_collectives(double kernel, double collective, double count, int tiles) {
    if (collective <= 0.0 || count <= 0.0) {
        return collective;
    }
    const double fill = std::min(kernel, collective) / (count * static_cast<double>(tiles));
    return std::max(kernel, collective) + fill - kernel;
}

IterationBreakdown scaled(IterationBreakdown b, double k) {
    b.decode_kernel = b.decode_kernel * k;
    b.prefill_kernel = b.prefill_kernel * k;
    b.collective_time = b.collective_time * k;
    b.matmul = b.matmul * k;
    b.attention = b.attention * k;
    b.kernels *= k;
    b.collectives *= k;
    b.graphs *= k;
    b.prefill_graphs *= k;
    return b;
}

/// A draft graph compiled into the target's (fused speculation): its kernels and collectives
/// run, its costs per graph are the target graph's.
IterationBreakdown inside_target_graph(IterationBreakdown b) {
    b.graphs = 0.0;
    b.prefill_graphs = 0.0;
    return b;
}

} // namespace

double IterationBreakdown::seconds(const compute::ServingCosts& c) const {
    return decode_kernel.seconds() + prefill_kernel.seconds() + collective_time.seconds() +
           kernels * c.kernel_overhead.seconds() + graphs * c.iteration_overhead.seconds() +
           prefill_graphs * c.prefill_graph_overhead.seconds();
}

IterationBreakdown& IterationBreakdown::operator+=(const IterationBreakdown& o) {
    decode_kernel += o.decode_kernel;
    prefill_kernel += o.prefill_kernel;
    collective_time += o.collective_time;
    matmul += o.matmul;
    attention += o.attention;
    kernels += o.kernels;
    collectives += o.collectives;
    graphs += o.graphs;
    prefill_graphs += o.prefill_graphs;
    return *this;
}

std::vector<std::int64_t> default_buckets(std::int64_t max_context) {
    std::vector<std::int64_t> b;
    for (std::int64_t s = 128; s < max_context; s *= 2) {
        b.push_back(s);
    }
    b.push_back(max_context);
    return b;
}

ReplicaPlacement ReplicaPlacement::single(const compute::ChipSpec& chip, int lnc, int tp) {
    ReplicaPlacement p;
    p.cluster = cluster::Hierarchy::smallest_holding(chip, ceil_div(tp, chip.ranks_per_chip(lnc)));
    return p;
}

// ---------------------------------------------------------------------------------------------
// The forward pass of one graph.

struct IterationCostModel::Impl {
    compute::ChipSpec chip;       ///< owned: the cost model keeps a pointer to it
    compute::CostModel cost;
    ServingSpec serving;
    Dims target;
    std::optional<Dims> draft;
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
    IterationBreakdown graph(const Dims& d, std::int64_t sequences, std::int64_t q,
                             std::int64_t kv, std::int64_t out, bool prefill) const;
};

namespace {

enum class Cat { matmul, attention, other };

/// Accumulates one graph's kernels and collectives.
class Builder {
public:
    Builder(const IterationCostModel::Impl& m, bool prefill) : m_(m), prefill_(prefill) {}

    IterationBreakdown b;

    void kernel(const compute::Kernel& k, Cat c) {
        if (compute::is_empty(k)) {
            return;
        }
        const compute::KernelCost kc = m_.cost.cost(k);
        double seconds = kc.seconds;
        if (prefill_ && (std::holds_alternative<compute::MatmulShape>(k) ||
                         std::holds_alternative<compute::AttentionShape>(k))) {
            seconds = std::max(seconds, kc.flops / m_.prefill_peak);
        }
        add(seconds, c);
    }

    void add(double s, Cat c) {
        (prefill_ ? b.prefill_kernel : b.decode_kernel) += Seconds::of(s);
        if (c == Cat::matmul) {
            b.matmul += Seconds::of(s);
        } else if (c == Cat::attention) {
            b.attention += Seconds::of(s);
        }
        b.kernels += 1.0;
    }

    /// A matmul against weights stored at serving.weight_bytes: with 1-byte storage under a
    /// 2-byte compute precision the weights stream at FP8 size while VectorE converts them
    /// (one element per lane and cycle, beside the DMA) and TensorE multiplies at the
    /// compute precision's rate, whichever is slowest.
    void weight_matmul(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t batch = 1) {
        if (m <= 0 || k <= 0 || n <= 0 || batch <= 0) {
            return;
        }
        const compute::MatmulShape s{m, k, n, batch, m_.precision};
        const int w = m_.serving.weight_bytes;
        if (m_.serving.mx != MxFormat::none) {
            mx_matmul(s);
            return;
        }
        if (m_.serving.sparse()) {
            sparse_matmul(s);
            return;
        }
        if (w >= compute::element_bytes(m_.precision)) {
            kernel(compute::Kernel{s}, Cat::matmul);
            return;
        }
        compute::MatmulShape narrow = s;
        narrow.precision = compute::Precision::fp8;
        const double stream = m_.cost.cost(compute::Kernel{narrow}).seconds;
        const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) *
                             static_cast<double>(n) * static_cast<double>(batch);
        const double compute_s = flops / m_.cost.tensor_peak_per_rank(m_.precision).per_s();
        const auto& v = m_.chip.core.vector;
        const double weights = static_cast<double>(k) * static_cast<double>(n) *
                               static_cast<double>(batch) / m_.lnc;
        const double dequant_s =
            weights / (static_cast<double>(v.elements_per_cycle) * v.clock.hz());
        add(std::max({stream, prefill_ ? flops / m_.prefill_peak : compute_s, dequant_s}),
            Cat::matmul);
    }

    /// A matmul against microscaling weights (NKI3): TensorE at its MX rate (the FP8 rate of
    /// an NC-v4 chip file); the weights stream at their stored size (the FP8 kernel's time
    /// with its stream scaled from 1 byte to MXFP8's or MXFP4's, scales included), and
    /// VectorE quantizes the activations to MXFP8 at 4 elements a partition and cycle
    /// (QuantizeMX), whichever is slowest.
    void mx_matmul(const compute::MatmulShape& s) {
        compute::MatmulShape mx = s;
        mx.precision = compute::Precision::fp8;
        const double fp8 = m_.cost.cost(compute::Kernel{mx}).seconds;
        const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) *
                             static_cast<double>(s.n) * static_cast<double>(s.batch);
        const double peak = m_.cost.tensor_peak_per_rank(compute::Precision::fp8).per_s();
        const double compute_s =
            flops / (prefill_ ? m_.chip.serving.prefill_efficiency * peak : peak);
        const double stream = fp8 * m_.serving.stored_weight_bytes();
        const auto& v = m_.chip.core.vector;
        const double activations =
            static_cast<double>(s.m) * static_cast<double>(s.k) * static_cast<double>(s.batch);
        const double quantize_s =
            activations / (static_cast<double>(m_.chip.core.sbuf_partitions) * 4.0 *
                           v.clock.hz() * static_cast<double>(m_.lnc));
        add(std::max({stream, compute_s, quantize_s}), Cat::matmul);
    }

    /// A matmul against structured-sparse weights (N:M): TensorE skips the pruned elements, at
    /// M/N times the dense engine rate up to the chip's published sparse peak over its dense
    /// peak at the compute precision; the weights stream at their stored size (the dense
    /// kernel's time scaled from the compute precision's bytes to the stored ones, positions
    /// included), whichever is slowest. 1-byte storage is not dequantized here: its bytes
    /// stream, and TensorE takes them at the compute precision's sparse rate.
    void sparse_matmul(const compute::MatmulShape& s) {
        const double dense = m_.cost.cost(compute::Kernel{s}).seconds;
        const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.k) *
                             static_cast<double>(s.n) * static_cast<double>(s.batch);
        const double speedup =
            std::min(1.0 / m_.serving.density(),
                     m_.chip.peak_sparse.per_s() / m_.chip.peak(m_.precision).per_s());
        const double engine = m_.cost.tensor_peak_per_rank(m_.precision).per_s() * speedup;
        const double compute_s =
            flops / (prefill_ ? m_.chip.serving.prefill_efficiency * engine : engine);
        const double stream = dense * m_.serving.stored_weight_bytes() / m_.e;
        add(std::max(stream, compute_s), Cat::matmul);
    }

    /// An activation-by-activation matmul (attention scores) at the compute precision.
    void activation_matmul(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t batch) {
        kernel(compute::Kernel{compute::MatmulShape{m, k, n, batch, m_.precision}},
               Cat::attention);
    }

    void stream(std::int64_t elements, int inputs, int outputs, int passes,
                compute::StreamEngine engine, Cat c = Cat::other,
                compute::StreamKind kind = compute::StreamKind::elementwise, std::int64_t row = 0,
                int element_bytes = 0) {
        if (elements <= 0) {
            return;
        }
        kernel(compute::Kernel{compute::StreamShape{elements, inputs, outputs,
                                                    element_bytes > 0 ? element_bytes : m_.e,
                                                    passes, engine, kind, row}},
               c);
    }

    /// RMSNorm / LayerNorm over `rows` tokens. With fewer tokens than SBUF partitions the
    /// compiled graphs keep the hidden dimension on the partitions (Transformers NeuronX's
    /// hidden-major "HSB" layout, NxD Inference's token generation), so the norm is two
    /// passes over the elements on all partitions (the statistics' cross-partition sum is a
    /// matmul against a ones vector, folded in); with a full tile of tokens, one token per
    /// partition as the row kernel.
    void norm(const Dims& d, std::int64_t rows) {
        if (rows < 128) {
            stream(rows * d.hidden, 1, 1, 2, compute::StreamEngine::vector);
            return;
        }
        stream(rows * d.hidden, 1, 1, 2, compute::StreamEngine::vector, Cat::other,
               d.layernorm ? compute::StreamKind::layer_norm : compute::StreamKind::rms_norm,
               d.hidden);
    }

    void collective(network::CollectiveOp op, double bytes, const network::GroupShape& g) {
        if (g.size() <= 1 || bytes <= 0.0) {
            return;
        }
        b.collective_time += Seconds::of(network::collective_seconds(op, bytes, g));
        b.collectives += 1.0;
    }

    /// Attention of `sequences` x heads queries of q tokens over kv keys.
    void attention(const Dims& d, std::int64_t sequences, std::int64_t q, std::int64_t kv) {
        if (m_.serving.materialized_attention) {
            // Scores Q K^T, the mask (a select against the mask tensor), softmax over rows of
            // kv, then P V: four operators, each through HBM (TNx <= SDK 2.18).
            const std::int64_t rows = sequences * d.heads;
            activation_matmul(q, d.head_dim, kv, rows);
            if (rows * q < 128) {
                // Decode: the few score rows sit one per partition, so the select costs a
                // VectorE pass over kv elements whatever the rows (NKI1: about 2N cycles for
                // two inputs plus the static overhead), with the scores in SBUF.
                const auto& v = m_.chip.core.vector;
                const double lanes = static_cast<double>(v.elements_per_cycle) /
                                     static_cast<double>(m_.chip.core.sbuf_partitions);
                add((2.0 * static_cast<double>(kv) / lanes + v.instruction_overhead_cycles) /
                        v.clock.hz(),
                    Cat::attention);
            } else {
                stream(rows * q * kv, 2, 1, 1, compute::StreamEngine::vector, Cat::attention);
            }
            stream(rows * q * kv, 1, 1, 1, compute::StreamEngine::vector, Cat::attention,
                   compute::StreamKind::softmax, kv);
            activation_matmul(q, kv, d.head_dim, rows);
            return;
        }
        kernel(compute::Kernel{compute::AttentionShape{sequences, d.heads, d.kv, q, kv,
                                                       d.head_dim, d.head_dim, q > 1,
                                                       m_.precision}},
               Cat::attention);
    }

    /// A dense MLP of per-rank width f over `tokens` tokens.
    void mlp(const Dims& d, std::int64_t tokens, std::int64_t f) {
        if (f <= 0 || tokens <= 0) {
            return;
        }
        if (d.swiglu) {
            weight_matmul(tokens, d.hidden, 2 * f);
            stream(tokens * f, 1, 1, 1, compute::StreamEngine::scalar);
            stream(tokens * f, 2, 1, 1, compute::StreamEngine::vector);
        } else {
            weight_matmul(tokens, d.hidden, f);
            stream(tokens * f, 1, 1, 1, compute::StreamEngine::scalar);
        }
        weight_matmul(tokens, f, d.hidden);
    }

    /// The routed experts over `tokens` tokens: under uniform top-k routing an expert is
    /// touched with probability p = 1 - (1 - k / E)^tokens, receiving tokens k / E / p tokens
    /// when it is; this rank runs its expected local experts touched, each reading its weights.
    void experts(const Dims& d, std::int64_t tokens) {
        const double E = static_cast<double>(d.experts);
        const double k = static_cast<double>(d.top_k);
        const double p = 1.0 - std::pow(1.0 - k / E, static_cast<double>(tokens));
        if (p <= 0.0) {
            return;
        }
        const double load = static_cast<double>(tokens) * k / E / p;
        const auto m = static_cast<std::int64_t>(std::ceil(load - 1e-9));
        Builder one(m_, prefill_);
        one.mlp(d, std::max<std::int64_t>(1, m), d.expert_ffn);
        b += scaled(one.b, static_cast<double>(d.local_experts) * p);
    }

private:
    const IterationCostModel::Impl& m_;
    bool prefill_;
};

} // namespace

IterationBreakdown IterationCostModel::Impl::graph(const Dims& d, std::int64_t sequences,
                                                   std::int64_t q, std::int64_t kv,
                                                   std::int64_t out, bool prefill) const {
    using network::CollectiveOp;
    const std::int64_t T = sequences * q;
    const double act = static_cast<double>(T * d.hidden * e); // one residual-stream tensor
    Builder top(*this, prefill);
    // Embedding: each rank gathers its hidden columns, then the TP group gathers the rows.
    top.stream(T * d.embed_cols, 1, 1, 1, compute::StreamEngine::vector, Cat::other,
               compute::StreamKind::gather, d.embed_cols);
    top.collective(CollectiveOp::all_gather, act, tp);

    const auto attention_block = [&](Builder& L) {
        L.norm(d, T);
        L.weight_matmul(T, d.hidden, d.qkv_out());
        if (d.rope) {
            L.stream(T * (d.heads + d.kv) * d.head_dim, 1, 1, 2, compute::StreamEngine::vector);
        }
        L.stream(T * 2 * d.kv * d.head_dim, 1, 1, 1, compute::StreamEngine::vector); // KV write
        L.attention(d, sequences, q, kv);
        L.weight_matmul(T, d.heads * d.head_dim, d.hidden);
        L.collective(CollectiveOp::all_reduce, act, tp);
        L.stream(T * d.hidden, 2, 1, 1, compute::StreamEngine::vector); // residual
        L.norm(d, T);
    };
    if (d.dense_layers > 0) {
        Builder L(*this, prefill);
        attention_block(L);
        L.mlp(d, T, d.ffn);
        L.collective(CollectiveOp::all_reduce, act, tp);
        L.stream(T * d.hidden, 2, 1, 1, compute::StreamEngine::vector);
        top.b += scaled(L.b, static_cast<double>(d.dense_layers));
    }
    if (d.moe_layers > 0) {
        Builder L(*this, prefill);
        attention_block(L);
        L.weight_matmul(T, d.hidden, d.experts); // router (replicated)
        L.stream(T * d.experts, 1, 1, 2, compute::StreamEngine::scalar, Cat::other,
                 compute::StreamKind::elementwise, 0, 4); // top-k
        const double routed = static_cast<double>(T * d.top_k * d.hidden * e) /
                              static_cast<double>(std::max<long long>(1, ep.size()));
        L.collective(CollectiveOp::all_to_all, routed, ep);
        L.experts(d, T);
        L.mlp(d, T, d.shared_ffn);
        L.collective(CollectiveOp::all_to_all, routed, ep);
        L.collective(CollectiveOp::all_reduce, act, tp);
        L.stream(T * d.hidden, 2, 1, 1, compute::StreamEngine::vector);
        top.b += scaled(L.b, static_cast<double>(d.moe_layers));
    }
    // Final norm and LM head over the rows that produce tokens, then the logits gathered.
    const std::int64_t rows = sequences * out;
    top.norm(d, rows);
    top.weight_matmul(rows, d.hidden, d.vocab);
    top.collective(CollectiveOp::all_gather,
                   static_cast<double>(rows) * static_cast<double>(d.vocab_padded) * 4.0, tp);
    if (prefill && serving.collective_tiling > 1) {
        top.b.collective_time = Seconds::of(exposed_collectives(
            top.b.prefill_kernel.seconds(), top.b.collective_time.seconds(), top.b.collectives,
            serving.collective_tiling));
    }
    top.b.graphs += 1.0;
    if (prefill) {
        top.b.prefill_graphs += 1.0;
    }
    return top.b;
}

// ---------------------------------------------------------------------------------------------

IterationCostModel::~IterationCostModel() = default;

IterationCostModel::IterationCostModel(const workload::ModelSpec& model,
                                       const compute::ChipSpec& chip, int lnc,
                                       const ServingSpec& serving,
                                       const ReplicaPlacement& placement,
                                       Bytes hbm_reserve_per_chip)
    : chip_(chip), serving_(serving) {
    const ServingSpec& s = serving;
    check_replica(model, chip, lnc, s);
    const int rpc = chip.ranks_per_chip(lnc);
    const int e = compute::element_bytes(s.precision);
    buckets_ = s.buckets.empty() ? default_buckets(s.max_context) : s.buckets;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        if (buckets_[i] < 1 || (i > 0 && buckets_[i] <= buckets_[i - 1])) {
            fail(std::string(kServing) + ".buckets", "buckets must be positive and ascending");
        }
    }
    if (buckets_.back() != s.max_context) {
        fail(std::string(kServing) + ".buckets",
             "the last bucket (" + str(buckets_.back()) + ") must equal max_context = " +
                 str(s.max_context));
    }
    tnx_context_ = !s.prefill_buckets.empty();
    prefill_buckets_ = tnx_context_ ? s.prefill_buckets : buckets_;
    for (std::size_t i = 0; i < prefill_buckets_.size(); ++i) {
        if (prefill_buckets_[i] < 1 || prefill_buckets_[i] > s.max_context ||
            (i > 0 && prefill_buckets_[i] <= prefill_buckets_[i - 1])) {
            fail(std::string(kServing) + ".prefill_buckets",
                 "prefill buckets must be positive, ascending and at most max_context = " +
                     str(s.max_context));
        }
    }
    kv_buckets_ = buckets_;
    kv_buckets_.insert(kv_buckets_.end(), prefill_buckets_.begin(), prefill_buckets_.end());
    std::sort(kv_buckets_.begin(), kv_buckets_.end());
    kv_buckets_.erase(std::unique(kv_buckets_.begin(), kv_buckets_.end()), kv_buckets_.end());
    prefill_batch_ = s.prefill_batch == 0 ? s.max_batch : s.prefill_batch;
    max_k_ = s.speculative ? s.speculative->k : 0;
    if (max_k_ < 0) {
        fail(std::string(kServing) + ".speculative.k", "k must be non-negative");
    }

    auto impl = std::make_unique<Impl>(chip, lnc, s);
    impl->target = shard(model, s.tp, s.ep, s.gqa, "the model");
    if (s.speculative && max_k_ > 0) {
        impl->draft = shard(s.speculative->draft, s.tp, 1, s.gqa, "the draft model");
    }
    // Groups: the replica's tp consecutive ranks; an expert-parallel group takes one rank of
    // each of the ep blocks of tp / ep consecutive ranks.
    std::vector<std::int64_t> members;
    for (int i = 0; i < s.tp; ++i) {
        members.push_back(placement.first_rank + i);
    }
    const cluster::Hierarchy hierarchy(chip, placement.cluster);
    // Operations of a compiled graph: no launch of their own (workload::CollectiveIssue), at
    // the links' rates. Not the collective engine's per-rank and reduction rates: Trainium2's
    // one published 70B run, compiled without collective-compute tiling, cannot be reproduced
    // with the rates fitted on its nccom-test row (docs/network.md, "One collective cost").
    tp_group_ = workload::group_shape_of(hierarchy, rpc, members);
    for (const auto& level : tp_group_.levels) {
        if (level.link == network::LinkClass::efa && level.members > 1 &&
            chip.instance.efa_bandwidth.bytes_per_s() <= 0.0) {
            fail(std::string(kServing) + ".tp",
                 "tp = " + str(s.tp) + " spans " + str(level.members) + " " +
                     chip.instance.name + " instances, which have no EFA to join them (at most " +
                     str(std::int64_t{rpc} * chip.instance.chips) + " ranks per replica)");
        }
    }
    impl->tp = tp_group_;
    std::vector<std::int64_t> ep_members;
    for (int j = 0; j < s.ep; ++j) {
        ep_members.push_back(placement.first_rank + std::int64_t{j} * (s.tp / s.ep));
    }
    impl->ep = workload::group_shape_of(hierarchy, rpc, ep_members);
    impl_ = std::move(impl);

    // Memory per rank.
    const auto bytes_of = [&](const Dims& d) {
        const RankParams p = rank_params(d);
        return p.matmul * s.stored_weight_bytes() + p.other * e;
    };
    const auto kv_of = [&](const Dims& d) {
        return 2.0 * static_cast<double>(d.layers() * d.kv * d.head_dim) * e;
    };
    double weights = bytes_of(impl_->target);
    double kv_rank = kv_of(impl_->target);
    if (impl_->draft) {
        weights += bytes_of(*impl_->draft);
        kv_rank += kv_of(*impl_->draft);
    }
    // Workspace: the largest prefill graph's live activations (residual stream and its norm,
    // QKV, MLP inner), its materialised scores and probabilities, and the logits. A TNx
    // context graph attends only to its own bucket; otherwise up to max_context keys.
    const Dims& t = impl_->target;
    const std::int64_t largest_q = prefill_buckets_.back();
    const std::int64_t largest_kv = tnx_context_ ? largest_q : s.max_context;
    const double tokens = static_cast<double>(prefill_batch_ * largest_q);
    double workspace =
        tokens * static_cast<double>(2 * t.hidden + t.qkv_out() +
                                     2 * std::max(t.ffn, t.expert_ffn)) * e +
        static_cast<double>(s.max_batch * (1 + max_k_) * t.vocab_padded) * 4.0;
    if (s.materialized_attention) {
        workspace += 2.0 * static_cast<double>(prefill_batch_ * t.heads) *
                     static_cast<double>(largest_q) * static_cast<double>(largest_kv) * e;
    }
    memory_.capacity_per_rank = Bytes(chip.hbm_capacity.count() / rpc);
    memory_.reserve_per_rank = Bytes(hbm_reserve_per_chip.count() / rpc);
    memory_.weights_per_rank = Bytes(static_cast<std::int64_t>(std::ceil(weights)));
    memory_.workspace_per_rank = Bytes(static_cast<std::int64_t>(std::ceil(workspace)));
    memory_.kv_per_token =
        Bytes(2 * model.layers * model.kv_heads * model.head_dim * std::int64_t{e});
    memory_.kv_per_token_per_rank = Bytes(static_cast<std::int64_t>(kv_rank));
    const std::int64_t used = memory_.reserve_per_rank.count() +
                              memory_.weights_per_rank.count() +
                              memory_.workspace_per_rank.count();
    const std::int64_t free = memory_.capacity_per_rank.count() - used;
    memory_.kv_free_per_rank = Bytes(std::max<std::int64_t>(0, free));
    memory_.kv_capacity_tokens = memory_.kv_free_per_rank.count() /
                                 std::max<std::int64_t>(1, memory_.kv_per_token_per_rank.count());
    const std::int64_t needed = std::int64_t{s.max_batch} * s.max_context;
    if (memory_.kv_capacity_tokens < needed) {
        fail(kServing,
             "the replica does not fit in HBM: each of its " + str(s.tp) + " ranks has " +
                 fmt::bytes(memory_.capacity_per_rank) + " (" + chip.name + ", lnc = " +
                 str(lnc) + ") and needs " + fmt::bytes(memory_.weights_per_rank) +
                 " of weights, " + fmt::bytes(memory_.reserve_per_rank) + " of reserve, " +
                 fmt::bytes(memory_.workspace_per_rank) + " of workspace and " +
                 fmt::bytes(static_cast<double>(needed) *
                            memory_.kv_per_token_per_rank.as_double()) +
                 " of KV cache for max_batch x max_context = " + str(s.max_batch) + " x " +
                 str(s.max_context) + " tokens (room for " + str(memory_.kv_capacity_tokens) +
                 "); raise tp, lower max_batch or max_context, or store weights in 1 byte");
    }

    // Tables.
    const std::size_t n = buckets_.size();
    const std::size_t nk = kv_buckets_.size();
    prefill_table_.assign(prefill_buckets_.size() * nk, 0.0);
    for (std::size_t i = 0; i < prefill_buckets_.size(); ++i) {
        for (std::size_t j = 0; j < nk; ++j) {
            if (kv_buckets_[j] >= prefill_buckets_[i] &&
                (!tnx_context_ || kv_buckets_[j] == prefill_buckets_[i])) {
                prefill_table_[i * nk + j] = prefill_graph(i, j).seconds(chip.serving);
            }
        }
    }
    const auto k_count = static_cast<std::size_t>(max_k_ + 1);
    decode_table_.assign(n * k_count, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < k_count; ++k) {
            decode_table_[i * k_count + k] =
                breakdown(IterationShape{0, 0, 0, 0, 1, buckets_[i], buckets_[i],
                                         static_cast<int>(k)})
                    .seconds(chip.serving);
        }
    }
}

IterationBreakdown IterationCostModel::prefill_graph(std::size_t qi, std::size_t ki) const {
    const std::int64_t q = prefill_buckets_[qi];
    const std::int64_t kv = kv_buckets_[ki];
    IterationBreakdown b = impl_->graph(impl_->target, prefill_batch_, q, kv, 1, true);
    if (impl_->draft) {
        const IterationBreakdown draft =
            impl_->graph(*impl_->draft, prefill_batch_, q, kv, 1, true);
        b += serving_.speculative->fused ? inside_target_graph(draft) : draft;
    }
    return b;
}

std::size_t IterationCostModel::bucket_index(std::int64_t context) const {
    TRNSIM_CHECK(context <= buckets_.back(),
                 "a context beyond max_context = " + str(buckets_.back()));
    return static_cast<std::size_t>(
        std::lower_bound(buckets_.begin(), buckets_.end(), context) - buckets_.begin());
}

std::int64_t IterationCostModel::bucket_end(std::int64_t context) const {
    return buckets_[bucket_index(context)];
}

IterationCostModel::PrefillShape
IterationCostModel::prefill_shape(const IterationShape& shape) const {
    const std::int64_t n = shape.prefill_sequences;
    // One sequence per graph: each prompt pads to its own bucket; the shape gives only the
    // total, so every graph is costed at the bucket of the mean prompt (exact when the
    // prompts of the iteration share a bucket). Batched graphs pad to the longest prompt.
    const std::int64_t q = prefill_batch_ == 1 && n > 1
                               ? ceil_div(shape.prefill_tokens, n)
                               : shape.prefill_max_tokens;
    PrefillShape p;
    const auto in = [](const std::vector<std::int64_t>& v, std::int64_t x) {
        return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
    };
    p.graphs = ceil_div(n, prefill_batch_);
    if (tnx_context_) {
        // TNx (base.py, context): the context graph takes at most the largest bucket; the
        // prompt's remaining tokens go through the decode graph one at a time.
        const std::int64_t largest = prefill_buckets_.back();
        p.q = in(prefill_buckets_, std::min(largest, std::max<std::int64_t>(1, q)));
        p.kv = in(kv_buckets_, prefill_buckets_[p.q]);
        p.leftover = std::max<std::int64_t>(0, shape.prefill_max_tokens - largest);
        if (p.leftover > 0) {
            p.leftover_bucket = bucket_index(shape.prefill_max_tokens);
        }
        return p;
    }
    p.q = bucket_index(std::max<std::int64_t>(1, q));
    p.kv = in(kv_buckets_, std::max({std::int64_t{1}, buckets_[p.q], shape.prefill_max_context,
                                     shape.prefill_max_tokens}));
    return p;
}

double IterationCostModel::seconds(const IterationShape& shape) const {
    TRNSIM_DCHECK(!shape.empty(), "an empty iteration");
    double s = 0.0;
    if (shape.prefill_sequences > 0) {
        const PrefillShape p = prefill_shape(shape);
        s += static_cast<double>(p.graphs) * prefill_table_[p.q * kv_buckets_.size() + p.kv];
        if (p.leftover > 0) {
            s += static_cast<double>(p.graphs * p.leftover) *
                 decode_table_[p.leftover_bucket * static_cast<std::size_t>(max_k_ + 1)];
        }
    }
    if (shape.decode_sequences > 0) {
        TRNSIM_DCHECK(shape.speculative_k >= 0 && shape.speculative_k <= max_k_,
                      "speculative_k beyond the draft length");
        s += decode_table_[bucket_index(shape.decode_max_context) *
                               static_cast<std::size_t>(max_k_ + 1) +
                           static_cast<std::size_t>(shape.speculative_k)];
    }
    return s;
}

Duration IterationCostModel::time(const IterationShape& shape) const {
    return Duration::from_seconds_ceil(seconds(shape));
}

IterationBreakdown IterationCostModel::breakdown(const IterationShape& shape) const {
    IterationBreakdown b;
    if (shape.prefill_sequences > 0) {
        const PrefillShape p = prefill_shape(shape);
        b += scaled(prefill_graph(p.q, p.kv), static_cast<double>(p.graphs));
        if (p.leftover > 0) {
            b += scaled(impl_->graph(impl_->target, serving_.max_batch, 1,
                                     buckets_[p.leftover_bucket], 1, false),
                        static_cast<double>(p.graphs * p.leftover));
        }
    }
    if (shape.decode_sequences > 0) {
        TRNSIM_CHECK(shape.speculative_k >= 0 && shape.speculative_k <= max_k_,
                     "speculative_k beyond the draft length");
        const std::int64_t kv = bucket_end(std::max<std::int64_t>(1, shape.decode_max_context));
        const std::int64_t B = serving_.max_batch;
        const int k = shape.speculative_k;
        if (k == 0) {
            b += impl_->graph(impl_->target, B, 1, kv, 1, false);
        } else {
            const IterationBreakdown draft =
                scaled(impl_->graph(*impl_->draft, B, 1, kv, 1, false), k);
            b += serving_.speculative->fused ? inside_target_graph(draft) : draft;
            b += impl_->graph(impl_->target, B, 1 + k, kv, 1 + k, false);
        }
    }
    return b;
}

std::int64_t IterationCostModel::heads_per_rank() const { return impl_->target.heads; }
std::int64_t IterationCostModel::kv_heads_per_rank() const { return impl_->target.kv; }

} // namespace trnsim::serving
