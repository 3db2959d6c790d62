#include "trnsim/workload/program.hpp"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

namespace trnsim::workload {

namespace {

using network::CollectiveOp;
using Kind = ProgramOp::Kind;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Builds the ops of one block with the plan's shapes at hand.
class BlockBuilder {
public:
    explicit BlockBuilder(const Plan& p)
        : p_(p), m_(p.training.model), par_(p.training.parallelism),
          precision_(p.training.precision),
          e_(p.training.precision == compute::Precision::fp32 ? 4 : 2),
          T_(p.tokens_per_rank()),
          sp_(par_.sequence_parallel ? p.tp : 1), graph_(p.training.graph),
          mx_(p.training.precision == compute::Precision::fp8 && p.chip.core.tensor.mx_matmul) {}

    std::vector<ProgramOp> ops;

    /// Tags the ops appended while it lives as belonging to a part of the layer.
    class Part {
    public:
        Part(BlockBuilder& b, std::initializer_list<RecomputePart> parts) : b_(b), saved_(b.part_) {
            for (RecomputePart p : parts) {
                b_.part_ |= static_cast<std::uint8_t>(1u << static_cast<int>(p));
            }
        }
        ~Part() { b_.part_ = saved_; }
        Part(const Part&) = delete;
        Part& operator=(const Part&) = delete;

    private:
        BlockBuilder& b_;
        std::uint8_t saved_;
    };

    /// Appends an op with the current part tags.
    ProgramOp& add(ProgramOp op) {
        op.parts = part_;
        ops.push_back(std::move(op));
        return ops.back();
    }

    void matmul(const char* name, std::int64_t m, std::int64_t k, std::int64_t n,
                std::int64_t batch = 1) {
        if (mx_) {
            mx_quantize(name, m, k, n, batch);
        }
        ProgramOp op;
        op.kind = Kind::matmul;
        op.name = name;
        op.matmul = {m, k, n, batch, precision_};
        add(op);
    }

    /// FP8 on a chip whose FP8 matmul is microscaling (NC-v4: MXFP8, blocks of 32 along the
    /// contraction with a scale each; NKI3): VectorE quantizes the BF16 operands before each
    /// matmul, X (m x k) and W (k x n) along k in the forward pass; in the backward pass dY
    /// (m x n) along n and W along n for the data gradient, X and dY along m for the weight
    /// gradient. Each is an elementwise kernel of two passes (the block's absolute maximum,
    /// then the scaled conversion) over 2-byte elements: the 1-byte MXFP8 output and its
    /// scales (1/32 byte an element) are costed as BF16's 2.
    void mx_quantize(const char* name, std::int64_t m, std::int64_t k, std::int64_t n,
                     std::int64_t batch) {
        const auto vector = compute::StreamEngine::vector;
        ProgramOp& op = stream((std::string(name) + " quantize").c_str(), (m * k + k * n) * batch,
                               1, 1, 2, vector, 2);
        op.grads = {elementwise(m * n * batch, 1, 1, 2, vector, 2),
                    elementwise(k * n * batch, 1, 1, 2, vector, 2),
                    elementwise(m * k * batch, 1, 1, 2, vector, 2),
                    elementwise(m * n * batch, 1, 1, 2, vector, 2)};
    }

    /// A streaming op; returns it so that the caller lists its backward kernels.
    ProgramOp& stream(const char* name, std::int64_t elements, int inputs, int outputs,
                      int passes, compute::StreamEngine engine, int element_bytes = 0,
                      compute::StreamKind kind = compute::StreamKind::elementwise,
                      std::int64_t row = 0) {
        ProgramOp op;
        op.kind = Kind::stream;
        op.name = name;
        op.stream = {elements, inputs, outputs, element_bytes > 0 ? element_bytes : e_, passes,
                     engine, kind, row};
        return add(op);
    }
    /// An elementwise kernel of `elements` values (a backward kernel of a streaming op).
    compute::StreamShape elementwise(std::int64_t elements, int inputs, int outputs, int passes,
                                     compute::StreamEngine engine, int element_bytes = 0) const {
        return {elements,      inputs, outputs, element_bytes > 0 ? element_bytes : e_,
                passes,        engine, compute::StreamKind::elementwise, 0};
    }
    /// An op whose backward is the same kernel again (a rotation by the opposite angle; the sum
    /// of two gradient paths for a residual addition).
    void same_backward(ProgramOp& op) const { op.grads = {op.stream}; }
    /// An activation y = f(x): dx = dy f'(x), the derivative on ScalarE and the product on
    /// VectorE (two inputs, one output).
    void activation_backward(ProgramOp& op) const {
        op.grads = {elementwise(op.stream.elements, 2, 1, 1, compute::StreamEngine::scalar,
                                op.stream.element_bytes)};
    }

