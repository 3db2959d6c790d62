// Sweep and plan files: what they read into, the value kinds of scenario keys, and the errors
// (each with the file, line, column and key path of the mistake).
#include "trnsim/config/load.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace trnsim::config {
namespace {

const std::string kBase = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/default.yaml";

std::string sweep_text(const std::string& body) { return "base: " + kBase + "\n" + body; }

/// The error of loading `text` as a sweep (fails the test when it loads).
InputError sweep_error(const std::string& text) {
    try {
        load_sweep_text(text, "s.yaml");
    } catch (const InputError& e) {
        return e;
    }
    ADD_FAILURE() << "loaded:\n" << text;
    return InputError("", "");
}

InputError plan_error(const std::string& text) {
    try {
        load_plan_text(text, "p.yaml");
    } catch (const InputError& e) {
        return e;
    }
    ADD_FAILURE() << "loaded:\n" << text;
    return InputError("", "");
}

TEST(Sweep, GridZipRandomAndSetAreRead) {
    const SweepSpec s = load_sweep_text(sweep_text(R"(name: study
seed: 11
replications: 3
set: {simulation.threads: 1}
sweep:
  grid:
    cluster.ultraservers: [8, 16]
    workload.parallelism.recompute: [selective, full]
  zip:
    - {workload.parallelism.tp: [8, 16], workload.parallelism.pp: [4, 2]}
  random:
    samples: 5
    seed: 9
    keys:
      workload.global_batch: {uniform: [512, 2048]}
      cost.instance_hour: {log_uniform: [$10, $40]}
      workload.precision: {choice: [bf16, fp8]}
output: {file: out/x.h5}
)"),
                                        "s.yaml");
    EXPECT_EQ(s.name, "study");
    EXPECT_EQ(s.seed.value(), 11);
    EXPECT_EQ(s.replications.value(), 3);
    ASSERT_EQ(s.fixed.size(), 1u);
    EXPECT_EQ(to_string(s.fixed[0]), "simulation.threads=1");
    EXPECT_EQ(s.fixed[0].origin.str(), "s.yaml:5:27");
    ASSERT_EQ(s.axes.size(), 3u); // two grid keys, one zip group
    EXPECT_EQ(s.axes[0].keys[0].path, "cluster.ultraservers");
    EXPECT_EQ(s.axes[0].size(), 2u);
    EXPECT_EQ(s.axes[0].keys[0].values[1].yaml, "16");
    EXPECT_EQ(s.axes[0].keys[0].values[1].origin.str(), "s.yaml:8:31");
    EXPECT_EQ(s.axes[1].keys[0].values[1].yaml, "full");
    ASSERT_EQ(s.axes[2].keys.size(), 2u);
    EXPECT_EQ(s.axes[2].keys[1].path, "workload.parallelism.pp");
    ASSERT_TRUE(s.random.has_value());
    EXPECT_EQ(s.random->samples, 5);
    EXPECT_EQ(s.random->seed, 9);
    ASSERT_EQ(s.random->keys.size(), 3u);
    EXPECT_EQ(s.random->keys[0].kind, ValueKind::integer);
    EXPECT_EQ(s.random->keys[0].low, 512.0);
    EXPECT_EQ(s.random->keys[0].high, 2048.0);
    EXPECT_EQ(s.random->keys[1].distribution, Distribution::log_uniform);
    EXPECT_EQ(s.random->keys[1].kind, ValueKind::money);
    EXPECT_DOUBLE_EQ(s.random->keys[1].low, 10.0);
    EXPECT_EQ(s.random->keys[2].distribution, Distribution::choice);
    EXPECT_EQ(s.random->keys[2].choices.size(), 2u);
    EXPECT_EQ(s.output_file, "out/x.h5");
    EXPECT_EQ(s.base, kBase);
}

TEST(Sweep, DefaultsAndNoAxes) {
    const SweepSpec s = load_sweep_text(sweep_text(""), "dir/my-sweep.yaml");
    EXPECT_EQ(s.name, "my-sweep");
    EXPECT_FALSE(s.seed.has_value());
    EXPECT_FALSE(s.replications.has_value());
    EXPECT_TRUE(s.axes.empty());
    EXPECT_FALSE(s.random.has_value());
    EXPECT_EQ(s.output_file, "results/my-sweep.h5");
}

TEST(Sweep, ValueKindsFollowTheSchema) {
    EXPECT_EQ(value_kind("cluster.ultraservers"), ValueKind::integer);
    EXPECT_EQ(value_kind("workload.parallelism.dp"), ValueKind::integer); // integer or auto
    EXPECT_EQ(value_kind("reliability.checkpoint.interval"), ValueKind::duration);
    EXPECT_EQ(value_kind("reliability.checkpoint.storage_bandwidth"), ValueKind::bandwidth);
    EXPECT_EQ(value_kind("reliability.checkpoint.size"), ValueKind::bytes);
    EXPECT_EQ(value_kind("reliability.repair.manual_fraction"), ValueKind::real);
    EXPECT_EQ(value_kind("cost.instance_hour"), ValueKind::money);
    EXPECT_EQ(value_kind("workload.model"), ValueKind::text);
    EXPECT_EQ(value_kind("workload.model.layers"), ValueKind::integer); // inline model key
    EXPECT_EQ(value_kind("workload.parallelism.recompute"), ValueKind::text);
    EXPECT_EQ(value_kind("no.such.key"), ValueKind::text);

    EXPECT_EQ(numeric_value("reliability.checkpoint.interval", "30min").value(), 1800.0);
    EXPECT_FALSE(numeric_value("reliability.checkpoint.interval", "auto").has_value());
    EXPECT_EQ(numeric_value("cluster.ultraservers", "2K").value(), 2000.0);
    EXPECT_EQ(numeric_value("reliability.checkpoint.storage_bandwidth", "8Gbps").value(), 1e9);
    EXPECT_EQ(numeric_value("reliability.repair.manual_fraction", "25%").value(), 0.25);
    EXPECT_FALSE(numeric_value("workload.model", "llama3-8b").has_value());
    EXPECT_FALSE(numeric_value("cluster.ultraservers", "[1, 2]").has_value());

    // format_value writes text the key reads back as the same number.
    for (double v : {1800.0, 1234.567891, 1e-3, 7.5e9}) {
        const std::string t = format_value(ValueKind::duration, v);
        EXPECT_NEAR(numeric_value("reliability.checkpoint.interval", t).value(), v, 1e-9) << t;
    }
    EXPECT_EQ(format_value(ValueKind::integer, 16.4), "16");
    EXPECT_EQ(numeric_value("reliability.checkpoint.storage_bandwidth",
                            format_value(ValueKind::bandwidth, 2.5e12))
                  .value(),
              2.5e12);
    EXPECT_EQ(numeric_value("cost.instance_hour", format_value(ValueKind::money, 35.76)).value(),
              35.76);
    EXPECT_THROW(format_value(ValueKind::text, 1.0), std::invalid_argument);
}

TEST(Sweep, OverridesCarryTheirOrigin) {
    const std::vector<Override> ok = {{"cluster.ultraservers", "8", {"s.yaml", 4, 7}},
                                      {"workload.parallelism", "{tp: 8, pp: 2}", {}}};
    const ScenarioSpec spec = load_scenario_with(kBase, ok);
    EXPECT_EQ(spec.cluster.ultraservers, 8);
    EXPECT_EQ(spec.training.parallelism.tp, 8);
    EXPECT_EQ(spec.training.parallelism.zero, 1); // the mapping replaced the base's: defaults
    EXPECT_EQ(spec.sources.find("cluster.ultraservers").str(), "s.yaml:4:7");
    try {
        load_scenario_with(kBase, {{"cluster.ultraservers", "0", {"s.yaml", 6, 9}}});
        FAIL() << "loaded";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "cluster.ultraservers");
        EXPECT_EQ(e.location().str(), "s.yaml:6:9");
    }
    try {
        load_scenario_with(kBase, {{"cluster.ultraserver", "4", {"s.yaml", 2, 3}}});
        FAIL() << "loaded";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("did you mean 'ultraservers'"), std::string::npos)
            << e.what();
        EXPECT_EQ(e.location().str(), "s.yaml:2:3");
    }
}

