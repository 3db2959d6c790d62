// trnsim batch and trnsim plan.
#include "commands.hpp"
#include "options.hpp"

#include "outputs.hpp"
#include "progress.hpp"
#include "study_report.hpp"

#if TRNSIM_WITH_MPI
#include "mpi_batch.hpp"
#endif

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/engine/window_driver.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"
#include "trnsim/study/sweep.hpp"
#include "trnsim/report/outputs.hpp"
#include "trnsim/report/study_results.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

namespace po = boost::program_options;

namespace trnsim::cli {

namespace {

/// The processes mpirun (or another PMI launcher) started, from the environment; 1 when
/// trnsim was not started by one.
int launched_ranks() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
            return std::max(1, std::atoi(v));
        }
    }
    return 1;
}

int thread_count(const po::variables_map& vm) {
    if (!vm.count("jobs")) {
        return engine::default_thread_count();
    }
    const std::string v = vm["jobs"].as<std::string>();
    if (v == "auto") {
        return engine::default_thread_count();
    }
    try {
        std::size_t used = 0;
        const int n = std::stoi(v, &used);
        if (used == v.size() && n >= 1 && n <= 4096) {
            return n;
        }
    } catch (const std::exception&) {
    }
    throw UsageError("-j/--jobs takes a number of threads from 1 to 4096 or auto, not '" + v +
                     "'");
}

struct Options {
    std::string file;
    std::optional<std::string> output;
    int threads = 1;
    bool quiet = false;
    bool resume = false;
    bool strict = false;
    double save_every = 60.0;
    bool help = false;
};

Options parse_study_options(const std::vector<std::string>& args, const std::string& usage,
                            bool batch) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "output,o", po::value<std::string>(), "results file (default: output.file of the file)")(
        "jobs,j", po::value<std::string>(), "threads (a number or auto: all hardware threads)")(
        "quiet,q", "print nothing but errors");
    if (batch) {
        opts.add_options()("resume", "keep the runs already in the results file, run the rest")(
            "strict", "treat the points' warnings (settings without effect) as errors: exit 2")(
            "save-every", po::value<double>()->default_value(60.0),
            "write the results so far every this many seconds (0: only at the end), so an "
            "interrupted batch can --resume");
    }
    po::options_description hidden;
    hidden.add_options()("file", po::value<std::string>(), "study file");
    po::positional_options_description pos;
    pos.add("file", 1);
    const po::variables_map vm = parse_options(args, opts, pos, hidden, usage);
    Options o;
    if (vm.count("help")) {
        std::cout << "usage: " << usage << "\n\n" << opts;
        o.help = true;
        return o;
    }
    if (!vm.count("file")) {
        throw UsageError("missing the " + std::string(batch ? "sweep" : "plan") +
                         " file\nusage: " + usage);
    }
    o.file = vm["file"].as<std::string>();
    if (vm.count("output")) {
        o.output = vm["output"].as<std::string>();
    }
    o.threads = thread_count(vm);
    o.quiet = vm.count("quiet") > 0;
    if (batch) {
        o.resume = vm.count("resume") > 0;
        o.strict = vm.count("strict") > 0;
        o.save_every = vm["save-every"].as<double>();
        if (!(o.save_every >= 0.0)) {
            throw UsageError("--save-every takes seconds >= 0");
        }
    }
    return o;
}

/// The plan's results file against the plan and every file it reads (the base scenario's,
/// the chips of search.chip).
void check_plan_output(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                       const std::string& output, const std::optional<std::string>& option) {
    report::check_study_output(output, study_output_origin(option, plan.output_origin),
                               report::plan_inputs(plan, base));
}

/// A warning of the sweep's points (config::collect_warnings), with how many points have it.
struct PointWarning {
    config::Warning warning;
    std::int64_t points = 0;
};

/// The points' warnings, each once in order of first appearance. With `strict` the first is
/// an input error (exit 2), before anything runs.
std::vector<PointWarning> point_warnings(const std::vector<config::ScenarioSpec>& points,
                                         bool strict) {
    std::vector<PointWarning> out;
    for (const config::ScenarioSpec& point : points) {
        for (const config::Warning& w : point.warnings) {
            auto it = std::find_if(out.begin(), out.end(), [&](const PointWarning& p) {
                return p.warning.key_path == w.key_path && p.warning.message == w.message;
            });
            if (it == out.end()) {
                out.push_back({w, 0});
                it = out.end() - 1;
            }
            ++it->points;
        }
    }
    if (strict && !out.empty()) {
        const config::Warning& w = out.front().warning;
        throw InputError(w.key_path,
                         w.message + " (in " + fmt::integer(out.front().points) + " of " +
                             fmt::integer(static_cast<std::int64_t>(points.size())) +
                             " points; --strict makes warnings errors)",
                         w.location);
    }
    return out;
}

