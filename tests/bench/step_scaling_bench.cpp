// Step scaling benchmark (issue 27): one step of Llama 3 405B at step fidelity over the shapes
// a planner asks about at 98,304 chips: pipeline depths, tensor-parallel widths, microbatches
// per replica and recompute modes. Each point runs in a child process, so its wall time and
// peak RSS are its own (wait4's ru_maxrss), and a point over the time limit is killed and
// reported as such instead of holding up the sweep.
//
//   step_scaling_bench                 the full grid: pp 1 2 3 4 6 8 12 16, tp 16 32 64,
//                                      1 to 8 microbatches per replica, recompute full and none
//   step_scaling_bench --quick         tp 64, pp 1 2 3 4 6 8 12 16, 4 and 6 microbatches,
//                                      recompute full (the cliff is pp 6, 6 microbatches)
//   --ultraservers N   the cluster (default 1536: 98,304 chips); the batch scales with it
//   --limit S          seconds per point before it is killed (default 60)
//   --threads N        simulation threads per point (default 1)
//   --pp LIST, --tp LIST, --microbatches LIST, --recompute LIST: replace a grid axis
//                                      (comma-separated, e.g. --pp 3,6 --recompute full)
//
// Stages are uneven where pp does not divide the 126 layers (balance: even gives the first
// stages one more layer). A point the planner refuses (memory, shapes) is reported with its
// reason. The last line names the worst point.
#include "trnsim/config/load.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/topology/fabric.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace trnsim;
using Clock = std::chrono::steady_clock;

struct Point {
    int tp = 64;
    int pp = 3;
    int microbatches = 4; // per replica
    std::string recompute = "full";
};

// What a child reports through its pipe (fixed size: one write).
struct Report {
    int ok = 0; // 1 ran, 0 refused (message holds the reason)
    double wall_s = 0.0;
    double step_s = 0.0;
    std::uint64_t flows = 0;
    std::uint64_t windows = 0;
    std::uint64_t migrations = 0;
    std::uint64_t migrated_flows = 0;
    std::uint64_t solves = 0;
    char message[160] = {};
};

std::vector<int> int_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        out.push_back(std::stoi(item));
    }
    return out;
}

std::vector<std::string> string_list(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        out.push_back(item);
    }
    return out;
}

// Runs in the child: plan, fabric build and the step, timed together.
Report run_point(int ultraservers, const Point& p, int threads) {
    Report r;
    try {
        // Ranks: 4 per chip at LNC 2, 64 chips per UltraServer.
        const std::int64_t ranks = std::int64_t{ultraservers} * 64 * 4;
        const std::int64_t dp = ranks / (std::int64_t{p.tp} * p.pp);
        const std::int64_t batch = dp * p.microbatches;
        const config::ScenarioSpec spec = config::load_scenario(
            std::string(TRNSIM_SOURCE_DIR) + "/scenarios/scale/llama3-405b-98k.yaml",
            {"cluster.ultraservers=" + std::to_string(ultraservers),
             "workload.parallelism.tp=" + std::to_string(p.tp),
             "workload.parallelism.pp=" + std::to_string(p.pp),
             "workload.parallelism.recompute=" + p.recompute,
             "workload.global_batch=" + std::to_string(batch)});
        const auto t0 = Clock::now();
        const workload::Plan plan = sim::make_plan(spec);
        const topology::Fabric fabric =
            topology::Fabric::build(spec.fabric, plan.cluster.domains());
        sim::StepSimOptions o = sim::step_options(spec, plan);
        o.threads = threads;
        const sim::StepSimResult result = sim::simulate_step(plan, fabric, o);
        r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
        r.ok = 1;
        r.step_s = result.estimate.step_time.seconds();
        r.flows = result.stats.flows;
        r.windows = result.stats.windows;
        r.migrations = result.stats.migrations;
        r.migrated_flows = result.stats.migrated_flows;
        r.solves = result.stats.solves;
    } catch (const std::exception& e) {
        std::snprintf(r.message, sizeof r.message, "%s", e.what());
    }
    return r;
}

enum class Outcome { ran, refused, over_limit, crashed };

struct Measured {
    Point point;
    Outcome outcome = Outcome::crashed;
    Report report;
    double peak_rss = 0.0; // bytes
};

Measured measure(int ultraservers, const Point& p, int threads, double limit_s) {
    Measured m;
    m.point = p;
    int fds[2];
    if (pipe(fds) != 0) {
        return m;
    }
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        const Report r = run_point(ultraservers, p, threads);
        const ssize_t n = write(fds[1], &r, sizeof r);
        _exit(n == static_cast<ssize_t>(sizeof r) ? 0 : 1);
    }
    close(fds[1]);
    const auto t0 = Clock::now();
    int status = 0;
    struct rusage usage {};
    bool killed = false;
    while (true) {
        const pid_t w = wait4(pid, &status, WNOHANG, &usage);
        if (w == pid) {
            break;
        }
        if (!killed && std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) {
            kill(pid, SIGKILL);
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    m.peak_rss = static_cast<double>(usage.ru_maxrss) * 1024.0;
    if (killed) {
        m.outcome = Outcome::over_limit;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
               read(fds[0], &m.report, sizeof m.report) ==
                   static_cast<ssize_t>(sizeof m.report)) {
        m.outcome = m.report.ok != 0 ? Outcome::ran : Outcome::refused;
    }
    close(fds[0]);
    return m;
}

std::string label(const Point& p) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "tp %2d pp %2d, %d microbatches, recompute %s", p.tp, p.pp,
                  p.microbatches, p.recompute.c_str());
    return buf;
}

