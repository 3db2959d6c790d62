#include "commands.hpp"
#include "sourced_values.hpp"
#include "options.hpp"

#include "outputs.hpp"
#include "report.hpp"
#include "json_summary.hpp"
#include "serving_report.hpp"
#include "fleet_report.hpp"
#include "tenants_report.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/report/outputs.hpp"
#include "trnsim/report/run_results.hpp"
#include "trnsim/engine/window_driver.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/trace.hpp"
#include "trnsim/topology/analysis.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/sim/workload_kinds.hpp"
#include "trnsim/workload/model.hpp"

#include <boost/program_options.hpp>

#include <chrono>
#include <iostream>
#include <optional>
#include <utility>

namespace po = boost::program_options;

namespace trnsim::cli {

std::string version_line() { return std::string("trnsim ") + TRNSIM_VERSION; }

namespace {

struct Parsed {
    po::variables_map vm;
    bool help = false;
};

/// Parses subcommand arguments; prints help and returns help=true for --help.
Parsed parse(const std::vector<std::string>& args, const po::options_description& visible,
             const po::options_description& hidden, const po::positional_options_description& pos,
             const std::string& usage) {
    Parsed p;
    p.vm = parse_options(args, visible, pos, hidden, usage);
    if (p.vm.count("help")) {
        std::cout << "usage: " << usage << "\n\n" << visible;
        p.help = true;
    }
    return p;
}

config::ScenarioSpec load(const std::string& file, const std::vector<std::string>& overrides) {
    return config::load_scenario(file, overrides);
}

/// simulation.threads: a number, or 0 for auto (the engine's default team: OMP_NUM_THREADS
/// when set, else every hardware thread).
int resolve_threads(int requested) {
    return requested > 0 ? requested : engine::default_thread_count();
}

/// The scenario's warnings on stderr; with --strict the first is an input error (exit 2).
void report_warnings(const config::ScenarioSpec& spec, bool strict) {
    if (strict && !spec.warnings.empty()) {
        const config::Warning& w = spec.warnings.front();
        throw InputError(w.key_path, w.message + " (--strict makes warnings errors)",
                         w.location);
    }
    for (const config::Warning& w : spec.warnings) {
        std::cerr << config::to_string(w) << "\n";
    }
}

} // namespace

int cmd_run(const std::vector<std::string>& args) {
    using Clock = std::chrono::steady_clock;
    const Clock::time_point started = Clock::now();
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "output,o", po::value<std::string>(), "results file (default: output.file of the scenario)")(
        "set", po::value<std::vector<std::string>>()->composing(),
        "override a scenario key: --set workload.parallelism.tp=8 (repeatable)")(
        "threads", po::value<std::string>(), "worker threads (a number or auto)")(
        "trace", po::value<std::string>(),
        "write a Chrome/Perfetto JSON timeline of the step simulation (ranks: output.trace_ranks)")(
        "quiet,q", "print nothing but errors")(
        "json", "print the summary as one JSON object instead of the text summary")(
        "strict", "treat warnings (settings without effect) as errors: exit 2");
    po::options_description hidden;
    hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
    po::positional_options_description pos;
    pos.add("scenario", 1);
    const Parsed p = parse(args, opts, hidden, pos,
                           "trnsim run SCENARIO.yaml [-o OUT.h5] [--set key.path=value]... "
                           "[--threads N] [--trace T.json]");
    if (p.help) {
        return 0;
    }
    if (!p.vm.count("scenario")) {
        throw UsageError("trnsim run needs a scenario file\nusage: trnsim run SCENARIO.yaml");
    }
    const auto option = [&](const char* name) -> std::optional<std::string> {
        if (!p.vm.count(name)) {
            return std::nullopt;
        }
        return p.vm[name].as<std::string>();
    };
    const std::vector<std::string> sets = p.vm.count("set")
                                              ? p.vm["set"].as<std::vector<std::string>>()
                                              : std::vector<std::string>{};
    const std::string scenario_file = p.vm["scenario"].as<std::string>();
    config::ScenarioSpec spec = config::load_scenario_with(
        scenario_file, run_overrides(sets, option("output"), option("trace"), option("threads")));
    if (const auto named = output_for_overrides(spec, sets, option("output").has_value())) {
        // A run with --set never lands on the file of the plain scenario (or of other --set).
        std::vector<config::Override> overrides =
            run_overrides(sets, std::nullopt, option("trace"), option("threads"));
        overrides.push_back(config::option_override(
            "output.file", *named, "the default results file of a run with --set"));
        spec = config::load_scenario_with(scenario_file, overrides);
    }
    report_warnings(spec, p.vm.count("strict") > 0);
    const bool json = p.vm.count("json") > 0;
    const bool quiet = p.vm.count("quiet") > 0 || json;
    const int threads = resolve_threads(spec.simulation.threads);
    const report::Writer writer{TRNSIM_VERSION, threads};
    const auto finish = [&](const results::ResultsFile& file) {
        if (json) {
            std::cout << summary_json(file.summary, spec.output.file) << "\n";
        } else if (!quiet) {
            std::cout << "  results    " << spec.output.file << "\n";
        }
    };
    report::check_scenario_outputs(spec);
    // Every kind of workload runs through the registry (sim/workload_kinds.hpp): checked
    // before anything simulates, then run; what is printed follows the kind.
    sim::RunSettings settings;
    settings.threads = threads;
    bool first_row = true;
    if (spec.workload_type == config::WorkloadType::collective && !quiet) {
        settings.collective_row = [&](const sim::CollectiveRow& row) {
            if (std::exchange(first_row, false)) {
                print_collective_header(std::cout, sim::collective_bench_spec(spec, threads));
            }
            print_collective_row(std::cout, row);
        };
    }
    const Clock::time_point checked = Clock::now();
    const sim::ScenarioOutcome outcome = sim::run_scenario(spec, settings);
    const Clock::time_point simulated = Clock::now();
    // The whole command's wall time, in parts: the simulation's own figure (the engine line)
    // leaves out reading a trace, the checks and writing the results.
    const auto wall = [&] {
        if (quiet) {
            return;
        }
        const Clock::time_point written = Clock::now();
        const auto s = [](Clock::time_point a, Clock::time_point b) {
            return fmt::seconds(std::chrono::duration<double>(b - a).count());
        };
        std::cout << "  wall       " << s(started, written) << " in all: " << s(started, checked)
                  << " reading and checking the inputs, " << s(checked, simulated)
                  << " simulating, " << s(simulated, written) << " writing the results\n";
    };
    if (const auto* tenants = std::get_if<sim::TenantsRun>(&outcome)) {
        const results::ResultsFile file = report::tenants_results(spec, *tenants, writer);
        results::write_hdf5(spec.output.file, file);
        if (json) {
            std::cout << tenants_json(file, spec.output.file) << "\n";
        } else if (!quiet) {
            print_tenants(std::cout, spec, *tenants);
            std::cout << "  results    " << spec.output.file << "\n";
        }
        wall();
        return 0;
    }
    if (const auto* fleet = std::get_if<sim::FleetRun>(&outcome)) {
        const results::ResultsFile file = report::fleet_results(spec, *fleet, writer);
        results::write_hdf5(spec.output.file, file);
        if (!quiet) {
            print_fleet(std::cout, spec, *fleet);
        }
        finish(file);
        wall();
        return 0;
    }
    if (const auto* result = std::get_if<sim::CollectiveBenchResult>(&outcome)) {
        const results::ResultsFile file = report::collective_results(spec, *result, writer);
        results::write_hdf5(spec.output.file, file);
        finish(file);
        wall();
        return 0;
    }
    if (const auto* serving = std::get_if<sim::ServingScenarioRun>(&outcome)) {
        const results::ResultsFile file = report::serving_results(spec, *serving, writer);
        results::write_hdf5(spec.output.file, file);
        if (!quiet) {
            print_serving(std::cout, spec, *serving);
        }
        if (const std::uint64_t left = serving->run.summary.unfinished; left > 0) {
            std::cerr << "trnsim: warning: partial results: " << left << " of "
                      << left + serving->run.summary.requests
                      << " requests did not finish (failures outpaced the fleet); the figures "
                         "are of the finished ones (/summary unfinished_requests)\n";
        }
        finish(file);
        wall();
        return 0;
    }
    const sim::TrainingRun& run = std::get<sim::TrainingRun>(outcome);
    // Both files complete before either replaces anything: no results without their trace.
    const results::ResultsFile file = report::run_results(spec, run, writer);
    std::vector<results::PendingFile> files;
    files.push_back(results::stage_hdf5(spec.output.file, file));
    if (run.step_sim && !spec.output.trace.empty()) {
        files.push_back(results::stage_chrome_trace(spec.output.trace,
                                                    report::step_trace(spec, *run.step_sim)));
    }
    results::commit_all(files);
    if (!quiet) {
        print_run(std::cout, spec, run);
    }
    finish(file);
    if (!quiet && run.step_sim && !spec.output.trace.empty()) {
        std::cout << "  trace      " << spec.output.trace << " ("
                  << run.step_sim->trace.spans.size() << " slices; open in ui.perfetto.dev)\n";
    }
    wall();
    return 0;
}

