// Study files: sweeps (`trnsim batch`) and plans (`trnsim plan`), as plain validated values.
//
// Both name a base scenario and change some of its keys. A change is an Override: a scenario
// key path, a YAML value and where that value was written. Applying overrides to the base
// scenario goes through exactly the validation of `--set` (load_scenario_with), and an error
// points at the override's origin: the line of the sweep or plan file that wrote the value.
//
// A sweep file (docs/scenario-schema.md, "Sweep file", lists every key):
//
//   base: ../llama3-405b-reliability.yaml   # the scenario, relative to this file
//   replications: 5                         # runs per point, each with its own seed
//   set: {simulation.duration: 30d}         # applied to every point
//   sweep:
//     grid:                                 # every combination of these lists
//       reliability.checkpoint.interval: [30min, 1h, 2h]
//       reliability.spares.ultraservers: [0, 8, 16]
//     zip:                                  # lists of equal length, taken side by side
//       - {workload.parallelism.tp: [32, 64], workload.parallelism.pp: [4, 2]}
//     random:                               # `samples` points drawn with `seed`
//       samples: 20
//       seed: 3
//       keys: {reliability.recovery.restart: {uniform: [5min, 30min]}}
//
// Each grid key, each zip group and the random block is one axis; the points are every
// combination of the axes (grid keys in file order, then zip groups, then random samples; the
// last axis varies fastest).
//
// A plan file names the base scenario, an objective, constraints and a search space; each
// search key is a list of candidate values (or a single value, or a range for counts).
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::config {

struct ScenarioSpec;

/// A scenario key set to a value.
struct Override {
    std::string path;      ///< scenario key path: workload.parallelism.tp
    std::string value;     ///< YAML text of the value ("8", "30min", "{tp: 8, pp: 2}")
    SourceLocation origin; ///< where the value was written (unknown: "--set" style)
};

/// "path=value" (for messages and tables).
std::string to_string(const Override& o);

/// The overrides of --set arguments ("key.path=value", the value read as YAML); errors about
/// them point at "command line (--set key.path=value)". InputError for a text without '='.
std::vector<Override> set_overrides(const std::vector<std::string>& texts);

/// An override of `key_path` to `value` (YAML, as --set reads it) given by a program rather
/// than the command line (`where`: "overrides" of the Python module). Errors about it point
/// at "WHERE (--set key.path=value)", control characters shown as \xNN; the key path is
/// taken whole (it may not hold '=' or control characters: an InputError when it is read).
Override given_override(const std::string& key_path, const std::string& value,
                        const std::string& where);

/// An override of `key_path` to the string `value` taken literally (never read as YAML, so
/// "" stays an empty name and "a: b" a name), given by the command-line option `option`
/// ("-o"); errors about it point at "command line (-o VALUE)".
Override option_override(const std::string& key_path, const std::string& value,
                         const std::string& option);

/// A scenario file read and checked once, to build many scenarios from (the points of a
/// sweep, a plan's finalists) without reading the file again; a file that changes while a
/// sweep is prepared cannot give its points different bases. Copies share the text; safe to
/// use from several threads at once.
class ScenarioBase {
public:
    ScenarioBase() = default;
    /// Reads the file at `path`. Throws InputError when it cannot be read or is not YAML.
    static ScenarioBase read(const std::string& path);
    /// The file as given; empty for a default-constructed base.
    const std::string& path() const;
    explicit operator bool() const { return parsed_ != nullptr; }

    struct Parsed; ///< defined where yaml-cpp is (src/config/)
    const Parsed& parsed() const { return *parsed_; }

private:
    std::shared_ptr<const Parsed> parsed_;
};

/// What load_scenario_with builds besides the validated values.
struct LoadOptions {
    /// ScenarioSpec::resolved_yaml (every default filled in, as stored in results files). Off
    /// for the points of a sweep: its results store the base scenario and each point's values.
    bool resolved_text = true;
};

/// The scenario of `base` with `overrides` applied in order, with the validation of `--set`:
/// an error about an overridden key (or a key below it) points at the override's origin.
/// The presets its scenarios load are kept with `base` and reused while their files are
/// unchanged. Throws InputError.
ScenarioSpec load_scenario_with(const ScenarioBase& base, const std::vector<Override>& overrides,
                                const LoadOptions& options = {});

/// The same for the file at `path` (read and parsed for this one scenario).
ScenarioSpec load_scenario_with(const std::string& path, const std::vector<Override>& overrides);

/// How values of a scenario key are written, from the schema tables: the unit decides how
/// a value converts to a number in SI units (seconds, bytes, bytes/s, USD) and back.
enum class ValueKind { text, integer, real, duration, bytes, bandwidth, money };

/// The kind of the scenario key `path` (keys of an inline model under workload.model.*
/// included); text for keys that are not numbers and for unknown keys.
ValueKind value_kind(const std::string& path);

/// The value in SI units when `value_yaml` is a number of the key's kind ("30min" -> 1800 for
/// a duration key); nothing for text keys and words such as auto.
std::optional<double> numeric_value(const std::string& path, const std::string& value_yaml);

/// YAML text of `si` as a value of `kind` that parses back to the same number, to the unit's
/// resolution (integers and bytes are rounded to the nearest, durations to the nanosecond):
/// "1800s", "2.5e+12B/s", "7". Throws std::invalid_argument for text.
std::string format_value(ValueKind kind, double si);

// ---------------------------------------------------------------------------------------------
// Sweeps

/// One value of a swept key.
struct SweepValue {
    std::string yaml;      ///< flow-style YAML text
    SourceLocation origin;
};

/// A list of values for one key.
struct SweepKey {
    std::string path;
    std::vector<SweepValue> values;
    SourceLocation origin; ///< of the key
};

/// One axis of the grid: a single key (sweep.grid) or several keys of equal length taken side
/// by side (one group of sweep.zip).
struct SweepAxis {
    std::vector<SweepKey> keys;
    std::size_t size() const { return keys.empty() ? 0 : keys.front().values.size(); }
};

enum class Distribution { uniform, log_uniform, choice };
constexpr std::array<EnumName<Distribution>, 3> enum_names(Distribution) {
    return {{
        {Distribution::uniform, "uniform"},
        {Distribution::log_uniform, "log_uniform"},
        {Distribution::choice, "choice"},
    }};
}
inline const char* to_string(Distribution v) { return enum_name(v); }

/// A randomly drawn key (sweep.random.keys).
struct RandomKey {
    std::string path;
    Distribution distribution = Distribution::uniform;
    ValueKind kind = ValueKind::real;  ///< the key's kind; integer kinds draw integers
    double low = 0.0, high = 0.0;      ///< SI units, low <= high (uniform, log_uniform)
    std::vector<SweepValue> choices;   ///< choice
    SourceLocation origin;
};

struct RandomAxis {
    std::int64_t samples = 0;
    std::int64_t seed = 1;
    std::vector<RandomKey> keys;
    SourceLocation origin;
};

struct SweepSpec {
    std::string file;         ///< the sweep file as given
    std::string text;         ///< its content (stored in results)
    std::string name;         ///< default: the file name without .yaml
    std::string base;         ///< base scenario path (relative to the working directory)
    SourceLocation base_origin;
    std::optional<std::int64_t> seed;     ///< default: the base scenario's seed
    std::optional<int> replications;      ///< default: the base's simulation.replications
    std::vector<Override> fixed;          ///< `set`: applied to every point, first
    std::vector<SweepAxis> axes;          ///< grid keys then zip groups, in file order
    std::optional<RandomAxis> random;
    std::string output_file;              ///< default: results/<name>.h5
    SourceLocation output_origin;         ///< where output.file was given (else the file)
};

/// Reads and validates a sweep file (its own keys and the shape of the values; the values
/// themselves are validated against the scenario when the points are built). Throws
/// InputError with FILE:LINE:COL.
SweepSpec load_sweep(const std::string& path);
SweepSpec load_sweep_text(const std::string& text, const std::string& name);

// ---------------------------------------------------------------------------------------------
// Plans

/// What a plan ranks by. Training plans: min_time, min_cost, max_goodput. Serving plans (a
/// base scenario with workload.type: inference): min_cost (the cheapest fleet per hour that
/// meets the SLO at the objective's rate) and max_rate (the highest rate each fleet serves
/// within the SLO).
enum class Objective { min_time, min_cost, max_goodput, max_rate };
constexpr std::array<EnumName<Objective>, 4> enum_names(Objective) {
    return {{
        {Objective::min_time, "min_time"},
        {Objective::min_cost, "min_cost"},
        {Objective::max_goodput, "max_goodput"},
        {Objective::max_rate, "max_rate"},
    }};
}
inline const char* to_string(Objective v) { return enum_name(v); }

/// One searched scenario key: its candidate values in order, as the scenario key's own rule
/// reads them (so `auto` is already what the scenario stores for it: 0 for dp, a zero
/// duration for checkpoint_interval) and as they were written (for messages).
template <class T>
struct SearchKey {
    std::vector<T> values;
    std::vector<SweepValue> written; ///< the same values as YAML text, with their origins
    bool given = false;              ///< false: the base scenario's value only
    SourceLocation origin;
};

struct PlanSpec {
    std::string file;
    std::string text;
    std::string name;
    std::string base;
    SourceLocation base_origin;
    Objective objective = Objective::min_cost;
    SourceLocation objective_origin;

    // Constraints (absent: no limit).
    std::optional<Duration> deadline;     ///< expected time to train at most
    std::optional<Money> budget;          ///< expected cost at most
    std::optional<std::int64_t> max_chips; ///< job and spare chips at most
    std::optional<double> min_ettr;       ///< expected ETTR at least
    double hbm_headroom = 0.0;            ///< fraction of each rank's HBM kept free

    // Search space, each value checked and read by the scenario key's own rule. Give
    // ultraservers or instances as the base scenario counts them; spares count the same kind.
    // global_batch (sequences per step) changes the steps a token count takes, not the tokens.
    SearchKey<std::int64_t> ultraservers, instances, global_batch, spares;
    SearchKey<int> tp, cp, pp, dp, ep, zero, microbatch;
    SearchKey<workload::Recompute> recompute;
    SearchKey<workload::MasterWeights> master_weights; ///< fp32 or none (stochastic rounding)
    SearchKey<Duration> checkpoint_interval; ///< zero: auto

    // Serving plans (workload.type: inference). search.tp searches workload.serving.tp;
    // ultraservers and instances may both be given (a candidate's cluster is one of them);
    // the training-only keys above are refused for a serving base, these for a training base.
    SearchKey<std::string> chip;          ///< hardware.chip presets or files, as written
    SearchKey<std::string> weights;       ///< workload.serving.weights (bf16, fp8, mxfp4, ...)
    SearchKey<std::string> sparsity;      ///< workload.serving.sparsity (dense, 2:4, ...)
    SearchKey<int> max_batch;             ///< workload.serving.max_batch
    SearchKey<int> replicas;              ///< workload.serving.replicas (0: auto)
    SearchKey<int> prefill_replicas;      ///< workload.serving.disaggregated.prefill_replicas

    /// The objective mapping's serving keys ({type: min_cost, rate: 20/s, ...}); the scalar
    /// form (objective: min_cost) leaves them unset. Origins point at the values.
    struct ServingObjective {
        std::optional<double> rate_per_s;  ///< objective.rate: min_cost's arrival rate
        std::optional<double> speedup;     ///< objective.speedup: min_cost's trace speed-up
        /// objective.rate_range / speedup_range: max_rate's bisection bounds, low < high.
        std::optional<std::array<double, 2>> rate_range, speedup_range;
        double slo_attainment = 0.99;      ///< objective.slo_attainment, in (0, 1]
        double tolerance = 0.02;           ///< objective.tolerance: stop at high / low <= 1 + this
        SourceLocation rate_origin, speedup_origin, rate_range_origin, speedup_range_origin,
            attainment_origin, tolerance_origin;
        bool given = false;                ///< objective was a mapping
    } serving;
    /// Requests of each serving candidate's run (replaces the base's count or duration).
    std::int64_t requests = 500;
    SourceLocation requests_origin;

    int finalists = 8;                 ///< best candidates by the objective, simulated in full
    int frontier = 8;                  ///< further cost/time Pareto points, simulated in full
    std::optional<std::int64_t> seed;  ///< default: the base's
    std::optional<int> replications;   ///< default: the base's simulation.replications
    std::string output_file;
    SourceLocation output_origin; ///< where output.file was given (else the file)
    SourceMap sources;            ///< where each key of the plan file was given
};

/// Reads and validates a plan file. Throws InputError with FILE:LINE:COL.
PlanSpec load_plan(const std::string& path);
PlanSpec load_plan_text(const std::string& text, const std::string& name);

/// The files a plan's candidates read besides its base scenario's: the chip files search.chip
/// names, found where a candidate's scenario finds them (beside the base scenario, then the
/// preset places) and where the plan's own check of the values found them (beside the plan).
/// The results file must not replace any of them. A chip that is not found adds nothing: the
/// candidates that name it are refused as invalid.
std::vector<std::string> search_input_files(const PlanSpec& plan);

/// What a YAML file is: a study file names a `base` scenario; a plan file also has `search`,
/// `objective` or `constraints`. Anything else (also an unreadable file) is taken for a
/// scenario, whose loader then reports the problem.
enum class FileKind { scenario, sweep, plan };
FileKind file_kind(const std::string& path);

/// docs/scenario-schema.md's sections for sweep and plan files.
std::string study_schema_markdown();

} // namespace trnsim::config
