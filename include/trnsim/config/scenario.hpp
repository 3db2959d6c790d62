// ScenarioSpec: a whole scenario as plain, validated values. The config module builds it from
// YAML (load.hpp); every other module receives only these values, never YAML.
//
// The sections mirror the scenario file (docs/scenario-schema.md is the reference for every key,
// its unit, default and range).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/network/collective_spec.hpp"
#include "trnsim/topology/fabric_spec.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/reliability/spec.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/serving/trace.hpp"
#include "trnsim/cluster/shape.hpp"
#include "trnsim/fleet/scheduler.hpp"
#include "trnsim/fleet/service.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::config {

enum class WorkloadType { training, collective, inference };
enum class Fidelity { analytic, step };
/// simulation.step_entities: one entity per tensor-parallel group, or per rank.
enum class StepEntityMode { tp_group, rank };
/// simulation.fabric_collectives: collectives between replicas as flows or in closed form.
enum class FabricCollectiveMode { flows, closed_form };
/// simulation.tp_collectives: collectives inside a tensor-parallel group in closed form or as
/// flows on the fabric.
enum class TpCollectiveMode { closed_form, flows };

constexpr std::array<EnumName<WorkloadType>, 3> enum_names(WorkloadType) {
    return {{
        {WorkloadType::training, "training"},
        {WorkloadType::collective, "collective"},
        {WorkloadType::inference, "inference"},
    }};
}
inline const char* to_string(WorkloadType v) { return enum_name(v); }

constexpr std::array<EnumName<StepEntityMode>, 2> enum_names(StepEntityMode) {
    return {{
        {StepEntityMode::tp_group, "tp_group"},
        {StepEntityMode::rank, "rank"},
    }};
}
inline const char* to_string(StepEntityMode v) { return enum_name(v); }

constexpr std::array<EnumName<FabricCollectiveMode>, 2> enum_names(FabricCollectiveMode) {
    return {{
        {FabricCollectiveMode::flows, "flows"},
        {FabricCollectiveMode::closed_form, "closed_form"},
    }};
}
inline const char* to_string(FabricCollectiveMode v) { return enum_name(v); }

constexpr std::array<EnumName<TpCollectiveMode>, 2> enum_names(TpCollectiveMode) {
    return {{
        {TpCollectiveMode::closed_form, "closed_form"},
        {TpCollectiveMode::flows, "flows"},
    }};
}
inline const char* to_string(TpCollectiveMode v) { return enum_name(v); }

constexpr std::array<EnumName<Fidelity>, 2> enum_names(Fidelity) {
    return {{
        {Fidelity::analytic, "analytic"},
        {Fidelity::step, "step"},
    }};
}
inline const char* to_string(Fidelity v) { return enum_name(v); }

/// A speed factor for chosen chips (hardware.speed.chips): exactly one selector is given (the
/// others stay -1): one chip, an inclusive range of chips, every chip of an instance, or of an
/// UltraServer (indices from 0, in the cluster's order).
struct ChipSpeed {
    std::int64_t chip = -1;
    std::vector<int> chips;        ///< [first, last]
    std::int64_t instance = -1;
    std::int64_t ultraserver = -1;
    double speed = 1.0;
};

/// Per-chip speed factors for stragglers (hardware.speed): 1 is nominal, 0.5 takes twice as
/// long. Drawn per chip from the seed: a normal spread around 1, then a fraction of slow
/// chips; explicit factors for listed chips replace the drawn ones.
struct SpeedSpec {
    double sd = 0.0;            ///< relative standard deviation of the normal spread
    double slow_fraction = 0.0; ///< fraction of chips that are slow
    double slow_factor = 0.8;   ///< speed of a slow chip
    std::vector<ChipSpeed> chips;
    bool any() const { return sd > 0.0 || slow_fraction > 0.0 || !chips.empty(); }
};

