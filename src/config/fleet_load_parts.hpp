// The `fleet:` form's parts (docs/fleet.md), private to config: its pools, its services, its
// job trace and its resolved text. load_fleet (fleet_load.cpp) composes them.
#pragma once

#include "document.hpp"

#include "trnsim/config/scenario.hpp"
#include "trnsim/core/units.hpp"

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::config::detail {

/// The highest priority a job class, a service or a trace's job may have.
constexpr std::int64_t kMaxPriority = 1'000'000;

/// A duration at `path`: a number with its unit, not negative.
Duration fleet_duration(const YAML::Node& n, const std::string& path, const std::string& file);

/// A pool as read: the scenario's own cluster (`main`) or an entry of fleet.pools. Each has a
/// document root of its own for its entries: the scenario's, with the pool's hardware and
/// cost (the nodes as written, so their places are the pool's).
struct PoolDraft {
    std::string name;
    SharedCluster cl;
    std::int64_t spares = 0;
    YAML::Node root;
    std::string path; ///< fleet.pools[k]; empty for main
    YAML::Node node;
    std::vector<std::pair<std::string, std::string>> sections_at;
    std::ptrdiff_t first_entry = -1; ///< its first class or service (classes first)
};

/// The pools: `main` (the scenario's cluster `cl` with the fleet's `spares`), then
/// fleet.pools of the fleet section `f`.
std::vector<PoolDraft> read_pools(const YAML::Node& croot, const YAML::Node& f,
                                  const SharedCluster& cl, std::int64_t spares,
                                  const std::string& file);

/// fleet.services[i] without its scenario (the caller loads its workload on one domain).
FleetService read_service(const YAML::Node& n, const std::string& path, const std::string& file,
                          std::int64_t grantable, const char* unit,
                          const std::map<std::string, std::int64_t>& quota_of);

/// The job trace: a header line naming the columns (submit and class required; steps, duration
/// and priority optional, in any order), then one job a line; `#` starts a comment. Every
/// problem is located at its line and column in the trace file.
std::vector<FleetTraceJob> read_job_trace(const std::filesystem::path& file,
                                          const std::string& text,
                                          const std::vector<FleetJobClass>& classes);

/// The fleet scenario `spec` as resolved (its first main entry's shared sections, the whole
/// cluster `cl`, the fleet's settings, each pool, class and service with its resolved workload
/// and reliability), entries read back on `threads` threads.
std::string resolved_fleet_yaml(const ScenarioSpec& spec, const std::vector<PoolDraft>& pools,
                                const SharedCluster& cl, int threads,
                                const std::string& fleet_reliability_yaml);

} // namespace trnsim::config::detail
