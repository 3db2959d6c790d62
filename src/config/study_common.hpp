// Internal to the config module: what the sweep and plan schema tables share (the scenario
// key paths a study file names, value lists, locations, the entries every study file has, and
// reading a study file's root). sweep_schema.cpp holds the sweep table and checks,
// study_schema.cpp the plan table and the value kinds of scenario keys.
#pragma once

#include "trnsim/config/study.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/input_file.hpp"

#include "fields.hpp"
#include "tables.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

namespace trnsim::config::study_files {

namespace fs = std::filesystem;
using detail::Context;
using detail::Entry;
using detail::Schema;

inline constexpr const char* kModelPrefix = "workload.model.";

/// The schema row of a scenario key: the scenario table's, or for keys of an inline model
/// (workload.model.layers) the model table's.
inline const std::string* entry_type(const std::string& path) {
    if (const auto* e = detail::scenario_schema().find(path); e != nullptr && !e->is_section) {
        return &e->type;
    }
    const std::string prefix = kModelPrefix;
    if (path.compare(0, prefix.size(), prefix) == 0) {
        if (const auto* e = detail::model_schema().find(path.substr(prefix.size()));
            e != nullptr && !e->is_section) {
            return &e->type;
        }
    }
    return nullptr;
}

inline bool starts_with(const std::string& s, const char* word) {
    const std::string w = word;
    return s.compare(0, w.size(), w) == 0;
}

inline std::string shortest(double v) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), res.ptr);
}

/// Flow-style YAML text of a node (a scalar stays as written, quoted when it must be).
inline std::string flow_text(const YAML::Node& n) {
    YAML::Emitter e;
    e.SetMapFormat(YAML::Flow);
    e.SetSeqFormat(YAML::Flow);
    e << n;
    return e.c_str();
}

inline std::string kind_text(const YAML::Node& n) {
    if (n.IsSequence()) {
        return "a list";
    }
    if (n.IsMap()) {
        return "a mapping";
    }
    if (!n.IsDefined() || n.IsNull()) {
        return "nothing";
    }
    return "the value '" + n.Scalar() + "'";
}

/// Reads a whole file, or throws InputError naming it.
inline std::string read_file(const std::string& path, const char* what) {
    return read_input_file(path, what);
}

inline YAML::Node parse_document(const std::string& text, const std::string& name, const char* what) {
    const YAML::Node root = detail::parse_yaml(text, name);
    if (!root.IsDefined() || root.IsNull()) {
        throw InputError("", std::string("the ") + what + " file is empty; it needs at least base",
                         {name, 1, 1});
    }
    if (!root.IsMap()) {
        throw InputError("", std::string("a ") + what + " file is a mapping of keys (base, ...)",
                         {name, 1, 1});
    }
    return root;
}

/// The deepest section of `table` above `rel` and the name in it closest to rel's next name.
template <class T>
std::pair<std::string, std::string> nearest_key(const Schema<T>& table, const std::string& rel) {
    std::string section = rel;
    std::string name = rel;
    while (true) {
        const auto cut = section.rfind('.');
        name = cut == std::string::npos ? section : section.substr(cut + 1);
        section = cut == std::string::npos ? "" : section.substr(0, cut);
        const auto* e = table.find(section);
        if (section.empty() || (e != nullptr && e->is_section)) {
            break;
        }
    }
    return {section, detail::closest(name, table.children(section))};
}

/// A scenario key path named in a study file: spelled as a key path and naming a scenario
/// key or section (or a key of an inline model). Unknown names get a "did you mean".
inline void check_scenario_key(const std::string& path, const std::string& where,
                        const SourceLocation& loc) {
    bool spelled = !path.empty() && path.front() != '.' && path.back() != '.' &&
                   path.find("..") == std::string::npos;
    for (char c : path) {
        spelled = spelled && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                              (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-');
    }
    if (!spelled) {
        throw InputError(where, "'" + path + "' is not a scenario key path such as "
                                "workload.parallelism.tp",
                         loc);
    }
    const auto& scenario = detail::scenario_schema();
    if (scenario.find(path) != nullptr) {
        return;
    }
    const std::string prefix = kModelPrefix;
    const bool model_key = path.compare(0, prefix.size(), prefix) == 0;
    const std::string rel = model_key ? path.substr(prefix.size()) : path;
    if (model_key && detail::model_schema().find(rel) != nullptr) {
        return;
    }
    const auto [section, guess] = model_key ? nearest_key(detail::model_schema(), rel)
                                            : nearest_key(scenario, rel);
    std::string msg = "'" + path + "' is not a scenario key";
    if (!guess.empty()) {
        msg += "; did you mean '" + (model_key ? prefix : std::string()) +
               (section.empty() ? std::string() : section + ".") + guess + "'?";
    }
    msg += " (docs/scenario-schema.md lists the keys)";
    throw InputError(where, msg, loc);
}

/// The location of a node's value (or of `fallback` when it has no mark).
inline SourceLocation where(const Context& ctx, const std::string& path, const YAML::Node& n,
                     const SourceLocation& fallback) {
    if (!n.IsDefined() || n.Mark().is_null()) {
        return fallback;
    }
    return ctx.locate(path, n.Mark());
}

/// One value per element of a non-empty list.
inline std::vector<SweepValue> value_list(const YAML::Node& n, const std::string& path,
                                   const SourceLocation& loc, const Context& ctx) {
    if (!n.IsSequence() || n.size() == 0) {
        throw InputError(path, "expected a non-empty list of values such as [8, 16, 32], got " +
                                   kind_text(n),
                         loc);
    }
    std::vector<SweepValue> values;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        const std::string item_path = path + "[" + std::to_string(i) + "]";
        if (item.IsNull()) {
            throw InputError(item_path, "has no value", where(ctx, item_path, item, loc));
        }
        values.push_back({flow_text(item), where(ctx, item_path, item, loc)});
    }
    return values;
}

