// Fuzzing the scenario loader: thousands of mutations of real scenarios must each either load
// (and then plan, or fail planning with an InputError) or fail with an InputError that names a
// location. Never a crash, never another exception type. The mutations are deterministic.
#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace trnsim::config {
namespace {

std::string read(const std::string& rel) {
    std::ifstream in(std::string(TRNSIM_SOURCE_DIR) + "/" + rel);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::vector<std::string> kTokens = {
    "",       " ",       ":",     "{",     "}",      "[",       "]",      ",",      "-",
    "#",      "\n",      "\t",    "'",     "\"",     "0",       "-1",     "1e400",  "999999999999999999999",
    "abc",    "GiB",     "2TB/s", "auto",  "null",   "~",       "true",   "&a",     "*a",
    "!!str",  "?",       "|",     ">",     "%",      "1.5",     "nan",    ".inf",   "tp",
    "pp: 3",  "zero: 9", "15T",   "0B",    "\xff",   "model:",  "{a: b}", "[1, 2]"};

std::string mutate(std::string text, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < edits && !text.empty(); ++i) {
        const std::size_t pos = rng() % text.size();
        switch (rng() % 5) {
        case 0: // delete a span
            text.erase(pos, 1 + rng() % 12);
            break;
        case 1: // insert a token
            text.insert(pos, kTokens[rng() % kTokens.size()]);
            break;
        case 2: { // replace a span with a token
            const std::size_t len = std::min<std::size_t>(1 + rng() % 8, text.size() - pos);
            text.replace(pos, len, kTokens[rng() % kTokens.size()]);
            break;
        }
        case 3: { // duplicate a line
            const std::size_t start = text.rfind('\n', pos);
            const std::size_t end = text.find('\n', pos);
            const std::size_t s = start == std::string::npos ? 0 : start + 1;
            const std::size_t e = end == std::string::npos ? text.size() : end;
            text.insert(s, text.substr(s, e - s) + "\n");
            break;
        }
        default: // flip one byte
            text[pos] = static_cast<char>(rng() % 256);
            break;
        }
    }
    return text;
}

struct Outcome {
    int loaded = 0;
    int planned = 0;
    int rejected = 0;
};

/// A single-workload scenario's plan and, with a reliability section, its run's input.
void plan_and_validate(const ScenarioSpec& s) {
    const workload::Plan plan = sim::make_plan(s);
    if (s.reliability.enabled) {
        reliability::validate(sim::reliability_input(s, plan, {}));
    }
}

/// Mutations of `base`: each loads and passes `check`, or fails with an InputError that names
/// a location (loading) or a key path the source map locates (`check`); never another
/// exception.
void fuzz(const std::string& base, int iterations, std::uint64_t seed, Outcome& out,
          void (*check)(const ScenarioSpec&) = plan_and_validate) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < iterations; ++i) {
        const std::string text = mutate(base, rng);
        try {
            const ScenarioSpec s = load_scenario_text(text, "fuzz.yaml");
            ++out.loaded;
            try {
                check(s);
                ++out.planned;
            } catch (const InputError& e) {
                // Semantic errors carry a key path that the source map can locate.
                EXPECT_FALSE(e.key_path().empty()) << e.what();
                EXPECT_TRUE(e.located(s.sources).location().known()) << e.what();
            }
        } catch (const InputError& e) {
            ++out.rejected;
            EXPECT_TRUE(e.location().known()) << "no location for: " << e.what() << "\n--\n"
                                              << text;
            EXPECT_GT(std::string(e.what()).size(), 10u);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "unexpected exception type: " << e.what() << "\n--\n" << text;
        }
    }
}

TEST(Fuzz, MutatedScenariosFailCleanly) {
    Outcome out;
    fuzz(read("scenarios/default.yaml"), 1500, 20261130, out);
    // Both paths must be exercised for the test to mean something.
    EXPECT_GT(out.loaded, 50);
    EXPECT_GT(out.rejected, 500);
    RecordProperty("loaded", out.loaded);
    RecordProperty("rejected", out.rejected);
}

TEST(Fuzz, MutatedTenantsAndFleetScenariosFailCleanly) {
    for (const char* file : {"scenarios/tenants/train-and-serve.yaml",
                             "scenarios/fleet/shared-trn2.yaml",
                             "scenarios/fleet/train-and-serve.yaml"}) {
        Outcome out;
        fuzz(read(file), 400, 20261203, out, sim::check_scenario);
        EXPECT_GT(out.planned, 10) << file;
        EXPECT_GT(out.rejected, 100) << file;
    }
}

TEST(Fuzz, MutatedInlineModelsFailCleanly) {
    const std::string base = R"(name: fuzz-inline
cluster: {instances: 8}
hardware: {chip: trn1}
workload:
  model:
    preset: mixtral-8x7b
    layers: 16
    moe: {experts: 8, top_k: 2}
  sequence_length: 4096
  global_batch: 256
  steps: 100
  parallelism: {tp: 8, pp: 2, ep: 2, zero: 1}
)";
    Outcome out;
    fuzz(base, 1000, 7, out);
    EXPECT_GT(out.loaded, 5);
    EXPECT_GT(out.rejected, 300);
}

