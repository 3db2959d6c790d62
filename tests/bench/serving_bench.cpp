// Serving benchmark: the fleet simulation (sim/serve.hpp) on the Azure conversation trace.
//
//   serving_bench [--case all|single|window|fleet|defaults|smoke] [--threads N] [--replicas R]
//                 [--speedup S] [--hours H] [--latency-ms L] [--window-ms W] [--shards K]
//                 [--no-reference] [--load P]
//
// Cases (docs/performance.md):
//   single  one replica (tp 64, one trn2 instance) serving the whole conversation trace
//           (19,366 requests) at its own rate, which saturates it, then at 0.3x its rate,
//           which it sustains                                                 target <= 1 s
//   fleet   1,024 replicas (tp 16: 64 Trn2 UltraServers) serving the trace's requests at 500x
//           its rate (the trace repeats) for one simulated hour, about 10 million requests, on
//           1 thread and on N threads (default 2): target <= 60 s, <= 4 GiB, N threads >= 1.6x
//           faster than 1, identical results. Router latency 1 ms, router window 10 ms
//           (ServeOptions::router_window; `window` measures what that changes), 8 router
//           shards (serving.router_shards, --shards K: each router owns 8 UltraServers and
//           every 8th request, and the engine's windows are 1 s). With K > 1 the case also
//           runs one router on N threads (the engine's windows 10 ms; --no-reference skips it)
//           and prints the shards' figures against it
//   window  the router window's error: the fleet for 3 simulated minutes, exact (1 ms windows)
//           and with the fleet's router window (10 ms), on 1 thread; then the router shards'
//           error: K routers against one, both with the router window
//   defaults the fleet of issue 27 with the simulation keys at their defaults: 1,024 replicas
//           of tp 64 on 256 UltraServers, the trace at 500x for an hour, router_shards auto
//           (8 routers), exact router (no window); 1 and N threads: target <= 60 s, <= 4 GiB,
//           N threads >= 1.6x
//   smoke   8 replicas for 20 simulated seconds on 1 and 2 threads (the ctest smoke test)
//
// --load P runs P busy processes (`yes > /dev/null`) in the background for the whole
// benchmark: the loaded machine of issue 15, item 13 (P = 2 on this 2-core machine).
//
// Iterations are costed by serving::IterationCostModel (Llama 3 70B, BF16, on trn2 at LNC 2,
// the chip file's serving coefficients); every replica holds max_batch 32 sequences of up to
// 8,192 tokens (the conversation trace's longer prompts are cut there), its KV cache in the
// HBM left after the weights.
#include "background_load.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/workload/model.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using namespace trnsim;

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

/// The single replica's sustained load: the conversation trace at this fraction of its rate.
constexpr double kSustainedSpeedup = 0.3;

struct Case {
    int tp = 16;
    int replicas = 1024;
    int ultraservers = 64;
    double speedup = 500.0;
    double hours = 1.0; ///< 0: the trace once
    double latency_ms = 1.0;
    double window_ms = 10.0; ///< ServeOptions::router_window (0: exact)
    int shards = 1;          ///< serving.router_shards (the fleet case: 8; 0: auto)
};

/// A hash of every request record (FNV-1a over the fields), to compare runs.
std::uint64_t records_hash(const sim::ServingRun& r) {
    std::uint64_t h = 1469598103934665603ull;
    const auto mix = [&](std::uint64_t v) {
        for (int i = 0; i < 8; ++i) {
            h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
        }
    };
    for (const serving::RequestRecord& q : r.requests) {
        mix(q.id);
        mix(static_cast<std::uint64_t>(q.arrival.ns()));
        mix(static_cast<std::uint64_t>(q.first_token.ns()));
        mix(static_cast<std::uint64_t>(q.finish.ns()));
        mix(q.replica);
        mix(q.preemptions);
    }
    return h;
}

struct Measured {
    double wall_s = 0.0;
    std::uint64_t hash = 0;
    sim::ServingRun run;
};