struct BadSweep {
    const char* body;
    const char* key;   ///< key path in the message
    const char* where; ///< location
    const char* words; ///< part of the message
};

TEST(Sweep, MalformedFilesFailWithTheirKeyPathAndLine) {
    const BadSweep cases[] = {
        {"sweep: {grid: {cluster.ultraservers: 8}}\n", "sweep.grid.cluster.ultraservers",
         "s.yaml:2:38", "non-empty list"},
        {"sweep: {grid: {cluster.ultraservers: []}}\n", "sweep.grid.cluster.ultraservers",
         "s.yaml:2:38", "non-empty list"},
        {"sweep: {grid: {cluster.ultraserver: [1]}}\n", "sweep.grid.cluster.ultraserver",
         "s.yaml:2:16", "did you mean 'cluster.ultraservers'"},
        {"sweep: {grid: {clustr.ultraservers: [1]}}\n", "sweep.grid.clustr.ultraservers",
         "s.yaml:2:16", "did you mean 'cluster'"},
        {"sweep: {grid: {'cluster..x': [1]}}\n", "sweep.grid.cluster..x", "s.yaml:2:16",
         "not a scenario key path"},
        {"sweep: {grdi: {}}\n", "sweep.grdi", "s.yaml:2:9", "did you mean 'grid'"},
        {"swep: {}\n", "swep", "s.yaml:2:1", "did you mean 'sweep'"},
        {"sweep: {zip: [{workload.parallelism.tp: [1, 2], workload.parallelism.pp: [1]}]}\n",
         "sweep.zip[0].workload.parallelism.pp", "s.yaml:2:74", "equal lengths"},
        {"sweep: {zip: {a: 1}}\n", "sweep.zip", "s.yaml:2:14", "list of groups"},
        {"sweep: {zip: [{}]}\n", "sweep.zip[0]", "s.yaml:2:15", "empty zip group"},
        {"sweep: {random: {keys: {cluster.ultraservers: {uniform: [1, 4]}}}}\n",
         "sweep.random.samples", "", "required"},
        {"sweep: {random: {samples: 3}}\n", "sweep.random.keys", "s.yaml:2:27", "required"},
        {"sweep: {random: {samples: 3, keys: {workload.model: {uniform: [1, 2]}}}}\n",
         "sweep.random.keys.workload.model.uniform", "s.yaml:2:63", "choice"},
        {"sweep: {random: {samples: 3, keys: {cluster.ultraservers: {uniform: [8, 2]}}}}\n",
         "sweep.random.keys.cluster.ultraservers.uniform", "s.yaml:2:69", "must not exceed"},
        {"sweep: {random: {samples: 3, keys: {cluster.ultraservers: {log_uniform: [0, 2]}}}}\n",
         "sweep.random.keys.cluster.ultraservers.log_uniform", "s.yaml:2:73", "LOW > 0"},
        {"sweep: {random: {samples: 3, keys: {reliability.checkpoint.interval: {uniform: [1h, "
         "5GB]}}}}\n",
         "sweep.random.keys.reliability.checkpoint.interval.uniform[1]", "s.yaml:2:85",
         "not a value"},
        {"sweep: {random: {samples: 3, keys: {cluster.ultraservers: {normal: [1, 2]}}}}\n",
         "sweep.random.keys.cluster.ultraservers.normal", "s.yaml:2:60", "unknown distribution"},
        {"sweep: {random: {samples: 0, keys: {}}}\n", "sweep.random.samples", "s.yaml:2:27",
         "out of range"},
        {"set: {cluster.ultraservers: 4}\nsweep: {grid: {cluster.ultraservers: [8]}}\n",
         "cluster.ultraservers", "s.yaml:3:16", "already given in set at s.yaml:2:29"},
        {"sweep: {grid: {workload.parallelism: [{tp: 8}], workload.parallelism.tp: [4]}}\n",
         "workload.parallelism.tp", "s.yaml:2:49", "overlaps"},
        {"set: [1]\n", "set", "s.yaml:2:6", "mapping of scenario key paths"},
        {"replications: 0\n", "replications", "s.yaml:2:15", "out of range"},
        {"seed: -1\n", "seed", "s.yaml:2:7", "out of range"},
    };
    for (const auto& c : cases) {
        const InputError e = sweep_error(sweep_text(c.body));
        EXPECT_EQ(e.key_path(), c.key) << c.body << e.what();
        if (*c.where != '\0') {
            EXPECT_EQ(e.location().str(), c.where) << c.body << e.what();
        } else {
            EXPECT_TRUE(e.location().known()) << e.what();
        }
        EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
    }
    // The base scenario itself.
    EXPECT_EQ(sweep_error("sweep: {}\n").key_path(), "base");
    const InputError missing = sweep_error("base: nowhere.yaml\n");
    EXPECT_EQ(missing.location().str(), "s.yaml:1:7");
    EXPECT_NE(std::string(missing.what()).find("not found"), std::string::npos);
    EXPECT_EQ(sweep_error("").location().str(), "s.yaml:1:1");
    EXPECT_EQ(sweep_error("- 1\n").location().str(), "s.yaml:1:1");
    EXPECT_EQ(sweep_error("base: [\n").location().file, "s.yaml");
}

