// The keys of workload.type: inference (docs/scenario-schema.md, docs/serving.md):
// workload.serving (how a replica holds the model), workload.requests (sizes, arrivals,
// prefixes), workload.slo, and the serving fleet's simulation and output keys. The token
// distributions and arrival processes are small mappings of their own, read here by hand
// with a location for every value; the request trace is read and checked at load.
#include "trnsim/core/input_file.hpp"

#include "fields.hpp"
#include "tables.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace trnsim::config::detail {

using S = ScenarioSpec;
using serving::ArrivalSpec;
using serving::TokenDistribution;

namespace fs = std::filesystem;

namespace {

serving::ServingSpec& srv(S& s) { return s.inference.serving; }
serving::RequestSpec& req(S& s) { return s.inference.requests; }

constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;

/// Where `n` (at `path`) is, recorded for later messages; `fallback` when it has no mark.
SourceLocation at(const YAML::Node& n, const std::string& path, const SourceLocation& fallback,
                  const Context& ctx) {
    SourceLocation loc = n.IsDefined() && !n.Mark().is_null() ? ctx.locate(path, n.Mark())
                                                              : SourceLocation{};
    if (!loc.known()) {
        loc = fallback;
    }
    if (ctx.sources != nullptr) {
        ctx.sources->add(path, loc);
    }
    return loc;
}

/// The keys of a small mapping, each checked against `allowed` (the first message names them).
void check_keys(const YAML::Node& map, const std::string& path, const SourceLocation& loc,
                const Context& ctx, std::initializer_list<const char*> allowed) {
    std::vector<std::string> names(allowed.begin(), allowed.end());
    std::vector<std::string> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const YAML::Node key = it->first;
        const std::string k = key.IsScalar() ? key.Scalar() : std::string();
        // YAML keeps both of a repeated key and a lookup takes the first: refused, as in
        // every other mapping of a scenario.
        if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
            throw InputError(path + "." + k, "duplicate key", at(key, path + "." + k, loc, ctx));
        }
        seen.push_back(k);
        bool ok = false;
        for (const auto& a : names) {
            ok = ok || a == k;
        }
        if (!ok) {
            std::string list;
            for (const auto& a : names) {
                list += (list.empty() ? "" : ", ") + a;
            }
            const std::string guess = closest(k, names);
            throw InputError(path + "." + k,
                             "unknown key '" + k + "'" +
                                 (guess.empty() ? "; allowed: " + list
                                                : "; did you mean '" + guess + "'?"),
                             at(key, path + "." + k, loc, ctx));
        }
    }
}

double number_at(const YAML::Node& n, const std::string& path, const SourceLocation& loc,
                 const Context& ctx, double lo, double hi, const std::string& range) {
    const SourceLocation where = at(n, path, loc, ctx);
    return parse_checked<double>(
        n, path, where, parse_real, [&](double x) { return x >= lo && x <= hi; }, range);
}

std::int64_t tokens_at(const YAML::Node& n, const std::string& path, const SourceLocation& loc,
                       const Context& ctx, std::int64_t lo) {
    const SourceLocation where = at(n, path, loc, ctx);
    return parse_checked<std::int64_t>(
        n, path, where, parse_count, [&](std::int64_t x) { return x >= lo && x <= kMaxTokens; },
        range_text(lo, kMaxTokens));
}

const YAML::Node required_key(const YAML::Node& map, const char* key, const std::string& path,
                              const SourceLocation& loc, const std::string& example) {
    const YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull()) {
        throw InputError(path + "." + key, "required key is missing (" + example + ")", loc);
    }
    return v;
}

