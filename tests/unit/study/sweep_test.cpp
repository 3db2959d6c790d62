// Sweeps: the points an expansion makes, the derived seeds, the validation of every point, and
// the runs: the same records whatever the thread count, each reproducible with `trnsim run`.
#include "trnsim/config/load.hpp"
#include "trnsim/report/study_results.hpp"
#include "trnsim/study/batch.hpp"
#include "trnsim/study/sweep.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

namespace trnsim::study {
namespace {

const std::string kDir = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/";

Sweep sweep_of(const std::string& body, const std::string& base = "default.yaml") {
    return load(config::load_sweep_text("base: " + kDir + base + "\n" + body, "s.yaml"));
}

std::string value(const Point& p, const std::string& path) {
    for (const auto& o : p.swept) {
        if (o.path == path) {
            return o.value;
        }
    }
    return "";
}

TEST(SweepPoints, GridAndZipCombineWithTheLastAxisFastest) {
    const Sweep s = sweep_of(R"(sweep:
  grid:
    cluster.ultraservers: [8, 16]
    workload.parallelism.recompute: [selective, full, none]
  zip:
    - {workload.parallelism.tp: [8, 16], workload.parallelism.pp: [4, 2]}
)");
    ASSERT_EQ(s.points.size(), 2u * 3u * 2u);
    EXPECT_EQ(s.keys, (std::vector<std::string>{"cluster.ultraservers",
                                                "workload.parallelism.recompute",
                                                "workload.parallelism.tp",
                                                "workload.parallelism.pp"}));
    // Point index = ((us * 3) + recompute) * 2 + zip.
    const Point& p = s.points[1 * 6 + 2 * 2 + 1];
    EXPECT_EQ(value(p, "cluster.ultraservers"), "16");
    EXPECT_EQ(value(p, "workload.parallelism.recompute"), "none");
    EXPECT_EQ(value(p, "workload.parallelism.tp"), "16");
    EXPECT_EQ(value(p, "workload.parallelism.pp"), "2"); // zipped with tp
    EXPECT_EQ(p.key, "cluster.ultraservers=16; workload.parallelism.pp=2; "
                     "workload.parallelism.recompute=none; workload.parallelism.tp=16");
    EXPECT_EQ(s.replications, 1); // the base scenario's
    EXPECT_EQ(s.base_seed, 7);    // the base scenario's
    EXPECT_EQ(s.runs(), 12);
    std::set<std::string> keys;
    for (const auto& q : s.points) {
        keys.insert(q.key);
    }
    EXPECT_EQ(keys.size(), s.points.size());
}

TEST(SweepPoints, RandomSamplesStayInRangeAndRepeat) {
    const auto random = [](int samples, int seed) {
        return sweep_of("sweep:\n  random:\n    samples: " + std::to_string(samples) +
                        "\n    seed: " + std::to_string(seed) + R"(
    keys:
      workload.global_batch: {uniform: [512, 515]}
      reliability.checkpoint.interval: {log_uniform: [10min, 4h]}
      workload.parallelism.recompute: {choice: [selective, full]}
)",
                        "llama3-405b-reliability.yaml");
    };
    const Sweep s = random(400, 3);
    ASSERT_EQ(s.points.size(), 400u);
    std::set<std::string> batches, recomputes;
    double below_hour = 0;
    for (const auto& p : s.points) {
        const auto batch = config::numeric_value("workload.global_batch",
                                                 value(p, "workload.global_batch"));
        ASSERT_TRUE(batch.has_value());
        EXPECT_GE(*batch, 512);
        EXPECT_LE(*batch, 515);
        batches.insert(value(p, "workload.global_batch"));
        const double t = *config::numeric_value("reliability.checkpoint.interval",
                                                value(p, "reliability.checkpoint.interval"));
        EXPECT_GE(t, 600.0);
        EXPECT_LE(t, 14400.0);
        below_hour += t < 3600.0 ? 1 : 0;
        recomputes.insert(value(p, "workload.parallelism.recompute"));
    }
    EXPECT_EQ(batches.size(), 4u); // every integer of [512, 515] comes up
    EXPECT_EQ(recomputes.size(), 2u);
    // log-uniform on [10 min, 4 h]: P(t < 1 h) = ln 6 / ln 24 = 0.564.
    EXPECT_NEAR(below_hour / 400.0, std::log(6.0) / std::log(24.0), 0.08);
    // The same seed draws the same points, and a sample does not depend on how many there are.
    const Sweep fewer = random(5, 3);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(fewer.points[i].key, s.points[i].key);
    }
    EXPECT_NE(random(5, 4).points[0].key, s.points[0].key);
}

