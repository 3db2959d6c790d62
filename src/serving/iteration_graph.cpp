#include "iteration_graph.hpp"

#include <algorithm>
#include <cmath>
#include <variant>

namespace trnsim::serving {
namespace detail {

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

} // namespace detail

namespace {

using detail::Dims;
using detail::mlp_matrices;
using detail::scaled;

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

} // namespace trnsim::serving