/// A token count: a number, `trace`, or {normal|lognormal: {mean, sd}} | {uniform: [lo, hi]}
/// | {empirical: [...]} | {fixed: N} | {trace: true}, with optional min and max.
TokenDistribution read_tokens(const YAML::Node& n, const std::string& p,
                              const SourceLocation& loc, const Context& ctx) {
    TokenDistribution d;
    const char* forms = "a number, trace, or a mapping such as {lognormal: {mean: 1000, sd: "
                        "500}, max: 8192}, {normal: {mean, sd}}, {uniform: [100, 2000]} or "
                        "{empirical: [128, 512, 2048]}";
    if (n.IsScalar()) {
        if (n.Scalar() == "trace") {
            d.kind = TokenDistribution::Kind::trace;
            return d;
        }
        d.kind = TokenDistribution::Kind::fixed;
        d.a = static_cast<double>(tokens_at(n, p, loc, ctx, 1));
        return d;
    }
    if (!n.IsMap()) {
        throw InputError(p, std::string("expected ") + forms, loc);
    }
    check_keys(n, p, loc, ctx, {"fixed", "normal", "lognormal", "uniform", "empirical", "trace",
                                "min", "max"});
    int kinds = 0;
    for (const char* k : {"fixed", "normal", "lognormal", "uniform", "empirical", "trace"}) {
        kinds += n[k].IsDefined() ? 1 : 0;
    }
    if (kinds != 1) {
        throw InputError(p,
                         std::string(kinds == 0 ? "gives no distribution" : "gives more than one "
                                                                              "distribution") +
                             ": expected " + forms,
                         loc);
    }
    if (const YAML::Node v = n["fixed"]; v.IsDefined()) {
        d.kind = TokenDistribution::Kind::fixed;
        d.a = static_cast<double>(tokens_at(v, p + ".fixed", loc, ctx, 1));
    }
    for (const char* k : {"normal", "lognormal"}) {
        const YAML::Node v = n[k];
        if (!v.IsDefined()) {
            continue;
        }
        const std::string kp = p + "." + k;
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsMap()) {
            throw InputError(kp, "expected {mean: TOKENS, sd: TOKENS}", kl);
        }
        check_keys(v, kp, kl, ctx, {"mean", "sd"});
        d.kind = std::string(k) == "normal" ? TokenDistribution::Kind::normal
                                            : TokenDistribution::Kind::lognormal;
        d.a = number_at(required_key(v, "mean", kp, kl, "tokens"), kp + ".mean", kl, ctx, 1.0,
                        static_cast<double>(kMaxTokens), "1 to 2^24");
        d.b = number_at(required_key(v, "sd", kp, kl, "tokens"), kp + ".sd", kl, ctx, 0.0,
                        static_cast<double>(kMaxTokens), "0 to 2^24");
    }
    if (const YAML::Node v = n["uniform"]; v.IsDefined()) {
        const std::string kp = p + ".uniform";
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsSequence() || v.size() != 2) {
            throw InputError(kp, "expected [LOW, HIGH] tokens", kl);
        }
        d.kind = TokenDistribution::Kind::uniform;
        d.a = static_cast<double>(tokens_at(v[0], kp + "[0]", kl, ctx, 1));
        d.b = static_cast<double>(tokens_at(v[1], kp + "[1]", kl, ctx, 1));
        if (d.b < d.a) {
            throw InputError(kp, "HIGH must be at least LOW", kl);
        }
    }
    if (const YAML::Node v = n["empirical"]; v.IsDefined()) {
        const std::string kp = p + ".empirical";
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsSequence() || v.size() == 0) {
            throw InputError(kp, "expected a non-empty list of token counts, drawn with equal "
                                 "weight",
                             kl);
        }
        d.kind = TokenDistribution::Kind::empirical;
        for (std::size_t i = 0; i < v.size(); ++i) {
            d.values.push_back(
                tokens_at(v[i], kp + "[" + std::to_string(i) + "]", kl, ctx, 1));
        }
    }
    if (const YAML::Node v = n["trace"]; v.IsDefined()) {
        const std::string kp = p + ".trace";
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsScalar() || !parse_bool(v.Scalar())) {
            throw InputError(kp, "expected true (sizes from workload.requests.arrival.trace)",
                             kl);
        }
        d.kind = TokenDistribution::Kind::trace;
    }
    if (const YAML::Node v = n["min"]; v.IsDefined()) {
        d.min = tokens_at(v, p + ".min", loc, ctx, 1);
    }
    if (const YAML::Node v = n["max"]; v.IsDefined()) {
        d.max = tokens_at(v, p + ".max", loc, ctx, 1);
        if (d.max < d.min) {
            throw InputError(p + ".max", "must be at least min (" + std::to_string(d.min) + ")",
                             at(v, p + ".max", loc, ctx));
        }
    }
    return d;
}

