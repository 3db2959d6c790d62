// Transformer model descriptions and their parameter and FLOP arithmetic.
//
// A model is a decoder-only transformer: token embedding, `layers` blocks of (norm, attention,
// residual, norm, MLP or MoE, residual), a final norm and an output projection (LM head).
// Supported variants: grouped-query attention (GQA; MHA when kv_heads == heads) or multi-head
// latent attention (MLA, DeepSeek-V2/V3); SwiGLU (three matrices) or GELU (two) MLPs; RMSNorm
// or LayerNorm; rotary or learned position embeddings; optional linear biases (GPT-3); and
// mixture-of-experts layers (routed experts with top-k routing, optional shared experts, an
// optional number of leading dense layers).
//
// Parameter counts are exact for the architecture as described (they reproduce the published
// totals: Llama 3 8B 8.03B, 70B 70.6B, 405B 405.9B; GPT-3 175B; Mixtral 8x7B 46.7B / 12.9B
// active; DeepSeek-V3 671B / 37B active, without its multi-token-prediction module).
//
// Model FLOPs per token follow the convention of the Neuron performance pages (trainium.md §6),
// so MFU is comparable with published figures: 6 N + 12 L d S for training, where N counts the
// active parameters including embeddings, L the layers, S the sequence length and d the
// attention width; for attention with distinct query-key and value widths (MLA) the
// 12 L d S term is 6 L S heads (qk_dim + v_dim). No causal-mask discount is applied.
#pragma once

#include "trnsim/core/enum_names.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>


namespace trnsim::workload {

enum class MlpKind { swiglu, gelu };
enum class NormKind { rmsnorm, layernorm };
enum class PositionKind { rope, learned };
enum class AttentionKind { gqa, mla };

constexpr std::array<EnumName<MlpKind>, 2> enum_names(MlpKind) {
    return {{
        {MlpKind::swiglu, "swiglu"},
        {MlpKind::gelu, "gelu"},
    }};
}
inline const char* to_string(MlpKind v) { return enum_name(v); }
constexpr std::array<EnumName<NormKind>, 2> enum_names(NormKind) {
    return {{
        {NormKind::rmsnorm, "rmsnorm"},
        {NormKind::layernorm, "layernorm"},
    }};
}
inline const char* to_string(NormKind v) { return enum_name(v); }
constexpr std::array<EnumName<PositionKind>, 2> enum_names(PositionKind) {
    return {{
        {PositionKind::rope, "rope"},
        {PositionKind::learned, "learned"},
    }};
}
inline const char* to_string(PositionKind v) { return enum_name(v); }
constexpr std::array<EnumName<AttentionKind>, 2> enum_names(AttentionKind) {
    return {{
        {AttentionKind::gqa, "gqa"},
        {AttentionKind::mla, "mla"},
    }};
}
inline const char* to_string(AttentionKind v) { return enum_name(v); }

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through low-rank
/// projections; the rope part of each key is shared by all heads.
struct MlaSpec {
    std::int64_t q_lora_rank = 0; ///< 0: queries are projected directly from the hidden state
    std::int64_t kv_lora_rank = 512;
    std::int64_t qk_nope_head_dim = 128;
    std::int64_t qk_rope_head_dim = 64;
    std::int64_t v_head_dim = 128;
};

/// Mixture of experts. experts == 0 means a dense model.
struct MoeSpec {
    std::int64_t experts = 0;
    std::int64_t top_k = 1;
    std::int64_t shared_experts = 0;
    std::int64_t expert_ffn_hidden = 0;
    /// The first layers use a dense MLP of ffn_hidden instead of experts.
    std::int64_t first_dense_layers = 0;
};

struct ModelSpec {
    std::string name;
    std::string source; ///< where the dimensions come from
    std::int64_t layers = 0;
    std::int64_t hidden = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0; ///< GQA head width (usually hidden / heads)
    std::int64_t ffn_hidden = 0;
    std::int64_t vocab = 0;
    MlpKind mlp = MlpKind::swiglu;
    NormKind norm = NormKind::rmsnorm;
    PositionKind position = PositionKind::rope;
    std::int64_t max_positions = 0; ///< learned positions: table size; rope: 0 = unbounded
    bool tied_embeddings = false;
    bool bias = false;
    AttentionKind attention = AttentionKind::gqa;
    MlaSpec mla;
    MoeSpec moe;
    /// Published totals, for reference in `describe model` (0 = not given).
    std::int64_t published_parameters = 0;
    std::int64_t published_active_parameters = 0;

    bool is_moe() const { return moe.experts > 0; }
    std::int64_t moe_layers() const { return is_moe() ? layers - moe.first_dense_layers : 0; }
    std::int64_t dense_layers() const { return layers - moe_layers(); }
    /// Width of the query-key dot product and of the value vectors, per head.
    std::int64_t qk_dim() const;
    std::int64_t v_dim() const;
};

/// Parameter counts by part.
struct ModelStats {
    std::int64_t embedding = 0;  ///< token (+ learned position) embedding
    std::int64_t lm_head = 0;    ///< output projection (0 when tied to the embedding)
    std::int64_t final_norm = 0;
    std::int64_t attention = 0;  ///< per layer, including its norm
    std::int64_t dense_mlp = 0;  ///< per dense layer, including its norm
    std::int64_t expert = 0;     ///< one routed expert
    std::int64_t moe_shared = 0; ///< per MoE layer: shared experts + router + norm
    std::int64_t total = 0;
    std::int64_t active = 0;     ///< touched by one token (top-k routed experts)

    /// Training FLOPs per token at sequence length S (6 N_active + attention term).
    double model_flops_per_token(const ModelSpec& m, std::int64_t sequence_length) const;
    /// Forward FLOPs of attention scores per token per layer at sequence length S, no causal
    /// discount: 2 S heads (qk_dim + v_dim).
    static double attention_flops_per_token_layer(const ModelSpec& m,
                                                  std::int64_t sequence_length);
};

ModelStats compute_stats(const ModelSpec& m);

} // namespace trnsim::workload