struct HardwareSpec {
    std::string chip_ref;     ///< the preset name or file as written
    compute::ChipSpec chip;   ///< the loaded chip description
    int lnc = 0;              ///< 0 until resolved: the chip's default
    Bytes hbm_reserve;        ///< per chip, kept free of the training job
    SpeedSpec speed;
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
    StepEntityMode step_entities = StepEntityMode::tp_group;
    FabricCollectiveMode fabric_collectives = FabricCollectiveMode::flows;
    TpCollectiveMode tp_collectives = TpCollectiveMode::closed_form;
    // The run simulation (a scenario with a reliability section):
    Duration duration;   ///< zero = until_done
    Duration time_limit; ///< until_done stops here at the latest
    int replications = 1;
    // A serving fleet (workload.type: inference):
    Duration router_window;                        ///< zero: exact (the router latency)
    Duration kv_sample = Duration::from_ns(1'000'000'000); ///< zero: no KV cache series
    /// The memory a serving run (of a sweep or plan too) may be estimated to need before it
    /// is refused (docs/serving.md "Bounds").
    Bytes max_memory = Bytes(std::int64_t{4} << 30);
};

/// cost.pricing: which of the chip file's instance prices applies.
enum class Pricing { on_demand, reserved_1y, reserved_3y, capacity_block };

constexpr std::array<EnumName<Pricing>, 4> enum_names(Pricing) {
    return {{
        {Pricing::on_demand, "on_demand"},
        {Pricing::reserved_1y, "reserved_1y"},
        {Pricing::reserved_3y, "reserved_3y"},
        {Pricing::capacity_block, "capacity_block"},
    }};
}
inline const char* to_string(Pricing v) { return enum_name(v); }

struct CostSpec {
    Pricing pricing = Pricing::on_demand;
    /// USD per instance-hour: the chip file's price for `pricing`, unless the scenario gives
    /// cost.instance_hour, which overrides it.
    Money instance_hour;
    /// Where instance_hour came from, for the summary: "trn1.32xlarge on_demand, chip trn1"
    /// or "cost.instance_hour".
    std::string origin;
};

/// output.timeline: what a run simulation's /run/events and /run/timeline hold.
enum class TimelineOutput {
    full,    ///< every event and state change, checkpoints included
    summary, ///< without checkpoints (the failures, interruptions, repairs and recoveries)
    none,    ///< neither table
};
constexpr std::array<EnumName<TimelineOutput>, 3> enum_names(TimelineOutput) {
    return {{
        {TimelineOutput::full, "full"},
        {TimelineOutput::summary, "summary"},
        {TimelineOutput::none, "none"},
    }};
}
inline const char* to_string(TimelineOutput v) { return enum_name(v); }

struct OutputSpec {
    std::string file; ///< HDF5 results path (default: results/<name>.h5)
    TimelineOutput timeline = TimelineOutput::summary; ///< output.timeline
    std::string trace; ///< Chrome/Perfetto JSON timeline of the step simulation (empty: none)
    std::vector<int> trace_ranks{0}; ///< ranks the timeline shows
    bool requests = true; ///< output.requests: the per-request table of a serving run
};

/// A setting that has no effect in this scenario, or a request the scenario cannot fulfil:
/// printed on stderr as `FILE:LINE:COL: warning: key.path: message`, kept in /meta/warnings;
/// `--strict` makes the first one an input error (exit 2).
struct Warning {
    std::string key_path;
    std::string message;
    SourceLocation location;
};

struct ScenarioSpec;

/// A tenant of a `tenants:` scenario (ADR 0002): its name, its allocation of the cluster and
/// its own scenario (the shared sections with its workload and reliability sections, on a
/// cluster of its allocation's domains).
struct TenantSpec {
    std::string name;
    cluster::Allocation allocation;
    std::shared_ptr<const ScenarioSpec> scenario;
};

/// A class of jobs of a `fleet:` scenario (docs/fleet.md): `count` training jobs, each on a
/// gang of `gang` domains, submitted at `submit` and then every `every`, with the class's own
/// scenario (the shared sections with the class's workload and reliability sections, on a
/// cluster of `gang` domains).
struct FleetJobClass {
    std::string name;
    std::string tenant;
    std::int64_t gang = 1;
    /// An elastic class's allowed gangs (`gang: [4, 8, 16]`), increasing, the first `gang`;
    /// empty: `gang` only.
    std::vector<std::int64_t> gangs;
    std::int64_t count = 1;
    Duration submit;
    Duration every;
    int priority = 0;
    /// Each job should end within this of its submission (zero: no deadline); what a fleet
    /// plan's candidates must meet (docs/fleet.md, "Sizing a fleet").
    Duration deadline;
    std::size_t pool = 0; ///< index in FleetSpec::pools
    std::shared_ptr<const ScenarioSpec> scenario;
};

/// A job of a fleet's job trace (fleet.trace): one line of the CSV file.
struct FleetTraceJob {
    Duration submit;
    std::size_t job_class = 0; ///< index in FleetSpec::jobs
    std::int64_t steps = 0;    ///< 0: the class's plan's (or the duration's)
    Duration duration;         ///< zero: none; else the steps it takes at the class's step time
    int priority = -1;         ///< -1: the class's
    int line = 0;              ///< in the trace file
};

/// A service's load (fleet.services[i].load): `rate` requests per second at the daily trough,
/// `peak` times that at `peak_at` (from the start of each `period`), a raised cosine between,
/// held constant over each `step` at the curve's mean over it.
struct FleetServiceLoad {
    double rate = 0.0;
    double peak = 1.0;
    Duration peak_at;
    Duration period;
    Duration step;
};

/// A serving service of a fleet (fleet.services[i]): its replicas' workload (loaded as a
/// scenario on one domain, where its capacity is measured), its load and its autoscaler.
struct FleetService {
    std::string name;
    std::string tenant;
    int priority = 0;
    bool borrow = false;
    double attainment = 0.9; ///< the SLO attainment one domain's capacity is measured at
    FleetServiceLoad load;
    fleet::AutoscalerSpec autoscale; ///< its `load` is computed (model load time)
    /// Per instance, reading the model into HBM; zero: the default (docs/fleet.md).
    Bandwidth load_bandwidth;
    /// Its workload section as written (services with the same one share a measurement).
    std::string workload_text;
    std::size_t pool = 0; ///< index in FleetSpec::pools
    std::shared_ptr<const ScenarioSpec> scenario;
};

/// One pool of a fleet (docs/fleet.md, "Several pools"): whole domains of one chip and kind,
/// with its own spares, its own run of the scheduler and of the failure process, at its own
/// price. Pool 0 is the scenario's own (hardware, cluster, cost, fleet.spares), named `main`;
/// the others are fleet.pools, their hardware and cost as their first entry resolved them.
struct FleetPool {
    std::string name;
    HardwareSpec hardware;
    cluster::ClusterSpec cluster;
    CostSpec cost;
    std::int64_t spares = 0;
};

/// The `fleet:` section: training jobs and serving services sharing the cluster's domains
/// under one scheduler.
struct FleetSpec {
    fleet::Policy policy = fleet::Policy::fifo;
    std::int64_t spares = 0;            ///< domains kept as spares
    Duration horizon;                   ///< zero: until every job has finished
    /// Domains each tenant may hold at once, by tenant name, in the order given.
    std::vector<std::pair<std::string, std::int64_t>> quotas;
    std::vector<FleetJobClass> jobs;
    std::vector<FleetService> services;
    /// At least one: `main` (the scenario's cluster), then fleet.pools in order.
    std::vector<FleetPool> pools;
    /// The job trace (fleet.trace, docs/fleet.md): jobs beside the classes' counts, in the
    /// file's order (submissions non-decreasing).
    std::string trace_file;
    std::vector<FleetTraceJob> trace;
    /// fleet.request_level: the window [from, to) in which each service is replayed at request
    /// level after the run (docs/fleet.md, "A window at request level"); to zero: none.
    Duration window_from, window_to;
};

struct ScenarioSpec {
    std::string name;
    std::int64_t seed = 1; ///< non-negative, at most 2^53
    HardwareSpec hardware;
    cluster::ClusterSpec cluster;
    /// The fabric (cluster.fabric; default <chip>-ultracluster). Loaded when given or when
    /// the workload needs it (collective).
    std::string fabric_ref;
    topology::FabricSpec fabric;
    bool has_fabric = false;
    WorkloadType workload_type = WorkloadType::training;
    CollectiveScenario collective;
    std::string model_ref; ///< preset name, file, or "inline"
    workload::TrainingSpec training;
    /// workload.type: inference: the model (workload.model), how replicas hold it
    /// (workload.serving), the requests and the SLO.
    serving::InferenceSpec inference;
    std::string draft_ref; ///< workload.serving.speculative.draft as written
    /// The request trace of workload.requests.arrival.trace, read and checked at load.
    std::shared_ptr<const serving::AzureTrace> trace;
    reliability::ReliabilitySpec reliability; ///< enabled when the scenario has the section
    SimulationSpec simulation;
    CostSpec cost;
    OutputSpec output;
    /// A `tenants:` scenario: its tenants, in order (empty: the single `workload:` form). The
    /// scenario's own workload fields are then those of the first tenant and must not be run
    /// alone; run_scenario (sim/workload_kinds.hpp) runs the tenants together.
    std::vector<TenantSpec> tenants;
    /// A `fleet:` scenario: its scheduler and job classes (absent: not a fleet). As for
    /// tenants, the scenario's own workload fields are the first class's.
    std::optional<FleetSpec> fleet;

    /// The file it was read from, the scenario with every default filled in (YAML text, stored
    /// in results), and where each key's value came from (for error messages).
    std::string source_file;
    std::string resolved_yaml;
    SourceMap sources;
    /// Every file read to build the scenario: the scenario file (when read from one), its
    /// model, chip, fabric and reliability presets, its failure trace. Outputs must not be
    /// any of them.
    std::vector<std::string> input_files;
    std::vector<Warning> warnings; ///< in key order of the checks (scenario_checks.cpp, collect_warnings)
};

/// Whether `key_path` lies in a tenant's own sections (workload, reliability), which a
/// `tenants:` scenario names under tenants[i] (the other sections are shared).
bool tenant_owns_key(const std::string& key_path);

/// "FILE:LINE:COL: warning: key.path: message" (the location as InputError formats it).
std::string to_string(const Warning& w);

} // namespace trnsim::config
