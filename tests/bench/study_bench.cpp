// Sweep and planner benchmark (issue 8's figures).
//
//   study_bench [--case all|sweep|plan|smoke] [--threads N]
//
// Cases (docs/performance.md):
//   sweep   tests/bench/sweep-1000.yaml: 1,000 points of long runs with failures at analytic
//           fidelity, Llama 3 405B on 15T tokens on 256 Trn2 UltraServers (16,384 chips;
//           until done, about two months of simulated time each) with the failure rates of
//           Llama 3's cluster, 25 checkpoint intervals x 8 spare counts x 5 restart times, one
//           run per point; through the path of `trnsim batch` without the file writing (sweep
//           file, every point validated, runs on N threads pulling from the work queue,
//           per-point statistics)                                             target <= 5 min
//   plan    `trnsim plan scenarios/studies/a-405b-60-days.yaml`: 55,296 candidates estimated,
//           the finalists simulated in full (10 replications each)
//                                                  target >= 10,000 candidates in <= 60 s
//   smoke   a 20-point sweep on 1 and on N threads (identical records required) and a small
//           plan (the ctest smoke test)
#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/report/study_results.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/planner.hpp"
#include "trnsim/study/sweep.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using namespace trnsim;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

const std::string kStudies = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/studies/";



/// The 1,000-point sweep file, or (smoke) a 20-point one on the same base.
config::SweepSpec sweep_spec(bool small) {
    if (!small) {
        return config::load_sweep(std::string(TRNSIM_SOURCE_DIR) + "/tests/bench/sweep-1000.yaml");
    }
    return config::load_sweep_text("base: " + kStudies + "llama3-405b-15t.yaml\n" +
           "replications: 1\n"
           "sweep:\n"
           "  grid:\n"
           "    reliability.checkpoint.interval: [10min, 1h]\n"
           "    reliability.spares.ultraservers: [4, 16]\n"
           "    reliability.recovery.restart: [5min, 10min, 20min, 30min, 1h]\n",
                                   "bench-smoke.yaml");
}

struct SweepTiming {
    double prepare_s = 0.0, run_s = 0.0;
    std::vector<study::RunRecord> records;
    study::Sweep sweep;
};

SweepTiming run_sweep(const config::SweepSpec& spec, int threads) {
    SweepTiming t;
    const auto start = Clock::now();
    t.sweep = study::load(spec);
    const auto specs = study::prepare(t.sweep, threads);
    const auto order = study::longest_first(t.sweep, study::pending_runs(t.sweep, {}),
                                            study::estimated_costs(specs, threads));
    t.prepare_s = since(start);
    const auto ran = Clock::now();
    study::ListSource source(order);
    study::execute_all(t.sweep, specs, threads, source, report::batch_run_values,
                       [&](study::RunRecord&& r) { t.records.push_back(std::move(r)); });
    study::sort_records(t.records);
    (void)study::point_statistics(t.records);
    t.run_s = since(ran);
    return t;
}

double mean_of(const std::vector<study::RunRecord>& records, const char* name) {
    double sum = 0.0;
    int n = 0;
    for (const auto& r : records) {
        for (const auto& v : r.values) {
            if (v.name == name) {
                sum += std::get<double>(v.value);
                ++n;
            }
        }
    }
    return n ? sum / n : 0.0;
}