    /// Appends a collective; false (and nothing appended) when the group has one member.
    bool collective(const char* name, CollectiveOp c, CommGroup g, double bytes,
                    bool overlapped = false) {
        if (p_.group_size(g) <= 1 || bytes <= 0.0) {
            return false;
        }
        ProgramOp op;
        op.kind = Kind::collective;
        op.name = name;
        op.collective = c;
        op.group = g;
        op.bytes = bytes;
        op.overlapped = overlapped;
        add(op);
        return true;
    }

    /// Tensor-parallel gather of the residual stream before a block.
    void tp_gather() {
        if (par_.sequence_parallel) {
            collective("tp_all_gather", CollectiveOp::all_gather, CommGroup::tp, hidden_bytes());
        }
    }
    /// Tensor-parallel reduction after a block.
    void tp_reduce() {
        collective(par_.sequence_parallel ? "tp_reduce_scatter" : "tp_all_reduce",
                   par_.sequence_parallel ? CollectiveOp::reduce_scatter
                                          : CollectiveOp::all_reduce,
                   CommGroup::tp, hidden_bytes());
    }

    /// RMSNorm or LayerNorm over `elements` values in rows of `row`; its backward is the
    /// norm-backward kernel (input gradient, scale and shift gradients).
    void norm(const char* name, std::int64_t elements, std::int64_t row) {
        const Part part(*this, {RecomputePart::norm});
        const bool layer = m_.norm == NormKind::layernorm;
        ProgramOp& op = stream(name, elements, 1, 1, 2, compute::StreamEngine::vector, 0,
                               layer ? compute::StreamKind::layer_norm
                                     : compute::StreamKind::rms_norm,
                               row);
        compute::StreamShape g = op.stream;
        g.kind = layer ? compute::StreamKind::layer_norm_backward
                       : compute::StreamKind::rms_norm_backward;
        op.grads = {g};
    }

    /// ZeRO-3 gathers the block's parameters before use (prefetched, beside compute).
    void zero3_gather(std::int64_t params) {
        if (par_.zero >= 3) {
            collective("zero3_param_all_gather", CollectiveOp::all_gather, CommGroup::dp,
                       static_cast<double>(ceil_div(params, p_.tp)) * e_, true);
        }
    }

