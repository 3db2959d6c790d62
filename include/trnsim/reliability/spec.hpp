// The reliability section of a scenario as plain, validated values: what fails and how often,
// what a failure takes down, how the job recovers, spares and repair, and checkpointing.
//
// The config module fills these from YAML (docs/scenario-schema.md lists every key, its unit,
// default and range); the run simulation (run.hpp) reads them. The models behind each value
// are described in docs/reliability.md; the published data behind the presets is in
// shared/reference/reliability.md (cited below as "reliability.md §N").
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::reliability {

/// The component classes that fail. Each component of a class is its own entity with its own
/// failure process (layout.hpp says how many there are and where they sit).
enum class ComponentClass : std::uint8_t {
    chip,       ///< a Trainium chip (cores, SRAM, system processor, thermal)
    hbm,        ///< the HBM of one chip
    host,       ///< the instance's host: CPU, memory, SSD, power supply, chassis, board
    neuronlink, ///< one NeuronLink cable (instance torus or UltraServer ring)
    nic,        ///< one EFA network interface
    leaf,       ///< a leaf (top-of-rack) switch of the EFA fabric
    spine,      ///< a spine switch
    core,       ///< a core switch
    power,      ///< a power domain (rack or feed): takes every instance in it at once
    software,   ///< the software stack of one instance (runtime, driver, training process)
    neuronswitch, ///< a NeuronLink switch of a switched domain (Trn3 NeuronSwitch-v1)
};
inline constexpr std::size_t kClassCount = 11;
inline constexpr std::array<ComponentClass, kClassCount> kAllClasses = {
    ComponentClass::chip,  ComponentClass::hbm,   ComponentClass::host,
    ComponentClass::neuronlink, ComponentClass::nic, ComponentClass::leaf,
    ComponentClass::spine, ComponentClass::core,  ComponentClass::power,
    ComponentClass::software, ComponentClass::neuronswitch};

constexpr std::array<EnumName<ComponentClass>, 11> enum_names(ComponentClass) {
    return {{
        {ComponentClass::chip, "chip"},
        {ComponentClass::hbm, "hbm"},
        {ComponentClass::host, "host"},
        {ComponentClass::neuronlink, "neuronlink"},
        {ComponentClass::nic, "nic"},
        {ComponentClass::leaf, "leaf"},
        {ComponentClass::spine, "spine"},
        {ComponentClass::core, "core"},
        {ComponentClass::power, "power"},
        {ComponentClass::software, "software"},
        {ComponentClass::neuronswitch, "neuronswitch"},
    }};
}
inline const char* to_string(ComponentClass v) { return enum_name(v); }

/// Switches of the EFA fabric: repaired in place, never replaced with an instance.
inline bool is_switch(ComponentClass c) {
    return c == ComponentClass::leaf || c == ComponentClass::spine || c == ComponentClass::core;
}

/// Distribution of the time to failure of one component (renewed after each repair).
enum class LifetimeKind : std::uint8_t { exponential, weibull, lognormal };

struct Lifetime {
    LifetimeKind kind = LifetimeKind::exponential;
    double shape = 1.0; ///< Weibull shape k (k < 1: decreasing hazard, infant mortality)
    double sigma = 1.0; ///< lognormal: standard deviation of the underlying normal
};

/// What a failure does to the job. `automatic` resolves per class (layout.hpp, blast radius).
enum class Effect : std::uint8_t { automatic, interrupt, degrade };

/// One failure process, applied to every component of a class. A component with several
/// processes fails at the earliest of their times, with that process's cause.
struct FailureSpec {
    ComponentClass component = ComponentClass::chip;
    std::string cause;  ///< label in outputs; defaults to the class name
    /// Mean time between failures of one (good) component (Seconds: rare causes of one chip
    /// exceed the 292 years a Duration holds).
    Seconds mtbf;
    Lifetime distribution;
    /// Rate heterogeneity: this fraction of the components ("bad" or lemon components, chosen
    /// by a deterministic draw per component) fails `bad_multiplier` times as often.
    double bad_fraction = 0.0;
    double bad_multiplier = 1.0;
    Effect effect = Effect::automatic;
};

/// A failure replayed from a trace file: at `time`, component `index` of its class fails.
struct TraceFailure {
    Duration time;
    ComponentClass component = ComponentClass::chip;
    std::int64_t index = 0; ///< within the class, over the whole cluster including spares
    std::string cause;      ///< "trace" unless the file names one
    int line = 0;           ///< in the trace file (for error messages)
};

struct TraceSpec {
    std::string file;                   ///< as written in the scenario ("" = none)
    std::vector<TraceFailure> failures; ///< sorted by time (stable)
};

/// `job`: every failure restarts the whole job from the newest checkpoint. `replica`: only the
/// data-parallel replicas on the failed domain restart, the others keep training
/// (reliability.md §3, Meta FT-HSDP).
enum class RecoveryScope : std::uint8_t { job, replica };

struct RecoverySpec {
    Duration detection = Duration::from_ns(120'000'000'000);     ///< failure to detection
    Duration restart = Duration::from_ns(600'000'000'000);       ///< re-initialise the job
    RecoveryScope scope = RecoveryScope::job;
    /// With no spare left, continue on fewer domains (fewer data-parallel replicas) instead of
    /// waiting for a repair (job scope; the replica scope always runs degraded).
    bool run_degraded = false;
};

struct SparesSpec {
    std::int64_t ultraservers = 0; ///< spare UltraServers (a cluster of UltraServers)
    std::int64_t instances = 0;    ///< spare instances (a cluster of plain instances)
    std::int64_t count() const { return ultraservers + instances; }
};

enum class RepairDistribution : std::uint8_t { fixed, exponential };

/// A failed domain is repaired automatically (reboot, reimage, swap by automation) or, with
/// probability `manual_fraction`, by hand; an automatic repair fails with probability
/// `auto_escalation` and then goes to the manual queue. Repaired domains return to the spare
/// pool. The defaults follow the DESIGN sketch; AIReSim's illustrative values are 2 h, 2 days
/// and 0.8 escalation (reliability.md §3).
struct RepairSpec {
    Duration automatic = Duration::from_ns(7'200'000'000'000);   ///< 2 h
    Duration manual = Duration::from_ns(259'200'000'000'000);    ///< 3 d
    double manual_fraction = 0.2;
    double auto_escalation = 0.0;
    RepairDistribution distribution = RepairDistribution::fixed; ///< of both times
};

/// `sync`: training stalls while the checkpoint is written to storage. `async`: training stalls
/// for a snapshot to host memory, the upload runs in the background and a failure before it
/// completes loses it. `memory`: the snapshot is copied to a peer's host memory (Gemini,
/// reliability.md §4) and restored from it over EFA.
enum class CheckpointMode : std::uint8_t { sync, async, memory };

struct CheckpointSpec {
    Duration interval;                  ///< zero: auto (Daly's optimum, theory.hpp)
    CheckpointMode mode = CheckpointMode::sync;
    std::optional<Bytes> size;          ///< default: weights + optimizer state of the model
    /// Aggregate write bandwidth to storage; Llama 3's Tectonic sustains 2 TB/s (reliability.md §1).
    Bandwidth storage_bandwidth = Bandwidth::bytes_per_s(2e12);
    /// Aggregate read bandwidth when restoring; zero: the storage bandwidth.
    Bandwidth restore_bandwidth;
    /// Per chip, HBM to host memory (async and memory snapshots). An estimate: trnsim knows no
    /// published figure for Trainium2's host interface.
    Bandwidth snapshot_bandwidth = Bandwidth::bytes_per_s(25e9);
};

/// Assumptions behind the network and power component counts (layout.hpp documents them).
struct FabricSpec {
    int switch_radix = 128;         ///< ports per EFA switch (trn2-ultracluster's estimate)
    int power_domain_instances = 8; ///< instances fed by one power domain
};

struct ReliabilitySpec {
    bool enabled = false; ///< the scenario has a reliability section
    std::string preset;   ///< the preset it started from ("" = none)
    std::vector<FailureSpec> failures;
    TraceSpec trace;
    RecoverySpec recovery;
    SparesSpec spares;
    RepairSpec repair;
    CheckpointSpec checkpoint;
    FabricSpec fabric;
};

constexpr std::array<EnumName<LifetimeKind>, 3> enum_names(LifetimeKind) {
    return {{
        {LifetimeKind::exponential, "exponential"},
        {LifetimeKind::weibull, "weibull"},
        {LifetimeKind::lognormal, "lognormal"},
    }};
}
inline const char* to_string(LifetimeKind v) { return enum_name(v); }
constexpr std::array<EnumName<Effect>, 3> enum_names(Effect) {
    return {{
        {Effect::automatic, "auto"},
        {Effect::interrupt, "interrupt"},
        {Effect::degrade, "degrade"},
    }};
}
inline const char* to_string(Effect v) { return enum_name(v); }
constexpr std::array<EnumName<RecoveryScope>, 2> enum_names(RecoveryScope) {
    return {{
        {RecoveryScope::job, "job"},
        {RecoveryScope::replica, "replica"},
    }};
}
inline const char* to_string(RecoveryScope v) { return enum_name(v); }
constexpr std::array<EnumName<CheckpointMode>, 3> enum_names(CheckpointMode) {
    return {{
        {CheckpointMode::sync, "sync"},
        {CheckpointMode::async, "async"},
        {CheckpointMode::memory, "memory"},
    }};
}
inline const char* to_string(CheckpointMode v) { return enum_name(v); }
constexpr std::array<EnumName<RepairDistribution>, 2> enum_names(RepairDistribution) {
    return {{
        {RepairDistribution::fixed, "fixed"},
        {RepairDistribution::exponential, "exponential"},
    }};
}
inline const char* to_string(RepairDistribution v) { return enum_name(v); }

} // namespace trnsim::reliability
