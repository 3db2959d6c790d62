// Sweep files (include/trnsim/config/study.hpp): their schema table, the checks of a sweep
// and reading one.
#include "study_common.hpp"

namespace trnsim::config {

using namespace study_files;

namespace {

// ---------------------------------------------------------------------------------------------
// Sweep files

using SW = SweepSpec;

/// The distribution of one random key: {uniform: [lo, hi]}, {log_uniform: [lo, hi]} or
/// {choice: [a, b, ...]}.
RandomKey random_key(const std::string& key, const YAML::Node& n, const std::string& path,
                     const SourceLocation& loc, const Context& ctx) {
    RandomKey r;
    r.path = key;
    r.origin = loc;
    r.kind = value_kind(key);
    if (!n.IsMap() || n.size() != 1) {
        throw InputError(path, "expected one distribution: {uniform: [LOW, HIGH]}, "
                               "{log_uniform: [LOW, HIGH]} or {choice: [A, B, ...]}; got " +
                                   kind_text(n),
                         loc);
    }
    const std::string name = n.begin()->first.Scalar();
    const YAML::Node args = n.begin()->second;
    const std::string sub = path + "." + name;
    const SourceLocation args_loc = where(ctx, sub, args, loc);
    if (name == "choice") {
        r.distribution = Distribution::choice;
        r.choices = value_list(args, sub, args_loc, ctx);
        return r;
    }
    if (name == "uniform") {
        r.distribution = Distribution::uniform;
    } else if (name == "log_uniform") {
        r.distribution = Distribution::log_uniform;
    } else {
        const std::string guess = detail::closest(name, {"uniform", "log_uniform", "choice"});
        throw InputError(sub,
                         "unknown distribution '" + name + "' (uniform, log_uniform, choice)" +
                             (guess.empty() ? "" : "; did you mean '" + guess + "'?"),
                         where(ctx, sub, n.begin()->first, loc));
    }
    if (r.kind == ValueKind::text) {
        throw InputError(sub, "'" + key + "' is not a number of the scenario (its values are "
                              "words or files): draw it with {choice: [...]}",
                         args_loc);
    }
    if (!args.IsSequence() || args.size() != 2) {
        throw InputError(sub, "expected [LOW, HIGH], got " + kind_text(args), args_loc);
    }
    double bounds[2] = {0.0, 0.0};
    for (std::size_t i = 0; i < 2; ++i) {
        const std::string item = sub + "[" + std::to_string(i) + "]";
        const SourceLocation item_loc = where(ctx, item, args[i], args_loc);
        if (!args[i].IsScalar()) {
            throw InputError(item, "expected a value of '" + key + "', got " + kind_text(args[i]),
                             item_loc);
        }
        const auto v = numeric_value(key, args[i].Scalar());
        if (!v) {
            throw InputError(item, "'" + args[i].Scalar() + "' is not a value of '" + key +
                                       "' (" + *entry_type(key) + ")",
                             item_loc);
        }
        bounds[i] = *v;
    }
    r.low = bounds[0];
    r.high = bounds[1];
    if (r.low > r.high) {
        throw InputError(sub, "LOW must not exceed HIGH", args_loc);
    }
    if (r.distribution == Distribution::log_uniform && !(r.low > 0.0)) {
        throw InputError(sub, "log_uniform needs LOW > 0", args_loc);
    }
    return r;
}

RandomAxis& random_of(SW& s) {
    if (!s.random) {
        s.random.emplace();
    }
    return *s.random;
}

Schema<SW> build_sweep() {
    Schema<SW> s("Sweep");
    s.field(base_entry<SW>("sweep", "point"));
    s.field(study_name<SW>());
    s.field(optional_seed<SW>("Base seed of the derived seeds (each run's seed is a hash of it, "
                              "the point's swept values and the replicate)."));
    s.field(optional_replications<SW>(
        "Runs per point; each runs one replication with its own derived seed, and the "
        "results give each point's mean and 95% confidence interval."));
    {
        auto e = detail::make_entry<SW>("set", "mapping of key paths", "", "scenario keys",
                                        "Scenario keys set for every point, before the swept "
                                        "ones: {simulation.duration: 30d}.");
        e.default_doc = "none";
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context& ctx) {
            for_each_key_path(n, p, loc, ctx, "{simulation.duration: 30d}",
                              [&](const std::string& key, const YAML::Node& v,
                                  const SourceLocation& key_loc, const SourceLocation& v_loc) {
                                  if (v.IsNull()) {
                                      throw InputError(p + "." + key, "has no value", key_loc);
                                  }
                                  out.fixed.push_back({key, flow_text(v), v_loc});
                              });
        };
        s.field(e);
    }
    s.section("sweep", "What varies: every combination of the grid keys, the zip groups and "
                       "the random samples.");
    {
        auto e = detail::make_entry<SW>(
            "sweep.grid", "mapping of key paths to lists", "", "scenario keys",
            "Each key is an axis: {cluster.ultraservers: [64, 128, 256]}. A value replaces the "
            "key's value in the base scenario (a mapping replaces the whole mapping).");
        e.default_doc = "none";
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context& ctx) {
            for_each_key_path(n, p, loc, ctx, "{cluster.ultraservers: [8, 16]}",
                              [&](const std::string& key, const YAML::Node& v,
                                  const SourceLocation& key_loc, const SourceLocation& v_loc) {
                                  SweepAxis axis;
                                  axis.keys.push_back(
                                      {key, value_list(v, p + "." + key, v_loc, ctx), key_loc});
                                  out.axes.push_back(std::move(axis));
                              });
        };
        s.field(e);
    }
    {
        auto e = detail::make_entry<SW>(
            "sweep.zip", "list of mappings of key paths to lists", "", "equal lengths per group",
            "Each group is one axis whose lists are taken side by side: [{workload.parallelism.tp: "
            "[32, 64], workload.parallelism.pp: [4, 2]}].");
        e.default_doc = "none";
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context& ctx) {
            if (!n.IsSequence()) {
                throw InputError(p, "expected a list of groups such as [{a.b: [1, 2], c.d: [3, "
                                    "4]}], got " +
                                        kind_text(n),
                                 loc);
            }
            for (std::size_t g = 0; g < n.size(); ++g) {
                const std::string gp = p + "[" + std::to_string(g) + "]";
                const SourceLocation g_loc = where(ctx, gp, n[g], loc);
                SweepAxis axis;
                for_each_key_path(n[g], gp, g_loc, ctx, "{a.b: [1, 2], c.d: [3, 4]}",
                                  [&](const std::string& key, const YAML::Node& v,
                                      const SourceLocation& key_loc, const SourceLocation& v_loc) {
                                      SweepKey k{key, value_list(v, gp + "." + key, v_loc, ctx),
                                                 key_loc};
                                      if (!axis.keys.empty() && k.values.size() != axis.size()) {
                                          throw InputError(
                                              gp + "." + key,
                                              "has " + std::to_string(k.values.size()) +
                                                  " values but " + axis.keys.front().path +
                                                  " has " + std::to_string(axis.size()) +
                                                  ": the lists of a zip group are taken side by "
                                                  "side and must have equal lengths",
                                              v_loc);
                                      }
                                      axis.keys.push_back(std::move(k));
                                  });
                if (axis.keys.empty()) {
                    throw InputError(gp, "an empty zip group", g_loc);
                }
                out.axes.push_back(std::move(axis));
            }
        };
        s.field(e);
    }
    s.section("sweep.random", "Random points: `samples` draws of every key below.");
    {
        auto e = detail::make_entry<SW>("sweep.random.samples", "count", "", "1 to 100000",
                                        "Points drawn (required with sweep.random).");
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context&) {
            random_of(out).samples = detail::parse_checked<std::int64_t>(
                n, p, loc, parse_count, [](std::int64_t x) { return x >= 1 && x <= 100000; },
                "1 to 100000 (the points of a sweep)");
            random_of(out).origin = loc;
        };
        s.field(e);
    }
    {
        auto e = detail::make_entry<SW>("sweep.random.seed", "count", "", "0 to 2^53",
                                        "Seed of the draws (the same seed draws the same "
                                        "points).");
        e.default_doc = "`1`";
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context&) {
            constexpr std::int64_t kMax = std::int64_t{1} << 53;
            random_of(out).seed = detail::parse_checked<std::int64_t>(
                n, p, loc, parse_count, [](std::int64_t x) { return x >= 0 && x <= kMax; },
                "0 to 2^53");
        };
        s.field(e);
    }
    {
        auto e = detail::make_entry<SW>(
            "sweep.random.keys", "mapping of key paths to distributions", "",
            "uniform, log_uniform, choice",
            "{reliability.checkpoint.interval: {log_uniform: [10min, 4h]}, "
            "workload.parallelism.recompute: {choice: [selective, full]}}; uniform and "
            "log_uniform draw numbers of the key's unit (integers for integer keys).");
        e.default_doc = "none";
        e.apply = [](SW& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context& ctx) {
            RandomAxis& r = random_of(out);
            for_each_key_path(n, p, loc, ctx, "{a.b: {uniform: [1, 8]}}",
                              [&](const std::string& key, const YAML::Node& v,
                                  const SourceLocation&, const SourceLocation& v_loc) {
                                  r.keys.push_back(random_key(key, v, p + "." + key, v_loc, ctx));
                              });
        };
        s.field(e);
    }
    s.section("output", "Where results go.");
    s.field(output_file<SW>());
    return s;
}

} // namespace

