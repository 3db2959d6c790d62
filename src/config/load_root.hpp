// Loading a scenario from its parsed document (private to the config module): load.cpp's
// single-workload form, and tenants_load.cpp's `tenants:` form, which loads each tenant as a
// single-workload scenario of its own.
#pragma once

#include "trnsim/config/study.hpp"

#include "tables.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace trnsim::config::detail {

/// The scenario of `root` (overrides applied first). A root with `tenants` goes to
/// load_tenants.
ScenarioSpec load_root(YAML::Node root, const std::string& file,
                       const std::filesystem::path& base_dir, const std::string& default_name,
                       const std::vector<Override>& overrides, PresetCache* presets = nullptr,
                       const LoadOptions& options = {});

/// The `tenants:` form of a scenario (overrides already applied to `root`).
ScenarioSpec load_tenants(YAML::Node root, const std::string& file,
                          const std::filesystem::path& base_dir, const std::string& default_name,
                          PresetCache* presets, const LoadOptions& options);

} // namespace trnsim::config::detail
