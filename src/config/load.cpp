#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"

#include "trnsim/core/input_file.hpp"

#include "load_root.hpp"
#include "overrides.hpp"
#include "scenario_checks.hpp"
#include "tables.hpp"

#include <array>
#include <charconv>
#include <memory>
#include <string>
#include <vector>

namespace trnsim::config {

namespace fs = std::filesystem;
using detail::Context;
using detail::apply_override;
using detail::check_workload;
using detail::collect_warnings;
using detail::command_line_overrides;
using detail::parse_override;
using detail::ParsedOverride;

namespace {

/// The shortest text that reads back as exactly `v` ("35.76", not "35.759999999999998").
std::string exact_number(double v) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), res.ptr);
}

} // namespace

ScenarioSpec detail::load_root(YAML::Node root, const std::string& file, const fs::path& base_dir,
                               const std::string& default_name,
                               const std::vector<Override>& overrides,
                               detail::PresetCache* presets, const LoadOptions& options) {
    ScenarioSpec spec;
    spec.source_file = file;
    const SourceLocation top{file, 1, 1};
    if (!root.IsDefined() || root.IsNull()) {
        throw InputError("", "the scenario is empty; it needs at least cluster and workload "
                             "sections (see docs/scenario-schema.md)",
                         top);
    }
    if (!root.IsMap()) {
        throw InputError("", "a scenario is a mapping of sections (name, hardware, cluster, "
                             "workload, ...), not a single value or a list",
                         top);
    }
    Context ctx;
    ctx.file = file;
    ctx.base_dir = base_dir;
    ctx.data_dir = data_dir();
    ctx.sources = &spec.sources;
    ctx.files_read = &spec.input_files;
    ctx.presets = presets;
    for (const auto& given : overrides) {
        const ParsedOverride o = parse_override(given);
        apply_override(root, detail::split_key_path(o.path), 0, o);
        ctx.overrides[o.path] = o.origin;
    }
    if (static_cast<const YAML::Node&>(root)["tenants"].IsDefined()) {
        return detail::load_tenants(root, file, base_dir, default_name, presets, options);
    }
    if (static_cast<const YAML::Node&>(root)["fleet"].IsDefined()) {
        return detail::load_fleet(root, file, base_dir, default_name, presets, options);
    }
    detail::merge_reliability_preset(root, ctx);
    spec.sources.add("", top);
    // Sentinels for defaults that come from the chip (values given in the file are >= 0).
    spec.hardware.hbm_reserve = Bytes(-1);
    spec.cost.instance_hour = Money::usd(-1.0);
    detail::scenario_schema().load(spec, root, ctx, top);
    spec.reliability.enabled = static_cast<const YAML::Node&>(root)["reliability"].IsDefined();

    // Defaults that depend on other values.
    const auto& chip = spec.hardware.chip;
    if (spec.name.empty()) {
        spec.name = default_name;
    }
    if (spec.hardware.lnc == 0) {
        spec.hardware.lnc = chip.lnc_default;
    }
    if (spec.hardware.hbm_reserve < Bytes(0)) {
        spec.hardware.hbm_reserve = chip.hbm_runtime_reserve;
    }
    if (spec.cost.instance_hour < Money::usd(0.0)) {
        const auto& in = chip.instance;
        const Money prices[] = {in.price_per_hour, in.price_reserved_1y, in.price_reserved_3y,
                                in.price_capacity_block};
        const Money price = prices[static_cast<std::size_t>(spec.cost.pricing)];
        if (spec.cost.pricing != Pricing::on_demand && !(price > Money::usd(0.0))) {
            throw InputError("cost.pricing",
                             std::string("the chip file of ") + chip.name + " has no " +
                                 to_string(spec.cost.pricing) +
                                 " price; give cost.instance_hour or another cost.pricing",
                             spec.sources.find("cost.pricing"));
        }
        spec.cost.instance_hour = price;
        spec.cost.origin = in.name + " " + to_string(spec.cost.pricing) + ", chip file " +
                           spec.hardware.chip_ref;
    } else {
        spec.cost.origin = "cost.instance_hour";
    }
    if (spec.output.file.empty()) {
        spec.output.file = "results/" + spec.name + ".h5";
    }
    check_workload(spec, ctx);
    collect_warnings(spec);
    if (!options.resolved_text) {
        return spec;
    }

    YAML::Node resolved = detail::scenario_schema().resolved(root);
    using detail::set_key_path;
    set_key_path(resolved, {"name"}, 0, YAML::Node(spec.name));
    set_key_path(resolved, {"hardware", "lnc"}, 0, YAML::Node(spec.hardware.lnc));
    set_key_path(resolved, {"hardware", "hbm_reserve"}, 0,
                 YAML::Node(std::to_string(spec.hardware.hbm_reserve.count()) + "B"));
    set_key_path(resolved, {"cost", "instance_hour"}, 0,
                 YAML::Node(exact_number(spec.cost.instance_hour.usd()) + "USD"));
    set_key_path(resolved, {"output", "file"}, 0, YAML::Node(spec.output.file));
    if (spec.has_fabric) {
        set_key_path(resolved, {"cluster", "fabric"}, 0, YAML::Node(spec.fabric_ref));
    }
    // Re-emit in schema order (the computed keys were appended at the end).
    YAML::Node ordered = detail::scenario_schema().resolved(resolved);
    if (!spec.reliability.enabled) {
        ordered.remove("reliability"); // only defaults: the scenario has no reliability section
    }
    // Only the keys of the scenario's workload type: the others are defaults that a reload
    // would refuse (workload.serving in a training scenario, workload.parallelism in a
    // serving one).
    const bool inference = spec.workload_type == WorkloadType::inference;
    const std::vector<std::string> other_workload =
        inference ? std::vector<std::string>{"parallelism", "collective", "moe_imbalance"}
                  : std::vector<std::string>{"serving", "requests", "slo"};
    const std::vector<std::string> other_simulation =
        inference ? std::vector<std::string>{"fidelity", "step_entities", "fabric_collectives",
                                           "tp_collectives"}
                  : std::vector<std::string>{"router_window", "kv_sample", "max_memory"};
    if (YAML::Node w = ordered["workload"]; w.IsMap()) {
        for (const std::string& key : other_workload) {
            w.remove(key);
        }
    }
    if (YAML::Node sim = ordered["simulation"]; sim.IsMap()) {
        for (const std::string& key : other_simulation) {
            sim.remove(key);
        }
    }
    if (!inference) {
        if (YAML::Node o = ordered["output"]; o.IsMap()) {
            o.remove("requests");
        }
    }
    YAML::Emitter out;
    out << ordered;
    spec.resolved_yaml = std::string(out.c_str()) + "\n";
    return spec;
}

