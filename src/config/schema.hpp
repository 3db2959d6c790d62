// A declarative schema over YAML documents (private to the config module).
//
// One table per kind of file (scenario, chip, model) lists every key: its dotted path, type,
// default, allowed range and documentation, and how to parse and store it. The same table
//   - walks a document, rejecting unknown keys with a "did you mean" suggestion and duplicates,
//   - parses each value with the unit parsers and checks its range,
//   - applies documented defaults for absent keys (defaults go through the same parser),
//   - records where every value came from (SourceMap) for later semantic errors,
//   - produces the resolved document (input plus defaults, in table order), and
//   - renders docs/scenario-schema.md.
// Every error is an InputError carrying FILE:LINE:COL and the key path.
#pragma once

#include "trnsim/core/error.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace trnsim::config::detail {

class PresetCache; // tables.hpp

/// Where the document being read comes from and how to name its keys.
struct Context {
    std::string file;                 ///< shown in error locations
    std::string prefix;               ///< key path of the document's root inside the scenario
    std::filesystem::path base_dir;   ///< relative file references resolve against this
    std::filesystem::path data_dir;   ///< presets: topologies/chips, scenarios/models
    /// Key paths overridden on the command line, with the --set origin to report instead.
    std::map<std::string, SourceLocation> overrides;
    /// Key paths whose values were merged in from another file (a reliability preset): their
    /// YAML marks point into that file.
    std::map<std::string, std::string> merged_from;
    SourceMap* sources = nullptr;
    /// Receives the path of every file read for the document (presets, a failure trace), so
    /// the outputs of a run can be checked against them; nullptr: not collected.
    std::vector<std::string>* files_read = nullptr;
    /// Receives the path and text of every file read (what PresetCache compares); nullptr:
    /// not collected.
    std::vector<std::pair<std::string, std::string>>* texts_read = nullptr;
    /// Presets already loaded for other scenarios of the same base file (a sweep's points);
    /// nullptr: load every preset afresh.
    PresetCache* presets = nullptr;

    void note_read(const std::filesystem::path& read, const std::string& text) const {
        if (files_read != nullptr) {
            files_read->push_back(read.string());
        }
        if (texts_read != nullptr) {
            texts_read->emplace_back(read.string(), text);
        }
    }

    std::string full(const std::string& rel) const {
        if (prefix.empty()) {
            return rel;
        }
        return rel.empty() ? prefix : prefix + "." + rel;
    }
    /// The location of a value: the --set origin if the path (or a parent) was overridden,
    /// else the YAML mark in this file.
    SourceLocation locate(const std::string& full_path, const YAML::Mark& mark) const;
};

/// The text of a scalar node, or an InputError saying what it is instead.
std::string scalar_text(const YAML::Node& n, const std::string& path, const SourceLocation& loc);

/// "a.b.c" -> {"a", "b", "c"}.
std::vector<std::string> split_key_path(const std::string& path);

/// Sets keys[i..] below `node` to `value`, creating mappings on the way (yaml-cpp's
/// Node::operator= rebinds shared nodes, so this walks by recursion with fresh handles).
void set_key_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
                  const YAML::Node& value);

/// Closest candidate by edit distance, or "" when none is close.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// Parses one value into a target document struct.
template <class T>
using Apply = std::function<void(T& out, const YAML::Node& value, const std::string& path,
                                 const SourceLocation& loc, const Context& ctx)>;

/// One row of a schema table: a section or a key.
template <class T>
struct Entry {
    std::string path;
    bool is_section = false;
    std::string type;          ///< for docs: "integer", "bytes", ...
    std::string default_value; ///< YAML text applied when absent ("" = none applied)
    std::string default_doc;   ///< for docs (defaults to default_value)
    std::string range;         ///< for docs and messages
    std::string doc;
    bool required = false;
    Apply<T> apply;
    /// For values that are documents of their own (a list of mappings): the resolved form of
    /// a given value (defaults filled in) and the documentation rows of its keys.
    std::function<YAML::Node(const YAML::Node&)> resolve;
    std::function<std::string()> element_rows;
};

template <class T>
class Schema {
public:
    using Entry = detail::Entry<T>;

    explicit Schema(std::string title) : title_(std::move(title)) {}

    Schema& section(const std::string& path, const std::string& doc) {
        Entry e;
        e.path = path;
        e.is_section = true;
        e.doc = doc;
        add(std::move(e));
        return *this;
    }

    Schema& field(Entry e) {
        add(std::move(e));
        return *this;
    }

    /// Exactly one of `paths` must be given (reported at `where`).
    Schema& exactly_one(std::vector<std::string> paths, std::string where) {
        exclusive_.push_back({std::move(paths), std::move(where)});
        return *this;
    }