int cmd_validate(const std::vector<std::string>& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "set", po::value<std::vector<std::string>>()->composing(),
        "override a scenario key (repeatable)")(
        "strict", "treat warnings (settings without effect) as errors: exit 2");
    po::options_description hidden;
    hidden.add_options()("scenario", po::value<std::string>(), "scenario file");
    po::positional_options_description pos;
    pos.add("scenario", 1);
    const Parsed p =
        parse(args, opts, hidden, pos, "trnsim validate SCENARIO.yaml [--set key.path=value]...");
    if (p.help) {
        return 0;
    }
    if (!p.vm.count("scenario")) {
        throw UsageError("trnsim validate needs a scenario file");
    }
    std::vector<std::string> overrides;
    if (p.vm.count("set")) {
        overrides = p.vm["set"].as<std::vector<std::string>>();
    }
    const std::string file = p.vm["scenario"].as<std::string>();
    if (config::file_kind(file) != config::FileKind::scenario) {
        if (!overrides.empty()) {
            throw UsageError("--set applies to scenarios; a sweep or plan file sets keys itself");
        }
        return validate_study(file);
    }
    const config::ScenarioSpec spec = load(file, overrides);
    report::check_scenario_outputs(spec); // what run would refuse, validate refuses
    report_warnings(spec, p.vm.count("strict") > 0);
    std::cout << "# resolved scenario (every default filled in)\n" << spec.resolved_yaml << "\n";
    // Every check that run makes before it simulates: what run refuses, validate refuses. The
    // training and inference checks return what is printed; others are the registry's check.
    const auto located = [&](const auto& check) {
        try {
            return check(spec);
        } catch (const InputError& e) {
            throw e.located(spec.sources);
        }
    };
    if (!spec.tenants.empty()) {
        sim::check_scenario(spec);
        print_tenants_header(std::cout, spec);
    } else if (spec.fleet) {
        sim::check_scenario(spec);
        print_fleet_header(std::cout, spec);
    } else if (spec.workload_type == config::WorkloadType::training) {
        print_plan(std::cout, spec, located(sim::check_training));
    } else if (spec.workload_type == config::WorkloadType::inference) {
        print_serving_layout(std::cout, spec, located(sim::check_serving));
    } else {
        sim::check_scenario(spec);
        std::cout << "  cluster    " << fmt::integer(spec.cluster.domains())
                  << (spec.cluster.counts_ultraservers() ? " UltraServers" : " instances")
                  << " of " << spec.hardware.chip.name << " on fabric " << spec.fabric.name
                  << "\n";
    }
    std::cout << "  valid\n";
    return 0;
}

