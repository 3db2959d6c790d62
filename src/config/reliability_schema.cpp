// The reliability section of the scenario schema, the failure-process element schema, the trace
// file reader and the preset merge (docs/reliability.md describes the models behind the keys).
#include "trnsim/core/input_file.hpp"

#include "csv_lines.hpp"
#include "fields.hpp"
#include "tables.hpp"

#include <algorithm>

namespace trnsim::config::detail {

using S = ScenarioSpec;
using reliability::ComponentClass;
using reliability::FailureSpec;

namespace {

namespace fs = std::filesystem;

reliability::ReliabilitySpec& rel(S& x) { return x.reliability; }

std::vector<std::string> class_names() {
    std::vector<std::string> names;
    for (ComponentClass c : reliability::kAllClasses) {
        names.emplace_back(reliability::to_string(c));
    }
    return names;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
    const std::string guess = closest(word, candidates);
    return guess.empty() ? std::string() : "; did you mean '" + guess + "'?";
}

/// A duration in seconds, also beyond Duration's 292 years (a per-component MTBF can be
/// centuries): the number times the unit, with the units and messages of parse_duration.
double long_duration_seconds(std::string_view text) {
    for (const char* unit : {"min", "ns", "us", "ms", "s", "h", "d", "w", "y"}) {
        const std::string_view u(unit);
        if (text.size() > u.size() && text.substr(text.size() - u.size()) == u) {
            std::string number(text.substr(0, text.size() - u.size()));
            while (!number.empty() && number.back() == ' ') {
                number.pop_back();
            }
            const bool plain = !number.empty() && number.find_first_not_of("0123456789.eE+-") ==
                                                      std::string::npos;
            if (plain) {
                return parse_real(number) * parse_duration(std::string("1") + unit).seconds();
            }
            break;
        }
    }
    return parse_duration(text).seconds(); // not a number with a unit: its message
}

/// `exponential`, `{weibull: {shape: K}}` or `{lognormal: {sigma: S}}`.
reliability::Lifetime parse_distribution(const YAML::Node& n, const std::string& p,
                                         const SourceLocation& loc, const Context& ctx) {
    const std::string usage =
        "expected exponential, {weibull: {shape: K}} or {lognormal: {sigma: S}}";
    const std::vector<std::string> kinds = {"exponential", "weibull", "lognormal"};
    reliability::Lifetime life;
    if (n.IsScalar()) {
        const std::string v = n.Scalar();
        if (v == "exponential") {
            return life;
        }
        if (v == "weibull" || v == "lognormal") {
            throw InputError(p, v + " needs its parameter: {weibull: {shape: 0.8}} or "
                                    "{lognormal: {sigma: 1.0}}",
                             loc);
        }
        throw InputError(p, "'" + v + "' is not a distribution: " + usage + did_you_mean(v, kinds),
                         loc);
    }
    if (!n.IsMap() || n.size() != 1) {
        throw InputError(p, usage, loc);
    }
    const auto it = n.begin();
    const std::string kind = it->first.Scalar();
    const YAML::Node params = it->second;
    const std::string kind_path = p + "." + kind;
    const SourceLocation kind_loc = ctx.locate(kind_path, it->first.Mark());
    std::string param;
    double lo = 0.0;
    double hi = 0.0;
    if (kind == "weibull") {
        life.kind = reliability::LifetimeKind::weibull;
        param = "shape";
        hi = 20.0;
    } else if (kind == "lognormal") {
        life.kind = reliability::LifetimeKind::lognormal;
        param = "sigma";
        hi = 10.0;
    } else {
        throw InputError(kind_path, "unknown distribution '" + kind + "': " + usage +
                                        did_you_mean(kind, kinds),
                         kind_loc);
    }
    if (!params.IsMap() || params.size() != 1) {
        throw InputError(kind_path, "expected {" + param + ": VALUE}", kind_loc);
    }
    const auto pit = params.begin();
    const std::string key = pit->first.Scalar();
    const std::string param_path = kind_path + "." + key;
    const YAML::Node value = pit->second;
    const SourceLocation param_loc = ctx.locate(param_path, pit->first.Mark());
    if (key != param) {
        throw InputError(param_path, "unknown key '" + key + "'; " + kind + " takes " + param,
                         param_loc);
    }
    const std::string range = "above 0, at most " + std::to_string(static_cast<int>(hi));
    const double v = parse_checked<double>(
        value, param_path, value.Mark().is_null() ? param_loc : ctx.locate(param_path, value.Mark()),
        parse_real, [&](double x) { return x > lo && x <= hi; }, range);
    (life.kind == reliability::LifetimeKind::weibull ? life.shape : life.sigma) = v;
    return life;
}

Schema<FailureSpec> build_failure() {
    using F = FailureSpec;
    Schema<F> s("Failure process");
    s.field(required(choice<F, ComponentClass>(
        "component", [](F& f) -> ComponentClass& { return f.component; }, "",
        "The component class that fails; every component of the class runs this process.")));
    {
        auto e = make_entry<F>("mtbf", "duration", "", ">= 1ns (may exceed 292 years)",
                               "Mean time between failures of one (good) component.");
        e.required = true;
        e.apply = [](F& f, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            // The engine counts whole nanoseconds: a shorter mean would put most failures
            // at the same tick.
            f.mtbf = Seconds::of(parse_checked<double>(
                n, p, loc, long_duration_seconds, [](double x) { return x >= 1e-9; },
                "at least 1ns (the engine's tick)"));
        };
        s.field(e);
    }
    {
        auto e = make_entry<F>("distribution", "distribution", "exponential",
                               "exponential, {weibull: {shape: K}}, {lognormal: {sigma: S}}",
                               "Time to failure; Weibull and lognormal keep the mean at mtbf "
                               "(shape < 1: infant mortality).");
        e.apply = [](F& f, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) { f.distribution = parse_distribution(n, p, loc, ctx); };
        s.field(e);
    }
    s.field(computed_default(
        text<F>("cause", [](F& f) -> std::string& { return f.cause; }, "",
                "Label of this cause in the outputs (interruptions by cause)."),
        "the component name"));
    s.field(real<F>("bad_fraction", [](F& f) -> double& { return f.bad_fraction; }, "0", 0.0, 1.0,
                    "0 to 1", "Fraction of the components that are bad (lemons)."));
    s.field(real<F>("bad_multiplier", [](F& f) -> double& { return f.bad_multiplier; }, "1", 1.0,
                    1e6, "1 to 1e6", "How many times as often a bad component fails."));
    s.field(choice<F, reliability::Effect>(
        "effect", [](F& f) -> reliability::Effect& { return f.effect; }, "auto",
        "What the failure does to the job: auto (the blast-radius rules), interrupt, or degrade "
        "(network elements only: route around it, slower until repaired)."));
    return s;
}

/// Reads a failure trace: one `time,component,index[,cause]` per line, `#` comments, an
/// optional header line starting with `time`.
reliability::TraceSpec read_trace(const std::string& ref, const std::string& p,
                                  const SourceLocation& loc, const Context& ctx) {
    fs::path file(ref);
    std::error_code ec;
    if (file.is_relative() && fs::exists(ctx.base_dir / file, ec)) {
        file = ctx.base_dir / file;
    }
    if (ref.empty() || !fs::exists(file)) {
        throw InputError(p, "trace file '" + ref + "' not found", loc);
    }
    const std::string text = read_input_file(file, "trace", p, loc);
    ctx.note_read(file, text);
    reliability::TraceSpec trace;
    trace.file = file.string();
    bool first = true;
    for (const CsvLine& l : csv_lines(text)) {
        const int number = l.number;
        const auto& fields = l.fields;
        const bool header = first && fields[0].first == "time";
        first = false;
        if (header) {
            continue;
        }
        const auto at = [&](int column) { return SourceLocation{trace.file, number, column}; };
        if (fields.size() < 3 || fields.size() > 4) {
            throw InputError(p, "expected time,component,index[,cause] on each line, got " +
                                    std::to_string(fields.size()) + " fields",
                             at(1));
        }
        reliability::TraceFailure f;
        f.line = number;
        try {
            f.time = parse_duration(fields[0].first);
        } catch (const UnitError& e) {
            throw InputError(p, e.what(), at(fields[0].second));
        }
        if (f.time < Duration::zero()) {
            throw InputError(p, "a failure time cannot be negative", at(fields[0].second));
        }
        const auto cls = enum_from_name<ComponentClass>(fields[1].first);
        if (!cls) {
            std::string names;
            for (const auto& n : class_names()) {
                names += (names.empty() ? "" : ", ") + n;
            }
            throw InputError(p, quote_visible(fields[1].first) + " is not a component class (" +
                                    names + ")" + did_you_mean(fields[1].first, class_names()),
                             at(fields[1].second));
        }
        f.component = *cls;
        try {
            f.index = parse_count(fields[2].first);
        } catch (const UnitError& e) {
            throw InputError(p, e.what(), at(fields[2].second));
        }
        if (f.index < 0) {
            throw InputError(p, "a component index cannot be negative", at(fields[2].second));
        }
        f.cause = fields.size() == 4 && !fields[3].first.empty() ? fields[3].first : "trace";
        trace.failures.push_back(std::move(f));
    }
    std::stable_sort(trace.failures.begin(), trace.failures.end(),
                     [](const auto& a, const auto& b) { return a.time < b.time; });
    return trace;
}

/// A duration, or `word` (stored as zero).
Entry<S> duration_or(std::string path, Ref<S, Duration> ref, std::string def, std::string word,
                     std::string doc) {
    auto e = make_entry<S>(std::move(path), "duration or " + word, std::move(def),
                           word + ", > 0", std::move(doc));
    e.apply = [ref, word](S& x, const YAML::Node& n, const std::string& p,
                          const SourceLocation& loc, const Context&) {
        if (n.IsScalar() && n.Scalar() == word) {
            ref(x) = Duration::zero();
            return;
        }
        ref(x) = parse_checked<Duration>(
            n, p, loc, parse_duration, [](Duration d) { return d > Duration::zero(); },
            word + " or a duration > 0");
    };
    return e;
}

} // namespace

const Schema<FailureSpec>& failure_schema() {
    static const Schema<FailureSpec> s = build_failure();
    return s;
}

void add_reliability_keys(Schema<S>& s) {
    s.section("reliability",
              "Failures, recovery, spares, repair and checkpoints. With this section, `trnsim "
              "run` simulates the whole job over time (docs/reliability.md); for "
              "`workload.type: inference` the fleet's replicas fail, are retried elsewhere and "
              "return from spares or repair (docs/serving.md, \"Failures\": no checkpoints).");
    {
        auto e = make_entry<S>("reliability.preset", "preset", "",
                               "a preset in scenarios/reliability/",
                               "Start from a preset (llama3-16k-h100, meta-rsc1, meta-rsc2): its "
                               "keys apply unless the scenario gives them.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) { rel(x).preset = scalar_text(n, p, loc); };
        s.field(e);
    }
    s.field(mapping_list<S, FailureSpec>(
        "reliability.failures",
        [](S& x) -> std::vector<FailureSpec>& { return rel(x).failures; }, &failure_schema,
        "[{component: chip, mtbf: 10y}]",
        "Failure processes; a component class may have several (one per cause)."));
    {
        auto e = make_entry<S>("reliability.trace", "file", "", "a CSV file",
                               "Failures to replay: one `time,component,index[,cause]` per line "
                               "(`36h,chip,1234`); index counts the class over the whole "
                               "cluster, spares included.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context& ctx) {
            rel(x).trace = read_trace(scalar_text(n, p, loc), p, loc, ctx);
        };
        s.field(e);
    }

    using reliability::RecoveryScope;
    s.section("reliability.recovery", "What happens after a failure.");
    s.field(quantity<S, Duration>(
        "reliability.recovery.detection",
        [](S& x) -> Duration& { return rel(x).recovery.detection; }, parse_duration, "duration",
        "2min", Duration::zero(), Duration::max(), false, ">= 0",
        "From a failure to its detection (the job makes no progress meanwhile)."));
    s.field(quantity<S, Duration>(
        "reliability.recovery.restart", [](S& x) -> Duration& { return rel(x).recovery.restart; },
        parse_duration, "duration", "10min", Duration::zero(), Duration::max(), false, ">= 0",
        "Re-initialising the job (scheduling, process start, communicators), before loading "
        "the checkpoint."));
    s.field(choice<S, RecoveryScope>(
        "reliability.recovery.scope", [](S& x) -> RecoveryScope& { return rel(x).recovery.scope; },
        "job",
        "job: restart everything from the checkpoint; replica: restart only the data-parallel "
        "replicas on the failed domain while the others keep training."));
    s.field(boolean<S>("reliability.recovery.run_degraded",
                       [](S& x) -> bool& { return rel(x).recovery.run_degraded; }, "false",
                       "With no spare left, continue on fewer domains (data-parallel replicas) "
                       "instead of waiting for a repair."));

    s.section("reliability.spares", "Spare domains beside the job's (give the cluster's kind).");
    s.field(count<S>("reliability.spares.ultraservers",
                     [](S& x) -> std::int64_t& { return rel(x).spares.ultraservers; }, "0", 0,
                     1000000, "Spare UltraServers."));
    s.field(count<S>("reliability.spares.instances",
                     [](S& x) -> std::int64_t& { return rel(x).spares.instances; }, "0", 0,
                     10000000, "Spare instances (a cluster of plain instances)."));

    using reliability::RepairDistribution;
    s.section("reliability.repair", "The repair pipeline of failed domains and switches.");
    s.field(quantity<S, Duration>(
        "reliability.repair.auto", [](S& x) -> Duration& { return rel(x).repair.automatic; },
        parse_duration, "duration", "2h", Duration::zero(), Duration::max(), false, ">= 0",
        "Automatic repair time (reboot, reimage, automated swap)."));
    s.field(quantity<S, Duration>(
        "reliability.repair.manual", [](S& x) -> Duration& { return rel(x).repair.manual; },
        parse_duration, "duration", "3d", Duration::zero(), Duration::max(), false, ">= 0",
        "Manual repair time (a technician, a part)."));
    s.field(real<S>("reliability.repair.manual_fraction",
                    [](S& x) -> double& { return rel(x).repair.manual_fraction; }, "0.2", 0.0, 1.0,
                    "0 to 1", "Fraction of failures that go straight to manual repair."));
    s.field(real<S>("reliability.repair.auto_escalation",
                    [](S& x) -> double& { return rel(x).repair.auto_escalation; }, "0", 0.0, 1.0,
                    "0 to 1",
                    "Probability that an automatic repair does not fix it (then manual)."));
    s.field(choice<S, RepairDistribution>(
        "reliability.repair.distribution",
        [](S& x) -> RepairDistribution& { return rel(x).repair.distribution; }, "fixed",
        "Repair times: exactly the values above, or exponential with those means."));

    using reliability::CheckpointMode;
    s.section("reliability.checkpoint", "Checkpoints (cost model in docs/reliability.md).");
    s.field(duration_or("reliability.checkpoint.interval",
                        [](S& x) -> Duration& { return rel(x).checkpoint.interval; }, "auto",
                        "auto",
                        "Training time between checkpoints; auto: Daly's optimum for the job's "
                        "failure rate and checkpoint cost."));
    s.field(choice<S, CheckpointMode>(
        "reliability.checkpoint.mode",
        [](S& x) -> CheckpointMode& { return rel(x).checkpoint.mode; }, "sync",
        "sync: stall while writing to storage; async: stall for a snapshot to host memory, "
        "upload in the background; memory: snapshot copied to a peer's host memory."));
    {
        auto e = make_entry<S>("reliability.checkpoint.size", "bytes or auto", "auto",
                               "auto, >= 0",
                               "Checkpoint size; auto: the model's weights and optimizer state "
                               "(parameters x (weight bytes + 12), 8 for FP32 training).");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            if (n.IsScalar() && n.Scalar() == "auto") {
                rel(x).checkpoint.size.reset();
                return;
            }
            rel(x).checkpoint.size = parse_checked<Bytes>(
                n, p, loc, parse_bytes, [](Bytes b) { return b >= Bytes(0); }, "auto or >= 0");
        };
        s.field(e);
    }
    const Bandwidth max_bw = Bandwidth::bytes_per_s(1e18);
    s.field(quantity<S, Bandwidth>(
        "reliability.checkpoint.storage_bandwidth",
        [](S& x) -> Bandwidth& { return rel(x).checkpoint.storage_bandwidth; }, parse_bandwidth,
        "bandwidth", "2TB/s", Bandwidth(), max_bw, true, "> 0",
        "Aggregate write bandwidth to storage (Llama 3's Tectonic sustained 2 TB/s)."));
    {
        auto e = make_entry<S>("reliability.checkpoint.restore_bandwidth", "bandwidth or auto",
                               "auto", "auto, > 0",
                               "Aggregate read bandwidth when restoring; auto: the storage "
                               "bandwidth.");
        e.apply = [](S& x, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                     const Context&) {
            if (n.IsScalar() && n.Scalar() == "auto") {
                rel(x).checkpoint.restore_bandwidth = Bandwidth();
                return;
            }
            rel(x).checkpoint.restore_bandwidth = parse_checked<Bandwidth>(
                n, p, loc, parse_bandwidth,
                [](Bandwidth b) { return b.bytes_per_s() > 0.0; }, "auto or > 0");
        };
        s.field(e);
    }
    s.field(quantity<S, Bandwidth>(
        "reliability.checkpoint.snapshot_bandwidth",
        [](S& x) -> Bandwidth& { return rel(x).checkpoint.snapshot_bandwidth; }, parse_bandwidth,
        "bandwidth", "25GB/s", Bandwidth(), max_bw, true, "> 0",
        "Per chip, HBM to host memory (async and memory snapshots; an estimate)."));

    s.section("reliability.fabric",
              "Assumptions behind the failing network and power components (docs/reliability.md).");
    s.field(integer<S>("reliability.fabric.switch_radix",
                       [](S& x) -> int& { return rel(x).fabric.switch_radix; }, "128", 4, 4096,
                       "Ports per EFA switch of the non-blocking Clos whose leaves, spines and "
                       "cores fail (half down, half up, as topologies/trn2-ultracluster.yaml)."));
    s.field(integer<S>("reliability.fabric.power_domain_instances",
                       [](S& x) -> int& { return rel(x).fabric.power_domain_instances; }, "8", 1,
                       1000000,
                       "Instances fed by one power domain (a power failure takes them all)."));
}

void add_run_keys(Schema<S>& s) {
    s.field(duration_or("simulation.duration",
                        [](S& x) -> Duration& { return x.simulation.duration; }, "until_done",
                        "until_done",
                        "Simulated time of a run with a reliability section; until_done: until "
                        "the training is complete (at most time_limit)."));
    s.field(quantity<S, Duration>(
        "simulation.time_limit", [](S& x) -> Duration& { return x.simulation.time_limit; },
        parse_duration, "duration", "5y", Duration::zero(), Duration::max(), true, "> 0",
        "until_done stops here at the latest (the job is then reported as not done)."));
    s.field(integer<S>("simulation.replications",
                       [](S& x) -> int& { return x.simulation.replications; }, "1", 1, 100000,
                       "Independent runs (seeds derived from seed); summaries give the mean and "
                       "a 95% confidence interval."));
}

void merge_reliability_preset(YAML::Node root, Context& ctx) {
    const YAML::Node& croot = root;
    if (!croot.IsMap()) {
        return;
    }
    const YAML::Node section = croot["reliability"];
    if (!section.IsDefined() || !section.IsMap()) {
        return;
    }
    const YAML::Node preset = section["preset"];
    if (!preset.IsDefined()) {
        return;
    }
    const std::string path = "reliability.preset";
    const SourceLocation loc = ctx.locate(path, preset.Mark());
    if (!preset.IsScalar()) {
        throw InputError(path, "expected a preset name such as llama3-16k-h100", loc);
    }
    const fs::path file =
        find_preset(preset.Scalar(), "scenarios/reliability", "reliability", ctx, path, loc);
    const YAML::Node content = read_yaml(file, "reliability preset", path, loc, ctx);
    if (!content.IsMap()) {
        throw InputError(path, "a reliability preset is a mapping of reliability keys",
                         {file.string(), 1, 1});
    }
    if (content["preset"].IsDefined()) {
        throw InputError(path, "a reliability preset cannot name another preset",
                         ctx.locate(path, content["preset"].Mark()));
    }
    // The scenario's own keys win; mappings merge key by key, lists are replaced whole.
    const std::string origin = file.string();
    const auto merge = [&](auto&& self, YAML::Node into, const YAML::Node& from,
                           const std::string& prefix) -> void {
        for (auto it = from.begin(); it != from.end(); ++it) {
            const std::string key = it->first.Scalar();
            const YAML::Node value = it->second;
            const YAML::Node& cinto = into;
            const YAML::Node mine = cinto[key];
            const std::string sub = prefix + "." + key;
            if (!mine.IsDefined() || mine.IsNull()) {
                into[key] = value;
                ctx.merged_from[sub] = origin;
            } else if (mine.IsMap() && value.IsMap()) {
                self(self, into[key], value, sub);
            }
        }
    };
    merge(merge, root["reliability"], content, "reliability");
}

} // namespace trnsim::config::detail