    void attention_block() {
        const std::int64_t h = m_.hidden;
        const std::int64_t t = p_.tp;
        const std::int64_t heads = m_.heads / t;
        norm("attention_norm", T_ * h / sp_, h);
        tp_gather();
        std::int64_t kv_heads = heads;
        if (m_.attention == AttentionKind::mla) {
            const auto& a = m_.mla;
            if (a.q_lora_rank > 0) {
                matmul("q_down_proj", T_, h, a.q_lora_rank);
                norm("q_norm", T_ * a.q_lora_rank, a.q_lora_rank);
                matmul("q_up_proj", T_, a.q_lora_rank, heads * m_.qk_dim());
            } else {
                matmul("q_proj", T_, h, heads * m_.qk_dim());
            }
            matmul("kv_down_proj", T_, h, a.kv_lora_rank + a.qk_rope_head_dim);
            norm("kv_norm", T_ * a.kv_lora_rank, a.kv_lora_rank);
            matmul("kv_up_proj", T_, a.kv_lora_rank,
                   heads * (a.qk_nope_head_dim + a.v_head_dim));
            same_backward(stream("rope", T_ * (heads + 1) * a.qk_rope_head_dim, 1, 1, 2,
                                 compute::StreamEngine::vector));
        } else {
            kv_heads = std::max<std::int64_t>(1, m_.kv_heads / t);
            matmul("qkv_proj", T_, h, (heads + 2 * kv_heads) * m_.head_dim);
            if (m_.position == PositionKind::rope) {
                same_backward(stream("rope", T_ * (heads + kv_heads) * m_.head_dim, 1, 1, 2,
                                     compute::StreamEngine::vector));
            }
        }
        // Context parallelism: the keys and values of the whole sequence pass around the CP
        // group (the collective's size is the gathered output: cp blocks of the rank's own
        // keys and values). They are not kept for the backward pass (see derive_backward).
        const std::int64_t cp = p_.cp;
        {
        const Part core(*this, {RecomputePart::core_attention});
        if (collective("cp_kv_all_gather", CollectiveOp::all_gather, CommGroup::cp,
                       kv_block_bytes(m_, T_ * cp, p_.tp, e_))) {
            ops.back().regather = true;
            ops.back().backward_name = "cp_kv_reduce_scatter";
        }
        // The rank's S / cp queries. With cp = 1 one causal kernel over the whole sequence.
        // With cp > 1 the rank holds chunks i and 2 cp - 1 - i of 2 cp chunks of c = S / (2 cp)
        // tokens: against its own keys it does the causal work of a contiguous block of 2c
        // tokens, 2c^2 + c query-key pairs; against each of the other cp - 1 blocks, exactly
        // 2c^2 pairs with no mask (all 2c queries against the first c keys of a rank before
        // it, or the last c queries against all 2c keys of a rank after it). In total
        // 2 cp c^2 + c = S (S + 1) / 2 / cp: 1/cp of the sequence's causal work on every rank.
        const std::int64_t S = p_.training.sequence_length;
        const std::int64_t q = S / cp;
        if (graph_.attention == AttentionKernel::materialized) {
            materialized_attention(heads, q);
        } else {
            ProgramOp attn;
            attn.kind = Kind::attention;
            attn.name = "attention";
            attn.attention = {par_.microbatch, heads, kv_heads, q, q, m_.qk_dim(), m_.v_dim(),
                              true, precision_};
            add(attn);
            if (cp > 1) {
                attn.name = "attention_ring";
                attn.attention = {par_.microbatch, heads, kv_heads, q, q / 2, m_.qk_dim(),
                                  m_.v_dim(), false, precision_};
                attn.repeat = static_cast<double>(cp - 1);
                add(attn);
            }
        }
        }
        finish_attention(heads, h);
    }

    /// The attention core as separate kernels through HBM (workload.graph.attention:
    /// materialized): S = Q K^T per query head over all q x q pairs, the row softmax (mask
    /// and scaling fused into it), the attention dropout, O = P V.
    void materialized_attention(std::int64_t heads, std::int64_t q) {
        const std::int64_t batch = par_.microbatch * heads;
        matmul("attention_scores", q, m_.qk_dim(), q, batch);
        ProgramOp& softmax = stream("attention_softmax", batch * q * q, 1, 1, 1,
                                    compute::StreamEngine::scalar, 0,
                                    compute::StreamKind::softmax, q);
        compute::StreamShape back = softmax.stream;
        back.kind = compute::StreamKind::softmax_backward;
        softmax.grads = {back};
        if (graph_.attention_dropout > 0.0) {
            dropout("attention_dropout", batch * q * q);
        }
        matmul("attention_values", q, q, m_.v_dim(), batch);
    }

    /// A dropout: the random mask drawn and applied (one more output, the mask); its backward
    /// applies the mask to the gradient.
    void dropout(const char* name, std::int64_t elements) {
        ProgramOp& op = stream(name, elements, 1, 2, 2, compute::StreamEngine::vector);
        op.grads = {elementwise(elements, 2, 1, 1, compute::StreamEngine::vector)};
    }

    void finish_attention(std::int64_t heads, std::int64_t h) {
        matmul("out_proj", T_, heads * m_.v_dim(), h);
        tp_reduce();
        residual_add(T_ * h / sp_);
    }

    /// The residual addition; in the backward pass the gradients of the block and of the skip
    /// path add up the same way.
    void residual_add(std::int64_t elements) {
        if (graph_.hidden_dropout > 0.0) {
            dropout("hidden_dropout", elements);
        }
        same_backward(stream("residual_add", elements, 2, 1, 1, compute::StreamEngine::vector));
    }