Entry<S> tokens_entry(const std::string& path, TokenDistribution& (*ref)(S&),
                      const std::string& doc) {
    auto e = make_entry<S>(path, "tokens", "", "a number, trace, or a distribution mapping",
                           doc);
    e.default_doc = "required for inference";
    e.apply = [ref](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                    const Context& ctx) { ref(x) = read_tokens(n, p, loc, ctx); };
    return e;
}

/// "20/s", "1200/min" or "3/h": a rate needs its unit, as a duration does (a plain number
/// was taken as per second), and its number is not a percentage.
double parse_rate_per_s(const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                        const Context& ctx) {
    const SourceLocation where = at(n, p, loc, ctx);
    const std::string text = scalar_text(n, p, where);
    try {
        return parse_request_rate(text);
    } catch (const UnitError& err) {
        throw InputError(p, err.what(), where);
    }
}

/// {closed_loop: {concurrency: N}} | {poisson: {rate: R}} | {gamma: {rate: R, cv: C}} |
/// {trace: FILE, speedup: X}. The trace is read here (workload.requests.arrival.trace).
void read_arrival(S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                  const Context& ctx) {
    ArrivalSpec a;
    const char* forms = "{closed_loop: {concurrency: N}}, {poisson: {rate: 20/s}}, "
                        "{gamma: {rate: 20/s, cv: 2}} or {trace: FILE, speedup: 1}";
    if (!n.IsMap()) {
        throw InputError(p, std::string("expected one of ") + forms, loc);
    }
    check_keys(n, p, loc, ctx, {"closed_loop", "poisson", "gamma", "trace", "speedup"});
    int kinds = 0;
    for (const char* k : {"closed_loop", "poisson", "gamma", "trace"}) {
        kinds += n[k].IsDefined() ? 1 : 0;
    }
    if (kinds != 1) {
        throw InputError(p, std::string(kinds == 0 ? "gives no arrival process" : "gives more "
                                                                                   "than one "
                                                                                   "arrival "
                                                                                   "process") +
                                ": expected one of " + forms,
                         loc);
    }
    if (n["speedup"].IsDefined() && !n["trace"].IsDefined()) {
        throw InputError(p + ".speedup", "is for {trace: FILE}", at(n["speedup"], p + ".speedup",
                                                                     loc, ctx));
    }
    if (const YAML::Node v = n["closed_loop"]; v.IsDefined()) {
        const std::string kp = p + ".closed_loop";
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsMap()) {
            throw InputError(kp, "expected {concurrency: N} (requests in flight)", kl);
        }
        check_keys(v, kp, kl, ctx, {"concurrency"});
        a.kind = ArrivalSpec::Kind::closed_loop;
        const double concurrency =
            number_at(required_key(v, "concurrency", kp, kl, "requests in flight"),
                      kp + ".concurrency", kl, ctx, 1.0, 1e6, "1 to 10^6");
        if (concurrency != std::floor(concurrency)) {
            throw InputError(kp + ".concurrency", "must be a whole number of requests",
                             at(v["concurrency"], kp + ".concurrency", kl, ctx));
        }
        a.concurrency = static_cast<int>(concurrency);
    }
    for (const char* k : {"poisson", "gamma"}) {
        const YAML::Node v = n[k];
        if (!v.IsDefined()) {
            continue;
        }
        const bool gamma = std::string(k) == "gamma";
        const std::string kp = p + "." + k;
        const SourceLocation kl = at(v, kp, loc, ctx);
        if (!v.IsMap()) {
            throw InputError(kp, gamma ? "expected {rate: 20/s, cv: 2}" : "expected {rate: 20/s}",
                             kl);
        }
        if (gamma) {
            check_keys(v, kp, kl, ctx, {"rate", "cv"});
        } else {
            check_keys(v, kp, kl, ctx, {"rate"});
        }
        a.kind = gamma ? ArrivalSpec::Kind::gamma : ArrivalSpec::Kind::poisson;
        a.rate_per_s = parse_rate_per_s(required_key(v, "rate", kp, kl, "requests per second"),
                                        kp + ".rate", kl, ctx);
        if (gamma) {
            a.gamma_cv = number_at(required_key(v, "cv", kp, kl, "coefficient of variation"),
                                   kp + ".cv", kl, ctx, 0.01, 100.0, "0.01 to 100");
        }
    }
    if (const YAML::Node v = n["trace"]; v.IsDefined()) {
        const std::string kp = p + ".trace";
        const SourceLocation kl = at(v, kp, loc, ctx);
        a.kind = ArrivalSpec::Kind::trace;
        if (const YAML::Node sp = n["speedup"]; sp.IsDefined()) {
            a.speedup = number_at(sp, p + ".speedup", loc, ctx, 1e-6, 1e6, "1e-6 to 1e6");
        }
        const std::string ref = scalar_text(v, kp, kl);
        fs::path file(ref);
        std::error_code ec;
        if (file.is_relative() && fs::exists(ctx.base_dir / file, ec)) {
            file = ctx.base_dir / file;
        } else if (file.is_relative() && fs::exists(ctx.data_dir / "data" / file, ec)) {
            file = ctx.data_dir / "data" / file; // shipped: azure-llm-inference-2023/conv.csv
        }
        if (ref.empty() || !fs::exists(file, ec)) {
            throw InputError(kp,
                             "trace file '" + ref + "' not found (relative paths are read "
                             "beside the scenario, then in the project's data directory)",
                             kl);
        }
        const std::string text = read_input_file(file, "request trace", kp, kl);
        ctx.note_read(file, text);
        a.trace_file = file.string();
        try {
            x.trace = std::make_shared<const serving::AzureTrace>(
                serving::parse_azure_trace(text, ref, a.speedup));
        } catch (const InputError& err) {
            throw InputError(kp, err.message(), kl);
        }
    }
    req(x).arrival = a;
}

} // namespace