namespace {

void describe_chip(const std::string& name) {
    const compute::ChipSpec c = config::load_chip(name);
    std::cout << c.name << ": " << c.description << "\n";
    const auto row = [](const std::string& k, const std::string& v) {
        std::cout << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v
                  << "\n";
    };
    row("file", config::preset_file(config::PresetKind::chip, name).string());
    std::string lnc;
    for (int v : c.lnc_allowed) {
        lnc += (lnc.empty() ? "" : ", ") + std::to_string(v) + " (" +
               std::to_string(c.ranks_per_chip(v)) + " ranks)";
    }
    row("NeuronCores", std::to_string(c.physical_cores) + " physical; LNC " + lnc +
                           ", default " + std::to_string(c.lnc_default));
    row("peak (chip, dense)", "FP8 " + fmt::flop_rate(c.peak_fp8) + ", BF16 " +
                                  fmt::flop_rate(c.peak_bf16) + ", FP32 " +
                                  fmt::flop_rate(c.peak_fp32));
    row("TensorE per core", std::to_string(c.core.tensor.rows) + "x" +
                                std::to_string(c.core.tensor.cols) + " at " +
                                fmt::fixed(c.core.tensor.clock.hz() / 1e9, 2) + " GHz = " +
                                fmt::flop_rate(c.tensor_peak_per_core(compute::Precision::bf16)) +
                                " BF16");
    // Time and MFU have one basis each (docs/compute.md, "Chip data and its sources"): kernel
    // times come from the engine rates, MFU divides by the published chip peak.
    const auto ratio = [&](compute::Precision p) {
        return c.physical_cores * c.tensor_peak_per_core(p).per_s() / c.peak(p).per_s();
    };
    const FlopRate engines_bf16 = FlopRate::per_s(
        c.physical_cores * c.tensor_peak_per_core(compute::Precision::bf16).per_s());
    row("TensorE x cores", std::to_string(c.physical_cores) + " x " +
                               fmt::flop_rate(c.tensor_peak_per_core(compute::Precision::bf16)) +
                               " = " + fmt::flop_rate(engines_bf16) + " BF16 = " +
                               fmt::fixed(ratio(compute::Precision::bf16), 3) +
                               " x the published " + fmt::flop_rate(c.peak_bf16) + " (FP8 " +
                               fmt::fixed(ratio(compute::Precision::fp8), 3) + ")");
    row("time / MFU basis", "kernel times: the engine rates; MFU: the published peak");
    const auto engine = [](const compute::VectorEngineSpec& e) {
        return fmt::fixed(e.clock.hz() / 1e9, 2) + " GHz x " + std::to_string(e.elements_per_cycle) +
               " elements/cycle";
    };
    const auto& v = c.core.vector;
    row("VectorE", engine(v) + (v.perf_mode_elements_per_cycle > 0
                                    ? " (" + std::to_string(v.perf_mode_elements_per_cycle) +
                                          " in performance mode: BF16/FP16 copies and scalar "
                                          "maps in SBUF)"
                                    : std::string()));
    row("ScalarE", engine(c.core.scalar));
    row("GpSimdE", engine(c.core.gpsimd));
    row("SBUF / PSUM per core", fmt::bytes(c.core.sbuf) + " / " + fmt::bytes(c.core.psum));
    row("DMA per core", std::to_string(c.core.dma_engines) + " engines x " +
                            fmt::bandwidth(c.core.dma_engine_bandwidth) + ", setup " +
                            fmt::duration(c.core.dma_setup_latency));
    row("HBM", fmt::bytes(c.hbm_capacity) + " at " + fmt::bandwidth(c.hbm_bandwidth) +
                   " (runtime reserve " + fmt::bytes(c.hbm_runtime_reserve) + ")");
    // The links as the cluster module defines them, on one scale-up domain of this chip.
    const cluster::Hierarchy domain(
        c, cluster::Hierarchy::smallest_holding(c, cluster::Hierarchy::chips_per_ultraserver(c)));
    const cluster::LinkLevel& link = domain.link(network::LinkClass::neuronlink);
    const cluster::LinkLevel& efa = domain.link(network::LinkClass::efa);
    const bool switched = domain.scale_up() == ScaleUpKind::switched;
    const bool two_levels = switched && domain.has_link(network::LinkClass::neuronlink_z);
    const auto per_chip = [&](network::LinkClass k) {
        return domain.has_link(k) ? fmt::bandwidth(domain.link(k).per_chip) : std::string();
    };
    std::string neuronlink = fmt::bandwidth(link.per_chip);
    if (two_levels) {
        neuronlink += " per chip into its server's switch, " +
                      per_chip(network::LinkClass::neuronlink_z) + " into its rack's switches";
        if (domain.has_link(network::LinkClass::neuronlink_rack)) {
            neuronlink += ", " + per_chip(network::LinkClass::neuronlink_rack) +
                          " direct to its position in the other racks (" +
                          std::to_string(domain.shape().racks_per_ultraserver) + " racks)";
        }
    } else if (switched) {
        neuronlink += std::string(" per chip to any chip of the ") +
                      (domain.ultraserver_domains() ? "UltraServer" : "instance") +
                      " through NeuronLink switches";
    } else {
        neuronlink += " per chip in the instance";
        if (domain.has_link(network::LinkClass::neuronlink_z)) {
            neuronlink += ", " + per_chip(network::LinkClass::neuronlink_z) +
                          " to the other instances of the UltraServer";
        }
    }
    row("NeuronLink", neuronlink + "; " + fmt::duration(link.latency) + " per step");
    row("EFA", c.instance.efa_bandwidth.bytes_per_s() <= 0.0
                   ? std::string("none (one instance per job)")
                   : fmt::bandwidth(c.efa_bandwidth_per_chip()) + " per chip (" +
                         fmt::fixed(c.instance.efa_bandwidth.bits_per_s() / 1e9, 0) +
                         " Gbps per instance over " +
                         std::to_string(c.instance.efa_interfaces) + " interfaces); " +
                         fmt::duration(efa.latency) + " per message");
    std::string torus;
    for (int d : c.instance.torus) {
        torus += (torus.empty() ? "" : "x") + std::to_string(d);
    }
    row("instance", c.instance.name + ": " + std::to_string(c.instance.chips) + " chips (" +
                        (switched ? std::string("switched") : torus + " torus") + "), " + std::to_string(c.instance.vcpus) + " vCPUs, " +
                        fmt::bytes(c.instance.host_memory) + " host memory, " +
                        fmt::money(c.instance.price_per_hour) + " per hour");
    row("UltraServer",
        c.ultraserver
            ? std::to_string(cluster::Hierarchy::instances_per_ultraserver(c)) + " instances = " +
                  std::to_string(cluster::Hierarchy::chips_per_ultraserver(c)) + " chips" +
                  (c.ultraserver->racks > 1
                       ? " in " + std::to_string(c.ultraserver->racks) + " racks"
                       : std::string())
            : "none");
    row("serving", "per graph " + fmt::duration(c.serving.iteration_overhead) + ", per kernel " +
                       fmt::duration(c.serving.kernel_overhead) + ", per prefill graph " +
                       fmt::duration(c.serving.prefill_graph_overhead) + "; prefill at most " +
                       fmt::fixed(100.0 * c.serving.prefill_efficiency, 1) +
                       "% of TensorE peak (docs/serving.md)");
    const std::filesystem::path file = config::preset_file(config::PresetKind::chip, name);
    std::cout << "  values and their sources (the calibrated kernel_model: trnsim calibrate)\n";
    cli::print_sourced_values(std::cout, cli::sourced_values(file, true), file,
                              {"name", "description", "kernel_model"});
}

void describe_model(const std::string& name) {
    const workload::ModelSpec m = config::load_model(name);
    const workload::ModelStats s = workload::compute_stats(m);
    std::cout << m.name << (m.source.empty() ? "" : " (" + m.source + ")") << "\n";
    const auto row = [](const std::string& k, const std::string& v) {
        std::cout << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << v
                  << "\n";
    };
    row("file", config::preset_file(config::PresetKind::model, name).string());
    const auto compare = [](std::int64_t computed, std::int64_t published) {
        std::string t = fmt::count(static_cast<double>(computed)) + " (" +
                        std::to_string(computed) + ")";
        if (published > 0) {
            const double dev = static_cast<double>(computed - published) /
                               static_cast<double>(published);
            t += "; published " + fmt::count(static_cast<double>(published)) + ", " +
                 (dev >= 0 ? "+" : "") + fmt::fixed(dev * 100.0, 2) + "%";
        }
        return t;
    };
    row("layers", std::to_string(m.layers) + (m.is_moe() ? " (" + std::to_string(m.dense_layers()) +
                                                               " dense, " +
                                                               std::to_string(m.moe_layers()) +
                                                               " MoE)"
                                                         : ""));
    row("hidden / ffn", std::to_string(m.hidden) + " / " + std::to_string(m.ffn_hidden) + " (" +
                            workload::to_string(m.mlp) + ", " + workload::to_string(m.norm) + ")");
    std::string attention = std::string(workload::to_string(m.attention)) + ", " +
                            std::to_string(m.heads) + " heads";
    if (m.attention == workload::AttentionKind::gqa) {
        attention += ", " + std::to_string(m.kv_heads) + " kv heads, head_dim " +
                     std::to_string(m.head_dim);
    } else {
        attention += ", kv rank " + std::to_string(m.mla.kv_lora_rank) + ", q rank " +
                     std::to_string(m.mla.q_lora_rank) + ", qk " + std::to_string(m.qk_dim()) +
                     ", v " + std::to_string(m.v_dim());
    }
    row("attention", attention + ", " + workload::to_string(m.position) + " positions");
    row("vocabulary", std::to_string(m.vocab) + (m.tied_embeddings ? " (tied embeddings)" : ""));
    if (m.is_moe()) {
        row("experts", std::to_string(m.moe.experts) + " routed (top " +
                           std::to_string(m.moe.top_k) + "), " +
                           std::to_string(m.moe.shared_experts) + " shared, ffn " +
                           std::to_string(m.moe.expert_ffn_hidden));
    }
    row("parameters", compare(s.total, m.published_parameters));
    if (m.is_moe()) {
        row("active parameters", compare(s.active, m.published_active_parameters));
    }
    for (std::int64_t seq : {4096, 8192}) {
        row("FLOPs/token @" + std::to_string(seq),
            fmt::count(s.model_flops_per_token(m, seq)) + " (training: 6N + attention)");
    }
    row("BF16 weights", fmt::bytes(static_cast<double>(s.total) * 2.0));
}

/// The fabric of a cluster of `ultraservers` UltraServers or `instances` plain instances (one
/// domain when neither is given).
topology::Fabric build_cluster_fabric(topology::FabricSpec spec, std::int64_t ultraservers,
                                      std::int64_t instances) {
    const cluster::ClusterSpec c{ultraservers, instances};
    if (c.counts_ultraservers() && instances > 0) {
        throw UsageError("give --ultraservers or --instances, not both");
    }
    if (c.counts_ultraservers() && spec.scale_up.ultraserver_instances < 2) {
        throw UsageError("fabric '" + spec.name + "' has no UltraServers; use --instances");
    }
    if (instances > 0) {
        spec.scale_up.ultraserver_instances = 0; // plain instances: no NeuronLink between them
    }
    return topology::Fabric::build(spec, c.domains() > 0 ? c.domains() : 1);
}

void describe_topology(const std::vector<std::string>& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "ultraservers", po::value<std::string>(), "number of UltraServers")(
        "instances", po::value<std::string>(),
        "number of plain instances (no NeuronLink between them)");
    po::options_description hidden;
    hidden.add_options()("fabric", po::value<std::string>(), "fabric preset or file");
    po::positional_options_description pos;
    pos.add("fabric", 1);
    const Parsed p = parse(args, opts, hidden, pos,
                           "trnsim describe topology NAME|FILE [--ultraservers N | --instances N]");
    if (p.help) {
        return;
    }
    if (!p.vm.count("fabric")) {
        std::cout << "fabric presets in " << (config::data_dir() / "topologies").string() << ":\n";
        for (const auto& n : config::fabric_presets()) {
            std::cout << "  " << n << "\n";
        }
        return;
    }
    const auto start = std::chrono::steady_clock::now();
    const topology::FabricSpec spec = config::load_fabric(p.vm["fabric"].as<std::string>());
    const topology::Fabric f =
        build_cluster_fabric(spec, integer_flag(p.vm, "ultraservers", 1, 1 << 20, 0),
                             integer_flag(p.vm, "instances", 1, 1 << 20, 0));
    const auto built = std::chrono::steady_clock::now();
    const topology::FabricReport r = topology::analyse(f);
    const auto analysed = std::chrono::steady_clock::now();
    const auto row = [](const std::string& k, const std::string& v) {
        std::cout << "  " << k << std::string(k.size() < 20 ? 20 - k.size() : 1, ' ') << v << "\n";
    };
    std::cout << spec.name << ": " << spec.description << "\n";
    row("file", config::preset_file(config::PresetKind::fabric, p.vm["fabric"].as<std::string>())
                    .string());
    const auto count = [](std::uint32_t n, const char* what) {
        return fmt::integer(n) + " " + what + (n == 1 ? "" : "s");
    };
    std::string size;
    if (f.ultraservers() > 0) {
        size += count(f.ultraservers(), "UltraServer") + " = ";
    }
    size += count(f.instances(), "instance") + " = " + fmt::integer(f.chips()) + " " + spec.chip +
            " chips";
    row("size", size);
    std::string torus;
    for (int d = 0; d < f.torus_dims(); ++d) {
        torus += (torus.empty() ? "" : "x") + std::to_string(f.torus_size(d));
    }
    const std::string levels =
        f.two_switch_levels()
            ? "switched, two levels (a switch per server, " +
                  std::string(f.racks_per_domain() > 1
                                  ? "per rack, and direct links between " +
                                        std::to_string(f.racks_per_domain()) + " racks)"
                                  : "and per rack)")
            : "switched (every chip through a NeuronSwitch)";
    row("NeuronLink", (f.switched() ? levels : torus + " torus") + " per " +
                          (f.ultraservers() > 0 ? "UltraServer" : "instance"));
    if (f.has_scale_out()) {
        row("EFA", fmt::integer(f.nics()) + " NICs on " +
                       std::to_string(spec.scale_out.nics_per_instance) + " rails, " +
                       fmt::integer(f.leaves()) + " leaves, " + fmt::integer(f.spines()) +
                       " spines in " + fmt::integer(f.pods()) + " pod" +
                       (f.pods() == 1 ? "" : "s") + ", " + fmt::integer(f.cores()) + " cores");
    }
    for (int k = 0; k < topology::kLinkKinds; ++k) {
        if (r.links[static_cast<std::size_t>(k)] == 0) {
            continue;
        }
        row(k == 0 ? "links (directed)" : "",
            std::string(topology::to_string(static_cast<topology::LinkKind>(k))) + ": " +
                fmt::integer(static_cast<std::int64_t>(r.links[static_cast<std::size_t>(k)])) +
                " x " + fmt::bandwidth(Bandwidth::bytes_per_s(
                            r.link_bandwidth[static_cast<std::size_t>(k)])));
    }
    row("connected", r.connected ? "yes" : "NO");
    row("diameter", std::to_string(r.diameter) + " links between the farthest chips");
    row("bisection", fmt::bandwidth(Bandwidth::bytes_per_s(r.bisection)) +
                         " per direction (between the halves of the chips, narrowest tier)");
    row("memory", fmt::bytes(static_cast<double>(f.memory_bytes())));