TEST(Plan, SearchSpaceAndConstraintsAreRead) {
    const PlanSpec p = load_plan_text("base: " + kBase + R"(
objective: min_time
constraints: {deadline: 60d, budget: $2000000, max_chips: 8192, min_ettr: 90%, hbm_headroom: 0.1}
search:
  ultraservers: {from: 8, to: 64, factor: 2}
  tp: [8, 16]
  cp: {from: 1, to: 8, factor: 2}
  pp: {from: 1, to: 4, step: 1}
  zero: 1
  recompute: [selective, full]
  checkpoint_interval: [auto, 1h]
  spares: [0, 4]
  global_batch: {from: 1024, to: 4096, factor: 2}
finalists: 3
frontier: 2
)",
                                      "p.yaml");
    EXPECT_EQ(p.objective, Objective::min_time);
    EXPECT_EQ(p.deadline->seconds(), 60.0 * 86400.0);
    EXPECT_EQ(p.budget->usd(), 2e6);
    EXPECT_EQ(p.max_chips.value(), 8192);
    EXPECT_EQ(p.min_ettr.value(), 0.9);
    EXPECT_EQ(p.hbm_headroom, 0.1);
    ASSERT_EQ(p.ultraservers.values.size(), 4u); // 8, 16, 32, 64
    EXPECT_EQ(p.ultraservers.values[3], 64);
    EXPECT_EQ(p.ultraservers.written[3].yaml, "64");
    EXPECT_EQ(p.pp.values.size(), 4u);
    EXPECT_TRUE(p.zero.given);
    EXPECT_EQ(p.zero.values.size(), 1u);
    EXPECT_FALSE(p.dp.given);
    EXPECT_FALSE(load_plan_text("base: " + kBase + "\nsearch: {tp: [8]}\n", "q.yaml").cp.given);
    EXPECT_FALSE(p.instances.given);
    // Read by reliability.checkpoint.interval's own rule: auto is a zero duration.
    EXPECT_EQ(p.checkpoint_interval.written[0].yaml, "auto");
    EXPECT_EQ(p.checkpoint_interval.values[0], Duration::zero());
    EXPECT_EQ(p.checkpoint_interval.values[1], Duration::from_ns(3'600'000'000'000));
    EXPECT_EQ(p.checkpoint_interval.written[1].origin.str(), "p.yaml:11:31");
    EXPECT_EQ(p.recompute.values, (std::vector<workload::Recompute>{
                                      workload::Recompute::selective, workload::Recompute::full}));
    // cp: a range by factor, 1, 2, 4, 8 (each checked by workload.parallelism.cp's rule).
    ASSERT_TRUE(p.cp.given);
    ASSERT_EQ(p.cp.values.size(), 4u);
    EXPECT_EQ(p.cp.values, (std::vector<int>{1, 2, 4, 8}));
    EXPECT_EQ(p.cp.written[3].yaml, "8");
    EXPECT_EQ(p.cp.origin.str(), "p.yaml:7:7");
    ASSERT_TRUE(p.global_batch.given);
    ASSERT_EQ(p.global_batch.values.size(), 3u); // 1024, 2048, 4096
    EXPECT_EQ(p.global_batch.values, (std::vector<std::int64_t>{1024, 2048, 4096}));
    EXPECT_EQ(p.global_batch.written[2].yaml, "4096");
    EXPECT_EQ(p.finalists, 3);
    EXPECT_EQ(p.frontier, 2);
}