namespace study_files {

const Schema<SW>& sweep_schema() {
    static const Schema<SW> s = build_sweep();
    return s;
}

} // namespace study_files

namespace {

/// Paths equal or one below the other ("workload.parallelism" and "workload.parallelism.tp").
bool overlapping(const std::string& a, const std::string& b) {
    const auto below = [](const std::string& x, const std::string& y) {
        return x.size() > y.size() && x.compare(0, y.size(), y) == 0 && x[y.size()] == '.';
    };
    return a == b || below(a, b) || below(b, a);
}

void check_sweep(SweepSpec& s, const SourceLocation& top) {
    if (s.random) {
        if (s.random->samples == 0) {
            throw InputError("sweep.random.samples", "required with sweep.random",
                             s.random->origin.known() ? s.random->origin : top);
        }
        if (s.random->keys.empty()) {
            throw InputError("sweep.random.keys", "required with sweep.random: the keys to draw",
                             s.random->origin.known() ? s.random->origin : top);
        }
    }
    // A key may vary on one axis only, and not also be fixed by `set`.
    struct Named {
        std::string path;
        SourceLocation origin;
        const char* where;
    };
    std::vector<Named> seen;
    for (const auto& o : s.fixed) {
        seen.push_back({o.path, o.origin, "set"});
    }
    const auto add = [&](const std::string& path, const SourceLocation& origin, const char* w) {
        for (const auto& other : seen) {
            if (overlapping(other.path, path)) {
                throw InputError(path,
                                 other.path == path
                                     ? "is already given in " + std::string(other.where) +
                                           " at " + other.origin.str()
                                     : "overlaps '" + other.path + "' (" + other.where + ", " +
                                           other.origin.str() +
                                           "): a key and a key below it cannot both vary",
                                 origin);
            }
        }
        seen.push_back({path, origin, w});
    };
    for (const auto& axis : s.axes) {
        for (const auto& k : axis.keys) {
            add(k.path, k.origin, "sweep");
        }
    }
    if (s.random) {
        for (const auto& k : s.random->keys) {
            add(k.path, k.origin, "sweep.random.keys");
        }
    }
}


SweepSpec load_sweep_root(const YAML::Node& root, const std::string& text,
                          const std::string& file, const fs::path& dir) {
    SourceMap sources;
    SweepSpec s = load_study_root(sweep_schema(), root, text, file, dir, sources);
    check_sweep(s, {file, 1, 1});
    return s;
}

} // namespace

SweepSpec load_sweep(const std::string& path) {
    const std::string text = read_file(path, "sweep");
    return load_sweep_root(parse_document(text, path, "sweep"), text, path,
                           fs::path(path).parent_path());
}

SweepSpec load_sweep_text(const std::string& text, const std::string& name) {
    return load_sweep_root(parse_document(text, name, "sweep"), text, name, fs::current_path());
}

} // namespace trnsim::config
