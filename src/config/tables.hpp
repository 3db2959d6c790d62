// The schema tables and the loaders they call (private to the config module).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/topology/fabric_spec.hpp"
#include "trnsim/workload/model.hpp"

#include "schema.hpp"

#include <string>

namespace trnsim::config::detail {

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
                     const std::string& path, const SourceLocation& referenced_at);

// The reliability section (reliability_schema.cpp).
const Schema<reliability::FailureSpec>& failure_schema();
/// Adds the reliability.* keys, and the simulation keys of the run simulation.
void add_reliability_keys(Schema<ScenarioSpec>& s);
void add_run_keys(Schema<ScenarioSpec>& s);
/// Merges the preset named by reliability.preset into the scenario's reliability mapping (the
/// scenario's keys win) and records where the merged values came from.
void merge_reliability_preset(YAML::Node root, Context& ctx);

} // namespace trnsim::config::detail