Measured run_case(const Case& c, int threads, bool keep) {
    const compute::ChipSpec chip = config::load_chip("trn2");
    const workload::ModelSpec model = config::load_model("llama3-70b");
    sim::ServeInput in;
    in.spec.model = model;
    in.chip = chip;
    in.lnc = 2;
    in.cluster.ultraservers = c.ultraservers;
    serving::ServingSpec& s = in.spec.serving;
    s.tp = c.tp;
    s.replicas = c.replicas;
    s.max_batch = 32;
    s.max_context = 8192;
    s.kv_block = 32;
    s.prefill_chunk = 0;
    s.prefill_batch = 1;
    s.router = serving::RouterPolicy::least_loaded;
    s.router_latency = Duration::from_seconds_ceil(c.latency_ms * 1e-3);
    s.router_shards = c.shards;
    serving::RequestSpec& r = in.spec.requests;
    r.input.kind = serving::TokenDistribution::Kind::trace;
    r.output.kind = serving::TokenDistribution::Kind::trace;
    r.arrival.kind = serving::ArrivalSpec::Kind::trace;
    r.arrival.trace_file = std::string(TRNSIM_SOURCE_DIR) + "/data/azure-llm-inference-2023/conv.csv";
    r.arrival.speedup = c.speedup;
    if (c.hours > 0.0) {
        r.duration = Duration::from_seconds_ceil(c.hours * 3600.0);
    }
    in.spec.slo.ttft = Duration::from_seconds_ceil(2.0);
    in.spec.slo.tpot = Duration::from_seconds_ceil(0.1);
    const serving::IterationCostModel cost(model, chip, 2, s,
                                           serving::ReplicaPlacement::single(chip, 2, c.tp),
                                           chip.hbm_runtime_reserve);
    in.replica = {&cost, cost.memory().kv_capacity_tokens / s.kv_block};
    in.kv_bytes_per_token = cost.memory().kv_per_token;
    in.seed = 7;
    in.threads = threads;
    in.options.keep_records = true;
    in.options.router_window = Duration::from_seconds_ceil(c.window_ms * 1e-3);
    const auto t0 = std::chrono::steady_clock::now();
    Measured m;
    m.run = sim::simulate_serving(in);
    m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.hash = records_hash(m.run);
    if (!keep) {
        m.run.requests.clear();
        m.run.requests.shrink_to_fit();
    }
    return m;
}

void print_run(const char* label, const Measured& m) {
    const sim::ServingRun& r = m.run;
    const sim::ServingRunStats& s = r.stats;
    std::printf(
        "%s: %u replicas (%u per %s), %u router shard%s, %s requests, %s simulated, "
        "router latency %s, engine window %s; %d thread%s: wall %.2f s\n",
        label, s.replicas, s.replicas_per_unit, s.unit_is_ultraserver ? "UltraServer" : "instance",
        s.router_shards, s.router_shards == 1 ? "" : "s",
        fmt::integer(static_cast<std::int64_t>(r.summary.requests)).c_str(),
        fmt::seconds(s.end.seconds()).c_str(), fmt::seconds(s.router_latency.seconds()).c_str(),
        fmt::seconds(s.lookahead.seconds()).c_str(), s.threads, s.threads == 1 ? "" : "s",
        m.wall_s);
    std::printf("%s:   %s events (%s remote) in %s windows of %s (%.1f events/window, %s shared "
                "with the helper threads), %u partitions; "
                "%s iterations in %s scheduler steps (%.1f per step); %s preemptions\n",
                label, fmt::integer(static_cast<std::int64_t>(s.events)).c_str(),
                fmt::integer(static_cast<std::int64_t>(s.remote_events)).c_str(),
                fmt::integer(static_cast<std::int64_t>(s.windows)).c_str(),
                fmt::seconds(s.lookahead.seconds()).c_str(),
                static_cast<double>(s.events) / static_cast<double>(std::max<std::uint64_t>(s.windows, 1)),
                fmt::integer(static_cast<std::int64_t>(s.shared_windows)).c_str(), s.partitions, fmt::integer(static_cast<std::int64_t>(s.iterations)).c_str(),
                fmt::integer(static_cast<std::int64_t>(s.steps)).c_str(),
                static_cast<double>(s.iterations) / static_cast<double>(std::max<std::uint64_t>(s.steps, 1)),
                fmt::integer(static_cast<std::int64_t>(s.preemptions)).c_str());
    std::printf(
        "%s:   TTFT p50 %s p99 %s, TPOT p50 %s p99 %s, %s output tokens/s, SLO attainment %s, "
        "KV peak %s\n",
        label, fmt::seconds(r.summary.ttft_p50.seconds()).c_str(),
        fmt::seconds(r.summary.ttft_p99.seconds()).c_str(),
        fmt::seconds(r.summary.tpot_p50.seconds()).c_str(),
        fmt::seconds(r.summary.tpot_p99.seconds()).c_str(),
        fmt::count(r.summary.output_tokens_per_s).c_str(),
        fmt::percent(r.summary.slo_attainment).c_str(),
        fmt::percent(r.kv_cache_peak_fraction).c_str());
}

