// A model's cross-key checks (validate_model) and loading a model: a preset, a file, or an
// inline mapping (optionally based on a preset).
#include "load_ref.hpp"
#include "tables.hpp"

#include <filesystem>
#include <string>

namespace trnsim::config::detail {

namespace fs = std::filesystem;

void validate_model(workload::ModelSpec& m, const std::string& prefix, const Context& ctx,
                    const SourceLocation& loc) {
    const auto key = [&](const std::string& k) { return prefix.empty() ? k : prefix + "." + k; };
    const auto at = [&](const std::string& k) {
        const SourceLocation l = ctx.sources ? ctx.sources->find(key(k)) : SourceLocation{};
        return l.known() ? l : loc;
    };
    const auto need = [&](std::int64_t v, const char* k, const char* what) {
        if (v <= 0) {
            throw InputError(key(k), std::string("required key is missing (") + what + ")", loc);
        }
    };
    need(m.layers, "layers", "transformer blocks");
    need(m.hidden, "hidden", "model width");
    need(m.heads, "heads", "attention heads");
    need(m.ffn_hidden, "ffn_hidden", "MLP inner width");
    need(m.vocab, "vocab", "vocabulary size");
    if (m.kv_heads == 0) {
        m.kv_heads = m.heads;
    }
    if (m.attention == workload::AttentionKind::gqa && m.heads % m.kv_heads != 0) {
        throw InputError(key("kv_heads"),
                         std::to_string(m.kv_heads) + " key/value heads must divide the " +
                             std::to_string(m.heads) + " query heads",
                         at("kv_heads"));
    }
    if (m.head_dim == 0) {
        if (m.hidden % m.heads != 0) {
            throw InputError(key("head_dim"),
                             "hidden (" + std::to_string(m.hidden) + ") is not a multiple of heads (" +
                                 std::to_string(m.heads) + "): give head_dim",
                             at("heads"));
        }
        m.head_dim = m.hidden / m.heads;
    }
    if (m.position == workload::PositionKind::learned && m.max_positions <= 0) {
        throw InputError(key("max_positions"), "learned positions need max_positions",
                         at("position"));
    }
    if (m.is_moe()) {
        if (m.moe.expert_ffn_hidden == 0) {
            m.moe.expert_ffn_hidden = m.ffn_hidden;
        }
        if (m.moe.top_k > m.moe.experts) {
            throw InputError(key("moe.top_k"),
                             "top_k = " + std::to_string(m.moe.top_k) + " exceeds the " +
                                 std::to_string(m.moe.experts) + " experts",
                             at("moe.top_k"));
        }
        if (m.moe.first_dense_layers >= m.layers) {
            throw InputError(key("moe.first_dense_layers"),
                             "must be below the " + std::to_string(m.layers) + " layers",
                             at("moe.first_dense_layers"));
        }
    }
}

namespace {

workload::ModelSpec load_model_mapping(const YAML::Node& map, const Context& ctx,
                                       const SourceLocation& loc, int depth, std::string name) {
    workload::ModelSpec m;
    if (map.IsMap()) {
        const YAML::Node preset = map["preset"];
        if (preset.IsDefined()) {
            const std::string p = ctx.full("preset");
            m = load_model_node(preset, p, ctx.locate(p, preset.Mark()), ctx, depth + 1);
            name = m.name;
        }
    }
    model_schema().load(m, map, ctx, loc);
    if (m.name.empty()) {
        m.name = name;
    }
    validate_model(m, ctx.prefix, ctx, loc);
    return m;
}

} // namespace

workload::ModelSpec load_model_node(const YAML::Node& node, const std::string& path,
                                    const SourceLocation& loc, const Context& ctx, int depth) {
    if (depth > 8) {
        throw InputError(path, "model presets refer to each other too deeply (a cycle?)", loc);
    }
    if (node.IsScalar()) {
        const std::string ref = node.Scalar();
        const fs::path file = find_preset(ref, "scenarios/models", "model", ctx, path, loc);
        const std::string name = fs::path(ref).stem().string();
        return cached_preset<workload::ModelSpec>(
            "model:" + file.string() + ":" + name + ":" + std::to_string(depth), ctx,
            [&](const Context& in) {
                const YAML::Node root = read_yaml(file, "model", path, loc, in);
                SourceMap model_sources;
                const Context c = preset_context(file, in, model_sources);
                return load_model_mapping(root, c, {c.file, 1, 1}, depth, name);
            });
    }
    if (node.IsMap()) {
        Context c = ctx;
        c.prefix = path;
        return load_model_mapping(node, c, loc, depth, "inline");
    }
    throw InputError(path,
                     "expected a model preset name (such as llama3-70b), a model file, or a "
                     "mapping of model keys",
                     loc);
}

} // namespace trnsim::config::detail