std::string to_string(const Warning& w) {
    return (w.location.known() ? w.location.str() + ": " : std::string()) + "warning: " +
           w.key_path + ": " + w.message;
}

struct ScenarioBase::Parsed {
    std::string path;
    /// The file's text, checked to be YAML. Each scenario parses it again: applying overrides
    /// edits the tree, and yaml-cpp's copy of a tree (YAML::Clone) drops the source positions
    /// that error messages point at.
    std::string text;
    /// The presets the scenarios of this base have loaded (thread-safe).
    mutable detail::PresetCache presets;
};

ScenarioBase ScenarioBase::read(const std::string& path) {
    auto parsed = std::make_shared<Parsed>();
    parsed->path = path;
    parsed->text = read_input_file(path, "scenario");
    (void)detail::parse_yaml(parsed->text, path);
    ScenarioBase b;
    b.parsed_ = std::move(parsed);
    return b;
}

const std::string& ScenarioBase::path() const {
    static const std::string none;
    return parsed_ ? parsed_->path : none;
}

ScenarioSpec load_scenario_with(const ScenarioBase& base, const std::vector<Override>& overrides,
                                const LoadOptions& options) {
    const ScenarioBase::Parsed& parsed = base.parsed();
    const YAML::Node root = YAML::Load(parsed.text); // checked by read(): one document
    const fs::path p(parsed.path);
    ScenarioSpec spec = detail::load_root(root, parsed.path, p.parent_path(), p.stem().string(), overrides,
                                  &parsed.presets, options);
    spec.input_files.insert(spec.input_files.begin(), parsed.path);
    return spec;
}

ScenarioSpec load_scenario_with(const std::string& path, const std::vector<Override>& overrides) {
    return load_scenario_with(ScenarioBase::read(path), overrides);
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
    return load_scenario_with(path, command_line_overrides(overrides));
}

ScenarioSpec load_scenario_text(const std::string& text, const std::string& name,
                                const std::vector<std::string>& overrides) {
    const YAML::Node root = detail::parse_yaml(text, name);
    return detail::load_root(root, name, fs::current_path(), fs::path(name).stem().string(),
                     command_line_overrides(overrides));
}