/// The relative differences of summary b from summary a, percent.
void print_error(const char* label, const serving::ServingSummary& a,
                 const serving::ServingSummary& b) {
    const auto rel = [](double x, double y) { return y == 0.0 ? 0.0 : (x - y) / y * 100.0; };
    std::printf("%s:   TTFT p50 %+.2f%% p90 %+.2f%% p99 %+.2f%%; TPOT p50 %+.2f%% p99 %+.2f%%; "
                "E2E p50 %+.2f%% p99 %+.2f%%; output tokens/s %+.3f%%\n",
                label, rel(b.ttft_p50.seconds(), a.ttft_p50.seconds()),
                rel(b.ttft_p90.seconds(), a.ttft_p90.seconds()),
                rel(b.ttft_p99.seconds(), a.ttft_p99.seconds()),
                rel(b.tpot_p50.seconds(), a.tpot_p50.seconds()),
                rel(b.tpot_p99.seconds(), a.tpot_p99.seconds()),
                rel(b.e2e_p50.seconds(), a.e2e_p50.seconds()),
                rel(b.e2e_p99.seconds(), a.e2e_p99.seconds()),
                rel(b.output_tokens_per_s, a.output_tokens_per_s));
}

/// The router window's error: the same fleet for `hours` exact and with the window (one
/// router); then the router shards' error: `c.shards` routers against one, both windowed.
void window_error(Case c) {
    const double w = c.window_ms;
    const int shards = c.shards;
    c.shards = 1;
    c.window_ms = 0.0;
    const Measured exact = run_case(c, 1, false);
    c.window_ms = w;
    const Measured win = run_case(c, 1, false);
    const serving::ServingSummary &a = exact.run.summary, &b = win.run.summary;
    std::printf("window: router window %.0f ms vs exact (1 ms windows), %s requests, %.2f h of "
                "arrivals: windows %s vs %s, wall %.2f s vs %.2f s\n",
                w, fmt::integer(static_cast<std::int64_t>(a.requests)).c_str(), c.hours,
                fmt::integer(static_cast<std::int64_t>(win.run.stats.windows)).c_str(),
                fmt::integer(static_cast<std::int64_t>(exact.run.stats.windows)).c_str(),
                win.wall_s, exact.wall_s);
    print_error("window", a, b);
    if (shards > 1) {
        c.shards = shards;
        const Measured sh = run_case(c, 1, false);
        std::printf("shards: %d router shards vs one router (both with the %.0f ms window), same "
                    "requests: windows %s vs %s, wall %.2f s vs %.2f s\n",
                    shards, w, fmt::integer(static_cast<std::int64_t>(sh.run.stats.windows)).c_str(),
                    fmt::integer(static_cast<std::int64_t>(win.run.stats.windows)).c_str(),
                    sh.wall_s, win.wall_s);
        print_error("shards", b, sh.run.summary);
    }
}