double read_rate_per_s(const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                       const Context& ctx) {
    return parse_rate_per_s(n, p, loc, ctx);
}

void add_serving_keys(Schema<S>& s) {
    s.section("workload.serving",
              "workload.type: inference: how one replica holds and runs the model "
              "(docs/serving.md).");
    s.field(integer<S>("workload.serving.tp", [](S& x) -> int& { return srv(x).tp; }, "1", 1,
                       1024,
                       "Ranks (logical NeuronCores) per replica; must divide the heads as "
                       "docs/serving.md says, and whole chips or a share of one."));
    s.field(integer<S>("workload.serving.ep", [](S& x) -> int& { return srv(x).ep; }, "1", 1,
                       1024, "Expert parallel degree inside a replica (MoE models); divides tp."));
    s.field(integer_or_auto<S>("workload.serving.replicas",
                               [](S& x) -> int& { return srv(x).replicas; }, "auto", 1,
                               1 << 24, "Replicas of the model (auto: as many as the cluster "
                                        "holds)."));
    s.field(integer<S>("workload.serving.max_batch",
                       [](S& x) -> int& { return srv(x).max_batch; }, "1", 1, 65536,
                       "Compiled decode batch: sequences decoded together per iteration "
                       "(continuous batching fills it)."));
    s.field(computed_default(count<S>("workload.serving.max_context",
                                      [](S& x) -> std::int64_t& {
                                          return srv(x).max_context;
                                      },
                                      "", 2, kMaxTokens,
                                      "Compiled maximum sequence length (prompt + output).",
                                      "2 to 2^24"),
                             "required for inference"));
    {
        auto e = make_entry<S>("workload.serving.buckets", "list of tokens or auto", "auto",
                               "ascending, the last equal to max_context",
                               "Compiled sequence-length buckets (Neuron pads to them); auto: "
                               "powers of two from 128, then max_context.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            srv(x).buckets.clear();
            if (n.IsScalar() && n.Scalar() == "auto") {
                return;
            }
            if (!n.IsSequence() || n.size() == 0) {
                throw InputError(p, "expected auto or a list of token counts such as "
                                    "[128, 512, 2048]",
                                 loc);
            }
            for (std::size_t i = 0; i < n.size(); ++i) {
                srv(x).buckets.push_back(
                    tokens_at(n[i], p + "[" + std::to_string(i) + "]", loc, ctx, 1));
            }
        };
        s.field(e);
    }
    {
        auto e = make_entry<S>("workload.serving.prefill_buckets", "list of tokens or none",
                               "none", "ascending, each at most max_context",
                               "Transformers NeuronX context-encoding buckets (a prompt pads "
                               "to one and attends to its own tokens); none: prefill uses "
                               "buckets (NxD Inference, vLLM).");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            srv(x).prefill_buckets.clear();
            if (n.IsScalar() && n.Scalar() == "none") {
                return;
            }
            if (!n.IsSequence() || n.size() == 0) {
                throw InputError(p, "expected none or a list of token counts such as "
                                    "[64, 256, 1024]",
                                 loc);
            }
            for (std::size_t i = 0; i < n.size(); ++i) {
                srv(x).prefill_buckets.push_back(
                    tokens_at(n[i], p + "[" + std::to_string(i) + "]", loc, ctx, 1));
            }
        };
        s.field(e);
    }
    s.field(count<S>("workload.serving.prefill_chunk",
                     [](S& x) -> std::int64_t& { return srv(x).prefill_chunk; }, "0", 0,
                     kMaxTokens,
                     "Chunked prefill: prompt tokens per iteration (0: each prompt whole)."));
    s.field(count<S>("workload.serving.kv_block",
                     [](S& x) -> std::int64_t& { return srv(x).kv_block; }, "32", 1, 65536,
                     "Paged KV cache block, tokens."));
    s.field(boolean<S>("workload.serving.prefix_caching",
                       [](S& x) -> bool& { return srv(x).prefix_caching; }, "false",
                       "Reuse the cached blocks of a shared prompt prefix."));
    {
        auto e = make_entry<S>("workload.serving.weights", "choice", "auto",
                               "auto, bf16, fp8, int8, mxfp8 or mxfp4",
                               "Storage of the weights (fp8 and int8 are 1 byte, dequantised "
                               "to workload.precision; mxfp8 and mxfp4 are microscaling "
                               "formats, 1 or 0.5 byte and a scale a block of 32, multiplied "
                               "at the MX rate on chips that have one: Trainium3); auto: "
                               "workload.precision.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            const std::string v = scalar_text(n, p, loc);
            if (v == "auto") {
                srv(x).weight_bytes = 0; // resolved from workload.precision
            } else if (v == "bf16") {
                srv(x).weight_bytes = 2;
            } else if (v == "fp8" || v == "int8") {
                srv(x).weight_bytes = 1;
            } else if (v == "mxfp8" || v == "mxfp4") {
                srv(x).weight_bytes = 1;
                srv(x).mx = v == "mxfp8" ? serving::MxFormat::mxfp8 : serving::MxFormat::mxfp4;
            } else {
                throw InputError(p,
                                 "unknown value '" + v +
                                     "'; allowed: auto, bf16, fp8, int8, mxfp8, mxfp4",
                                 loc);
            }
        };
        s.field(e);
    }
    {
        auto e = make_entry<S>("workload.serving.sparsity", "text", "dense",
                               "dense, 4:16, 4:12, 4:8, 2:8, 2:4, 1:4 or 1:2",
                               "Structured sparsity of the matmul weights, N:M (N of every M "
                               "kept; the NeuronCore-v3 patterns): the weights hold N/M of "
                               "their elements and their positions, and TensorE skips the rest "
                               "up to the chip's peak.sparse (Trainium2, Trainium3).");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            const std::string v = scalar_text(n, p, loc);
            static const std::pair<const char*, std::pair<int, int>> patterns[] = {
                {"dense", {0, 0}}, {"4:16", {4, 16}}, {"4:12", {4, 12}}, {"4:8", {4, 8}},
                {"2:8", {2, 8}},   {"2:4", {2, 4}},   {"1:4", {1, 4}},   {"1:2", {1, 2}}};
            for (const auto& [name, nm] : patterns) {
                if (v == name) {
                    srv(x).sparse_n = nm.first;
                    srv(x).sparse_m = nm.second;
                    return;
                }
            }
            throw InputError(p,
                             "unknown pattern '" + v +
                                 "'; allowed: dense, 4:16, 4:12, 4:8, 2:8, 2:4, 1:4, 1:2 (the "
                                 "NeuronCore-v3 patterns)",
                             loc);
        };
        s.field(e);
    }
    s.field(integer<S>("workload.serving.prefill_batch",
                       [](S& x) -> int& { return srv(x).prefill_batch; }, "1", 0, 65536,
                       "Sequences per compiled context-encoding graph (1: NxD Inference and "
                       "vLLM; 0: max_batch, Transformers NeuronX static batching)."));
    s.field(boolean<S>("workload.serving.materialized_attention",
                       [](S& x) -> bool& { return srv(x).materialized_attention; }, "false",
                       "Attention through HBM as separate operators (Transformers NeuronX up "
                       "to Neuron SDK 2.18) instead of a fused flash kernel."));
    s.field(integer<S>("workload.serving.collective_tiling",
                       [](S& x) -> int& { return srv(x).collective_tiling; }, "1", 1, 64,
                       "Tiles a context-encoding graph is split into along the tokens so that "
                       "one tile's collectives overlap the next tile's compute (NxD Inference's "
                       "cc_pipeline_tiling_factor: its library default is 2, AWS's Llama 3.3 70B "
                       "configurations use 1); 1: no overlap (also Transformers NeuronX)."));
    s.field(choice<S, serving::GqaLayout>(
        "workload.serving.gqa", [](S& x) -> serving::GqaLayout& { return srv(x).gqa; },
        "replicate_to_tp",
        "Key/value heads of a grouped-query model with fewer of them than tp ranks: one per "
        "rank (replicate_to_tp, NxD Inference's default) or repeated up to the query heads "
        "(convert_to_mha, Transformers NeuronX's fallback)."));
    s.field(choice<S, serving::RouterPolicy>(
        "workload.serving.router", [](S& x) -> serving::RouterPolicy& { return srv(x).router; },
        "least_loaded", "How the router picks a replica for a request."));
    s.field(quantity<S, Duration>(
        "workload.serving.router_latency",
        [](S& x) -> Duration& { return srv(x).router_latency; }, parse_duration, "duration",
        "1ms", Duration::zero(), Duration::from_seconds_ceil(10.0), true, "> 0, at most 10 s",
        "One-way latency between the router and a replica."));
    s.field(integer_or_auto<S>(
        "workload.serving.router_shards", [](S& x) -> int& { return srv(x).router_shards; },
        "auto", 1, 65536,
        "Independent routers, each owning a block of the UltraServers (else instances), every "
        "K-th request and every K-th closed-loop client; K > 1 needs a client per router (closed "
        "loop) and, disaggregated, prefill and decode replicas under every router, and runs a "
        "large fleet in parallel. auto: one router per 128 replicas (at least one), within "
        "those limits; it depends on the fleet only, so the results do not depend on the "
        "threads (docs/serving.md)."));
    s.section("workload.serving.speculative",
              "Speculative decoding: a draft model proposes k tokens, the target verifies them "
              "in one iteration.");
    {
        auto e = make_entry<S>("workload.serving.speculative.draft", "preset or file", "",
                               "a model preset or file",
                               "The draft model (llama3.2-1b).");
        e.default_doc = "required with speculative";
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            x.draft_ref = n.IsScalar() ? n.Scalar() : "inline";
            if (!srv(x).speculative) {
                srv(x).speculative.emplace();
            }
            srv(x).speculative->draft_ref = x.draft_ref;
            srv(x).speculative->draft = load_model_node(n, p, loc, ctx, 0);
        };
        s.field(e);
    }
    s.field(integer<S>("workload.serving.speculative.k",
                       [](S& x) -> int& {
                           if (!srv(x).speculative) {
                               srv(x).speculative.emplace();
                           }
                           return srv(x).speculative->k;
                       },
                       "", 1, 16, "Draft tokens per iteration."));
    s.field(real_list<S>("workload.serving.speculative.acceptance",
                         [](S& x) -> std::vector<double>& {
                             if (!srv(x).speculative) {
                                 srv(x).speculative.emplace();
                             }
                             return srv(x).speculative->acceptance;
                         },
                         "", 0.0, 1.0, "in [0, 1], not increasing",
                         "Per-position acceptance rates (vLLM's), k values."));
    // Documented as false without applying it: applying a default would create the section.
    s.field(computed_default(
        boolean<S>("workload.serving.speculative.fused",
                   [](S& x) -> bool& {
                       if (!srv(x).speculative) {
                           srv(x).speculative.emplace();
                       }
                       return srv(x).speculative->fused;
                   },
                   "false",
                   "Draft and target compiled into one graph (NxD Inference's "
                   "enable_fused_speculation): the k draft steps and the verification of an "
                   "iteration are one graph, paying the costs per graph once; false: the draft "
                   "runs as graphs of its own (vLLM Neuron's EAGLE-3 proposer)."),
        "false"));
    s.section("workload.serving.disaggregated",
              "Prefill and decode on separate replicas; the KV cache moves over the fabric.");
    s.field(integer<S>("workload.serving.disaggregated.prefill_replicas",
                       [](S& x) -> int& { return srv(x).disaggregated.prefill_replicas; }, "0", 0,
                       1 << 24, "Replicas that only prefill (0: not disaggregated)."));

    s.section("workload.requests", "workload.type: inference: the request stream.");
    s.field(tokens_entry(
        "workload.requests.input_tokens",
        [](S& x) -> TokenDistribution& { return req(x).input; },
        "Prompt tokens of a request: a number, trace (from the arrival trace) or a "
        "distribution ({normal|lognormal: {mean, sd}}, {uniform: [lo, hi]}, {empirical: [...]}, "
        "with optional min and max)."));
    s.field(tokens_entry("workload.requests.output_tokens",
                         [](S& x) -> TokenDistribution& { return req(x).output; },
                         "Tokens to generate, in the same forms as input_tokens."));
    {
        auto e = make_entry<S>("workload.requests.arrival", "mapping",
                               "{closed_loop: {concurrency: 1}}",
                               "closed_loop, poisson, gamma or trace",
                               "How requests arrive: closed-loop clients (N in flight, as "
                               "llmperf), Poisson or Gamma arrivals at a rate (20/s, 1200/min), "
                               "or an Azure LLM inference trace CSV replayed `speedup` times "
                               "faster (relative paths beside the scenario, then in data/).");
        e.apply = read_arrival;
        s.field(e);
    }
    s.field(count<S>("workload.requests.count",
                     [](S& x) -> std::int64_t& { return req(x).count; }, "", 1,
                     std::int64_t{1} << 32,
                     "Requests to issue (give count or duration; a trace alone: every row "
                     "once)."));
    s.field(quantity<S, Duration>(
        "workload.requests.duration", [](S& x) -> Duration& { return req(x).duration; },
        parse_duration, "duration", "", Duration::zero(),
        Duration::from_seconds_ceil(365.0 * 86400.0), true, "> 0, at most a year",
        "Arrivals stop after this much simulated time."));
    s.section("workload.requests.prefix", "Shared prompt prefixes (system prompts).");
    s.field(integer<S>("workload.requests.prefix.groups",
                       [](S& x) -> int& { return req(x).prefix.groups; }, "0", 0, 1 << 20,
                       "Distinct shared prefixes (0: none)."));
    s.field(count<S>("workload.requests.prefix.tokens",
                     [](S& x) -> std::int64_t& { return req(x).prefix.tokens; }, "0", 0,
                     kMaxTokens, "Tokens of each prefix, in front of the drawn input."));
    s.field(real<S>("workload.requests.prefix.fraction",
                    [](S& x) -> double& { return req(x).prefix.fraction; }, "1", 0.0, 1.0,
                    "0 to 1", "Fraction of requests that start with a prefix."));

    s.section("workload.slo", "workload.type: inference: the latency objective.");
    s.field(computed_default(
        quantity<S, Duration>("workload.slo.ttft",
                              [](S& x) -> Duration& { return x.inference.slo.ttft; },
                              parse_duration, "duration", "", Duration::zero(),
                              Duration::from_seconds_ceil(86400.0), true, "> 0",
                              "Time to first token a request must meet."),
        "required for inference"));
    s.field(computed_default(
        quantity<S, Duration>("workload.slo.tpot",
                              [](S& x) -> Duration& { return x.inference.slo.tpot; },
                              parse_duration, "duration", "", Duration::zero(),
                              Duration::from_seconds_ceil(86400.0), true, "> 0",
                              "Mean time per output token after the first a request must "
                              "meet."),
        "required for inference"));
}

