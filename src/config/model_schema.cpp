#include "fields.hpp"
#include "tables.hpp"

namespace trnsim::config::detail {

using workload::ModelSpec;
using M = ModelSpec;

namespace {

// Model keys never apply defaults themselves: an inline model may start from a preset
// (`preset:`), and only the keys it gives may change it. The ModelSpec member defaults (and
// validate_model for kv_heads and head_dim) are the documented defaults.
Schema<M> build() {
    Schema<M> s("Model");
    constexpr std::int64_t kBig = 1'000'000'000;
    {
        // Handled by load_model_node before the other keys; here it is only documented and
        // type-checked.
        auto e = make_entry<M>("preset", "string", "", "a model preset name or file",
                               "Start from this model preset; the other keys override it "
                               "(inline models only).");
        e.apply = [](M&, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) { scalar_text(n, p, loc); };
        s.field(e);
    }
    s.field(text<M>("name", [](M& m) -> std::string& { return m.name; }, "",
                    "Model name used in summaries."));
    s.field(text<M>("source", [](M& m) -> std::string& { return m.source; }, "",
                    "Where the dimensions come from (paper, config file)."));
    s.field(computed_default(
        count<M>("layers", [](M& m) -> std::int64_t& { return m.layers; }, "", 1, 100000,
                 "Transformer blocks."),
        "required (unless preset: gives it)"));
    s.field(computed_default(
        count<M>("hidden", [](M& m) -> std::int64_t& { return m.hidden; }, "", 1, kBig,
                 "Model (residual stream) width."),
        "required (unless preset: gives it)"));
    s.field(computed_default(
        count<M>("heads", [](M& m) -> std::int64_t& { return m.heads; }, "", 1, 65536,
                 "Query attention heads."),
        "required (unless preset: gives it)"));
    s.field(computed_default(
        count<M>("kv_heads", [](M& m) -> std::int64_t& { return m.kv_heads; }, "", 1, 65536,
                 "Key/value heads (grouped-query attention); must divide heads."),
        "heads"));
    s.field(computed_default(
        count<M>("head_dim", [](M& m) -> std::int64_t& { return m.head_dim; }, "", 1, 65536,
                 "Width of one attention head."),
        "hidden / heads"));
    s.field(computed_default(
        count<M>("ffn_hidden", [](M& m) -> std::int64_t& { return m.ffn_hidden; }, "", 1, kBig,
                 "Inner width of the dense MLP (for MoE models: of the leading dense layers)."),
        "required (unless preset: gives it)"));
    s.field(computed_default(
        count<M>("vocab", [](M& m) -> std::int64_t& { return m.vocab; }, "", 1, kBig,
                 "Vocabulary size."),
        "required (unless preset: gives it)"));
    s.field(computed_default(
        choice<M, workload::MlpKind>("mlp", [](M& m) -> workload::MlpKind& { return m.mlp; }, "",
                                     "MLP type: SwiGLU (gate, up, down) or GELU (up, down)."),
        "swiglu"));
    s.field(computed_default(
        choice<M, workload::NormKind>("norm",
                                      [](M& m) -> workload::NormKind& { return m.norm; }, "",
                                      "Normalisation layers."),
        "rmsnorm"));
    s.field(computed_default(
        choice<M, workload::PositionKind>(
            "position", [](M& m) -> workload::PositionKind& { return m.position; }, "",
            "Position encoding: rotary, or a learned table of max_positions rows."),
        "rope"));
    s.field(computed_default(
        count<M>("max_positions", [](M& m) -> std::int64_t& { return m.max_positions; }, "", 1,
                 kBig, "Longest sequence the model accepts (needed for learned positions)."),
        "unbounded"));
    s.field(computed_default(
        boolean<M>("tied_embeddings", [](M& m) -> bool& { return m.tied_embeddings; }, "",
                   "The output projection shares the token embedding."),
        "false"));
    s.field(computed_default(boolean<M>("bias", [](M& m) -> bool& { return m.bias; }, "",
                                        "Linear layers have biases (GPT-3)."),
                             "false"));
    s.field(computed_default(
        choice<M, workload::AttentionKind>(
            "attention", [](M& m) -> workload::AttentionKind& { return m.attention; }, "",
            "Grouped-query (also plain multi-head) or multi-head latent attention."),
        "gqa"));
    s.section("mla", "Multi-head latent attention dimensions (attention: mla).");
    s.field(computed_default(
        count<M>("mla.q_lora_rank", [](M& m) -> std::int64_t& { return m.mla.q_lora_rank; }, "",
                 0, kBig, "Rank of the query projection (0: no low-rank query projection)."),
        "0"));
    s.field(computed_default(
        count<M>("mla.kv_lora_rank", [](M& m) -> std::int64_t& { return m.mla.kv_lora_rank; },
                 "", 1, kBig, "Rank of the compressed key/value projection."),
        "512"));
    s.field(computed_default(count<M>("mla.qk_nope_head_dim",
                                      [](M& m) -> std::int64_t& {
                                          return m.mla.qk_nope_head_dim;
                                      },
                                      "", 1, 65536, "Per-head query/key width without rope."),
                             "128"));
    s.field(computed_default(count<M>("mla.qk_rope_head_dim",
                                      [](M& m) -> std::int64_t& {
                                          return m.mla.qk_rope_head_dim;
                                      },
                                      "", 0, 65536, "Per-head rotary query/key width."),
                             "64"));
    s.field(computed_default(
        count<M>("mla.v_head_dim", [](M& m) -> std::int64_t& { return m.mla.v_head_dim; }, "",
                 1, 65536, "Per-head value width."),
        "128"));
    s.section("moe", "Mixture of experts (absent: a dense model).");
    s.field(computed_default(
        count<M>("moe.experts", [](M& m) -> std::int64_t& { return m.moe.experts; }, "", 0,
                 65536, "Routed experts per MoE layer (0: dense)."),
        "0"));
    s.field(computed_default(
        count<M>("moe.top_k", [](M& m) -> std::int64_t& { return m.moe.top_k; }, "", 1, 65536,
                 "Experts each token is routed to."),
        "1"));
    s.field(computed_default(count<M>("moe.shared_experts",
                                      [](M& m) -> std::int64_t& { return m.moe.shared_experts; },
                                      "", 0, 65536, "Always-active shared experts."),
                             "0"));
    s.field(computed_default(count<M>("moe.expert_ffn_hidden",
                                      [](M& m) -> std::int64_t& {
                                          return m.moe.expert_ffn_hidden;
                                      },
                                      "", 1, kBig, "Inner width of one expert's MLP."),
                             "ffn_hidden"));
    s.field(computed_default(count<M>("moe.first_dense_layers",
                                      [](M& m) -> std::int64_t& {
                                          return m.moe.first_dense_layers;
                                      },
                                      "", 0, 100000,
                                      "Leading layers with a dense MLP instead of experts."),
                             "0"));
    s.section("published", "Published parameter counts, for comparison in describe model.");
    s.field(computed_default(
        count<M>("published.parameters",
                 [](M& m) -> std::int64_t& { return m.published_parameters; }, "", 0, kBig * 1000000,
                 "Published total parameter count (e.g. 70.6B)."),
        "none"));
    s.field(computed_default(count<M>("published.active_parameters",
                                      [](M& m) -> std::int64_t& {
                                          return m.published_active_parameters;
                                      },
                                      "", 0, kBig * 1000000,
                                      "Published active parameters per token (MoE)."),
                             "none"));
    return s;
}

} // namespace

const Schema<M>& model_schema() {
    static const Schema<M> s = build();
    return s;
}

} // namespace trnsim::config::detail