bool compare_threads(const char* label, const Case& c, int threads,
                     Measured* out = nullptr) {
    const Measured one = run_case(c, 1, false);
    print_run(label, one);
    const Measured many = run_case(c, threads, false);
    print_run(label, many);
    const bool same = one.hash == many.hash && one.run.stats.events == many.run.stats.events;
    std::printf("%s: 1 and %d threads %s (records hash %016llx); speedup %.2fx; peak RSS %s\n",
                label, threads, same ? "identical" : "DIFFER",
                static_cast<unsigned long long>(one.hash), one.wall_s / many.wall_s,
                fmt::bytes(static_cast<double>(peak_rss_bytes())).c_str());
    if (out != nullptr) {
        *out = many;
    }
    return same;
}

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // each line as it comes, also into a file
    std::string which = "all";
    int threads = 2;
    int load = 0;
    bool reference = true;
    Case fleet;
    fleet.shards = 8;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "serving_bench: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--case") {
            which = next();
        } else if (a == "--threads") {
            threads = std::stoi(next());
        } else if (a == "--replicas") {
            fleet.replicas = std::stoi(next());
            fleet.ultraservers = std::max(1, (fleet.replicas + 15) / 16);
        } else if (a == "--speedup") {
            fleet.speedup = std::stod(next());
        } else if (a == "--hours") {
            fleet.hours = std::stod(next());
        } else if (a == "--latency-ms") {
            fleet.latency_ms = std::stod(next());
        } else if (a == "--window-ms") {
            fleet.window_ms = std::stod(next());
        } else if (a == "--shards") {
            fleet.shards = std::stoi(next());
        } else if (a == "--no-reference") {
            reference = false;
        } else if (a == "--load") {
            load = std::stoi(next());
        } else {
            std::fprintf(stderr,
                         "usage: serving_bench [--case all|single|window|fleet|defaults|smoke] [--threads N] "
                         "[--replicas R] [--speedup S] [--hours H] [--latency-ms L] "
                         "[--window-ms W] [--shards K] [--no-reference] [--load P]\n");
            return 2;
        }
    }
    std::printf("iteration costs: serving::IterationCostModel, Llama 3 70B BF16 on trn2 (LNC 2), "
                "max_batch 32, max_context 8192\n");
    const bench::BackgroundLoad background(load);
    if (load > 0) {
        std::printf("background load: %d busy processes (yes > /dev/null) for the whole run\n",
                    load);
    }
    bool ok = true;
    if (which == "smoke") {
        Case c;
        c.replicas = 8;
        c.ultraservers = 1;
        c.speedup = 4.0;
        c.hours = 20.0 / 3600.0;
        ok = compare_threads("smoke", c, 2);
    }
    if (which == "all" || which == "single") {
        Case c;
        c.tp = 64;
        c.replicas = 1;
        c.ultraservers = 1;
        c.speedup = 1.0;
        c.hours = 0.0;
        c.window_ms = 0.0;
        const Measured m = run_case(c, 1, false);
        print_run("single", m);
        std::printf("single: whole conversation trace on one replica in %.3f s wall (target <= 1 s); "
                    "saturated: the trace's rate is more than one replica serves\n",
                    m.wall_s);
        // The same replica at a load it sustains: the trace's arrivals stretched to
        // kSustainedSpeedup of their rate (TTFT stays within seconds, not minutes).
        c.speedup = kSustainedSpeedup;
        const Measured sustained = run_case(c, 1, false);
        print_run("single", sustained);
        std::printf("single: the trace at %.2fx its rate (sustained) on one replica in %.3f s wall "
                    "(target <= 1 s)\n",
                    kSustainedSpeedup, sustained.wall_s);
    }
    if (which == "all" || which == "defaults") {
        // The issue-27 fleet with the scenario defaults for the simulation's own keys
        // (router_shards auto, exact router: no window): 1,024 replicas of tp 64 on 256
        // UltraServers, the trace at 500x for one hour.
        Case c;
        c.tp = 64;
        c.ultraservers = 256;
        c.window_ms = 0.0;
        c.shards = 0;
        ok = compare_threads("defaults", c, threads) && ok;
    }
    if (which == "all" || which == "window") {
        Case c = fleet;
        c.hours = 0.05;
        window_error(c);
    }
    if (which == "all" || which == "fleet") {
        Measured many;
        ok = compare_threads("fleet", fleet, threads, &many) && ok;
        if (fleet.shards > 1 && reference) {
            Case one = fleet;
            one.shards = 1;
            const Measured ref = run_case(one, threads, false);
            print_run("fleet", ref);
            std::printf("fleet: one router on %d threads: wall %.2f s; %d router shards %.2fx "
                        "faster; the shards' figures against one router's:\n",
                        threads, ref.wall_s, fleet.shards, ref.wall_s / many.wall_s);
            print_error("fleet", ref.run.summary, many.run.summary);
        }
    }
    return ok ? 0 : 1;
}