bool sweep_case(int threads, bool smoke) {
    const config::SweepSpec text = sweep_spec(smoke);
    std::printf("sweep: Llama 3 405B, 15T tokens, 256 UltraServers, failures (llama3-16k-h100), "
                "until done\n");
    bool ok = true;
    if (smoke) {
        const SweepTiming one = run_sweep(text, 1);
        const SweepTiming many = run_sweep(text, threads);
        bool same = one.records.size() == many.records.size();
        for (std::size_t i = 0; same && i < one.records.size(); ++i) {
            same = one.records[i] == many.records[i];
        }
        std::printf("  %zu points on 1 and %d threads: %s\n", one.sweep.points.size(), threads,
                    same ? "1 and N threads identical" : "RESULTS DIFFER");
        return same;
    }
    const SweepTiming t = run_sweep(text, threads);
    const double total = t.prepare_s + t.run_s;
    std::printf("  %s points x 1 run on %d threads: validation %s, runs %s, total %s\n",
                fmt::integer(static_cast<std::int64_t>(t.sweep.points.size())).c_str(), threads,
                fmt::seconds(t.prepare_s).c_str(), fmt::seconds(t.run_s).c_str(),
                fmt::seconds(total).c_str());
    std::printf("  simulated %s of training in all (mean %s per run; mean ETTR %.1f%%, %s "
                "failures per run)\n",
                fmt::seconds(mean_of(t.records, "wall_time_s") *
                             static_cast<double>(t.records.size()))
                    .c_str(),
                fmt::seconds(mean_of(t.records, "wall_time_s")).c_str(),
                100.0 * mean_of(t.records, "ettr"),
                fmt::count(mean_of(t.records, "failures")).c_str());
    ok = t.sweep.points.size() == 1000 && total <= 300.0;
    std::printf("  1,000-point sweep: %s against a target of 5 min: %s\n",
                fmt::seconds(total).c_str(), ok ? "met" : "NOT MET");
    return ok;
}

bool plan_case(int threads, bool smoke) {
    const std::string file = kStudies + "a-405b-60-days.yaml";
    config::PlanSpec plan = config::load_plan(file);
    if (smoke) {
        plan = config::load_plan_text("base: " + kStudies + "llama3-405b-15t.yaml\n" + R"(
constraints: {deadline: 365d}
search:
  ultraservers: [128, 256, 512]
  tp: [32, 64]
  pp: [1, 2, 3]
  checkpoint_interval: [auto, 30min]
  spares: [8, 16]
finalists: 2
frontier: 1
replications: 2
)",
                                      "bench-plan.yaml");
    }
    const auto start = Clock::now();
    const config::ScenarioSpec base = config::load_scenario_with(plan.base, {});
    const study::PlanResult r = study::run_plan(plan, base, threads);
    const double total = since(start);
    std::printf("plan: %s\n", smoke ? "a small search" : file.c_str());
    std::printf("  %s candidates (%s step estimates): estimated in %s, %zu finalist(s) simulated "
                "in %s, total %s on %d threads; %s feasible\n",
                fmt::integer(static_cast<std::int64_t>(r.candidates.size())).c_str(),
                fmt::integer(r.step_estimates).c_str(), fmt::seconds(r.estimate_seconds).c_str(),
                r.finalists.size(), fmt::seconds(r.simulate_seconds).c_str(),
                fmt::seconds(total).c_str(), threads, fmt::integer(r.feasible).c_str());
    if (!r.finalists.empty()) {
        const auto& best = r.finalists.front();
        std::printf("  best: %s UltraServers, %s, %s\n",
                    fmt::integer(r.candidates[static_cast<std::size_t>(best.candidate)].domains)
                        .c_str(),
                    fmt::seconds(best.run.time_to_train.seconds()).c_str(),
                    fmt::money(Money::usd(best.run.cost_usd)).c_str());
    }
    if (smoke) {
        std::printf("  plan smoke: %s\n", r.finalists.empty() ? "NO FINALIST" : "finalists ran");
        return !r.finalists.empty();
    }
    const bool ok = r.candidates.size() >= 10000 && total <= 60.0;
    std::printf("  plan over %s candidates: %s against a target of >= 10,000 in 60 s: %s\n",
                fmt::integer(static_cast<std::int64_t>(r.candidates.size())).c_str(),
                fmt::seconds(total).c_str(), ok ? "met" : "NOT MET");
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    std::string which = "all";
    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--case" && i + 1 < argc) {
            which = argv[++i];
        } else if (a == "--threads" && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: study_bench [--case all|sweep|plan|smoke] [--threads N]\n");
            return 2;
        }
    }
    std::printf("trnsim study benchmark; %d threads, %u hardware threads\n", threads,
                std::thread::hardware_concurrency());
    bool ok = true;
    if (which == "smoke") {
        ok = sweep_case(threads, true) && plan_case(threads, true);
    } else {
        if (which == "all" || which == "sweep") {
            ok = sweep_case(threads, false) && ok;
        }
        if (which == "all" || which == "plan") {
            ok = plan_case(threads, false) && ok;
        }
    }
    return ok ? 0 : 1;
}