TEST(Plan, MalformedPlansFailWithTheirKeyPathAndLine) {
    const std::string b = "base: " + kBase + "\n";
    const BadSweep cases[] = {
        {"objective: fastest\n", "objective", "p.yaml:2:12", "min_time"},
        {"search: {tp: [8, 0]}\n", "search.tp[1]", "p.yaml:2:18", "out of range"},
        {"search: {cp: [2, 0]}\n", "search.cp[1]", "p.yaml:2:18", "out of range"},
        {"search: {cp: [1, two]}\n", "search.cp[1]", "p.yaml:2:18", "two"},
        {"search: {cp: {from: 4, to: 2, factor: 2}}\n", "search.cp.to", "p.yaml:2:28",
         "out of range"},
        {"search: {cp: {from: 1, to: 8}}\n", "search.cp", "p.yaml:2:14", "factor"},
        {"search:\n  cp: [1, 65537]\n", "search.cp[1]", "p.yaml:3:11", "out of range"},
        {"search: {recompute: [partial]}\n", "search.recompute[0]", "p.yaml:2:22",
         "not one of"},
        {"search: {recompute: {from: 1, to: 2, step: 1}}\n", "search.recompute", "p.yaml:2:21",
         "got a mapping"},
        {"search: {ultraservers: {from: 8, to: 4, factor: 2}}\n", "search.ultraservers.to",
         "p.yaml:2:38", "out of range"},
        {"search: {ultraservers: {from: 8, to: 64}}\n", "search.ultraservers", "p.yaml:2:24",
         "factor"},
        {"search: {ultraservers: {from: 8, to: 64, stpe: 2}}\n", "search.ultraservers.stpe",
         "p.yaml:2:42", "did you mean 'step'"},
        {"search: {checkpoint_interval: [0s]}\n", "search.checkpoint_interval[0]", "p.yaml:2:32",
         "auto or a duration > 0"},
        {"search: {tpp: [1]}\n", "search.tpp", "p.yaml:2:10", "did you mean 'tp'"},
        {"search: {global_batch: [2048, 0]}\n", "search.global_batch[1]", "p.yaml:2:31",
         "out of range"},
        {"search: {global_bach: [2048]}\n", "search.global_bach", "p.yaml:2:10",
         "did you mean 'global_batch'"},
        {"constraints: {deadline: 0d}\n", "constraints.deadline", "p.yaml:2:25", "> 0"},
        {"constraints: {min_ettr: 1.5}\n", "constraints.min_ettr", "p.yaml:2:25", "0 to 1"},
        {"constraints: {max_chips: 0}\n", "constraints.max_chips", "p.yaml:2:26", ">= 1"},
        {"finalists: 0\n", "finalists", "p.yaml:2:12", "out of range"},
        {"search: {tp: []}\n", "search.tp", "p.yaml:2:14", "empty list"},
    };
    for (const auto& c : cases) {
        const InputError e = plan_error(b + c.body);
        EXPECT_EQ(e.key_path(), c.key) << c.body << e.what();
        EXPECT_EQ(e.location().str(), c.where) << c.body << e.what();
        EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace trnsim::config