/// "[1, 2, ..., n]".
std::string values(int n) {
    std::string v = "[";
    for (int i = 1; i <= n; ++i) {
        v += (i > 1 ? ", " : "") + std::to_string(i);
    }
    return v + "]";
}

TEST(SweepSize, CountedFromTheAxesAndCappedBeforeAnyPointIsBuilt) {
    // 20 x 4 x 4 x 4 x 4 x 5 x 3 x 50 = 3,840,000 points: 8 GB in validate before. Refused
    // from the axis sizes alone (this takes microseconds and no memory).
    const auto spec = config::load_sweep_text(
        "base: " + kDir + "default.yaml\nsweep:\n  grid:\n    seed: " + values(20) +
            "\n    workload.sequence_length: [1024, 2048, 4096, 8192]\n"
            "    workload.global_batch: [256, 512, 1024, 2048]\n"
            "    workload.parallelism.tp: [1, 2, 4, 8]\n"
            "    workload.parallelism.zero: [0, 1, 2, 3]\n"
            "    workload.parallelism.microbatch: [1, 2, 4, 8, 16]\n"
            "    workload.parallelism.recompute: [none, selective, full]\n"
            "    cost.instance_hour: " + values(50) + "\n",
        "big.yaml");
    try {
        (void)expand(spec, 1, 1);
        ADD_FAILURE() << "expanded 3.84 million points";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "sweep");
        EXPECT_NE(e.message().find("has 3,840,000 points (20 x 4 x 4 x 4 x 4 x 5 x 3 x 50)"),
                  std::string::npos)
            << e.what();
        EXPECT_NE(e.message().find("at most 100,000 points"), std::string::npos) << e.what();
    }
    // Random samples count as points too, and runs (points x replications) are bounded.
    const auto random = config::load_sweep_text(
        "base: " + kDir + "default.yaml\nsweep:\n  grid: {seed: " + values(11) +
            "}\n  random: {samples: 10000, keys: {cost.instance_hour: {uniform: [$1, $9]}}}\n",
        "random.yaml");
    EXPECT_THROW((void)expand(random, 1, 1), InputError);
    const auto runs = config::load_sweep_text(
        "base: " + kDir + "default.yaml\nreplications: 1000\nsweep: {grid: {seed: " +
            values(1001) + "}}\n",
        "runs.yaml");
    try {
        (void)expand(runs, 1, 1);
        ADD_FAILURE() << "1,001,000 runs accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "replications");
    }
    const auto fits = config::load_sweep_text(
        "base: " + kDir + "default.yaml\nreplications: 1000\nsweep: {grid: {seed: " +
            values(1000) + "}}\n",
        "fits.yaml");
    EXPECT_EQ(expand(fits, 1, 1).runs(), 1'000'000);
}

TEST(SweepValidation, ValidateChecksWhatPrepareChecksKeepingNothing) {
    const Sweep bad = sweep_of("sweep:\n  grid:\n    cluster.ultraservers: [16, 3]\n");
    EXPECT_THROW((void)validate(bad, 2), InputError);
    EXPECT_THROW((void)prepare(bad, 2), InputError);
    const Sweep good = sweep_of("sweep:\n  grid:\n    cluster.ultraservers: [16, 32]\n");
    const std::vector<std::string> files = validate(good, 2);
    // The base scenario and the presets it reads (chip and model), once each.
    EXPECT_EQ(files.size(), 3u) << ::testing::PrintToString(files);
    EXPECT_EQ(prepare(good, 2).size(), 2u);
}

