// Threads that never make a run slower (issue 15, item 13): the wall time of a step-fidelity
// run on 1 and on 2 threads, for a small and a large case, on an idle machine and with
// background load (two busy processes that this benchmark starts and kills). The figures of
// docs/performance.md.
//
//   threads_bench                 both cases, without and with load
//   threads_bench --case small    scenarios/default.yaml at step fidelity (1,024 chips)
//   threads_bench --case large    scenarios/scale/llama3-405b-98k.yaml (98,304 chips)
//   threads_bench --case smoke    the small case once per thread count, no load (for ctest)
//   --repeat N                    runs per configuration (default: 31 small, 3 large); medians
//
// The runs alternate between 1 and 2 threads so that a change in the machine's other load
// affects both alike. Each time is sim::run_training (the plan, the fabric build and the step
// simulation), the work of `trnsim run` after reading the scenario.
#include "background_load.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/sim/run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace trnsim;
using Clock = std::chrono::steady_clock;

/// The 1-minute load average and the runnable tasks, from /proc/loadavg ("1.52 0.98 ... 3/120").
std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen, tasks;
    in >> one >> five >> fifteen >> tasks;
    return "load average " + one + ", runnable " + tasks.substr(0, tasks.find('/'));
}

struct Case {
    const char* name;
    const char* file;
    std::vector<std::string> overrides;
    int repeat;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string list(const std::vector<double>& v) {
    std::string s;
    for (double x : v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%.3f", s.empty() ? "" : " ", x);
        s += buf;
    }
    return s;
}

/// A hash (FNV-1a) of what the step simulation computed: the step time, the event and window
/// counts, and every entity's compute, communication and end times.
std::uint64_t fingerprint(const sim::TrainingRun& run) {
    std::uint64_t h = 1469598103934665603ull;
    const auto mix = [&](auto v) {
        std::uint64_t bits = 0;
        static_assert(sizeof v == sizeof bits);
        std::memcpy(&bits, &v, sizeof bits);
        for (int i = 0; i < 8; ++i) {
            h = (h ^ ((bits >> (8 * i)) & 0xff)) * 1099511628211ull;
        }
    };
    const sim::StepSimResult& s = *run.step_sim;
    mix(s.estimate.step_time.seconds());
    mix(s.stats.events);
    mix(s.stats.windows);
    for (const sim::EntityTimes& e : s.entities) {
        mix(e.compute.seconds());
        mix(e.comm.seconds());
        mix(e.end.seconds());
    }
    return h;
}

/// Runs `c` alternately on 1 and 2 threads; prints the medians; returns false when what the
/// simulation computed differs between runs.
bool run_case(const Case& c, const char* load) {
    const std::string path = std::string(TRNSIM_SOURCE_DIR) + "/" + c.file;
    std::vector<double> walls[2];
    std::uint64_t hash = 0, events = 0, windows = 0, shared[2] = {0, 0};
    bool same = true;
    const std::string before = load_average();
    for (int r = 0; r < c.repeat; ++r) {
        for (int t = 0; t < 2; ++t) {
            std::vector<std::string> o = c.overrides;
            o.push_back("simulation.threads=" + std::to_string(t + 1));
            const config::ScenarioSpec spec = config::load_scenario(path, o);
            const auto start = Clock::now();
            const sim::TrainingRun run = sim::run_training(spec);
            walls[t].push_back(std::chrono::duration<double>(Clock::now() - start).count());
            const std::uint64_t h = fingerprint(run);
            if (r + t > 0 && h != hash) {
                same = false;
            }
            hash = h;
            events = run.step_sim->stats.events;
            windows = run.step_sim->stats.windows;
            shared[t] += run.step_sim->stats.shared_windows;
        }
    }
    const double one = median(walls[0]);
    const double two = median(walls[1]);
    std::printf("%s, %s: %llu events in %llu windows; 1 thread %.3f s, 2 threads %.3f s "
                "(2 threads / 1 thread = %.2f; medians of %d)\n",
                c.name, load, static_cast<unsigned long long>(events),
                static_cast<unsigned long long>(windows), one, two, two / one, c.repeat);
    std::printf("%s, %s:   1 thread: %s s; 2 threads: %s s (%.0f of %llu windows shared with "
                "the helper thread per run)\n",
                c.name, load, list(walls[0]).c_str(), list(walls[1]).c_str(),
                static_cast<double>(shared[1]) / c.repeat,
                static_cast<unsigned long long>(windows));
    std::printf("%s, %s:   machine before: %s; after: %s\n", c.name, load, before.c_str(),
                load_average().c_str());
    return same;
}

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // each line as it comes, also into a file
    std::string which = "all";
    int repeat = 0;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--case") == 0 && i + 1 < argc) {
            which = argv[++i];
        } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: threads_bench [--case small|large|smoke] [--repeat N]\n");
            return 2;
        }
    }
    const Case small{"small (default.yaml at step fidelity, 1,024 chips)", "scenarios/default.yaml",
                     {"simulation.fidelity=step"}, repeat > 0 ? repeat : 31};
    const Case large{"large (llama3-405b-98k.yaml, 98,304 chips)",
                     "scenarios/scale/llama3-405b-98k.yaml", {}, repeat > 0 ? repeat : 3};
    bool same = true;
    try {
        if (which == "smoke") {
            Case c = small;
            c.repeat = 1;
            same = run_case(c, "no background load started");
        } else {
            std::vector<Case> cases;
            if (which == "all" || which == "small") {
                cases.push_back(small);
            }
            if (which == "all" || which == "large") {
                cases.push_back(large);
            }
            for (const Case& c : cases) {
                same = run_case(c, "no background load") && same;
                const bench::BackgroundLoad load(2);
                same = run_case(c, "2 busy processes in the background") && same;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "threads_bench: %s\n", e.what());
        return 1;
    }
    std::printf("%s\n", same ? "results identical on 1 and 2 threads (every run)"
                             : "RESULTS DIFFER between thread counts");
    return same ? 0 : 1;
}