    const std::vector<Entry>& entries() const { return entries_; }
    const std::string& title() const { return title_; }

    /// The row of `path` (a section or a key), or nullptr.
    const Entry* find(const std::string& path) const {
        const auto it = index_.find(path);
        return it == index_.end() ? nullptr : &entries_[it->second];
    }

    /// The names directly below a section ("" = the top level), in table order.
    std::vector<std::string> children(const std::string& section_path) const {
        const auto it = children_.find(section_path);
        return it == children_.end() ? std::vector<std::string>{} : it->second;
    }

    /// Reads `root` (a mapping) into `out`. `root_loc` is where errors about the whole document
    /// point (a missing required key, for example).
    void load(T& out, const YAML::Node& root, const Context& ctx,
              const SourceLocation& root_loc) const {
        std::set<std::string> present;
        if (!root.IsDefined() || root.IsNull()) {
            // An empty document: only defaults (and errors for required keys).
        } else if (!root.IsMap()) {
            throw InputError(ctx.prefix, "expected a mapping of keys, got " + kind(root),
                             ctx.locate(ctx.prefix, root.Mark()));
        } else {
            walk(out, root, "", ctx, present);
        }
        for (const auto& [paths, where] : exclusive_) {
            std::vector<std::string> given;
            for (const auto& p : paths) {
                if (present.count(p)) {
                    given.push_back(p);
                }
            }
            if (given.size() != 1) {
                std::string list;
                for (const auto& p : paths) {
                    list += (list.empty() ? "" : " or ") + ctx.full(p);
                }
                const std::string full = ctx.full(given.empty() ? where : given.back());
                const SourceLocation loc =
                    ctx.sources ? ctx.sources->find(full) : SourceLocation{};
                throw InputError(full,
                                 given.empty() ? "give one of " + list
                                               : "give only one of " + list + ", not both",
                                 loc.known() ? loc : root_loc);
            }
        }
        for (const auto& e : entries_) {
            if (e.is_section || present.count(e.path)) {
                continue;
            }
            if (e.required && !in_exclusive(e.path)) {
                const std::string parent = parent_of(e.path);
                SourceLocation loc = ctx.sources ? ctx.sources->find(ctx.full(parent)) : root_loc;
                if (!loc.known()) {
                    loc = root_loc;
                }
                throw InputError(ctx.full(e.path), "required key is missing (" + e.doc + ")",
                                 loc);
            }
            if (!e.default_value.empty()) {
                const YAML::Node def = YAML::Load(e.default_value);
                e.apply(out, def, ctx.full(e.path), root_loc, ctx);
            }
        }
    }

    /// The input with every absent defaulted key filled in, in table order.
    YAML::Node resolved(const YAML::Node& input) const {
        YAML::Node out(YAML::NodeType::Map);
        for (const auto& e : entries_) {
            if (e.is_section) {
                continue;
            }
            const YAML::Node given = lookup(input, e.path);
            if (given.IsDefined() && !given.IsNull()) {
                set_path(out, e.path, e.resolve ? e.resolve(given) : YAML::Clone(given));
            } else if (!e.default_value.empty()) {
                set_path(out, e.path, YAML::Load(e.default_value));
            }
        }
        return out;
    }

    /// A Markdown table of every key.
    std::string markdown() const {
        std::string md = "| key | type | default | allowed | description |\n";
        md += "|---|---|---|---|---|\n";
        return md + rows("");
    }

    /// The table's rows, each key path prefixed with `prefix` (rows of a list's elements).
    std::string rows(const std::string& prefix) const {
        std::string md;
        for (const auto& e : entries_) {
            if (e.is_section) {
                md += "| **`" + prefix + e.path + "`** | section | | | " + e.doc + " |\n";
                continue;
            }
            std::string def;
            if (e.required) {
                def = "required";
            } else if (!e.default_doc.empty()) {
                def = e.default_doc; // prose: "the chip's cores.lnc_default"
            } else if (!e.default_value.empty()) {
                def = "`" + e.default_value + "`";
            } else {
                def = "—";
            }
            md += "| `" + prefix + e.path + "` | " + e.type + " | " + def + " | " + e.range +
                  " | " + e.doc + " |\n";
            if (e.element_rows) {
                md += e.element_rows();
            }
        }
        return md;
    }

private:
    static std::string parent_of(const std::string& path) {
        const auto cut = path.rfind('.');
        return cut == std::string::npos ? "" : path.substr(0, cut);
    }