/// Everything a batch needs before it runs, the same on every MPI rank.
struct Prepared {
    study::Sweep sweep;
    config::ScenarioSpec base; ///< with the sweep's set applied
    std::vector<config::ScenarioSpec> points;
    std::vector<PointWarning> warnings;
    std::string context;
    std::string output;
    std::vector<study::RunRecord> records; ///< of an earlier file (--resume; rank 0)
};

Prepared prepare_batch(const Options& o) {
    Prepared p;
    const config::SweepSpec spec = config::load_sweep(o.file);
    p.base = config::load_scenario_with(spec.base, spec.fixed);
    p.sweep = study::expand(spec, p.base.seed, p.base.simulation.replications);
    p.points = study::prepare(p.sweep, o.threads);
    p.warnings = point_warnings(p.points, o.strict);
    p.context = report::batch_context(p.base.resolved_yaml, p.sweep.base_seed);
    p.output = o.output.value_or(spec.output_file);
    report::check_study_output(p.output, study_output_origin(o.output, spec.output_origin),
                               report::sweep_inputs(o.file, p.points));
    return p;
}

/// The runs an earlier file holds (--resume).
void read_resume(const Options& o, Prepared& p) {
    if (o.resume && std::filesystem::exists(p.output)) {
        p.records = report::read_batch_records(p.output, p.sweep, p.context);
    }
}

/// Rank 0's (or the only process's) part: run what is left through `run`, save, report.
template <class Run>
int finish_batch(const Options& o, Prepared& p, int processes, Run run) {
    const auto& sweep = p.sweep;
    std::vector<study::RunRecord>& records = p.records;
    for (const PointWarning& w : p.warnings) {
        std::cerr << config::to_string(w.warning) << " (in " << fmt::integer(w.points) << " of "
                  << fmt::integer(static_cast<std::int64_t>(p.points.size())) << " points)\n";
    }
    // The costliest runs first (the order does not change the results).
    const std::vector<std::int64_t> pending = study::longest_first(
        sweep, study::pending_runs(sweep, records), study::estimated_costs(p.points, o.threads));
    if (!o.quiet) {
        std::cerr << "trnsim batch: " << sweep.spec.name << ": "
                  << fmt::integer(static_cast<std::int64_t>(sweep.points.size())) << " point"
                  << (sweep.points.size() == 1 ? "" : "s") << " x " << sweep.replications
                  << " replicate" << (sweep.replications == 1 ? "" : "s") << " = "
                  << fmt::integer(sweep.runs()) << " runs"
                  << (records.empty() ? ""
                                      : " (" + fmt::integer(static_cast<std::int64_t>(
                                                   records.size())) +
                                            " in " + p.output + " already)")
                  << " on " << processes << " process" << (processes == 1 ? "" : "es") << " x "
                  << o.threads << " thread" << (o.threads == 1 ? "" : "s") << "\n";
    }
    const auto save = [&]() {
        std::vector<study::RunRecord> sorted = records;
        study::sort_records(sorted);
        results::write_hdf5(p.output, report::batch_results(sweep, p.base.resolved_yaml, p.context,
                                                            sorted, {TRNSIM_VERSION, o.threads * processes}));
    };
    Progress progress(sweep.runs(), sweep.runs() - static_cast<std::int64_t>(pending.size()),
                      "runs", o.quiet);
    auto last_save = std::chrono::steady_clock::now();
    run(pending, [&](study::RunRecord&& r) {
        records.push_back(std::move(r));
        progress.tick();
        const auto now = std::chrono::steady_clock::now();
        if (o.save_every > 0.0 && std::chrono::duration<double>(now - last_save).count() >=
                                      o.save_every) {
            save(); // a complete file of the runs so far, for --resume after an interruption
            last_save = now;
        }
    });
    progress.finish();
    study::sort_records(records);
    save();
    if (!o.quiet) {
        std::cout << "trnsim batch: " << sweep.spec.name << " (" << sweep.spec.file << "), base "
                  << p.base.name << "\n";
        print_batch(std::cout, sweep, records, 40);
        std::cout << "  " << fmt::integer(static_cast<std::int64_t>(pending.size()))
                  << " runs in " << clock_text(progress.elapsed_s()) << "; results "
                  << p.output << "\n";
    }
    return 0;
}

constexpr const char* kBatchUsage =
    "trnsim batch SWEEP.yaml [-o OUT.h5] [-j N] [--resume] [--quiet] [--save-every S]";

} // namespace

