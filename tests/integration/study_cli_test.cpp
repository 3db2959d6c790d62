// trnsim batch and trnsim plan end to end: one results file whatever the thread count (or the
// number of MPI ranks), --resume equal to a fresh run, bad points and plans rejected with exit
// code 2 and nothing written.
#include "run_cli.hpp"

#include "trnsim/results/hdf5_writer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <unistd.h>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

/// A fresh directory for one test.
fs::path scratch(const std::string& name) {
    const fs::path d = fs::temp_directory_path() /
                       ("trnsim-study-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

void write(const fs::path& p, const std::string& text) {
    std::ofstream(p) << text;
}

std::string base(const char* scenario) {
    return std::string("base: ") + TRNSIM_SOURCE_DIR + "/scenarios/" + scenario + "\n";
}

/// Tables equal column by column, floats bit for bit.
void expect_same_table(const results::Table& a, const results::Table& b, const std::string& what) {
    ASSERT_EQ(a.rows(), b.rows()) << what;
    ASSERT_EQ(a.columns().size(), b.columns().size()) << what;
    for (std::size_t c = 0; c < a.columns().size(); ++c) {
        const auto& x = a.columns()[c];
        const auto& y = b.columns()[c];
        ASSERT_EQ(x.name, y.name) << what;
        EXPECT_EQ(x.ints, y.ints) << what << " " << x.name;
        EXPECT_EQ(x.strings, y.strings) << what << " " << x.name;
        ASSERT_EQ(x.floats.size(), y.floats.size());
        if (!x.floats.empty()) { // memcmp wants valid pointers even for 0 bytes
            EXPECT_EQ(
                std::memcmp(x.floats.data(), y.floats.data(), x.floats.size() * sizeof(double)), 0)
                << what << " " << x.name;
        }
    }
}

/// Every dataset of a batch file equal.
void expect_same_batch(const fs::path& a, const fs::path& b) {
    for (const char* t : {"/summary", "/batch/points", "/batch/mean"}) {
        expect_same_table(results::read_table(a.string(), t), results::read_table(b.string(), t),
                          t);
    }
    for (const char* t : {"/batch/sweep", "/batch/context", "/meta/scenario"}) {
        EXPECT_EQ(results::read_text(a.string(), t), results::read_text(b.string(), t)) << t;
    }
}

int column(const results::Table& t, const char* name) {
    const int i = t.find(name);
    EXPECT_GE(i, 0) << name;
    return i;
}

const std::string kFailures = base("llama3-405b-reliability.yaml") + R"(set:
  workload.tokens: 20B
  cluster.ultraservers: 32
  workload.parallelism: {tp: 64, pp: 2, zero: 1, recompute: full}
replications: 3
sweep:
  grid:
    reliability.checkpoint.interval: [20min, 2h]
    reliability.spares.ultraservers: [0, 2]
)";

/// "[1, 2, ..., n]".
std::string seeds(int n) {
    std::string v = "[";
    for (int i = 1; i <= n; ++i) {
        v += (i > 1 ? ", " : "") + std::to_string(i);
    }
    return v + "]";
}

TEST(Validate, ALargeSweepIsCheckedInMemoryThatDoesNotGrowWithItsPoints) {
    // Every point checked, none kept: 3,000 points take about the memory of 300 (prepare kept
    // every point's scenario, and validated at 5.5 s per 1,000 points).
    const fs::path dir = scratch("validate-large");
    long rss[2] = {0, 0};
    const char* counts[2] = {"300", "3,000"};
    const int points[2] = {300, 3000};
    for (int i = 0; i < 2; ++i) {
        const fs::path f = dir / ("s" + std::to_string(points[i]) + ".yaml");
        write(f, base("default.yaml") + "sweep: {grid: {seed: " + seeds(points[i]) + "}}\n");
        const CliResult r = run_cli({"validate", f.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find(std::string(counts[i]) + " points x 1 replicate, every point valid"),
                  std::string::npos)
            << r.out;
        rss[i] = r.max_rss_kib;
    }
    EXPECT_LT(rss[1] - rss[0], 8 * 1024) << rss[0] << " KiB for 300 points, " << rss[1]
                                         << " KiB for 3,000";
    fs::remove_all(dir);
}

TEST(Validate, AnOversizedSweepIsRefusedAtOnce) {
    const fs::path dir = scratch("validate-oversized");
    write(dir / "big.yaml", base("default.yaml") + "sweep:\n  grid:\n    seed: " + seeds(200) +
                                "\n    workload.parallelism.recompute: [none, selective, full]\n"
                                "    cost.instance_hour: " + seeds(200) + "\n");
    const CliResult r = run_cli({"validate", (dir / "big.yaml").string()}, dir.string(), 30.0);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("sweep: has 120,000 points (200 x 3 x 200)"), std::string::npos) << r.err;
    EXPECT_LT(r.wall_s, 5.0);
    EXPECT_LT(r.max_rss_kib, 200 * 1024);
    fs::remove_all(dir);
}

TEST(Batch, OneFileWhateverTheThreadCount) {
    const fs::path d = scratch("threads");
    write(d / "sweep.yaml", kFailures);
    const auto one = run_cli({"batch", (d / "sweep.yaml").string(), "-o", (d / "one.h5").string(),
                              "-j", "1"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_NE(one.out.find("12 runs in"), std::string::npos) << one.out;
    EXPECT_NE(one.out.find("reliability.spares.ultraservers=2"), std::string::npos) << one.out;
    EXPECT_NE(one.err.find("4 points x 3 replicates = 12 runs"), std::string::npos) << one.err;
    const auto two = run_cli({"batch", (d / "sweep.yaml").string(), "-o", (d / "two.h5").string(),
                              "-j", "2", "--quiet"});
    ASSERT_EQ(two.exit_code, 0) << two.err;
    EXPECT_TRUE(two.out.empty());
    EXPECT_TRUE(two.err.empty());
    expect_same_batch(d / "one.h5", d / "two.h5");

    const auto summary = results::read_summary((d / "one.h5").string());
    EXPECT_EQ(summary.rows(), 12u);
    const auto& rep = summary.columns()[static_cast<std::size_t>(column(summary, "replicate"))];
    EXPECT_EQ(rep.ints[4], 1);
    const auto points = results::read_table((d / "one.h5").string(), "/batch/points");
    EXPECT_EQ(points.rows(), 4u);
    const auto& interval =
        points.columns()[static_cast<std::size_t>(column(points, "reliability.checkpoint.interval"))];
    EXPECT_EQ(interval.floats, (std::vector<double>{1200, 1200, 7200, 7200})); // SI seconds
    // /batch/keys: two grid keys, two axes, the interval in seconds, the spares a count.
    const auto keys = results::read_table((d / "one.h5").string(), "/batch/keys");
    ASSERT_EQ(keys.rows(), 2u);
    const auto key_column = [&](const char* name) -> const auto& {
        return keys.columns()[static_cast<std::size_t>(column(keys, name))];
    };
    EXPECT_EQ(key_column("key").strings, (std::vector<std::string>{
                                             "reliability.checkpoint.interval",
                                             "reliability.spares.ultraservers"}));
    EXPECT_EQ(key_column("axis").ints, (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(key_column("kind").strings, (std::vector<std::string>{"list", "list"}));
    EXPECT_EQ(key_column("unit").strings, (std::vector<std::string>{"s", "integer"}));
    const auto mean = results::read_table((d / "one.h5").string(), "/batch/mean");
    EXPECT_EQ(mean.rows(), 4u);
    EXPECT_GE(mean.find("ci95_ettr"), 0);
    fs::remove_all(d);
}

TEST(Batch, AServingSweepKeepsItsLatencyAndCostAndGrowsCapacityWithTheFleet) {
    // Twice the inf2 instances serving the same trace: twice the replicas (3 per instance at
    // tp 8), the same requests, and a TTFT p99 no worse (each replica sees fewer arrivals).
    const fs::path dir = scratch("batch-serving");
    write(dir / "s.yaml", base("serving/azure-conv-inf2.yaml") +
                              "set: {workload.requests.duration: 2min}\n"
                              "sweep: {grid: {cluster.instances: [1, 2]}}\n");
    const CliResult r = run_cli({"batch", (dir / "s.yaml").string(), "-o",
                                 (dir / "b.h5").string(), "-j", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("SLO met"), std::string::npos) << r.out;
    const results::Table t = results::read_table((dir / "b.h5").string(), "/summary");
    ASSERT_EQ(t.rows(), 2u);
    const auto& cols = t.columns();
    const auto ints = [&](const char* name) { return cols[column(t, name)].ints; };
    const auto floats = [&](const char* name) { return cols[column(t, name)].floats; };
    EXPECT_EQ(ints("replicas")[0], 3);
    EXPECT_EQ(ints("replicas")[1], 6);
    EXPECT_EQ(ints("requests")[0], ints("requests")[1]);
    EXPECT_LE(floats("ttft_p99_s")[1], floats("ttft_p99_s")[0]);
    EXPECT_GT(floats("cost_per_million_output_tokens_usd")[0], 0.0);
    fs::remove_all(dir);
}

TEST(Batch, AReliabilitySweepWithNothingToFailWarnsAndStrictRefusesIt) {
    // Checkpoint intervals swept over a base without failure processes: every point would
    // report 100% ETTR; the points' warning is printed once with its count, and --strict
    // stops the batch before it runs or writes anything.
    const fs::path d = scratch("reliability-warning");
    write(d / "sweep.yaml",
          base("default.yaml") + "sweep: {grid: {reliability.checkpoint.interval: [30min, 1h]}}\n");
    const auto r = run_cli({"batch", (d / "sweep.yaml").string(), "-o", (d / "w.h5").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: reliability: has no failure processes"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("(in 2 of 2 points)"), std::string::npos) << r.err;
    const auto strict = run_cli(
        {"batch", (d / "sweep.yaml").string(), "-o", (d / "s.h5").string(), "--strict"});
    EXPECT_EQ(strict.exit_code, 2) << strict.err;
    EXPECT_NE(strict.err.find("--strict makes warnings errors"), std::string::npos) << strict.err;
    EXPECT_FALSE(fs::exists(d / "s.h5"));
    fs::remove_all(d);
}

TEST(Batch, ResumeEqualsAFreshRun) {
    const fs::path d = scratch("resume");
    std::string first = kFailures;
    first.replace(first.find("[0, 2]"), 6, "[0]");
    write(d / "first.yaml", first);
    write(d / "full.yaml", kFailures);
    ASSERT_EQ(run_cli({"batch", (d / "first.yaml").string(), "-o", (d / "r.h5").string(), "-q"})
                  .exit_code,
              0);
    const auto resumed = run_cli({"batch", (d / "full.yaml").string(), "-o",
                                  (d / "r.h5").string(), "--resume"});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("(6 in "), std::string::npos) << resumed.err;
    EXPECT_NE(resumed.out.find("6 runs in"), std::string::npos) << resumed.out;
    ASSERT_EQ(run_cli({"batch", (d / "full.yaml").string(), "-o", (d / "fresh.h5").string(), "-q"})
                  .exit_code,
              0);
    for (const char* t : {"/summary", "/batch/points", "/batch/mean"}) {
        expect_same_table(results::read_table((d / "r.h5").string(), t),
                          results::read_table((d / "fresh.h5").string(), t), t);
    }
    // Nothing left to run.
    const auto again = run_cli({"batch", (d / "full.yaml").string(), "-o",
                                (d / "r.h5").string(), "--resume", "-q"});
    EXPECT_EQ(again.exit_code, 0);
    // Another base (a different `set`): refused, the file kept.
    std::string other = kFailures;
    other.replace(other.find("20B"), 3, "30B");
    write(d / "other.yaml", other);
    const auto refused = run_cli({"batch", (d / "other.yaml").string(), "-o",
                                  (d / "r.h5").string(), "--resume"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("another base scenario"), std::string::npos) << refused.err;
    expect_same_table(results::read_summary((d / "r.h5").string()),
                      results::read_summary((d / "fresh.h5").string()), "kept");
    fs::remove_all(d);
}

TEST(Batch, ABadPointStopsEverythingBeforeItRuns) {
    const fs::path d = scratch("bad");
    write(d / "sweep.yaml", base("default.yaml") + R"(sweep:
  grid:
    cluster.ultraservers: [16, 8]
    workload.parallelism.tp: [16, 3]
)");
    const auto r = run_cli({"batch", (d / "sweep.yaml").string(), "-o", (d / "x.h5").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find((d / "sweep.yaml").string() + ":5:35: workload.parallelism.tp: tp = 3"),
              std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(std::distance(fs::directory_iterator(d), fs::directory_iterator()), 1); // no output

    write(d / "typo.yaml", base("default.yaml") + "sweep: {grid: {cluster.ultraserver: [1]}}\n");
    const auto typo = run_cli({"batch", (d / "typo.yaml").string(), "-o", (d / "x.h5").string()});
    EXPECT_EQ(typo.exit_code, 2);
    EXPECT_NE(typo.err.find("did you mean 'cluster.ultraservers'"), std::string::npos) << typo.err;
    EXPECT_FALSE(fs::exists(d / "x.h5"));

    EXPECT_EQ(run_cli({"batch"}).exit_code, 2);
    EXPECT_EQ(run_cli({"batch", (d / "sweep.yaml").string(), "-j", "0"}).exit_code, 2);
    EXPECT_EQ(run_cli({"batch", (d / "missing.yaml").string()}).exit_code, 2);
    EXPECT_EQ(run_cli({"batch", "--help"}).exit_code, 0);
    fs::remove_all(d);
}

TEST(Plan, RanksFinalistsAndWritesTheSearch) {
    const fs::path d = scratch("plan");
    // The deadline leaves three candidates feasible (the step at 256 UltraServers, tp 64, pp 2
    // is 21.2 s with trn2's fitted collective engine), so two finalists are ranked.
    write(d / "plan.yaml", base("llama3-405b-reliability.yaml") + R"(objective: min_cost
constraints: {deadline: 45d}
search:
  ultraservers: [64, 128, 256]
  global_batch: [1024, 2048]
  tp: [32, 64]
  pp: [1, 2]
  checkpoint_interval: [auto, 1h]
  spares: [0, 8]
finalists: 2
frontier: 2
replications: 2
)");
    const auto r = run_cli({"plan", (d / "plan.yaml").string(), "-o", (d / "p.h5").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("96 candidates"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rank"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" batch "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("best "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" sequences: "), std::string::npos) << r.out;
    const auto candidates = results::read_table((d / "p.h5").string(), "/plan/candidates");
    EXPECT_EQ(candidates.rows(), 96u);
    // The batch varies right inside the cluster size: 32 candidates at each size, 16 (2 tp x
    // 2 pp x 2 intervals x 2 spares) at each batch.
    const auto& batch =
        candidates.columns()[static_cast<std::size_t>(column(candidates, "global_batch"))];
    ASSERT_EQ(batch.ints.size(), 96u);
    EXPECT_EQ(batch.ints[0], 1024);
    EXPECT_EQ(batch.ints[15], 1024);
    EXPECT_EQ(batch.ints[16], 2048);
    EXPECT_EQ(batch.ints[31], 2048);
    EXPECT_EQ(batch.ints[32], 1024);
    const auto summary = results::read_summary((d / "p.h5").string());
    EXPECT_GE(summary.rows(), 2u);
    EXPECT_LE(summary.rows(), 4u);
    const auto& rank = summary.columns()[static_cast<std::size_t>(column(summary, "rank"))];
    EXPECT_EQ(rank.ints[0], 1);
    // Each finalist's batch is its candidate's, and its run's tokens per step follow it.
    const auto& chosen = summary.columns()[static_cast<std::size_t>(column(summary, "candidate"))];
    const auto& fin_batch =
        summary.columns()[static_cast<std::size_t>(column(summary, "global_batch"))];
    const auto& tokens =
        summary.columns()[static_cast<std::size_t>(column(summary, "tokens_per_step"))];
    for (std::size_t i = 0; i < summary.rows(); ++i) {
        EXPECT_EQ(fin_batch.ints[i], batch.ints[static_cast<std::size_t>(chosen.ints[i])]);
        EXPECT_EQ(tokens.ints[i], fin_batch.ints[i] * 8192);
    }
    // The best plan's own tables, as trnsim run writes them.
    EXPECT_GT(results::read_table((d / "p.h5").string(), "/run/timeline").rows(), 0u);
    EXPECT_GT(results::read_table((d / "p.h5").string(), "/step/breakdown").rows(), 0u);

    write(d / "bad.yaml", base("default.yaml") + "search: {tp: [16, 0]}\n");
    const auto bad = run_cli({"plan", (d / "bad.yaml").string(), "-o", (d / "b.h5").string()});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("bad.yaml:2:19: search.tp[1]: out of range"), std::string::npos)
        << bad.err;
    EXPECT_FALSE(fs::exists(d / "b.h5"));
    write(d / "bad-batch.yaml", base("default.yaml") + "search: {global_batch: [1024, 1.5]}\n");
    const auto bad_batch =
        run_cli({"plan", (d / "bad-batch.yaml").string(), "-o", (d / "b.h5").string()});
    EXPECT_EQ(bad_batch.exit_code, 2);
    EXPECT_NE(bad_batch.err.find("bad-batch.yaml:2:31: search.global_batch[1]: "),
              std::string::npos)
        << bad_batch.err;
    EXPECT_FALSE(fs::exists(d / "b.h5"));

    // Nothing meets the deadline: the plan says so and how close it came.
    write(d / "late.yaml", base("default.yaml") +
                               "constraints: {deadline: 1d}\nsearch: {ultraservers: [16, 64]}\n");
    const auto late = run_cli({"plan", (d / "late.yaml").string(), "-o", (d / "l.h5").string()});
    EXPECT_EQ(late.exit_code, 0) << late.err;
    EXPECT_NE(late.out.find("no candidate meets the constraints"), std::string::npos) << late.out;
    EXPECT_NE(late.out.find("fastest    64 UltraServers (4,096 chips) + 0 spare, batch 1,024"),
              std::string::npos)
        << late.out;
    EXPECT_NE(late.out.find("(estimate, misses deadline)"), std::string::npos) << late.out;
    // The same closest misses in the file, for the HTML report: candidate 1 (64 UltraServers)
    // is the fastest; both miss the deadline of 1 day (default.yaml takes weeks).
    const auto search = results::read_table((d / "l.h5").string(), "/plan/search");
    ASSERT_EQ(search.rows(), 1u);
    const auto cell = [&](const results::Table& t, const char* name) -> const auto& {
        return t.columns()[static_cast<std::size_t>(column(t, name))];
    };
    EXPECT_EQ(cell(search, "candidates").ints[0], 2);
    EXPECT_EQ(cell(search, "feasible").ints[0], 0);
    EXPECT_EQ(cell(search, "fastest").ints[0], 1);
    const std::int64_t cheapest = cell(search, "cheapest").ints[0];
    ASSERT_TRUE(cheapest == 0 || cheapest == 1);
    const auto late_candidates = results::read_table((d / "l.h5").string(), "/plan/candidates");
    const auto& cost = cell(late_candidates, "cost_usd").floats;
    const auto other = static_cast<std::size_t>(1 - cheapest);
    EXPECT_LE(cost[static_cast<std::size_t>(cheapest)], cost[other]);
    // 64 UltraServers of 64 chips, no spares: job chips equal chips.
    EXPECT_EQ(cell(late_candidates, "job_chips").ints[1], 4096);
    const auto verdicts = results::read_table((d / "l.h5").string(), "/plan/verdicts");
    ASSERT_EQ(verdicts.rows(), 1u);
    EXPECT_EQ(cell(verdicts, "verdict").strings[0], "deadline");
    EXPECT_EQ(cell(verdicts, "candidates").ints[0], 2);
    fs::remove_all(d);
}

#ifdef TRNSIM_MPIEXEC
TEST(Plan, SearchesContextParallelism) {
    // default.yaml: 16 UltraServers = 4,096 ranks, tp 16, pp 4, batch 1,024: cp 1 leaves
    // dp 64, cp 2 dp 32, cp 3 does not split the 8,192-token sequence into 2 x 3 chunks.
    const fs::path d = scratch("plan-cp");
    write(d / "plan.yaml", base("default.yaml") + "search: {cp: [1, 2, 3]}\nfrontier: 0\n");
    const auto r = run_cli({"plan", (d / "plan.yaml").string(), "-o", (d / "p.h5").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("3 candidates, 3 step estimates"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  tp  cp  pp    dp "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("workload.parallelism.cp: cp = 3"), std::string::npos) << r.out;
    const auto candidates = results::read_table((d / "p.h5").string(), "/plan/candidates");
    ASSERT_EQ(candidates.rows(), 3u);
    const int tp = column(candidates, "tp");
    ASSERT_EQ(column(candidates, "cp"), tp + 1); // right after tp
    const auto col = [&](const results::Table& t, const char* name) -> const auto& {
        return t.columns()[static_cast<std::size_t>(column(t, name))];
    };
    EXPECT_EQ(col(candidates, "cp").ints, (std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(col(candidates, "dp").ints[0], 64);
    EXPECT_EQ(col(candidates, "dp").ints[1], 32);
    EXPECT_EQ(col(candidates, "verdict").strings[2], "invalid");
    // Each finalist ran its candidate's cp.
    const auto summary = results::read_summary((d / "p.h5").string());
    ASSERT_EQ(summary.rows(), 2u);
    for (std::size_t i = 0; i < summary.rows(); ++i) {
        const auto cand = static_cast<std::size_t>(col(summary, "candidate").ints[i]);
        EXPECT_EQ(col(summary, "cp").ints[i], col(candidates, "cp").ints[cand]);
    }

    write(d / "bad.yaml", base("default.yaml") + "search: {cp: [2, 0]}\n");
    const auto bad = run_cli({"plan", (d / "bad.yaml").string(), "-o", (d / "b.h5").string()});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("bad.yaml:2:18: search.cp[1]: out of range"), std::string::npos)
        << bad.err;
    EXPECT_FALSE(fs::exists(d / "b.h5"));
    fs::remove_all(d);
}

TEST(Batch, TwoMpiRanksWriteTheFileOneProcessWrites) {
    const fs::path d = scratch("mpi");
    std::string sweep = kFailures;
    sweep.replace(sweep.find("[20min, 2h]"), 11, "[20min, 1h, 2h]");
    write(d / "sweep.yaml", sweep);
    ASSERT_EQ(run_cli({"batch", (d / "sweep.yaml").string(), "-o", (d / "one.h5").string(), "-j",
                       "2", "-q"})
                  .exit_code,
              0);
    // mpirun runs trnsim itself: the test's child is mpirun with trnsim as its program.
    std::vector<std::string> args = {"-np", "2", "--oversubscribe"};
    if (::geteuid() == 0) {
        args.push_back("--allow-run-as-root");
    }
    if (const char* asan = std::getenv("ASAN_OPTIONS")) {
        // In the sanitizer build: Open MPI's runtime leaves its own allocations at exit, which
        // LeakSanitizer would report from every rank; trnsim's leaks are checked elsewhere.
        args.insert(args.end(), {"-x", "ASAN_OPTIONS=" + std::string(asan) + ":detect_leaks=0"});
    }
    args.insert(args.end(), {TRNSIM_CLI_PATH, "batch", (d / "sweep.yaml").string(), "-o",
                             (d / "two.h5").string(), "-j", "1"});
    const auto r = run_program(TRNSIM_MPIEXEC, args);
    std::string command = TRNSIM_MPIEXEC;
    for (const auto& a : args) {
        command += " " + a;
    }
    ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("on 2 processes x 1 thread"), std::string::npos) << r.err;
    expect_same_batch(d / "one.h5", d / "two.h5");

    // A bad point stops every rank with exit code 2 and nothing written.
    write(d / "bad.yaml", base("default.yaml") + "sweep: {grid: {workload.parallelism.tp: [3]}}\n");
    args.resize(args.size() - 7);
    args.insert(args.end(), {TRNSIM_CLI_PATH, "batch", (d / "bad.yaml").string(), "-o",
                             (d / "bad.h5").string()});
    const auto bad = run_program(TRNSIM_MPIEXEC, args);
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("workload.parallelism.tp: tp = 3"), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(d / "bad.h5"));
    fs::remove_all(d);
}
#endif

} // namespace
} // namespace trnsim::test
