// Run-simulation benchmark (issue 7's figures) and Daly's worked check.
//
//   reliability_bench [--case all|98k|524k|replications|daly|smoke] [--threads N] [--repeat K]
//
// Cases (docs/performance.md):
//   98k            30 simulated days of a 98,304-chip job (1,536 Trn2 UltraServers + 5% spares),
//                  every chip, HBM, host, software stack, NIC, NeuronLink cable, leaf, spine,
//                  core switch and power domain its own failure process           target <= 10 s
//   524k           the same for 524,288 chips (8,192 UltraServers)                 target <= 60 s
//   replications   100 replications of a 16,384-chip job for 54 days               target <= 60 s
//   daly           Daly's check (reliability.md §8): simulated vs expected makespans at the
//                  optimum, and the optimum fitted to simulated makespans
//   smoke          a tiny run (the ctest smoke test)
// Each timed case goes through the whole path of `trnsim run` (scenario loading, plan, step
// model, run simulation), runs K times (default 1) and reports the fastest, on 1 thread and on
// N threads (default 2); the results must be identical.
#include "support/reliability_cases.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/reliability/theory.hpp"
#include "trnsim/sim/run.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

using namespace trnsim;
using namespace trnsim::reliability::test;
using reliability::RunControl;
namespace theory = reliability::theory;

/// Every class with a process: the Llama 3 per-category rates (scenarios/reliability) where
/// they exist, estimates for the classes Llama 3 has no row for.
constexpr const char* kEveryComponent = R"(
  failures:
    - {component: chip, mtbf: 5978d, cause: faulty_gpu}
    - {component: chip, mtbf: 46565d, cause: gpu_sram}
    - {component: hbm, mtbf: 12288d}
    - {component: host, mtbf: 3456d, cause: host_maintenance}
    - {component: software, mtbf: 2048d, cause: software_bug}
    - {component: nic, mtbf: 126391d}
    - {component: neuronlink, mtbf: 1000y, distribution: {weibull: {shape: 0.8}}}
    - {component: leaf, mtbf: 20y, bad_fraction: 5%, bad_multiplier: 5}
    - {component: spine, mtbf: 10y}
    - {component: core, mtbf: 10y}
    - {component: power, mtbf: 50y}
  spares: {ultraservers: SPARES}
  recovery: {detection: 5min, restart: 10min}
  checkpoint: {mode: async}
)";

std::string scenario(int ultraservers, int spares, const std::string& failures,
                     const std::string& simulation) {
    std::string f = failures;
    const auto at = f.find("SPARES");
    if (at != std::string::npos) {
        f.replace(at, 6, std::to_string(spares));
    }
    const int dp = ultraservers * 256 / 128; // tp 64 x pp 2
    return "name: bench\nhardware: {chip: trn2}\ncluster: {ultraservers: " +
           std::to_string(ultraservers) +
           "}\nworkload:\n  model: llama3-405b\n  sequence_length: 8192\n  global_batch: " +
           std::to_string(dp) +
           "\n  tokens: 15T\n  parallelism: {tp: 64, pp: 2, zero: 1, recompute: full}\n"
           "reliability:" + f + "simulation: " + simulation + "\n";
}

std::size_t peak_rss_bytes() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmHWM:", 0) == 0) {
            return std::stoull(line.substr(6)) * 1024;
        }
    }
    return 0;
}

struct Timed {
    double seconds = 0.0;
    sim::TrainingRun run;
};

Timed time_run(const std::string& yaml, int threads, int repeat) {
    Timed best;
    for (int i = 0; i < repeat; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const config::ScenarioSpec spec =
            config::load_scenario_text(yaml, "bench.yaml",
                                       {"simulation.threads=" + std::to_string(threads)});
        sim::TrainingRun run = sim::run_training(spec);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (i == 0 || s < best.seconds) {
            best.seconds = s;
            best.run = std::move(run);
        }
    }
    return best;
}

bool same(const reliability::RunSummary& a, const reliability::RunSummary& b) {
    if (a.replications.size() != b.replications.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.replications.size(); ++i) {
        const auto& x = a.replications[i];
        const auto& y = b.replications[i];
        if (x.wall.ns() != y.wall.ns() || x.time_in_state != y.time_in_state ||
            x.work.ns() != y.work.ns() || x.failures_by_process != y.failures_by_process ||
            x.engine_events != y.engine_events) {
            return false;
        }
    }
    return true;
}

void header() {
    std::printf("  %-34s %8s %10s %5s %8s %11s %9s %10s %7s\n", "case", "threads", "entities",
                "reps", "failures", "events", "seconds", "peak RSS", "ETTR");
}

