// The schema tables and the loaders they call (private to the config module).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/topology/fabric_spec.hpp"
#include "trnsim/core/input_file.hpp"
#include "trnsim/workload/model.hpp"

#include "schema.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::config::detail {

/// Chip, fabric and model presets loaded for the scenarios built from one base file (the
/// points of a sweep, a plan's finalists), by file: parsing the same chip file again for every
/// point was most of the time of validating a sweep. An entry is reused only while every file
/// it was read from still holds the text it was read with (each is read again, which is cheap;
/// parsing is not), so the result is the same as loading afresh. Thread-safe.
class PresetCache {
public:
    /// The spec cached under `key` (kind and file), else `load(inner)`: `inner` is `ctx`
    /// collecting what the load reads (Context::note_read). The files read are noted in
    /// `ctx` either way.
    template <class Spec, class Load>
    Spec get(const std::string& key, const Context& ctx, Load load);

private:
    struct Entry {
        std::vector<std::pair<std::string, std::string>> files; ///< path, text when read
        std::shared_ptr<const void> spec;
    };
    std::mutex mutex_;
    std::map<std::string, Entry> entries_;
};

/// `load(ctx)`, through ctx.presets when the context has a cache.
template <class Spec, class Load>
Spec cached_preset(const std::string& key, const Context& ctx, Load load) {
    return ctx.presets != nullptr ? ctx.presets->get<Spec>(key, ctx, load) : load(ctx);
}

const Schema<ScenarioSpec>& scenario_schema();
const Schema<compute::ChipSpec>& chip_schema();
const Schema<workload::ModelSpec>& model_schema();
const Schema<topology::FabricSpec>& fabric_schema();

/// Resolves a preset name or file reference to a path, or throws InputError at `path`.
std::filesystem::path find_preset(const std::string& ref, const char* kind_dir,
                                  const char* kind_name, const Context& ctx,
                                  const std::string& path, const SourceLocation& loc);

/// Loads a chip preset or file (reference written at `path`/`loc` in the current document).
compute::ChipSpec load_chip_ref(const std::string& ref, const Context& ctx,
                                const std::string& path, const SourceLocation& loc);

/// Loads a model from a scalar reference or an inline mapping (optionally `preset:` based).
workload::ModelSpec load_model_node(const YAML::Node& node, const std::string& path,
                                    const SourceLocation& loc, const Context& ctx, int depth);

/// Cross-key checks of a model, with key paths under `prefix`.
void validate_model(workload::ModelSpec& m, const std::string& prefix, const Context& ctx,
                    const SourceLocation& loc);
void validate_chip(const compute::ChipSpec& c, const Context& ctx, const SourceLocation& loc);

/// Loads a fabric preset (topologies/<name>.yaml) or file and checks it against its chip.
topology::FabricSpec load_fabric_ref(const std::string& ref, const Context& ctx,
                                     const std::string& path, const SourceLocation& loc);

/// One YAML document parsed from text, or why not: a syntax error, or more than one
/// document (yaml-cpp's Load would silently keep only the first).
struct YamlDocument {
    YAML::Node node;   ///< null for an empty text
    std::string error; ///< empty when the text is one document
    YAML::Mark mark;   ///< where the error is
};
YamlDocument load_one_document(const std::string& text);

/// load_one_document, with an error thrown as an InputError located in `file`.
YAML::Node parse_yaml(const std::string& text, const std::string& file);

/// Reads a YAML file (read_input_file: regular files within the size limit only; `what` names
/// the kind in messages: "model", "chip") and parses it with parse_yaml. Problems with the
/// file itself are reported at `path`/`referenced_at`, where it was named.
YAML::Node read_yaml(const std::filesystem::path& file, const std::string& what,
                     const std::string& path, const SourceLocation& referenced_at,
                     const Context& ctx);

// The reliability section (reliability_schema.cpp).
const Schema<reliability::FailureSpec>& failure_schema();
/// Adds the reliability.* keys, and the simulation keys of the run simulation.
void add_reliability_keys(Schema<ScenarioSpec>& s);
void add_run_keys(Schema<ScenarioSpec>& s);

// workload.type: inference (serving_schema.cpp): workload.serving, workload.requests and
// workload.slo; the fleet's simulation keys; output.requests.
void add_serving_keys(Schema<ScenarioSpec>& s);
void add_serving_simulation_keys(Schema<ScenarioSpec>& s);
void add_serving_output_keys(Schema<ScenarioSpec>& s);
/// A request rate: "20/s", "1200/min", "3/h" or a plain number per second; > 0 and at most
/// 1e9/s (as workload.requests.arrival.poisson.rate reads it). InputError at `p`.
double read_rate_per_s(const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                       const Context& ctx);
/// Merges the preset named by reliability.preset into the scenario's reliability mapping (the
/// scenario's keys win) and records where the merged values came from.
void merge_reliability_preset(YAML::Node root, Context& ctx);

template <class Spec, class Load>
Spec PresetCache::get(const std::string& key, const Context& ctx, Load load) {
    std::optional<Entry> cached;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (auto it = entries_.find(key); it != entries_.end()) {
            cached = it->second;
        }
    }
    if (cached) {
        bool same = true;
        for (const auto& [path, text] : cached->files) {
            same = same && input_file_problem(path).empty() &&
                   read_input_file(path, "preset") == text;
        }
        if (same) {
            for (const auto& [path, text] : cached->files) {
                ctx.note_read(path, text);
            }
            return *static_cast<const Spec*>(cached->spec.get());
        }
    }
    std::vector<std::string> paths;
    Entry e;
    Context inner = ctx;
    inner.files_read = &paths;
    inner.texts_read = &e.files;
    Spec spec = load(static_cast<const Context&>(inner));
    for (const auto& [path, text] : e.files) {
        ctx.note_read(path, text);
    }
    e.spec = std::make_shared<const Spec>(spec);
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_[key] = std::move(e);
    return spec;
}

} // namespace trnsim::config::detail