    /// A SwiGLU or GELU MLP of inner width f, split across TP, over `tokens` tokens.
    void mlp(const char* up_name, std::int64_t tokens, std::int64_t f, std::int64_t batch = 1) {
        const std::int64_t h = m_.hidden;
        const std::int64_t ft = ceil_div(f, p_.tp);
        const Part part(*this, {RecomputePart::mlp});
        matmul(up_name, tokens, h, (m_.mlp == MlpKind::swiglu ? 2 : 1) * ft, batch);
        {
            const Part activation(*this, {RecomputePart::mlp_activation});
            if (m_.mlp == MlpKind::swiglu) {
                activation_backward(
                    stream("silu", tokens * ft * batch, 1, 1, 1, compute::StreamEngine::scalar));
                // dy of the product y = silu(g) u: d silu(g) = dy u, du = dy silu(g) (three
                // inputs, two outputs, two VectorE products).
                ProgramOp& product = stream("gate_multiply", tokens * ft * batch, 2, 1, 1,
                                            compute::StreamEngine::vector);
                product.grads = {elementwise(tokens * ft * batch, 3, 2, 2,
                                             compute::StreamEngine::vector)};
            } else {
                activation_backward(
                    stream("gelu", tokens * ft * batch, 1, 1, 1, compute::StreamEngine::scalar));
            }
        }
        matmul("down_proj", tokens, ft, h, batch);
    }

    void dense_mlp_block() {
        norm("mlp_norm", T_ * m_.hidden / sp_, m_.hidden);
        {
            // The MLP module with its tensor-parallel gather and reduce-scatter (sequence
            // parallel linear layers).
            const Part part(*this, {RecomputePart::mlp});
            tp_gather();
            mlp("gate_up_proj", T_, m_.ffn_hidden);
            tp_reduce();
        }
        residual_add(T_ * m_.hidden / sp_);
    }

    void moe_block() {
        const std::int64_t h = m_.hidden;
        const auto& moe = m_.moe;
        const std::int64_t local_tokens = T_ / sp_;
        norm("mlp_norm", local_tokens * h, h);
        matmul("router", local_tokens, h, moe.experts);
        // The gradient through the routing weights (a product with the saved probabilities).
        ProgramOp& topk = stream("router_topk", local_tokens * moe.experts, 1, 1, 2,
                                 compute::StreamEngine::scalar, 4);
        topk.grads = {elementwise(local_tokens * moe.experts, 2, 1, 1,
                                  compute::StreamEngine::vector, 4)};
        // With routing imbalance k, the busiest rank receives k times the average: the
        // all-to-all lasts as long as its share, and so do its experts; the others wait.
        const double k = p_.training.moe_imbalance;
        const double dispatch = k * static_cast<double>(local_tokens * moe.top_k * h * e_);
        collective("ep_dispatch_all_to_all", CollectiveOp::all_to_all, CommGroup::ep, dispatch);
        // Tokens routed to this rank's experts, gathered over the TP group.
        const double routed_tokens = k * static_cast<double>(local_tokens * moe.top_k * sp_);
        collective("moe_tp_all_gather", CollectiveOp::all_gather, CommGroup::tp,
                   routed_tokens * static_cast<double>(h * e_));
        const std::int64_t local_experts = moe.experts / p_.ep;
        const std::int64_t per_expert = std::max<std::int64_t>(
            1, static_cast<std::int64_t>(routed_tokens) * p_.ep / moe.experts);
        mlp("expert_gate_up_proj", per_expert, moe.expert_ffn_hidden, local_experts);
        collective("moe_tp_reduce_scatter", CollectiveOp::reduce_scatter, CommGroup::tp,
                   routed_tokens * static_cast<double>(h * e_));
        collective("ep_combine_all_to_all", CollectiveOp::all_to_all, CommGroup::ep, dispatch);
        if (moe.shared_experts > 0) {
            tp_gather();
            mlp("shared_gate_up_proj", T_, moe.shared_experts * moe.expert_ffn_hidden);
            tp_reduce();
        }
        residual_add(local_tokens * h);
    }

    void embedding_block() {
        // Backward: the tokens' gradient rows added into the rows of the (FP32) embedding
        // gradient they index.
        ProgramOp& gather = stream("embedding_gather", T_ * m_.hidden, 1, 1, 1,
                                   compute::StreamEngine::vector, 0, compute::StreamKind::gather,
                                   m_.hidden);
        compute::StreamShape scatter = gather.stream;
        scatter.kind = compute::StreamKind::scatter_add;
        gather.grads = {scatter};
        // Vocabulary-parallel embedding: partial rows are summed across TP.
        tp_reduce();
    }