/// Iterates a mapping of scenario key paths, checking each key; calls f(key path, value,
/// location of the key, location of the value).
template <class F>
void for_each_key_path(const YAML::Node& map, const std::string& path, const SourceLocation& loc,
                       const Context& ctx, const char* example, F f) {
    if (!map.IsMap()) {
        throw InputError(path, std::string("expected a mapping of scenario key paths such as ") +
                                   example + ", got " + kind_text(map),
                         loc);
    }
    std::map<std::string, bool> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
        const YAML::Node key = it->first;
        const YAML::Node value = it->second;
        if (!key.IsScalar()) {
            throw InputError(path, "keys must be scenario key paths",
                             where(ctx, path, key, loc));
        }
        const std::string k = key.Scalar();
        const std::string full = path + "." + k;
        const SourceLocation key_loc = where(ctx, full, key, loc);
        if (!seen.emplace(k, true).second) {
            throw InputError(full, "duplicate key", key_loc);
        }
        check_scenario_key(k, full, key_loc);
        f(k, value, key_loc, where(ctx, full, value, key_loc));
    }
}

// ---------------------------------------------------------------------------------------------
// Shared entries

/// base: the scenario file, resolved against the study file's directory.
template <class T>
Entry<T> base_entry(const char* what, const char* unit) {
    auto e = detail::make_entry<T>("base", "file", "", "a scenario .yaml file",
                                   std::string("The base scenario (relative to the ") + what +
                                       " file); every " + unit + " changes some of its keys.");
    e.required = true;
    e.apply = [](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                 const Context& ctx) {
        const std::string ref = detail::scalar_text(n, p, loc);
        fs::path file(ref);
        if (file.is_relative()) {
            file = ctx.base_dir / file;
        }
        if (const std::string problem = input_file_problem(file); !problem.empty()) {
            throw InputError(p, "scenario file '" + ref + "' " + problem + " (looked for '" +
                                    file.lexically_normal().string() + "')",
                             loc);
        }
        out.base = file.lexically_normal().string();
        out.base_origin = loc;
    };
    return e;
}

template <class T>
Entry<T> optional_seed(const char* doc) {
    auto e = detail::make_entry<T>("seed", "count", "", "0 to 2^53", doc);
    e.default_doc = "the base scenario's seed";
    e.apply = [](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                 const Context&) {
        constexpr std::int64_t kMax = std::int64_t{1} << 53;
        out.seed = detail::parse_checked<std::int64_t>(
            n, p, loc, parse_count, [](std::int64_t x) { return x >= 0 && x <= kMax; },
            "0 to 2^53");
    };
    return e;
}

template <class T>
Entry<T> optional_replications(const char* doc) {
    auto e = detail::make_entry<T>("replications", "integer", "", "1 to 100000", doc);
    e.default_doc = "the base scenario's simulation.replications";
    e.apply = [](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                 const Context&) {
        out.replications = static_cast<int>(detail::parse_checked<std::int64_t>(
            n, p, loc, parse_count, [](std::int64_t x) { return x >= 1 && x <= 100000; },
            "1 to 100000"));
    };
    return e;
}

template <class T>
Entry<T> output_file() {
    return detail::computed_default(
        detail::file_name<T>("output.file", [](T& x) -> std::string& { return x.output_file; },
                             "", "HDF5 results file (-o overrides it)."),
        "results/<name>.h5");
}

template <class T>
Entry<T> study_name() {
    return detail::computed_default(
        detail::text<T>("name", [](T& x) -> std::string& { return x.name; }, "",
                        "Name of the study, stored in the results."),
        "the file name without .yaml");
}

/// Reads a study file's root with its schema and fills the defaults every study file has
/// (name, output file); `sources` receives where each value came from.
template <class T>
T load_study_root(const Schema<T>& schema, const YAML::Node& root, const std::string& text,
                  const std::string& file, const fs::path& dir, SourceMap& sources) {
    T s;
    s.file = file;
    s.text = text;
    Context ctx;
    ctx.file = file;
    ctx.base_dir = dir;
    ctx.data_dir = data_dir();
    ctx.sources = &sources;
    schema.load(s, root, ctx, {file, 1, 1});
    if (s.name.empty()) {
        s.name = fs::path(file).stem().string();
    }
    if (s.output_file.empty()) {
        s.output_file = "results/" + s.name + ".h5";
    }
    const SourceLocation given = sources.find("output.file");
    s.output_origin = given.known() ? given : SourceLocation{file, 1, 1};
    return s;
}

/// The sweep table (sweep_schema.cpp).
const Schema<SweepSpec>& sweep_schema();

} // namespace trnsim::config::study_files