void add_serving_simulation_keys(Schema<S>& s) {
    s.field(quantity<S, Duration>(
        "simulation.router_window",
        [](S& x) -> Duration& { return x.simulation.router_window; }, parse_duration,
        "duration", "0s", Duration::zero(), Duration::from_seconds_ceil(10.0), false,
        ">= 0, at most 10 s",
        "Serving fleet: the router's view window (0: exact). Longer windows run faster; the "
        "router then hears of finishes later (docs/serving.md)."));
    s.field(quantity<S, Duration>(
        "simulation.kv_sample", [](S& x) -> Duration& { return x.simulation.kv_sample; },
        parse_duration, "duration", "1s", Duration::zero(),
        Duration::from_seconds_ceil(86400.0), false, ">= 0",
        "Serving fleet: how often the KV cache use is sampled for /serving/kv (0: never)."));
    s.field(quantity<S, Bytes>(
        "simulation.max_memory", [](S& x) -> Bytes& { return x.simulation.max_memory; },
        parse_bytes, "bytes", "4GiB", Bytes(0), Bytes(std::int64_t{1} << 50), true, "> 0",
        "Serving fleet (every run of a sweep or plan too): the memory a run may be estimated "
        "to need (requests, replicas, KV samples, failure layout) before it is refused; raise "
        "it for larger runs (docs/serving.md, \"Bounds\")."));
}

void add_serving_output_keys(Schema<S>& s) {
    s.field(boolean<S>("output.requests", [](S& x) -> bool& { return x.output.requests; },
                       "true",
                       "Serving: write /serving/requests (one row per request); false keeps "
                       "only the summary figures."));
}

} // namespace trnsim::config::detail
