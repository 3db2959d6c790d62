// ScenarioSpec: a whole scenario as plain, validated values. The config module builds it from
// YAML (load.hpp); every other module receives only these values, never YAML.
//
// The sections mirror the scenario file (docs/scenario-schema.md is the reference for every key,
// its unit, default and range).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/topology/fabric_spec.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/reliability/spec.hpp"
#include "trnsim/topology/cluster.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::config {

enum class WorkloadType { training, collective };
enum class Fidelity { analytic };

const char* to_string(Fidelity f);

struct HardwareSpec {
    std::string chip_ref;     ///< the preset name or file as written
    compute::ChipSpec chip;   ///< the loaded chip description
    int lnc = 0;              ///< 0 until resolved: the chip's default
    Bytes hbm_reserve;        ///< per chip, kept free of the training job
};

/// workload.type: collective — the collective benchmark of trnsim collective as a scenario.
struct CollectiveScenario {
    network::CollectiveOp op = network::CollectiveOp::all_reduce;
    std::vector<double> sizes; ///< bytes per rank
    std::int64_t ranks = 0;    ///< 0: all
    network::Algorithm algorithm = network::Algorithm::automatic;
};

struct SimulationSpec {
    Fidelity fidelity = Fidelity::analytic;
    int threads = 0; ///< 0 = auto (all hardware threads)
    // The run simulation (a scenario with a reliability section):
    Duration duration;   ///< zero = until_done
    Duration time_limit; ///< until_done stops here at the latest
    int replications = 1;
};

struct CostSpec {
    Money instance_hour; ///< USD per instance-hour (default: the chip's on-demand price)
};

struct OutputSpec {
    std::string file; ///< HDF5 results path (default: results/<name>.h5)
};

struct ScenarioSpec {
    std::string name;
    std::int64_t seed = 1; ///< non-negative, at most 2^53
    HardwareSpec hardware;
    topology::ClusterSpec cluster;
    /// The fabric (cluster.fabric; default <chip>-ultracluster). Loaded when given or when
    /// the workload needs it (collective).
    std::string fabric_ref;
    topology::FabricSpec fabric;
    bool has_fabric = false;
    WorkloadType workload_type = WorkloadType::training;
    CollectiveScenario collective;
    std::string model_ref; ///< preset name, file, or "inline"
    workload::TrainingSpec training;
    reliability::ReliabilitySpec reliability; ///< enabled when the scenario has the section
    SimulationSpec simulation;
    CostSpec cost;
    OutputSpec output;

    /// The file it was read from, the scenario with every default filled in (YAML text, stored
    /// in results), and where each key's value came from (for error messages).
    std::string source_file;
    std::string resolved_yaml;
    SourceMap sources;
};

} // namespace trnsim::config