std::string schema_markdown() {
    std::string md;
    md += "# Scenario schema\n\n";
    md += "<!-- Generated by `trnsim describe schema`; do not edit by hand. A test checks that "
          "this file matches the schema tables in src/config/. -->\n\n";
    md += "Every key of a scenario file, with its type, default and allowed values. Quantities "
          "carry units as strings (see *Units* below). Unknown keys are errors. Any key can be "
          "overridden on the command line with `--set key.path=value`.\n\n";
    md += "## Units\n\n";
    md += "| type | units | examples |\n|---|---|---|\n";
    md += "| duration | `ns us ms s min h d w y` (y = 365.25 d) | `30min`, `2.5h`, `6y` |\n";
    md += "| bytes | `B KB MB GB TB PB` (powers of 1000), `KiB MiB GiB TiB PiB` (powers of "
          "1024) | `96GiB`, `1.5TB` |\n";
    md += "| bandwidth | bits: `bps Kbps Mbps Gbps Tbps Pbps` (also `Gb/s`); bytes: `B/s KB/s "
          "MB/s GB/s TB/s PB/s KiB/s MiB/s GiB/s TiB/s` | `200Gbps`, `2.9TB/s` |\n";
    md += "| flop rate | `FLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS EFLOPS` (also `TFLOP/s`) | "
          "`667TFLOPS` |\n";
    md += "| frequency | `Hz kHz MHz GHz` | `2.4GHz` |\n";
    md += "| money | `USD` suffix or `$` prefix | `35.76USD`, `$35.76` |\n";
    md += "| count | integer with optional decimal suffix `K M B G T P` | `8192`, `2.5M`, `15T` "
          "|\n";
    md += "| number | plain number or percentage | `0.25`, `25%` |\n\n";
    md += "## " + detail::scenario_schema().title() + " file\n\n";
    md += detail::scenario_schema().markdown();
    md += "\n## Tenants (`tenants:`)\n\n";
    md += "Instead of `workload` (and `reliability`), a scenario may list tenants sharing its "
          "cluster: each entry has a `name` (1 to 64 letters, digits, `_`, `-` or `.`), an "
          "`allocation` (`{ultraservers: N}` or `{instances: N}` in the cluster's unit, and "
          "optionally `first: K`, default: after the previous tenant's), a `workload` section "
          "and optionally a `reliability` section, each with the keys above. The other "
          "sections are shared. `--set tenants.NAME.key.path=value` sets a tenant's key. See "
          "docs/tenants.md.\n";
    md += "\n## Fleet (`fleet:`)\n\n";
    md += "Instead of `workload` (and `reliability`), a scenario may describe training jobs "
          "and serving services sharing its cluster under one scheduler (docs/fleet.md):\n\n"
          "| key | meaning | default |\n|---|---|---|\n"
          "| `fleet.policy` | `fifo`, `backfill` (EASY) or `priority` (with preemption) | "
          "`fifo` |\n"
          "| `fleet.spares` | domains kept as spares, for replacing failed domains of running "
          "jobs (fewer than the cluster's) | 0 |\n"
          "| `fleet.horizon` | duration: the run stops there (required with services) | until "
          "every job has finished |\n"
          "| `fleet.quotas` | mapping from a tenant's name to the domains it may hold at once "
          "in each pool (at least 1) | none |\n"
          "| `fleet.pools` | list of pools beside the cluster's own (named `main`), each with "
          "its own scheduler, spares and failure process (docs/fleet.md, \"Several pools\") | "
          "none |\n"
          "| `fleet.pools[i].name` | 1 to 64 letters, digits, `_`, `-` or `.`; unique, not "
          "`main` | |\n"
          "| `fleet.pools[i].ultraservers`, `.instances` | its domains, 1 to 1,000,000 (exactly "
          "one of the two) | |\n"
          "| `fleet.pools[i].hardware` | its hardware section (keys above) | the scenario's |\n"
          "| `fleet.pools[i].cost` | its cost section: its price (keys above) | the "
          "scenario's |\n"
          "| `fleet.pools[i].spares` | domains kept as its spares (fewer than its domains) | 0 "
          "|\n"
          "| `fleet.jobs[i].pool`, `fleet.services[i].pool` | the pool it runs in | `main` |\n"
          "| `fleet.jobs` | list of job classes (at least one, unless there are services) | |\n"
          "| `fleet.jobs[i].name` | 1 to 64 letters, digits, `_`, `-` or `.`; unique | |\n"
          "| `fleet.jobs[i].tenant` | the tenant whose quota its jobs count against | the "
          "class's name |\n"
          "| `fleet.jobs[i].gang` | domains each job holds, 1 to its pool's less the spares; "
          "or an elastic class's allowed gangs, increasing (`[4, 8, 16]`): each start takes "
          "the largest the idle domains and the quota allow | |\n"
          "| `fleet.trace` | a job trace: a CSV file whose header names `submit` and `class` "
          "and optionally `steps`, `duration` and `priority`, one job a line (docs/fleet.md) "
          "| none |\n"
          "| `fleet.jobs[i].count` | jobs of the class, 1 to 1,000,000 (0 with a trace) | 1 |\n"
          "| `fleet.jobs[i].submit` | duration: the first job's submission | 0 |\n"
          "| `fleet.jobs[i].every` | duration between the class's submissions | 0 |\n"
          "| `fleet.jobs[i].priority` | 0 to 1,000,000; higher first under `priority` | 0 |\n"
          "| `fleet.jobs[i].deadline` | duration: each job should end within it of its "
          "submission (what a fleet plan must meet) | none |\n"
          "| `fleet.request_level.from`, `.to` | durations: a window in which every service is "
          "replayed at request level after the run, on the domains it had ready (docs/fleet.md) "
          "| none |\n"
          "| `fleet.jobs[i].workload` | a training workload section (keys above), run on a "
          "cluster of `gang` domains | |\n"
          "| `fleet.jobs[i].reliability` | its checkpoints (interval, mode, bandwidths) and "
          "`recovery.restart` (keys above) | no checkpoints, no start time |\n"
          "| `fleet.services` | list of serving services | none |\n"
          "| `fleet.services[i].name` | 1 to 64 letters, digits, `_`, `-` or `.`; unique among "
          "classes and services | |\n"
          "| `fleet.services[i].tenant` | the tenant whose quota its domains count against | the "
          "service's name |\n"
          "| `fleet.services[i].priority` | 0 to 1,000,000 | 0 |\n"
          "| `fleet.services[i].borrow` | true: may preempt jobs of lower priority for domains | "
          "false |\n"
          "| `fleet.services[i].attainment` | the SLO attainment (0 to 1, exclusive) at which "
          "one domain's capacity is measured | 0.9 |\n"
          "| `fleet.services[i].workload` | an inference workload section (keys above) with "
          "open-loop arrivals and an SLO, measured on one domain | |\n"
          "| `fleet.services[i].load.rate` | requests per unit of time at the daily low "
          "(`20/s`) | |\n"
          "| `fleet.services[i].load.peak` | the peak's multiple of the low, 1 to 1,000 | 1 |\n"
          "| `fleet.services[i].load.peak_at` | duration into each period of the peak | 0 |\n"
          "| `fleet.services[i].load.period` | duration of one cycle | 24h |\n"
          "| `fleet.services[i].load.step` | duration the load is held constant (its mean over "
          "it), 1 s to the period | 5min |\n"
          "| `fleet.services[i].autoscale.signal` | `utilisation`, `queue` or `slo` | "
          "`utilisation` |\n"
          "| `fleet.services[i].autoscale.target` | utilisation to hold, seconds of backlog to "
          "clear, or attainment to reach | 0.7, 30, 0.99 |\n"
          "| `fleet.services[i].autoscale.min` | domains it keeps, 0 to `max` | |\n"
          "| `fleet.services[i].autoscale.max` | domains it may hold, 1 to the cluster's less the "
          "spares | |\n"
          "| `fleet.services[i].autoscale.interval` | duration between decisions, at least 1 s "
          "| 1min |\n"
          "| `fleet.services[i].autoscale.lag` | duration: how old the metrics it reads are | "
          "1min |\n"
          "| `fleet.services[i].autoscale.provisioning` | duration from a grant to the model's "
          "load | 5min |\n"
          "| `fleet.services[i].autoscale.drain` | duration a domain taken away finishes its "
          "requests before it is given back | 1min |\n"
          "| `fleet.services[i].autoscale.load_bandwidth` | bandwidth at which an instance reads "
          "its weights into HBM | 4.33GB/s (NxD Inference, docs/fleet.md) |\n\n"
          "The other sections are shared. A `reliability` section beside `fleet` (keys above, "
          "without `spares`: the fleet's are `fleet.spares`) is the failure process of the "
          "whole pool. `--set fleet.jobs.NAME.key.path=value` sets a class's key, "
          "`--set fleet.services.NAME.key.path=value` a service's.\n";
    md += "\n## " + detail::model_schema().title() +
          " (`workload.model` mapping, or a file in `scenarios/models/`)\n\n";
    md += detail::model_schema().markdown();
    md += "\n## " + detail::chip_schema().title() + " file (`topologies/chips/*.yaml`)\n\n";
    md += detail::chip_schema().markdown();
    md += "\n## " + detail::fabric_schema().title() + " file (`topologies/*.yaml`)\n\n";
    md += detail::fabric_schema().markdown();
    md += study_schema_markdown();
    return md;
}

} // namespace trnsim::config
