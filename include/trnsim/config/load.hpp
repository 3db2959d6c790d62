// Loading scenarios and presets.
//
// Presets are found under a data directory: topologies/chips/<name>.yaml for chips and
// scenarios/models/<name>.yaml for models. The directory is $TRNSIM_DATA_DIR when set, else the
// source tree trnsim was built from. A reference that contains '/' or ends in .yaml is a file
// path instead, relative to the scenario's directory.
//
// Every function throws InputError (file, line, column, key path) on bad input.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/topology/fabric_spec.hpp"
#include "trnsim/workload/model.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace trnsim::config {

/// The preset data directory in use.
std::filesystem::path data_dir();

/// Reads and validates a scenario. Each override is "key.path=value", where value is YAML
/// ("8", "2.9TB/s", "{tp: 8, pp: 2}") and goes through the same validation as the file;
/// "key.path=null" removes the key, so its default applies.
ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

/// Same, from YAML text (`name` is used in error locations and as the default scenario name).
ScenarioSpec load_scenario_text(const std::string& text, const std::string& name,
                                const std::vector<std::string>& overrides = {});

/// A chip preset by name ("trn2") or file path.
compute::ChipSpec load_chip(const std::string& name_or_path);

/// The data file behind a chip preset name or file path (InputError at "chip" if none).
std::filesystem::path chip_file(const std::string& name_or_path);

/// The file behind a preset name or file path, found as scenarios find it: a path is read
/// beside the file that names it (`beside`, by default the working directory), then as given;
/// a name is looked for beside it, in $TRNSIM_DATA_DIR, the working directory, the installed
/// data (<prefix>/share/trnsim beside <prefix>/bin/trnsim) and the build's source tree, in that
/// order, each under topologies/chips, scenarios/models or topologies. InputError when none
/// has it.
enum class PresetKind { chip, model, fabric };
std::filesystem::path preset_file(PresetKind kind, const std::string& name_or_path,
                                  const std::filesystem::path& beside = {});

/// The directories a preset name is looked for in, in order (duplicates removed): `beside`
/// (the scenario's directory), $TRNSIM_DATA_DIR, the working directory, the installed data,
/// the build's data.
std::vector<std::filesystem::path> preset_roots(const std::filesystem::path& beside);

/// A model preset by name ("llama3-70b") or file path.
workload::ModelSpec load_model(const std::string& name_or_path);

/// A fabric preset by name ("trn2-ultracluster", from topologies/) or file path; checked
/// against the chip it names.
topology::FabricSpec load_fabric(const std::string& name_or_path);

/// Preset names available in the data directory.
std::vector<std::string> fabric_presets();
std::vector<std::string> chip_presets();
std::vector<std::string> model_presets();

/// docs/scenario-schema.md, generated from the schema tables.
std::string schema_markdown();

} // namespace trnsim::config