TEST(SweepSeeds, DependOnThePointAndReplicateOnly) {
    const Sweep small = sweep_of("replications: 3\nsweep: {grid: {cluster.ultraservers: [8, 16]}}\n");
    const Sweep large =
        sweep_of("replications: 3\nsweep: {grid: {cluster.ultraservers: [4, 8, 12, 16]}}\n");
    // Point "ultraservers=16" is point 1 of the small sweep and point 3 of the large one.
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(small.run(1 * 3 + r).seed, large.run(3 * 3 + r).seed);
        EXPECT_EQ(small.run(1 * 3 + r).point, 1);
        EXPECT_EQ(small.run(1 * 3 + r).replicate, r);
    }
    std::set<std::int64_t> seeds;
    for (std::int64_t i = 0; i < large.runs(); ++i) {
        const std::int64_t seed = large.run(i).seed;
        EXPECT_GE(seed, 0);
        EXPECT_LT(seed, std::int64_t{1} << 53);
        seeds.insert(seed);
    }
    EXPECT_EQ(seeds.size(), 12u);
    EXPECT_NE(derive_seed(7, "a=1", 0), derive_seed(8, "a=1", 0));
}

TEST(SweepValidation, TheFirstBadPointFailsAtItsSweepValue) {
    const Sweep s = sweep_of(R"(sweep:
  grid:
    cluster.ultraservers: [16, 8, 0]
    workload.parallelism.tp: [16, 3]
)");
    try {
        prepare(s, 2);
        FAIL() << "validated";
    } catch (const InputError& e) {
        // Point 1 (16 UltraServers, tp 3) comes before point 4 (0 UltraServers).
        EXPECT_EQ(e.key_path(), "workload.parallelism.tp");
        EXPECT_EQ(e.location().str(), "s.yaml:5:35");
        EXPECT_NE(e.message().find("sweep point 1 of 6"), std::string::npos) << e.what();
    }
    // A plan that does not fit in HBM names workload.parallelism; the swept pp is below it.
    try {
        prepare(sweep_of("sweep: {grid: {workload.parallelism.pp: [4, 1]}}\n"), 1);
        FAIL() << "validated";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "workload.parallelism");
        EXPECT_EQ(e.location().str(), "s.yaml:2:45");
        EXPECT_NE(e.message().find("does not fit in HBM"), std::string::npos) << e.what();
    }
    // A schema error in the value itself.
    try {
        prepare(sweep_of("sweep: {grid: {workload.parallelism.zero: [1, 5]}}\n"), 1);
        FAIL() << "validated";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "workload.parallelism.zero");
        EXPECT_EQ(e.location().str(), "s.yaml:2:47");
    }
    EXPECT_EQ(prepare(sweep_of("sweep: {grid: {cluster.ultraservers: [8, 16]}}\n"), 2).size(), 2u);
}

/// A short job with failures: 20B tokens of Llama 3 405B on 64 UltraServers.
const char* kShort = R"(set:
  workload.tokens: 20B
  cluster.ultraservers: 64
  workload.parallelism: {tp: 64, pp: 2, zero: 1, recompute: full}
replications: 3
sweep:
  grid:
    reliability.checkpoint.interval: [20min, 2h]
    reliability.spares.ultraservers: [0, 2]
)";

std::vector<RunRecord> run_all(const Sweep& s, int threads) {
    const auto specs = prepare(s, threads);
    std::vector<RunRecord> out;
    ListSource source(pending_runs(s, {}));
    execute_all(s, specs, threads, source, report::batch_run_values, [&](RunRecord&& r) { out.push_back(std::move(r)); });
    sort_records(out);
    return out;
}

TEST(SweepRuns, TheSameRecordsOnOneAndTwoThreads) {
    const Sweep s = sweep_of(kShort, "llama3-405b-reliability.yaml");
    const auto one = run_all(s, 1);
    const auto two = run_all(s, 2);
    ASSERT_EQ(one.size(), 12u);
    ASSERT_EQ(two.size(), 12u);
    for (std::size_t i = 0; i < one.size(); ++i) {
        EXPECT_TRUE(one[i] == two[i]) << "run " << i;
        EXPECT_EQ(one[i].point, static_cast<std::int64_t>(i / 3));
        EXPECT_EQ(one[i].replicate, static_cast<int>(i % 3));
    }
    // Replicates differ (their own seeds), so the interval is not zero.
    const auto stats = point_statistics(one);
    ASSERT_EQ(stats.size(), 4u);
    for (const auto& st : stats) {
        EXPECT_EQ(st.replicates, 3);
        for (std::size_t k = 0; k < st.names.size(); ++k) {
            if (st.names[k] == "failures") {
                EXPECT_GT(st.estimates[k].half_width, 0.0);
            }
            if (st.names[k] == "chips") {
                EXPECT_EQ(st.estimates[k].mean, 4096.0);
                EXPECT_EQ(st.estimates[k].half_width, 0.0);
            }
        }
    }
}