int cmd_batch(const std::vector<std::string>& args) {
    const Options o = parse_study_options(args, kBatchUsage, true);
    if (o.help) {
        return 0;
    }
    const int ranks = launched_ranks();
#if TRNSIM_WITH_MPI
    if (ranks > 1) {
        const MpiSession mpi;
        std::optional<Prepared> p;
        std::string error;
        int code = 0;
        try {
            p = prepare_batch(o);
            if (mpi.rank() == 0) {
                read_resume(o, *p);
            }
        } catch (const InputError& e) {
            error = e.what();
            code = 2;
        } catch (const UsageError& e) {
            error = std::string("trnsim: ") + e.what();
            code = 2;
        } catch (const std::exception& e) {
            error = std::string("trnsim: internal error: ") + e.what();
            code = 1;
        }
        // Every rank validated the same points; stop together when one could not.
        if (!mpi.all(code == 0)) {
            if (mpi.rank() == 0 || (code != 0 && code != 2)) {
                std::cerr << (error.empty() ? "trnsim: another MPI rank could not read the "
                                              "sweep (see its message)"
                                            : error)
                          << "\n";
            }
            return code == 0 ? 2 : code;
        }
        if (mpi.rank() != 0) {
            run_distributed(mpi, p->sweep, p->points, o.threads, {}, {});
            return 0;
        }
        return finish_batch(o, *p, mpi.size(), [&](const std::vector<std::int64_t>& pending,
                                                   const auto& done) {
            run_distributed(mpi, p->sweep, p->points, o.threads, pending, done);
        });
    }
#else
    if (ranks > 1) {
        throw UsageError("this trnsim was built without MPI (cmake -DTRNSIM_WITH_MPI=ON with "
                         "libopenmpi-dev installed), so it cannot share a sweep between " +
                         std::to_string(ranks) + " processes");
    }
#endif
    Prepared p = prepare_batch(o);
    read_resume(o, p);
    return finish_batch(o, p, 1, [&](const std::vector<std::int64_t>& pending, const auto& done) {
        study::ListSource source(pending);
        study::execute_all(p.sweep, p.points, o.threads, source, report::batch_run_values, done);
    });
}

int validate_study(const std::string& file) {
    const int threads = engine::default_thread_count();
    if (config::file_kind(file) == config::FileKind::plan) {
        const config::PlanSpec plan = config::load_plan(file);
        const config::ScenarioSpec base = config::load_scenario_with(plan.base, {});
        check_plan_output(plan, base, plan.output_file, std::nullopt);
        const std::size_t candidates = study::candidate_count(plan, base);
        std::cout << "trnsim: plan " << plan.name << " (" << file << "): base " << base.name
                  << ", objective " << config::to_string(plan.objective) << ", "
                  << fmt::integer(static_cast<std::int64_t>(candidates))
                  << " candidates\n  valid\n";
        return 0;
    }
    // Every point checked as batch checks it, none kept: memory does not grow with the points.
    const config::SweepSpec spec = config::load_sweep(file);
    const config::ScenarioSpec base = config::load_scenario_with(spec.base, spec.fixed);
    const study::Sweep sweep = study::expand(spec, base.seed, base.simulation.replications);
    std::vector<std::string> inputs = study::validate(sweep, threads);
    inputs.push_back(file);
    report::check_study_output(spec.output_file, spec.output_origin, std::move(inputs));
    std::cout << "trnsim: sweep " << sweep.spec.name << " (" << file << "): base " << base.name
              << ", " << fmt::integer(static_cast<std::int64_t>(sweep.points.size()))
              << " points x " << sweep.replications << " replicate"
              << (sweep.replications == 1 ? "" : "s") << ", every point valid\n"
              << "  valid\n";
    return 0;
}

int cmd_plan(const std::vector<std::string>& args) {
    const std::string usage = "trnsim plan PLAN.yaml [-o OUT.h5] [-j N] [--quiet]";
    const Options o = parse_study_options(args, usage, false);
    if (o.help) {
        return 0;
    }
    const config::PlanSpec plan = config::load_plan(o.file);
    const config::ScenarioSpec base = config::load_scenario_with(plan.base, {});
    const std::string output = o.output.value_or(plan.output_file);
    check_plan_output(plan, base, output, o.output);
    if (base.workload_type == config::WorkloadType::inference) {
        for (const config::Warning& w : study::serving_plan_warnings(plan, base)) {
            std::cerr << config::to_string(w) << "\n";
        }
    }
    const auto start = std::chrono::steady_clock::now();
    const study::PlanResult result =
        study::run_plan(plan, base, o.threads, [&](const std::string& msg) {
            if (!o.quiet) {
                std::cerr << "trnsim plan: " << msg << "\n";
            }
        });
    results::write_hdf5(output, report::plan_results(plan, base, result, {TRNSIM_VERSION, o.threads}));
    if (!o.quiet) {
        print_plan_result(std::cout, plan, base, result);
        std::cout << "  results    " << output << " (" << clock_text(std::chrono::duration<double>(
                                                              std::chrono::steady_clock::now() -
                                                              start)
                                                              .count())
                  << ")\n";
    }
    return 0;
}

} // namespace trnsim::cli