    void head_block() {
        norm("final_norm", T_ * m_.hidden / sp_, m_.hidden);
        tp_gather();
        const std::int64_t vocab = ceil_div(m_.vocab, p_.tp);
        matmul("lm_head", T_, m_.hidden, vocab);
        // Vocabulary-parallel cross-entropy on FP32 logits (Megatron): the loss, and the
        // gradient softmax - one-hot saved in place of the logits; the backward pass scales it
        // by the loss gradient.
        ProgramOp& xent = stream("cross_entropy", T_ * vocab, 1, 1, 1,
                                 compute::StreamEngine::vector, 4,
                                 compute::StreamKind::cross_entropy, vocab);
        xent.grads = {elementwise(T_ * vocab, 1, 1, 1, compute::StreamEngine::vector, 4)};
    }

    double hidden_bytes() const {
        return static_cast<double>(T_) * static_cast<double>(m_.hidden) * e_;
    }
    std::int64_t tokens() const { return T_; }
    std::int64_t sp() const { return sp_; }
    int element_bytes() const { return e_; }

private:
    const Plan& p_;
    const ModelSpec& m_;
    const ParallelismSpec& par_;
    compute::Precision precision_;
    int e_;
    std::int64_t T_;
    std::int64_t sp_;
    GraphSpec graph_;
    bool mx_; ///< FP8 on a chip whose FP8 matmul is microscaling (mx_quantize)
    std::uint8_t part_ = 0;
};

/// Backward ops of a forward op list (see program.hpp for the rules). With `regather`, an
/// all-gather whose output the forward pass does not keep (ProgramOp::regather) runs again just
/// before the backward of the attention kernels that follow it.
std::vector<ProgramOp> derive_backward(const std::vector<ProgramOp>& fwd, bool regather) {
    // Where each re-gather goes: before the backward of the last op of the run of attention
    // kernels after it (the first of them the backward pass meets).
    std::vector<int> regather_at(fwd.size(), -1);
    for (std::size_t i = 0; i < fwd.size(); ++i) {
        if (!regather || !fwd[i].is_collective() || !fwd[i].regather) {
            continue;
        }
        std::size_t j = i;
        while (j + 1 < fwd.size() && fwd[j + 1].kind == Kind::attention) {
            ++j;
        }
        regather_at[j] = static_cast<int>(i);
    }
    std::vector<ProgramOp> bwd;
    for (std::size_t idx = fwd.size(); idx-- > 0;) {
        ProgramOp op = fwd[idx];
        if (regather_at[idx] >= 0 && static_cast<std::size_t>(regather_at[idx]) != idx) {
            ProgramOp again = fwd[static_cast<std::size_t>(regather_at[idx])];
            again.name += " backward";
            again.regather = false;
            bwd.push_back(again);
        }
        switch (op.kind) {
        case Kind::matmul: {
            const auto s = op.matmul;
            const std::string name = op.name;
            op.name = name + " data_grad";
            op.matmul = {s.m, s.n, s.k, s.batch, s.precision};
            bwd.push_back(op);
            op.name = name + " weight_grad";
            op.matmul = {s.k, s.m, s.n, s.batch, s.precision};
            bwd.push_back(op);
            break;
        }
        case Kind::attention:
            op.name += " backward";
            op.attention.backward = true;
            bwd.push_back(op);
            break;
        case Kind::stream: {
            const std::string name = op.name + " backward";
            const std::vector<compute::StreamShape> grads = op.grads;
            op.grads.clear();
            for (const compute::StreamShape& g : grads) {
                op.name = name;
                op.stream = g;
                bwd.push_back(op);
            }
            break;
        }
        case Kind::optimizer:
            break; // the optimizer runs once per step, outside the blocks
        case Kind::collective:
            if (op.overlapped) {
                // ZeRO-3: gather the parameters again, then reduce-scatter their gradients.
                bwd.push_back(op);
                op.name = "zero3_grad_reduce_scatter";
                op.collective = CollectiveOp::reduce_scatter;
                bwd.push_back(op);
                break;
            }
            if (regather_at[idx] == static_cast<int>(idx)) { // no attention after it
                ProgramOp again = op;
                again.name += " backward";
                again.regather = false;
                bwd.push_back(again);
            }
            op.name = op.backward_name.empty() ? op.name + " backward" : op.backward_name;
            op.regather = false;
            if (op.collective == CollectiveOp::all_gather) {
                op.collective = CollectiveOp::reduce_scatter;
            } else if (op.collective == CollectiveOp::reduce_scatter) {
                op.collective = CollectiveOp::all_gather;
            }
            bwd.push_back(op);
            break;
        }
    }
    return bwd;
}

/// Prepends the recomputed forward work to a backward block.
void add_recompute(BlockProgram& b, const RecomputeSet& r) {
    std::vector<ProgramOp> redo;
    for (const auto& op : b.forward) {
        // Recomputing the attention core gathers its keys and values again.
        bool take = r.full && !op.overlapped;
        for (RecomputePart part : {RecomputePart::core_attention, RecomputePart::norm,
                                   RecomputePart::mlp_activation, RecomputePart::mlp}) {
            take = take || (r.has(part) && op.in(part) && !op.overlapped);
        }
        if (take) {
            ProgramOp copy = op;
            copy.name += " recompute";
            copy.recompute = true;
            redo.push_back(copy);
        }
    }
    b.backward.insert(b.backward.begin(), redo.begin(), redo.end());
}

BlockProgram finish(std::vector<ProgramOp> forward, const RecomputeSet& r) {
    BlockProgram b;
    b.forward = std::move(forward);
    // Recomputing the attention core gathers its keys and values again; without it the
    // backward pass does.
    b.backward = derive_backward(b.forward, !r.core_attention);
    add_recompute(b, r);
    return b;
}

/// The addition of one block's parameter gradients into the gradient accumulator in every
/// microbatch's backward pass: an elementwise kernel that reads the accumulator and the new
/// gradient and writes the accumulator back, at the accumulator's element size
/// (workload.graph.grad_accumulator). `dense` and `expert` are the block's parameters per rank
/// (after the TP and EP splits); with ZeRO-3 each rank accumulates only its shard of the
/// reduce-scattered gradient.
ProgramOp grad_accumulate(const Plan& plan, std::int64_t dense, std::int64_t expert) {
    std::int64_t elements = dense + expert;
    if (plan.training.parallelism.zero >= 3) {
        elements = ceil_div(dense, plan.group_size(CommGroup::dp)) +
                   ceil_div(expert, plan.group_size(CommGroup::expert_dp));
    }
    ProgramOp op;
    op.kind = Kind::stream;
    op.name = "grad_accumulate";
    op.stream = {elements,
                 2,
                 1,
                 grad_accumulator_bytes(plan.training),
                 1,
                 compute::StreamEngine::vector,
                 compute::StreamKind::elementwise,
                 0};
    return op;
}

/// Adds the block's gradient accumulation to its backward pass, after its last weight-gradient
/// matmul (the block's last parameter gradient but its norms'; the block's own backward
/// collectives follow it, as in the graph) or, without a matmul, at its end.
void add_grad_accumulate(BlockProgram& b, ProgramOp op) {
    const std::string suffix = " weight_grad";
    auto at = b.backward.end();
    for (auto it = b.backward.begin(); it != b.backward.end(); ++it) {
        if (it->kind == Kind::matmul && it->name.size() > suffix.size() &&
            it->name.compare(it->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            at = std::next(it);
        }
    }
    b.backward.insert(at, std::move(op));
}

} // namespace

StepProgram build_program(const Plan& plan) {
    const auto& m = plan.training.model;
    const RecomputeSet recompute = RecomputeSet::of(plan.training.parallelism.recompute,
                                                    plan.training.parallelism.recompute_parts);
    const ModelStats& s = plan.stats;
    const std::int64_t tp = plan.tp;
    StepProgram prog;
    {
        BlockBuilder b(plan);
        b.zero3_gather(s.attention + s.dense_mlp);
        b.attention_block();
        b.dense_mlp_block();
        prog.dense_layer = finish(std::move(b.ops), recompute);
        add_grad_accumulate(prog.dense_layer,
                            grad_accumulate(plan, ceil_div(s.attention + s.dense_mlp, tp), 0));
    }
    if (m.is_moe()) {
        BlockBuilder b(plan);
        b.zero3_gather(s.attention + s.moe_shared);
        b.attention_block();
        b.moe_block();
        prog.moe_layer = finish(std::move(b.ops), recompute);
        add_grad_accumulate(prog.moe_layer,
                            grad_accumulate(plan, ceil_div(s.attention + s.moe_shared, tp),
                                            ceil_div(m.moe.experts * s.expert, tp * plan.ep)));
    }
    {
        BlockBuilder b(plan);
        b.embedding_block();
        prog.embedding = finish(std::move(b.ops), RecomputeSet{});
        add_grad_accumulate(prog.embedding, grad_accumulate(plan, ceil_div(s.embedding, tp), 0));
    }
    {
        BlockBuilder b(plan);
        b.head_block();
        prog.head = finish(std::move(b.ops), RecomputeSet{});
        // A tied output head on its own stage holds a copy of the embedding (plan.cpp); on the
        // embedding's stage its gradient goes into the embedding's accumulator.
        const std::int64_t head = s.final_norm + (m.tied_embeddings && plan.pp > 1
                                                      ? s.embedding
                                                      : s.lm_head);
        add_grad_accumulate(prog.head, grad_accumulate(plan, ceil_div(head, tp), 0));
    }
    {
        BlockBuilder b(plan);
        ProgramOp& op = prog.pipeline_send;
        op.kind = Kind::collective;
        op.name = "pipeline_send";
        op.collective = network::CollectiveOp::send_recv;
        op.group = CommGroup::pp;
        op.bytes = b.hidden_bytes() / static_cast<double>(b.sp());
    }
    return prog;
}

StageStepOps build_stage_step_ops(const Plan& plan, int stage) {
    const auto& st = plan.stages.at(static_cast<std::size_t>(stage));
    const auto& par = plan.training.parallelism;
    const int w = plan.training.precision == compute::Precision::fp32 ? 4 : 2;
    // The gradient reduction and the optimizer read the accumulated gradients.
    const int acc = grad_accumulator_bytes(plan.training);
    const double dense = static_cast<double>(st.dense_params_per_rank);
    const double expert = static_cast<double>(st.expert_params_per_rank);
    StageStepOps ops;
    const auto add = [&](std::vector<ProgramOp>& list, const char* name, CollectiveOp c,
                         CommGroup g, double bytes) {
        if (plan.group_size(g) <= 1 || bytes <= 0.0) {
            return;
        }
        ProgramOp op;
        op.kind = Kind::collective;
        op.name = name;
        op.collective = c;
        op.group = g;
        op.bytes = bytes;
        op.overlapped = true;
        list.push_back(op);
    };
    if (par.zero == 0) {
        add(ops.gradient_sync, "dp_grad_all_reduce", CollectiveOp::all_reduce, CommGroup::dp,
            dense * acc);
        add(ops.gradient_sync, "expert_dp_grad_all_reduce", CollectiveOp::all_reduce,
            CommGroup::expert_dp, expert * acc);
    } else if (par.zero <= 2) {
        add(ops.gradient_sync, "dp_grad_reduce_scatter", CollectiveOp::reduce_scatter,
            CommGroup::dp, dense * acc);
        add(ops.gradient_sync, "expert_dp_grad_reduce_scatter", CollectiveOp::reduce_scatter,
            CommGroup::expert_dp, expert * acc);
        add(ops.parameter_gather, "dp_param_all_gather", CollectiveOp::all_gather, CommGroup::dp,
            dense * w);
        add(ops.parameter_gather, "expert_dp_param_all_gather", CollectiveOp::all_gather,
            CommGroup::expert_dp, expert * w);
    }
    const bool sharded = par.zero >= 1;
    // ZeRO shards over the gradient-reduction groups (data parallel x context parallel).
    const double d = plan.group_size(CommGroup::dp);
    const double de = plan.group_size(CommGroup::expert_dp);
    ops.optimizer.kind = Kind::optimizer;
    ops.optimizer.name = "adamw";
    ops.optimizer.optimizer.params =
        static_cast<std::int64_t>(sharded ? dense / d + expert / de : dense + expert);
    ops.optimizer.optimizer.grad_bytes = acc;
    ops.optimizer.optimizer.weight_bytes = w;
    ops.optimizer.optimizer.master_bytes = master_weight_bytes(plan.training);
    ops.optimizer.optimizer.moment_bytes = moment_bytes(plan.training);
    return ops;
}

} // namespace trnsim::workload
