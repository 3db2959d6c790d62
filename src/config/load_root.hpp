// Loading a scenario from its parsed document (private to the config module): load.cpp's
// single-workload form, and tenants_load.cpp's `tenants:` form, which loads each tenant as a
// single-workload scenario of its own.
#pragma once

#include "trnsim/config/study.hpp"

#include "tables.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::config::detail {

/// The scenario of `root` (overrides applied first). A root with `tenants` goes to
/// load_tenants.
ScenarioSpec load_root(YAML::Node root, const std::string& file,
                       const std::filesystem::path& base_dir, const std::string& default_name,
                       const std::vector<Override>& overrides, PresetCache* presets = nullptr,
                       const LoadOptions& options = {});

/// One entry of a list form (a tenant, a fleet's job class), loaded as a scenario of its own
/// from `document`. Its errors: its workload and reliability keys under `prefix`
/// (tenants[1].workload...), its cluster's at `cluster_key` (located at `cluster_at`, the
/// message ending "(WHAT NAME CLUSTER_NOTE)"), others with "(in WHAT NAME)".
struct ListEntry {
    std::string name;
    std::string prefix;
    std::string what;
    YAML::Node document;
    std::string cluster_key;
    std::string cluster_note;
    SourceLocation cluster_at;
    /// Records where the document's keys are in the file (entry_places): its copied nodes
    /// have no place of their own.
    std::function<void(SourceMap&)> places;
    /// Sections of the entry's document given elsewhere in the file (a fleet pool's hardware
    /// and cost): their keys are reported under the key path of the place they come from
    /// ({"hardware", "fleet.pools[1].hardware"}: fleet.pools[1].hardware.chip).
    std::vector<std::pair<std::string, std::string>> sections_at = {};
};

/// The threads a list form's entries load on: the scenario's simulation.threads when it is a
/// number in range, else every hardware thread; at most one per entry.
int entry_threads(const std::vector<ListEntry>& entries);

/// Loads every entry (into `loaded`, in order; side by side on entry_threads) and returns
/// the shared part: the first entry's scenario with the union of the entries' input files,
/// each entry's warnings on its own keys (under its prefix), and the warnings on shared keys
/// that every entry gives.
ScenarioSpec load_entries(const std::vector<ListEntry>& entries, const std::string& file,
                          const std::filesystem::path& base_dir, PresetCache* presets,
                          const LoadOptions& options, std::vector<ScenarioSpec>& loaded);

/// The `tenants:` form of a scenario (overrides already applied to `root`).
ScenarioSpec load_tenants(YAML::Node root, const std::string& file,
                          const std::filesystem::path& base_dir, const std::string& default_name,
                          PresetCache* presets, const LoadOptions& options);

/// The `fleet:` form of a scenario (overrides already applied to `root`; docs/fleet.md).
ScenarioSpec load_fleet(YAML::Node root, const std::string& file,
                        const std::filesystem::path& base_dir, const std::string& default_name,
                        PresetCache* presets, const LoadOptions& options);

} // namespace trnsim::config::detail