    static std::string kind(const YAML::Node& n) {
        if (n.IsSequence()) {
            return "a list";
        }
        if (n.IsMap()) {
            return "a mapping";
        }
        if (n.IsNull()) {
            return "nothing";
        }
        return "the value '" + n.Scalar() + "'";
    }

    // Const lookups never insert keys.
    static YAML::Node lookup(const YAML::Node& node, const std::vector<std::string>& keys,
                             std::size_t i) {
        if (!node.IsMap()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        const YAML::Node next = node[keys[i]];
        if (!next.IsDefined()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        return i + 1 == keys.size() ? next : lookup(next, keys, i + 1);
    }

    static YAML::Node lookup(const YAML::Node& root, const std::string& path) {
        return lookup(root, split_key_path(path), 0);
    }

    static void set_path(YAML::Node& root, const std::string& path, const YAML::Node& value) {
        set_key_path(root, split_key_path(path), 0, value);
    }

    bool in_exclusive(const std::string& path) const {
        for (const auto& [paths, where] : exclusive_) {
            for (const auto& p : paths) {
                if (p == path) {
                    return true;
                }
            }
        }
        return false;
    }

    void add(Entry e) {
        index_[e.path] = entries_.size();
        const std::string parent = parent_of(e.path);
        children_[parent].push_back(e.path.substr(parent.empty() ? 0 : parent.size() + 1));
        entries_.push_back(std::move(e));
    }

    void walk(T& out, const YAML::Node& map, const std::string& rel_prefix, const Context& ctx,
              std::set<std::string>& present) const {
        std::set<std::string> seen;
        for (auto it = map.begin(); it != map.end(); ++it) {
            // Copies: the iterator yields a temporary pair, so references would dangle.
            const YAML::Node key_node = it->first;
            const YAML::Node value = it->second;
            const std::string parent_full = ctx.full(rel_prefix);
            if (!key_node.IsScalar()) {
                throw InputError(parent_full, "keys must be plain names",
                                 ctx.locate(parent_full, key_node.Mark()));
            }
            const std::string key = key_node.Scalar();
            const std::string rel = rel_prefix.empty() ? key : rel_prefix + "." + key;
            const std::string full = ctx.full(rel);
            const SourceLocation key_loc = ctx.locate(full, key_node.Mark());
            if (key.find('.') != std::string::npos) {
                // A dotted key would name the same value as a nested one, and the run and
                // the resolved scenario could each take a different one of the two.
                throw InputError(full,
                                 "a key is one name: write '" + key +
                                     "' as nested mappings (dotted key paths are for --set "
                                     "and the keys of sweep and plan files)",
                                 key_loc);
            }
            if (!seen.insert(key).second) {
                throw InputError(full, "duplicate key", key_loc);
            }
            const auto found = index_.find(rel);
            if (found == index_.end()) {
                unknown_key(key, rel_prefix, full, key_loc, ctx);
            }
            const Entry& e = entries_[found->second];
            const bool has_mark = !value.Mark().is_null() && value.IsDefined() && !value.IsNull();
            const SourceLocation loc = has_mark ? ctx.locate(full, value.Mark()) : key_loc;
            if (ctx.sources) {
                ctx.sources->add(full, loc);
            }
            present.insert(rel);
            if (e.is_section) {
                if (value.IsNull()) {
                    continue; // an empty section: all defaults
                }
                if (!value.IsMap()) {
                    throw InputError(full, "is a section: expected a mapping of keys, got " +
                                               kind(value),
                                     loc);
                }
                walk(out, value, rel, ctx, present);
                continue;
            }
            e.apply(out, value, full, loc, ctx);
        }
    }

    [[noreturn]] void unknown_key(const std::string& key, const std::string& rel_prefix,
                                  const std::string& full, const SourceLocation& loc,
                                  const Context& ctx) const {
        std::vector<std::string> siblings;
        if (auto c = children_.find(rel_prefix); c != children_.end()) {
            siblings = c->second;
        }
        std::string msg = "unknown key '" + key + "'";
        const std::string guess = closest(key, siblings);
        if (!guess.empty()) {
            msg += "; did you mean '" + guess + "'?";
        } else {
            std::string list;
            for (const auto& s : siblings) {
                list += (list.empty() ? "" : ", ") + s;
            }
            const std::string where = ctx.full(rel_prefix);
            msg += "; allowed " + (where.empty() ? std::string("at the top level")
                                                 : "in " + where) +
                   ": " + list;
        }
        throw InputError(full, msg, loc);
    }

    std::string title_;
    std::vector<Entry> entries_;
    std::map<std::string, std::size_t> index_;
    std::map<std::string, std::vector<std::string>> children_;
    std::vector<std::pair<std::vector<std::string>, std::string>> exclusive_;
};

} // namespace trnsim::config::detail