    row("build time", fmt::seconds(std::chrono::duration<double>(built - start).count()) +
                          " (analysis " +
                          fmt::seconds(std::chrono::duration<double>(analysed - built).count()) +
                          ")");
    const std::filesystem::path file =
        config::preset_file(config::PresetKind::fabric, p.vm["fabric"].as<std::string>());
    std::cout << "  values and their sources\n";
    cli::print_sourced_values(std::cout, cli::sourced_values(file, false), file,
                              {"name", "description"});
}

} // namespace

int cmd_describe(const std::vector<std::string>& args) {
    const std::string usage =
        "trnsim describe chip|model|topology [NAME|FILE]  |  trnsim describe schema";
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::cout << "usage: " << usage << "\n\n"
                  << "  chip NAME     a chip preset (topologies/chips/) or chip file\n"
                  << "  model NAME    a model preset (scenarios/models/) or model file\n"
                  << "  topology NAME a fabric (topologies/) [--ultraservers N | --instances N]\n"
                  << "  schema        every scenario, model and chip key (Markdown)\n"
                  << "Without NAME, lists the presets.\n";
        if (args.empty()) {
            throw UsageError("trnsim describe needs what to describe\nusage: " + usage);
        }
        return 0;
    }
    const std::string& what = args[0];
    if (what == "topology") {
        describe_topology(std::vector<std::string>(args.begin() + 1, args.end()));
        return 0;
    }
    if (args.size() > 2) {
        throw UsageError("too many arguments\nusage: " + usage);
    }
    if (what == "schema") {
        if (args.size() != 1) {
            throw UsageError("trnsim describe schema takes no name\nusage: " + usage);
        }
        std::cout << config::schema_markdown();
        return 0;
    }
    if (what != "chip" && what != "model") {
        throw UsageError("cannot describe '" + what + "'\nusage: " + usage);
    }
    if (args.size() == 1) {
        const auto names = what == "chip" ? config::chip_presets() : config::model_presets();
        std::cout << what << " presets in " << config::data_dir().string() << ":\n";
        for (const auto& n : names) {
            std::cout << "  " << n << "\n";
        }
        return 0;
    }
    if (what == "chip") {
        describe_chip(args[1]);
    } else {
        describe_model(args[1]);
    }
    return 0;
}

} // namespace trnsim::cli