bool timed_case(const char* name, const std::string& yaml, int threads, int repeat,
                double target_s) {
    const Timed one = time_run(yaml, 1, repeat);
    const Timed many = time_run(yaml, threads, repeat);
    const auto& r = *one.run.reliability;
    const bool identical = same(r, *many.run.reliability);
    for (const Timed* t : {&one, &many}) {
        const auto& s = *t->run.reliability;
        std::printf("  %-34s %8d %10s %5zu %8s %11s %9.3f %10s %6.1f%%\n", name,
                    t == &one ? 1 : threads, fmt::integer(s.facts.entities).c_str(),
                    s.replications.size(),
                    fmt::integer(static_cast<std::int64_t>(
                                     s.estimate("failures").mean *
                                     static_cast<double>(s.replications.size())))
                        .c_str(),
                    fmt::integer(static_cast<std::int64_t>(s.engine_events)).c_str(), t->seconds,
                    fmt::bytes(static_cast<double>(peak_rss_bytes())).c_str(),
                    100.0 * s.estimate("ettr").mean);
    }
    const double best = std::min(one.seconds, many.seconds);
    std::printf("    %s: best %.2f s against a target of %.0f s: %s; 1 and %d threads %s\n", name,
                best, target_s, best <= target_s ? "met" : "MISSED", threads,
                identical ? "identical" : "DIFFER");
    std::fflush(stdout);
    return identical;
}

void daly_table(int replications) {
    const double delta = 5 * kMin;
    const double restart = 10 * kMin;
    const double ts = 500 * kHour;
    RunControl control;
    control.replications = replications;
    control.seed = 2026;
    control.record = false;
    std::printf("Daly's check (reliability.md §8): T_s = 500 h, delta = 5 min, R = 10 min, "
                "%d replications\n",
                replications);
    std::printf("  %-8s %10s %10s %10s %13s %22s %8s\n", "M", "tau exact", "tau Daly",
                "tau Young", "expected T_w", "simulated T_w (95%)", "error");
    for (double m : {24 * kHour, 6 * kHour, 15 * kMin}) {
        const double tau = theory::optimal_interval(delta, m);
        const double expected = theory::expected_wall_time(ts, tau, delta, restart, m);
        const auto s = reliability::simulate(daly_input(m, tau), control);
        const auto& wall = s.estimate("wall_time_s");
        std::printf("  %-8s %6.2f min %6.2f min %6.2f min %10.2f h %11.2f +- %5.2f h %+7.3f%%\n",
                    fmt::seconds(m).c_str(), tau / kMin, theory::daly_interval(delta, m) / kMin,
                    theory::young_interval(delta, m) / kMin, expected / kHour, wall.mean / kHour,
                    wall.half_width / kHour, 100.0 * (wall.mean / expected - 1.0));
    }
    const double m = 6 * kHour;
    const double best = theory::optimal_interval(delta, m);
    std::vector<double> taus, walls;
    for (double k : fit_grid()) {
        taus.push_back(best * k / kMin);
        walls.push_back(reliability::simulate(daly_input(m, best * k), control)
                            .estimate("wall_time_s")
                            .mean /
                        kHour);
    }
    const double fit = fitted_minimum(taus, walls);
    std::printf("  fitted optimum at M = 6 h (a / tau + b + c tau over %zu intervals from 0.5 to 2 "
                "x the optimum): %.2f min vs %.2f min (%+.1f%%)\n",
                taus.size(), fit, best / kMin, 100.0 * (fit / (best / kMin) - 1.0));
    std::fflush(stdout);
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "reliability_bench: %s\nusage: reliability_bench [--case "
                 "all|98k|524k|replications|daly|smoke] [--threads N] [--repeat K]\n",
                 why);
    std::exit(2);
}

} // namespace

int main(int argc, char** argv) {
    std::string which = "all";
    int threads = 2;
    int repeat = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            usage(("missing value for " + a).c_str());
        }
        if (a == "--case") {
            which = argv[++i];
        } else if (a == "--threads") {
            threads = std::atoi(argv[++i]);
        } else if (a == "--repeat") {
            repeat = std::atoi(argv[++i]);
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (threads < 1 || repeat < 1) {
        usage("out-of-range option");
    }
    const auto want = [&](const char* c) { return which == "all" || which == c; };
    bool ok = true;
    std::printf("trnsim run-simulation benchmark; %u hardware threads\n",
                std::thread::hardware_concurrency());
    if (which == "smoke") {
        header();
        ok = timed_case("smoke: 16 UltraServers, 30 d", scenario(16, 1, kEveryComponent, "{duration: 30d}"),
                        threads, 1, 10.0);
    }
    if (want("98k") || want("524k") || want("replications")) {
        header();
    }
    if (want("98k")) {
        ok = timed_case("98,304 chips, 30 d", scenario(1536, 77, kEveryComponent, "{duration: 30d}"),
                        threads, repeat, 10.0) && ok;
    }
    if (want("524k")) {
        ok = timed_case("524,288 chips, 30 d",
                        scenario(8192, 410, kEveryComponent, "{duration: 30d}"), threads, repeat,
                        60.0) && ok;
    }
    if (want("replications")) {
        ok = timed_case("16,384 chips, 54 d, 100 replications",
                        scenario(256, 16,
                                 "\n  preset: llama3-16k-h100\n  spares: {ultraservers: SPARES}\n",
                                 "{duration: 54d, replications: 100}"),
                        threads, repeat, 60.0) && ok;
    }
    if (want("daly")) {
        daly_table(400);
    }
    return ok ? 0 : 1;
}