TEST(SweepRuns, EachRunIsTheScenarioWithItsSeed) {
    // Record = `trnsim run` of the point's scenario with --set seed=<its seed> and one
    // replication.
    const Sweep s = sweep_of(kShort, "llama3-405b-reliability.yaml");
    const auto specs = prepare(s, 2);
    const RunId id = s.run(7); // point 2, replicate 1
    const RunRecord r = execute(specs[2], id, report::batch_run_values);
    std::vector<config::Override> o = s.overrides(s.points[2]);
    o.push_back({"seed", std::to_string(id.seed), {}});
    o.push_back({"simulation.replications", "1", {}});
    const auto spec = config::load_scenario_with(kDir + "llama3-405b-reliability.yaml", o);
    const auto expected = report::summary_values(sim::run_training(spec), false);
    ASSERT_EQ(r.values.size() + 1, expected.size()); // without "replications"
    std::size_t j = 0;
    for (const auto& v : expected) {
        if (v.name == "replications") {
            continue;
        }
        EXPECT_EQ(r.values[j].name, v.name);
        EXPECT_TRUE(r.values[j].value == v.value) << v.name;
        ++j;
    }
}

TEST(SweepRuns, PendingRunsSkipWhatIsDone) {
    const Sweep s = sweep_of("replications: 2\nsweep: {grid: {cluster.ultraservers: [8, 16, 32]}}\n");
    RunRecord a, b;
    a.point = 1;
    a.replicate = 0;
    b.point = 2;
    b.replicate = 1;
    EXPECT_EQ(pending_runs(s, {a, b}), (std::vector<std::int64_t>{0, 1, 3, 4}));
    EXPECT_EQ(pending_runs(s, {}).size(), 6u);
}

TEST(SweepStatistics, MeanAndStudentInterval) {
    std::vector<RunRecord> rs(3);
    const double xs[] = {1.0, 2.0, 3.0};
    for (int i = 0; i < 3; ++i) {
        rs[i].point = 4;
        rs[i].replicate = i;
        rs[i].values = {{"x", xs[i]},
                        {"n", std::int64_t{7}},
                        {"inf_one", i == 0 ? HUGE_VAL : 1.0},
                        {"inf_all", HUGE_VAL},
                        {"text", std::string("a")}};
    }
    const auto st = point_statistics(rs);
    ASSERT_EQ(st.size(), 1u);
    EXPECT_EQ(st[0].point, 4);
    ASSERT_EQ(st[0].names, (std::vector<std::string>{"x", "n", "inf_one", "inf_all"}));
    // sd = 1, t(0.975, 2) = 4.302653, half width = t / sqrt(3).
    EXPECT_DOUBLE_EQ(st[0].estimates[0].mean, 2.0);
    EXPECT_NEAR(st[0].estimates[0].half_width, 4.302653 / std::sqrt(3.0), 1e-5);
    EXPECT_EQ(st[0].estimates[1].mean, 7.0);
    EXPECT_EQ(st[0].estimates[1].half_width, 0.0);
    EXPECT_TRUE(std::isinf(st[0].estimates[2].mean));
    EXPECT_TRUE(std::isnan(st[0].estimates[2].half_width));
    EXPECT_TRUE(std::isinf(st[0].estimates[3].mean));
    EXPECT_EQ(st[0].estimates[3].half_width, 0.0);
}

TEST(SweepRecords, EncodeDecodeRoundTrip) {
    RunRecord r;
    r.point = 123456789012;
    r.replicate = 7;
    r.seed = (std::int64_t{1} << 53) - 1;
    r.values = {{"a", std::int64_t{-5}}, {"b", std::nan("")}, {"c", -0.0}, {"d", std::string("xyz")}};
    const RunRecord back = decode(encode(r));
    EXPECT_TRUE(back == r);
    std::string bytes = encode(r);
    bytes.pop_back();
    EXPECT_THROW(decode(bytes), std::runtime_error);
    EXPECT_THROW(decode(encode(r) + "x"), std::runtime_error);
}

} // namespace
} // namespace trnsim::study
