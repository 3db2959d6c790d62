#include "trnsim/workload/model.hpp"

namespace trnsim::workload {


std::int64_t ModelSpec::qk_dim() const {
    return attention == AttentionKind::mla ? mla.qk_nope_head_dim + mla.qk_rope_head_dim
                                           : head_dim;
}

std::int64_t ModelSpec::v_dim() const {
    return attention == AttentionKind::mla ? mla.v_head_dim : head_dim;
}

namespace {

std::int64_t norm_params(const ModelSpec& m, std::int64_t width) {
    return m.norm == NormKind::layernorm ? 2 * width : width;
}

/// Matrices of one MLP of inner width f, with biases when the model has them.
std::int64_t mlp_params(const ModelSpec& m, std::int64_t f) {
    const std::int64_t h = m.hidden;
    if (m.mlp == MlpKind::swiglu) {
        return 3 * h * f + (m.bias ? 2 * f + h : 0);
    }
    return 2 * h * f + (m.bias ? f + h : 0);
}

std::int64_t attention_params(const ModelSpec& m) {
    const std::int64_t h = m.hidden;
    if (m.attention == AttentionKind::mla) {
        const auto& a = m.mla;
        const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
        std::int64_t p = 0;
        if (a.q_lora_rank > 0) {
            p += h * a.q_lora_rank + norm_params(m, a.q_lora_rank) +
                 a.q_lora_rank * m.heads * qk;
        } else {
            p += h * m.heads * qk;
        }
        p += h * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_params(m, a.kv_lora_rank);
        p += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
        p += m.heads * a.v_head_dim * h;
        return p;
    }
    const std::int64_t q = m.heads * m.head_dim;
    const std::int64_t kv = m.kv_heads * m.head_dim;
    std::int64_t p = h * (q + 2 * kv) + q * h;
    if (m.bias) {
        p += q + 2 * kv + h;
    }
    return p;
}

} // namespace

ModelStats compute_stats(const ModelSpec& m) {
    ModelStats s;
    const std::int64_t h = m.hidden;
    s.embedding = m.vocab * h + (m.position == PositionKind::learned ? m.max_positions * h : 0);
    s.lm_head = m.tied_embeddings ? 0 : m.vocab * h;
    s.final_norm = norm_params(m, h);
    s.attention = attention_params(m) + norm_params(m, h);
    s.dense_mlp = mlp_params(m, m.ffn_hidden) + norm_params(m, h);
    if (m.is_moe()) {
        s.expert = mlp_params(m, m.moe.expert_ffn_hidden);
        s.moe_shared = m.moe.shared_experts * s.expert + h * m.moe.experts + norm_params(m, h);
    }
    const std::int64_t common = s.embedding + s.lm_head + s.final_norm +
                                m.layers * s.attention + m.dense_layers() * s.dense_mlp +
                                m.moe_layers() * s.moe_shared;
    s.total = common + m.moe_layers() * m.moe.experts * s.expert;
    s.active = common + m.moe_layers() * m.moe.top_k * s.expert;
    return s;
}

double ModelStats::attention_flops_per_token_layer(const ModelSpec& m,
                                                   std::int64_t sequence_length) {
    return 2.0 * static_cast<double>(sequence_length) * static_cast<double>(m.heads) *
           static_cast<double>(m.qk_dim() + m.v_dim());
}

double ModelStats::model_flops_per_token(const ModelSpec& m, std::int64_t sequence_length) const {
    return 6.0 * static_cast<double>(active) +
           3.0 * static_cast<double>(m.layers) *
               attention_flops_per_token_layer(m, sequence_length);
}

} // namespace trnsim::workload