TEST(Fuzz, MutatedReliabilitySectionsFailCleanly) {
    const std::string base = R"(name: fuzz-reliability
cluster: {ultraservers: 4}
workload: {model: llama3-8b, sequence_length: 4096, global_batch: 256, tokens: 10B}
reliability:
  preset: meta-rsc2
  failures:
    - {component: chip, mtbf: 10y, distribution: {weibull: {shape: 0.8}}}
    - {component: leaf, mtbf: 5y, effect: degrade, bad_fraction: 0.1, bad_multiplier: 3}
  recovery: {detection: 2min, restart: 10min, scope: replica, run_degraded: true}
  spares: {ultraservers: 2}
  repair: {auto: 2h, manual: 3d, manual_fraction: 0.2, distribution: exponential}
  checkpoint: {interval: 30min, mode: async, size: 1TB, storage_bandwidth: 1TB/s}
  fabric: {switch_radix: 32, power_domain_instances: 4}
simulation: {duration: 30d, replications: 3}
)";
    Outcome out;
    fuzz(base, 1500, 99, out);
    EXPECT_GT(out.loaded, 20); // a dense base: most mutations break something
    EXPECT_GT(out.rejected, 500);
}

/// Study files: every mutation loads or fails with an InputError that has a location; a
/// loaded sweep's values then go through the scenario loader, which also fails cleanly.
template <class Load>
void fuzz_study(const std::string& base, int iterations, std::uint64_t seed, Load load,
                Outcome& out) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < iterations; ++i) {
        const std::string text = mutate(base, rng);
        try {
            load(text);
            ++out.loaded;
        } catch (const InputError& e) {
            ++out.rejected;
            EXPECT_TRUE(e.location().known()) << "no location for: " << e.what() << "\n--\n"
                                              << text;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "unexpected exception type: " << e.what() << "\n--\n" << text;
        }
    }
}

TEST(Fuzz, MutatedSweepsFailCleanly) {
    const std::string base = "base: " + std::string(TRNSIM_SOURCE_DIR) +
                             "/scenarios/default.yaml\n" + R"(name: fuzz-sweep
seed: 4
replications: 2
set: {simulation.threads: 1, workload.tokens: 10B}
sweep:
  grid:
    cluster.ultraservers: [8, 16]
    workload.parallelism.recompute: [selective, full]
  zip:
    - {workload.parallelism.tp: [8, 16], workload.parallelism.pp: [4, 2]}
  random:
    samples: 2
    seed: 9
    keys:
      workload.global_batch: {uniform: [512, 2048]}
      cost.instance_hour: {log_uniform: [$10, $40]}
      workload.precision: {choice: [bf16, fp8]}
output: {file: out/x.h5}
)";
    Outcome out;
    int points = 0;
    fuzz_study(base, 1500, 31,
               [&](const std::string& text) {
                   const SweepSpec s = load_sweep_text(text, "fuzz-sweep.yaml");
                   // Apply the first value of every axis: located errors only.
                   std::vector<Override> overrides = s.fixed;
                   for (const auto& axis : s.axes) {
                       for (const auto& k : axis.keys) {
                           overrides.push_back({k.path, k.values[0].yaml, k.values[0].origin});
                       }
                   }
                   try {
                       load_scenario_with(s.base, overrides);
                       ++points;
                   } catch (const InputError& e) {
                       EXPECT_TRUE(e.location().known()) << e.what() << "\n--\n" << text;
                   }
               },
               out);
    EXPECT_GT(out.loaded, 20); // a dense file: most mutations break something
    EXPECT_GT(out.rejected, 500);
    EXPECT_GT(points, 10);
}

TEST(Fuzz, MutatedPlansFailCleanly) {
    const std::string base = "base: " + std::string(TRNSIM_SOURCE_DIR) +
                             "/scenarios/default.yaml\n" + R"(objective: min_cost
constraints: {deadline: 60d, budget: $2000000, max_chips: 8192, min_ettr: 90%}
search:
  ultraservers: {from: 8, to: 64, factor: 2}
  tp: [8, 16]
  pp: {from: 1, to: 4, step: 1}
  recompute: [selective, full]
  checkpoint_interval: [auto, 1h]
  spares: [0, 4]
finalists: 3
)";
    Outcome out;
    fuzz_study(base, 4000, 57, [](const std::string& text) { load_plan_text(text, "p.yaml"); },
               out);
    EXPECT_GT(out.loaded, 10); // a dense file: most mutations break something
    EXPECT_GT(out.rejected, 2000);
}

TEST(Fuzz, RandomBytesNeverCrash) {
    std::mt19937_64 rng(42);
    for (int i = 0; i < 300; ++i) {
        std::string text(rng() % 200, ' ');
        for (auto& c : text) {
            c = static_cast<char>(rng() % 128);
        }
        try {
            load_scenario_text(text, "bytes.yaml");
        } catch (const InputError&) {
        } catch (const std::exception& e) {
            ADD_FAILURE() << "unexpected exception: " << e.what();
        }
    }
}

} // namespace
} // namespace trnsim::config