void print(const Measured& m, double limit_s) {
    const std::string rss = fmt::bytes(m.peak_rss);
    switch (m.outcome) {
    case Outcome::ran:
        std::printf("%-44s wall %7.2f s  peak RSS %9s  step %8.3f s  %s flows, %s windows, "
                    "%s solves, %s components moved (%s flows)\n",
                    label(m.point).c_str(), m.report.wall_s, rss.c_str(), m.report.step_s,
                    fmt::integer(static_cast<std::int64_t>(m.report.flows)).c_str(),
                    fmt::integer(static_cast<std::int64_t>(m.report.windows)).c_str(),
                    fmt::integer(static_cast<std::int64_t>(m.report.solves)).c_str(),
                    fmt::integer(static_cast<std::int64_t>(m.report.migrations)).c_str(),
                    fmt::integer(static_cast<std::int64_t>(m.report.migrated_flows)).c_str());
        break;
    case Outcome::refused:
        std::printf("%-44s refused: %s\n", label(m.point).c_str(), m.report.message);
        break;
    case Outcome::over_limit:
        std::printf("%-44s wall  over %.0f s  peak RSS %9s (killed)\n", label(m.point).c_str(),
                    limit_s, rss.c_str());
        break;
    case Outcome::crashed:
        std::printf("%-44s FAILED (child exited abnormally)\n", label(m.point).c_str());
        break;
    }
    std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
    int ultraservers = 1536;
    int threads = 1;
    double limit_s = 60.0;
    std::vector<int> pps = {1, 2, 3, 4, 6, 8, 12, 16};
    std::vector<int> tps = {16, 32, 64};
    std::vector<int> mbs = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<std::string> recomputes = {"full", "none"};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--quick") {
            tps = {64};
            mbs = {4, 6};
            recomputes = {"full"};
        } else if (a == "--ultraservers" && has_value) {
            ultraservers = std::stoi(argv[++i]);
        } else if (a == "--threads" && has_value) {
            threads = std::stoi(argv[++i]);
        } else if (a == "--limit" && has_value) {
            limit_s = std::stod(argv[++i]);
        } else if (a == "--pp" && has_value) {
            pps = int_list(argv[++i]);
        } else if (a == "--tp" && has_value) {
            tps = int_list(argv[++i]);
        } else if (a == "--microbatches" && has_value) {
            mbs = int_list(argv[++i]);
        } else if (a == "--recompute" && has_value) {
            recomputes = string_list(argv[++i]);
        } else {
            std::fprintf(stderr, "step_scaling_bench: unknown argument '%s'\n", a.c_str());
            return 2;
        }
    }
    std::printf("step scaling: Llama 3 405B on %d UltraServers (%s chips), step fidelity, "
                "%d thread%s per point, limit %.0f s per point\n",
                ultraservers, fmt::integer(std::int64_t{ultraservers} * 64).c_str(), threads,
                threads > 1 ? "s" : "", limit_s);
    std::vector<Measured> all;
    for (const int tp : tps) {
        for (const int pp : pps) {
            for (const std::string& rc : recomputes) {
                for (const int mb : mbs) {
                    const Point p{tp, pp, mb, rc};
                    all.push_back(measure(ultraservers, p, threads, limit_s));
                    print(all.back(), limit_s);
                }
            }
        }
    }
    // Worst: a point over the limit beats any that ran; then the longest wall.
    const auto score = [](const Measured& m) {
        return m.outcome == Outcome::over_limit ? 1e18
               : m.outcome == Outcome::ran      ? m.report.wall_s
                                                : -1.0;
    };
    const auto worst = std::max_element(all.begin(), all.end(), [&](const auto& a, const auto& b) {
        return score(a) < score(b);
    });
    const auto fattest = std::max_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a.peak_rss < b.peak_rss;
    });
    int ran = 0, over = 0, refused = 0;
    for (const Measured& m : all) {
        ran += m.outcome == Outcome::ran ? 1 : 0;
        over += m.outcome == Outcome::over_limit ? 1 : 0;
        refused += m.outcome == Outcome::refused ? 1 : 0;
    }
    std::printf("points: %d ran, %d over %.0f s, %d refused, %zu failed\n", ran, over, limit_s,
                refused, all.size() - static_cast<std::size_t>(ran + over + refused));
    if (worst != all.end() && score(*worst) >= 0.0) {
        char wall[48];
        if (worst->outcome == Outcome::over_limit) {
            std::snprintf(wall, sizeof wall, "over %.0f s", limit_s);
        } else {
            std::snprintf(wall, sizeof wall, "%.2f s", worst->report.wall_s);
        }
        std::printf("worst wall: %s (%s)\n", label(worst->point).c_str(), wall);
        std::printf("worst peak RSS: %s (%s)\n", label(fattest->point).c_str(),
                    fmt::bytes(fattest->peak_rss).c_str());
    }
    return all.size() == static_cast<std::size_t>(ran + over + refused) ? 0 : 1;
}
