#include "run_cli.hpp"
#include "support/scratch.hpp"

#include "trnsim/results/hdf5_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

TEST(Cli, VersionAndHelp) {
    const CliResult v = run_cli({"--version"});
    EXPECT_EQ(v.exit_code, 0);
    EXPECT_EQ(v.out.rfind("trnsim ", 0), 0u) << v.out;
    for (const char* cmd : {"run", "validate", "describe"}) {
        const CliResult h = run_cli({cmd, "--help"});
        EXPECT_EQ(h.exit_code, 0) << cmd;
        EXPECT_NE(h.out.find("usage: trnsim"), std::string::npos) << cmd;
    }
    const CliResult top = run_cli({"--help"});
    EXPECT_EQ(top.exit_code, 0);
    EXPECT_NE(top.out.find("exit codes"), std::string::npos);
}

TEST(Cli, UsageErrorsExitTwo) {
    EXPECT_EQ(run_cli({}).exit_code, 2);
    EXPECT_EQ(run_cli({"frobnicate"}).exit_code, 2);
    EXPECT_EQ(run_cli({"run"}).exit_code, 2);
    EXPECT_EQ(run_cli({"run", "scenarios/default.yaml", "--no-such-option"}).exit_code, 2);
    EXPECT_EQ(run_cli({"describe", "planet", "earth"}).exit_code, 2);
    const CliResult missing = run_cli({"run", "no/such/file.yaml"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("no/such/file.yaml"), std::string::npos) << missing.err;
}

TEST(Cli, RunWritesResultsAndPrintsTheSummary) {
    const fs::path dir = test::scratch_path("trnsim-cli-run");
    fs::remove_all(dir);
    const fs::path out = dir / "out.h5";
    const CliResult r = run_cli({"run", "scenarios/default.yaml", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out));
    for (const char* text : {"1,024 trn2 chips", "4,096 ranks", "llama3-70b", "MFU", "tokens/s",
                             "238,419 steps", "instance-hours", out.c_str()}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
    EXPECT_TRUE(r.err.empty()) << r.err;
    fs::remove_all(dir);
}

TEST(Cli, RunsWithOverridesNeverShareAResultsFile) {
    // The scenario names its file; a run with --set writes beside it under a hash of the
    // --set texts, so neither the plain run's file nor another variant's is overwritten.
    const fs::path dir = test::scratch_path("trnsim-cli-naming");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string scenario = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/default.yaml";
    ASSERT_EQ(run_cli({"run", scenario, "-q"}, dir.string()).exit_code, 0);
    const CliResult a =
        run_cli({"run", scenario, "--set", "workload.parallelism.tp=32"}, dir.string());
    const CliResult b =
        run_cli({"run", scenario, "--set", "workload.parallelism.recompute=full"}, dir.string());
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir / "results")) {
        files.push_back(e.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[2], "llama3-70b-16-ultraservers.h5");
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(files[static_cast<std::size_t>(i)].rfind("llama3-70b-16-ultraservers-", 0), 0u);
        EXPECT_EQ(files[static_cast<std::size_t>(i)].size(),
                  std::string("llama3-70b-16-ultraservers-01234567.h5").size());
    }
    // The summary says where it wrote.
    EXPECT_NE(a.out.find("results/llama3-70b-16-ultraservers-"), std::string::npos) << a.out;
    // -o still wins.
    ASSERT_EQ(run_cli({"run", scenario, "-q", "--set", "workload.parallelism.tp=32", "-o",
                       "x.h5"},
                      dir.string())
                  .exit_code,
              0);
    EXPECT_TRUE(fs::exists(dir / "x.h5"));
    fs::remove_all(dir);
}

TEST(Cli, SettingsWithoutEffectWarnAndStrictRefusesThem) {
    const fs::path dir = test::scratch_path("trnsim-cli-warn");
    fs::remove_all(dir);
    fs::create_directories(dir);
    // Stragglers at analytic fidelity, replications without a reliability section.
    const std::vector<std::string> sets = {"--set", "hardware.speed.sd=0.05", "--set",
                                           "simulation.replications=4"};
    std::vector<std::string> args = {"run", "scenarios/default.yaml", "-q", "-o",
                                     (dir / "w.h5").string()};
    args.insert(args.end(), sets.begin(), sets.end());
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: hardware.speed: has no effect at simulation.fidelity: "
                         "analytic"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("warning: simulation.replications: has no effect without a "
                         "reliability section"),
              std::string::npos)
        << r.err;
    const auto stored = results::read_text((dir / "w.h5").string(), "/meta/warnings");
    ASSERT_TRUE(stored.has_value());
    EXPECT_NE(stored->find("hardware.speed"), std::string::npos) << *stored;
    // --strict: the first warning is an error, before anything runs or is written.
    args[4] = (dir / "s.h5").string();
    args.push_back("--strict");
    const CliResult strict = run_cli(args);
    EXPECT_EQ(strict.exit_code, 2) << strict.err;
    EXPECT_NE(strict.err.find("--strict"), std::string::npos) << strict.err;
    EXPECT_FALSE(fs::exists(dir / "s.h5"));
    // A scenario without such settings has no warnings and no /meta/warnings.
    ASSERT_EQ(run_cli({"run", "scenarios/default.yaml", "-q", "--strict", "-o",
                       (dir / "c.h5").string()})
                  .exit_code,
              0);
    EXPECT_FALSE(results::read_text((dir / "c.h5").string(), "/meta/warnings").has_value());
    fs::remove_all(dir);
}

TEST(Cli, AServingFleetFailsAndWarnsOfWhatHasNoEffectOnIt) {
    const fs::path dir = test::scratch_path("trnsim-cli-serve-fail");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const CliResult r = run_cli({"run", "scenarios/serving/llama3-8b-inf2-failures.yaml", "--json",
                                 "-o", (dir / "f.h5").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"outages\":"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"outages\":0,"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\"retried_requests\":0,"), std::string::npos) << r.out;
    // A switch failure and a checkpoint interval have no effect on a serving fleet.
    std::ifstream in("scenarios/serving/llama3-8b-inf2-failures.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text += "  checkpoint: {interval: 1h}\n";
    const auto pos = text.find("  recovery:");
    ASSERT_NE(pos, std::string::npos);
    text.insert(pos, "    - {component: leaf, mtbf: 10min}\n");
    {
        std::ofstream out(dir / "s.yaml");
        out << text;
    }
    const CliResult w = run_cli({"run", (dir / "s.yaml").string(), "-q", "-o",
                                 (dir / "w.h5").string()});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    EXPECT_NE(w.err.find("warning: reliability.checkpoint: has no effect on a serving fleet"),
              std::string::npos)
        << w.err;
    EXPECT_NE(w.err.find("warning: reliability.failures: switch failures and degrading failures "
                         "(leaf)"),
              std::string::npos)
        << w.err;
    fs::remove_all(dir);
}

TEST(Cli, APresetBesideTheScenarioWinsAndDescribeSaysWhere) {
    // A copy of trn2.yaml with another price in <dir>/topologies/chips: a scenario in <dir>
    // naming chip trn2 uses it (its resolved price), wherever trnsim runs from; describe run
    // in <dir> names that file.
    const fs::path dir = test::scratch_path("trnsim-cli-presets");
    fs::remove_all(dir);
    fs::create_directories(dir / "topologies" / "chips");
    std::ifstream in(std::string(TRNSIM_SOURCE_DIR) + "/topologies/chips/trn2.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("price: 35.76USD");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 15, "price: 99.50USD");
    std::ofstream(dir / "topologies" / "chips" / "trn2.yaml") << text;
    std::ofstream(dir / "s.yaml") << "hardware: {chip: trn2}\ncluster: {ultraservers: 1}\n"
                                     "workload: {model: llama3-8b, sequence_length: 4096, "
                                     "global_batch: 64, steps: 10, parallelism: {tp: 4}}\n";
    const CliResult v = run_cli({"validate", (dir / "s.yaml").string()});
    ASSERT_EQ(v.exit_code, 0) << v.err;
    EXPECT_NE(v.out.find("instance_hour: 99.5USD"), std::string::npos) << v.out;
    const CliResult d = run_cli({"describe", "chip", "trn2"}, dir.string());
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_NE(d.out.find((dir / "topologies" / "chips" / "trn2.yaml").string()), std::string::npos)
        << d.out;
    // Elsewhere the project's own preset.
    const CliResult own = run_cli({"describe", "chip", "trn2"});
    EXPECT_NE(own.out.find("topologies/chips/trn2.yaml"), std::string::npos) << own.out;
    EXPECT_EQ(own.out.find(dir.string()), std::string::npos) << own.out;
    fs::remove_all(dir);
}

TEST(Cli, CollectiveAllAlgorithmsMarksTheCheapestPerSize) {
    const CliResult r =
        run_cli({"collective", "--all-algorithms", "--sizes", "1KiB,1MiB,1GiB"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A header with every algorithm, then one line per size with at least one cheapest mark;
    // the auto column equals the algorithm it picked, so it can never beat the cheapest.
    for (const char* name : {"ring", "bidirectional_ring", "mesh", "rdh", "torus_rings",
                             "hierarchical", "auto picked"}) {
        EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
    }
    int rows = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.find(" KiB ") != std::string::npos || line.find(" MiB ") != std::string::npos ||
            line.find(" GiB ") != std::string::npos) {
            ++rows;
            EXPECT_NE(line.find('*'), std::string::npos) << line;
        }
    }
    EXPECT_EQ(rows, 3) << r.out;
}

TEST(Cli, JsonSummaryAndCompare) {
    const fs::path dir = test::scratch_path("trnsim-cli-json");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const CliResult j = run_cli({"run", "scenarios/default.yaml", "--json", "-o",
                                 (dir / "a.h5").string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    // One line, one object: the results file, then the summary columns in order.
    EXPECT_EQ(j.out.find('\n'), j.out.size() - 1) << j.out;
    EXPECT_EQ(j.out.rfind("{\"results\":\"" + (dir / "a.h5").string() + "\",\"summary\":{"
                          "\"chips\":1024,",
                          0),
              0u)
        << j.out;
    EXPECT_NE(j.out.find("\"tp\":16,"), std::string::npos) << j.out;
    ASSERT_EQ(run_cli({"run", "scenarios/default.yaml", "-q", "--set",
                       "workload.parallelism.tp=32", "-o", (dir / "b.h5").string()})
                  .exit_code,
              0);
    const CliResult c = run_cli({"compare", (dir / "a.h5").string(), (dir / "b.h5").string()});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    // tp doubles (+100%), dp halves (-50%); the scenarios differ in tp and the output file.
    for (const char* text : {"+100.0%", "-50.0%", "scenarios  differ", "A     tp: 16",
                             "B     tp: 32"}) {
        EXPECT_NE(c.out.find(text), std::string::npos) << text << "\n" << c.out;
    }
    const CliResult same = run_cli({"compare", (dir / "a.h5").string(), (dir / "a.h5").string()});
    EXPECT_NE(same.out.find("scenarios  identical"), std::string::npos) << same.out;
    EXPECT_NE(same.out.find("0 of 26 summary values differ"), std::string::npos) << same.out;
    EXPECT_EQ(run_cli({"compare", (dir / "a.h5").string()}).exit_code, 2);
    EXPECT_EQ(run_cli({"compare", (dir / "a.h5").string(), "scenarios/default.yaml"}).exit_code, 2);
    fs::remove_all(dir);
}

/// `trnsim batch` of a sweep over the list-form scenario `file` exits 2 before anything runs,
/// naming `form` (tenants, fleet), and writes nothing to `none`.
void expect_batch_refuses(const fs::path& dir, const std::string& file, const fs::path& none,
                          const std::string& form) {
    const fs::path sweep = dir / "sweep.yaml";
    std::ofstream(sweep) << "base: " << fs::absolute(file).string()
                         << "\nsweep:\n  grid:\n    seed: [1, 2]\noutput: {file: "
                         << none.string() << "}\n";
    const CliResult batch = run_cli({"batch", sweep.string()});
    EXPECT_EQ(batch.exit_code, 2);
    EXPECT_NE(batch.err.find(form + ": trnsim batch runs single-workload scenarios"),
              std::string::npos)
        << batch.err;
    EXPECT_FALSE(fs::exists(none));
}

TEST(Cli, ATenantsScenarioWritesEachTenantUnderItsName) {
    const fs::path dir = test::scratch_path("trnsim-cli-tenants");
    fs::remove_all(dir);
    const fs::path out = dir / "t.h5";
    const std::string file = "scenarios/tenants/train-and-serve.yaml";
    const std::string small = "tenants.chat.workload.requests.count=200";
    const CliResult r = run_cli({"run", file, "--set", small, "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* text : {"2 tenants on 16 UltraServers",
                             "pretrain: training on 8 UltraServers (0 to 7 of 16)",
                             "chat: inference on 8 UltraServers (8 to 15 of 16)",
                             "trnsim: pretrain", "trnsim: chat", "ETTR", "TTFT p50"}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
    const results::Table summary = results::read_summary(out.string());
    EXPECT_EQ(summary.rows(), 2u);
    EXPECT_EQ(results::read_table(out.string(), "/tenants/chat/summary").rows(), 1u);
    EXPECT_GT(results::read_table(out.string(), "/tenants/pretrain/run/events").rows(), 0u);
    EXPECT_TRUE(results::read_text(out.string(), "/tenants/chat/scenario").has_value());
    const CliResult j = run_cli({"run", file, "--set", small, "--json", "-o", out.string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const std::string first = "\"tenants\":[{\"tenant\":\"pretrain\",\"workload\":\"training\"";
    EXPECT_NE(j.out.find(first), std::string::npos) << j.out;
    EXPECT_NE(j.out.find("\"summary\":{\"requests\":200,"), std::string::npos) << j.out;
    // Refused before anything runs, located, nothing written.
    const fs::path none = dir / "none.h5";
    const CliResult overlap =
        run_cli({"run", file, "--set", "tenants.chat.allocation.first=7", "-o", none.string()});
    EXPECT_EQ(overlap.exit_code, 2);
    EXPECT_NE(overlap.err.find(file + ":"), std::string::npos) << overlap.err;
    EXPECT_NE(overlap.err.find("tenants[1].allocation: overlaps allocation 0"), std::string::npos)
        << overlap.err;
    const CliResult trace = run_cli({"run", file, "--trace", (dir / "x.json").string(), "-o",
                                     none.string()});
    EXPECT_EQ(trace.exit_code, 2);
    EXPECT_NE(trace.err.find("output.trace"), std::string::npos) << trace.err;
    EXPECT_FALSE(fs::exists(none));
    EXPECT_FALSE(fs::exists(dir / "x.json"));
    expect_batch_refuses(dir, file, none, "tenants");
    fs::remove_all(dir);
}

TEST(Cli, AFleetScenarioWritesItsJobsClassesAndPool) {
    const fs::path dir = test::scratch_path("trnsim-cli-fleet");
    fs::remove_all(dir);
    const fs::path out = dir / "f.h5";
    const std::string file = "scenarios/fleet/shared-trn2.yaml";
    const CliResult r = run_cli({"run", file, "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* text : {"a fleet of 26 training jobs in 3 classes on 32 UltraServers",
                             "scheduler  priority; 1 spare; research at most 20 UltraServers",
                             "plan       pretrain-70b: tp 16 pp 4 dp 32",
                             "all jobs   26 of 26 finished", "pool       busy "}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
    EXPECT_EQ(results::read_summary(out.string()).rows(), 1u);
    EXPECT_EQ(results::read_table(out.string(), "/fleet/classes").rows(), 3u);
    EXPECT_EQ(results::read_table(out.string(), "/fleet/jobs").rows(), 26u);
    EXPECT_GT(results::read_table(out.string(), "/fleet/pool").rows(), 2u);
    // The jobs' costs add up to the pool's busy cost; the pool's is its domain-hours at the
    // trn2 on-demand price of 4 instances.
    const results::Table jobs = results::read_table(out.string(), "/fleet/jobs");
    const results::Table sum = results::read_summary(out.string());
    const auto value = [](const results::Table& t, const char* name, std::size_t row) {
        return t.columns().at(static_cast<std::size_t>(t.find(name))).floats.at(row);
    };
    double job_cost = 0.0;
    for (std::size_t i = 0; i < jobs.rows(); ++i) {
        job_cost += value(jobs, "cost_usd", i);
    }
    EXPECT_NEAR(job_cost, value(sum, "busy_cost_usd", 0), 1e-9 * job_cost);
    EXPECT_NEAR(value(sum, "cost_usd", 0), 32 * 4 * 35.76 * value(sum, "end_s", 0) / 3600.0,
                1e-6);
    const CliResult j = run_cli({"run", file, "--json", "-o", out.string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_NE(j.out.find("\"jobs_finished\":26"), std::string::npos) << j.out;
    // Refused before anything runs, located, nothing written.
    const fs::path none = dir / "none.h5";
    const CliResult gang =
        run_cli({"run", file, "--set", "fleet.jobs.research-8b.gang=40", "-o", none.string()});
    EXPECT_EQ(gang.exit_code, 2);
    EXPECT_NE(gang.err.find(file + ":"), std::string::npos) << gang.err;
    EXPECT_NE(gang.err.find("fleet.jobs[2].gang: a job holds 1 to 31 ultraservers"),
              std::string::npos)
        << gang.err;
    const CliResult trace =
        run_cli({"run", file, "--trace", (dir / "x.json").string(), "-o", none.string()});
    EXPECT_EQ(trace.exit_code, 2);
    EXPECT_NE(trace.err.find("output.trace"), std::string::npos) << trace.err;
    EXPECT_FALSE(fs::exists(none));
    EXPECT_FALSE(fs::exists(dir / "x.json"));
    const CliResult valid = run_cli({"validate", file});
    EXPECT_EQ(valid.exit_code, 0) << valid.err;
    EXPECT_NE(valid.out.find("class      finetune-8b: 16 jobs of tenant research"),
              std::string::npos)
        << valid.out;
    expect_batch_refuses(dir, file, none, "fleet");
    fs::remove_all(dir);
}

TEST(Cli, QuietRunAndOverrides) {
    const fs::path dir = test::scratch_path("trnsim-cli-quiet");
    fs::remove_all(dir);
    const CliResult r =
        run_cli({"run", "scenarios/default.yaml", "-q", "-o", (dir / "q.h5").string(), "--set",
                 "cluster.ultraservers=32", "--set", "workload.parallelism.tp=8", "--set",
                 "workload.parallelism.recompute=full",
                 "--threads", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_TRUE(fs::exists(dir / "q.h5"));
    fs::remove_all(dir);
}

TEST(Cli, AJobThatNeverFinishesIsPrintedAsNotDone) {
    // 1,024 chips failing every second each: the job restarts long before a step completes.
    // Printed before as "in inf d; -9,223,372,036,854,775,808 instance-hours x $35.76 = $inf".
    const fs::path dir = test::scratch_path("trnsim-cli-never-done");
    fs::remove_all(dir);
    const CliResult r = run_cli({"run", "scenarios/default.yaml", "-o", (dir / "n.h5").string(),
                                 "--set", "reliability.failures=[{component: chip, mtbf: 1s}]",
                                 "--set", "simulation.duration=1h"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("238,419 steps: not done"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("0.0% of the replications finished within the run\n"), std::string::npos)
        << r.out;
    for (const char* wrong : {"inf d", "-9,223", "$inf", "projected"}) {
        EXPECT_EQ(r.out.find(wrong), std::string::npos) << wrong << "\n" << r.out;
    }
    fs::remove_all(dir);
}

TEST(Cli, TimelineOutputKeepsEveryFigureAndDropsOnlyCheckpointRows) {
    // 30 days of Llama 3 405B with failures: the checkpoint interval (Daly's, about 20 s with
    // async checkpoints) puts some 130,000 checkpoints in the full timeline and a few hundred
    // failures. output.timeline: summary (the default) keeps every row but the checkpoints,
    // none keeps neither table; the figures are the same.
    const fs::path dir = test::scratch_path("trnsim-cli-timeline");
    fs::remove_all(dir);
    std::map<std::string, fs::path> files;
    for (const char* mode : {"full", "summary", "none"}) {
        files[mode] = dir / (std::string(mode) + ".h5");
        const CliResult r = run_cli({"run", "scenarios/llama3-405b-reliability.yaml", "-q", "-o",
                                     files[mode].string(), "--set", "simulation.duration=30d",
                                     "--set", "simulation.replications=1", "--set",
                                     std::string("output.timeline=") + mode});
        ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    }
    const auto column = [](const results::Table& t, const char* name) {
        return t.columns()[static_cast<std::size_t>(t.find(name))];
    };
    const results::Table full_events = results::read_table(files["full"].string(), "/run/events");
    const results::Table events = results::read_table(files["summary"].string(), "/run/events");
    const auto& full_kind = column(full_events, "kind").strings;
    std::vector<double> kept_times;
    for (std::size_t i = 0; i < full_kind.size(); ++i) {
        if (full_kind[i] != "checkpoint") {
            kept_times.push_back(column(full_events, "time_s").floats[i]);
        }
    }
    EXPECT_GT(full_kind.size(), kept_times.size() + 10000); // the checkpoints
    EXPECT_EQ(column(events, "time_s").floats, kept_times);  // every other event, unchanged
    for (const auto& k : column(events, "kind").strings) {
        EXPECT_NE(k, "checkpoint");
    }
    const results::Table timeline =
        results::read_table(files["summary"].string(), "/run/timeline");
    for (const auto& s : column(timeline, "state").strings) {
        EXPECT_NE(s, "checkpointing");
    }
    EXPECT_GT(timeline.rows(), 100u);
    EXPECT_LT(fs::file_size(files["summary"]) * 4, fs::file_size(files["full"]));
    EXPECT_THROW(results::read_table(files["none"].string(), "/run/timeline"), std::runtime_error);
    EXPECT_THROW(results::read_table(files["none"].string(), "/run/events"), std::runtime_error);
    // The figures do not depend on what the timeline keeps.
    const results::Table full_summary = results::read_summary(files["full"].string());
    for (const char* mode : {"summary", "none"}) {
        const results::Table s = results::read_summary(files[mode].string());
        ASSERT_EQ(s.columns().size(), full_summary.columns().size());
        for (std::size_t c = 0; c < s.columns().size(); ++c) {
            EXPECT_EQ(s.columns()[c].floats, full_summary.columns()[c].floats)
                << mode << " " << s.columns()[c].name;
            EXPECT_EQ(s.columns()[c].ints, full_summary.columns()[c].ints);
        }
        EXPECT_EQ(results::read_table(files[mode].string(), "/run/replications").rows(), 1u);
    }
    fs::remove_all(dir);
}

TEST(Cli, ValidatePrintsTheResolvedScenarioAndPlan) {
    const CliResult r = run_cli({"validate", "scenarios/default.yaml"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* text : {"# resolved scenario", "sequence_parallel: true",
                             "hbm_reserve: 2147483648B", "memory", "valid"}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
    EXPECT_FALSE(fs::exists(fs::path(TRNSIM_SOURCE_DIR) / "results" / "validate-should-not-write"));
}

TEST(Cli, Describe) {
    const CliResult chip = run_cli({"describe", "chip", "trn2"});
    EXPECT_EQ(chip.exit_code, 0);
    EXPECT_NE(chip.out.find("667 TFLOP/s"), std::string::npos) << chip.out;
    // The time basis next to the MFU basis: 8 x 128 x 128 x 2 x 2.4 GHz = 629 TFLOPS = 0.943 x
    // the published 667; VectorE's performance mode (NKI2: 512 per cycle).
    EXPECT_NE(chip.out.find("629 TFLOP/s BF16 = 0.943 x the published 667 TFLOP/s"),
              std::string::npos)
        << chip.out;
    EXPECT_NE(chip.out.find("512 in performance mode"), std::string::npos) << chip.out;
    const CliResult trn1 = run_cli({"describe", "chip", "trn1"});
    EXPECT_NE(trn1.out.find("184 TFLOP/s BF16 = 0.966 x the published 190 TFLOP/s"),
              std::string::npos)
        << trn1.out;
    const CliResult model = run_cli({"describe", "model", "llama3-405b"});
    EXPECT_EQ(model.exit_code, 0);
    EXPECT_NE(model.out.find("405853388800"), std::string::npos) << model.out;
    const CliResult list = run_cli({"describe", "model"});
    EXPECT_NE(list.out.find("deepseek-v3"), std::string::npos);
    const CliResult bad = run_cli({"describe", "chip", "trn9"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("unknown chip preset"), std::string::npos);
}

TEST(Cli, DescribeChipPrintsEveryValueWithItsSource) {
    // trn3-gen2 extends trn3: its own values with their sources, the inherited ones with the
    // file that gave them; the generated kernel model is left out.
    const CliResult r = run_cli({"describe", "chip", "trn3-gen2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("    instance.chips = 4  [TRN3: 36 servers x 4 = 144 chips]\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("    hbm.capacity = 144GiB  [trn3.yaml: T3, NKI3: 4 stacks, 144 GiB]\n"),
              std::string::npos)
        << r.out;
    // A comment continued on the next lines belongs to its value.
    EXPECT_NE(r.out.find("    ultraserver.racks = 2  [estimate: TRN3 names two second-level "
                         "switches and direct links between the same positions of racks, not "
                         "the racks' count; 2 racks of 18 servers (72 chips), one switch each]"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("kernel_model."), std::string::npos);
    EXPECT_EQ(r.out.find("    extends"), std::string::npos);
    EXPECT_NE(r.out.find("36 instances = 144 chips in 2 racks"), std::string::npos) << r.out;
    // A chip file of its own beside trn3.yaml's copy: a path in extends, a block list with its
    // comments as the source.
    const fs::path dir = test::scratch_path("trnsim-cli-sourced");
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(fs::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn3.yaml", dir / "base.yaml");
    std::ofstream(dir / "mine.yaml") << "extends: ./base.yaml\nname: mine\ncores:\n"
                                        "  lnc_allowed:   # my source\n  - 1\n  - 2   # EARG\n";
    const CliResult own = run_cli({"describe", "chip", (dir / "mine.yaml").string()});
    ASSERT_EQ(own.exit_code, 0) << own.err;
    EXPECT_NE(own.out.find("    cores.lnc_allowed = - 1 - 2  [EARG]\n"), std::string::npos)
        << own.out;
    EXPECT_NE(own.out.find("    cores.physical = 8  [base.yaml: T3, NKI3: 8 NeuronCore-v4 per chip]"),
              std::string::npos)
        << own.out;
    fs::remove_all(dir);
}

TEST(Cli, DescribeTopology) {
    const CliResult r = run_cli({"describe", "topology", "trn2-ultracluster", "--ultraservers", "1536"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* text : {"98,304 trn2 chips", "1,536 leaves", "24 pods", "4,096 cores",
                             "connected           yes", "diameter            8 links",
                             "bisection", "build time"}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
    const CliResult list = run_cli({"describe", "topology"});
    EXPECT_NE(list.out.find("trn2-ultraserver"), std::string::npos);
    const CliResult too_big =
        run_cli({"describe", "topology", "trn2-ultracluster", "--ultraservers", "9000"});
    EXPECT_EQ(too_big.exit_code, 2);
    EXPECT_NE(too_big.err.find("at most 8192 UltraServers"), std::string::npos) << too_big.err;
    EXPECT_EQ(run_cli({"describe", "topology", "trn1-instance", "--ultraservers", "2"}).exit_code, 2);
}

TEST(Cli, CollectiveTable) {
    const CliResult r = run_cli({"collective", "--chip", "trn2", "--ultraservers", "4", "--op",
                                 "all_reduce", "--ranks", "256", "--sizes", "1KiB:4MiB"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Header, then one row per size from 1 KiB doubling up to 4 MiB: 13 rows.
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < r.out.size()) {
        const auto end = r.out.find('\n', start);
        lines.push_back(r.out.substr(start, end - start));
        start = end + 1;
    }
    ASSERT_EQ(lines.size(), 2u + 13u) << r.out;
    EXPECT_NE(lines[1].find("busbw(GB/s)"), std::string::npos);
    EXPECT_EQ(lines[1].rfind("busbw(GB/s)") + std::string("busbw(GB/s)").size(), lines[1].size());
    EXPECT_NE(lines[2].find("1024"), std::string::npos);
    EXPECT_NE(lines.back().find("4194304"), std::string::npos);
    // Bus bandwidth grows with size (latency-bound small messages, bandwidth-bound large).
    const auto last_number = [](const std::string& l) { return std::stod(l.substr(l.find_last_of(' ') + 1)); };
    EXPECT_LT(last_number(lines[2]), last_number(lines.back()));
}

TEST(Cli, CollectiveErrorsExitTwo) {
    const CliResult op = run_cli({"collective", "--op", "all_reduction"});
    EXPECT_EQ(op.exit_code, 2);
    EXPECT_NE(op.err.find("--op"), std::string::npos);
    const CliResult ranks = run_cli({"collective", "--instances", "1", "--ranks", "1000"});
    EXPECT_EQ(ranks.exit_code, 2);
    EXPECT_NE(ranks.err.find("--ranks"), std::string::npos) << ranks.err;
    const CliResult sizes = run_cli({"collective", "--sizes", "4GB:1KB"});
    EXPECT_EQ(sizes.exit_code, 2);
    EXPECT_EQ(run_cli({"collective", "--chip", "trn1", "--ultraservers", "2"}).exit_code, 2);
}

TEST(Cli, NumericFlagsOutOfRangeExitTwoNamingTheFlag) {
    // Read as Boost integers, -1 meant "not given" (a default cluster, all ranks) and 2^62
    // UltraServers overflowed into "18446744073709551552 chips".
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"collective", "--ultraservers", "-1"}, "--ultraservers"},
        {{"collective", "--ultraservers", "4611686018427387904"}, "--ultraservers"},
        {{"collective", "--ultraservers", "99999999999999999999"}, "--ultraservers"},
        {{"collective", "--ultraservers", ""}, "--ultraservers"},
        {{"collective", "--instances", "-3"}, "--instances"},
        {{"collective", "--instances", "2x"}, "--instances"},
        {{"collective", "--ranks", "-5"}, "--ranks"},
        {{"collective", "--ranks", "1e3"}, "--ranks"},
        {{"collective", "--lnc", "-1"}, "--lnc"},
        {{"collective", "--lnc", "4294967298"}, "--lnc"},
        {{"describe", "topology", "trn2-ultracluster", "--ultraservers", "-2"}, "--ultraservers"},
        {{"describe", "topology", "trn1-ultracluster", "--instances", "-3"}, "--instances"},
        {{"run", "scenarios/default.yaml", "--threads", ""}, "--threads"},
        {{"run", "scenarios/default.yaml", "--threads", "-4"}, "--threads"},
        {{"batch", "scenarios/studies/c-dense-vs-moe.yaml", "-j", ""}, "-j/--jobs"},
        {{"kernel", "matmul", "128x128x128", "--lnc", "-1"}, "--lnc"},
    };
    for (const auto& [args, flag] : cases) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << " " << args[2] << "\n" << r.err;
        EXPECT_NE(r.err.find(flag), std::string::npos) << flag << " in: " << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
}

TEST(Cli, CollectiveScenarioWritesResults) {
    const fs::path dir = test::scratch_path("trnsim-cli-collective");
    fs::remove_all(dir);
    const CliResult r = run_cli({"run", "scenarios/collectives/trn1-instance-all-gather.yaml", "-o",
                                 (dir / "c.h5").string(), "--set",
                                 "workload.collective.sizes=1MB,2MB"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("all_gather"), std::string::npos);
    EXPECT_TRUE(fs::exists(dir / "c.h5"));
    fs::remove_all(dir);
}

TEST(Cli, SchemaDocumentationIsCurrent) {
    const CliResult r = run_cli({"describe", "schema"});
    ASSERT_EQ(r.exit_code, 0);
    const std::string doc = slurp(fs::path(TRNSIM_SOURCE_DIR) / "docs" / "scenario-schema.md");
    EXPECT_EQ(r.out, doc) << "docs/scenario-schema.md is stale: regenerate it with\n"
                             "  build/src/cli/trnsim describe schema > docs/scenario-schema.md";
}

TEST(Cli, EveryShippedScenarioValidates) {
    for (const auto& entry : fs::recursive_directory_iterator(
             fs::path(TRNSIM_SOURCE_DIR) / "scenarios")) {
        const auto& p = entry.path();
        // Presets are not scenarios: models/ and reliability/ (their own tests load them).
        if (p.extension() != ".yaml" || p.parent_path().filename() == "models" ||
            p.parent_path().filename() == "reliability") {
            continue;
        }
        // Sweep and plan files (scenarios/studies/) validate every point or the search space.
        const CliResult r = run_cli({"validate", p.string()});
        EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.err;
        EXPECT_NE(r.out.find("  valid\n"), std::string::npos) << p << "\n" << r.out;
    }
}


/// The column `name` of `t` (which must have it).
const results::Table::Column& column_of(const results::Table& t, const char* name) {
    const int i = t.find(name);
    EXPECT_GE(i, 0) << name;
    return t.columns().at(static_cast<std::size_t>(i));
}

TEST(Cli, TheSummaryNamesTheSlowestStageAndReplica) {
    // 64 trn2 chips (one UltraServer), TP 4 at LNC=2: one chip per TP group, 64 entities;
    // PP 2, DP 32. Chip 37 (ranks 148-151) runs at 0.8: its kernels take 1 / 0.8 = 1.25x
    // as long as those of the other groups of its stage (TP collectives are not slowed), so
    // the summary names its stage and replica with a slowdown of 1.25.
    const fs::path dir = test::scratch_path("trnsim-cli-slowest");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path scenario = dir / "straggler.yaml";
    std::ofstream(scenario) << R"(name: straggler
hardware:
  chip: trn2
  speed: {chips: [{chip: 37, speed: 0.8}]}
cluster: {ultraservers: 1}
workload:
  model: llama3-8b
  sequence_length: 4096
  global_batch: 256
  tokens: 10B
  parallelism: {tp: 4, pp: 2, zero: 1}
simulation: {fidelity: step}
output: {file: straggler.h5}
)";
    const CliResult r = run_cli({"run", scenario.string(), "--json", "-o",
                                 (dir / "s.h5").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto value = [&](const std::string& key) {
        const std::size_t at = r.out.find("\"" + key + "\":");
        EXPECT_NE(at, std::string::npos) << key << "\n" << r.out;
        return at == std::string::npos ? std::nan("")
                                       : std::stod(r.out.substr(at + key.size() + 3));
    };
    EXPECT_EQ(value("slowest_first_rank"), 148.0);
    EXPECT_EQ(value("slowest_ranks"), 4.0);
    EXPECT_NEAR(value("slowest_speed"), 0.8, 1e-12);
    EXPECT_NEAR(value("slowest_slowdown"), 1.25, 0.01);
    // Its stage and replica are the entity's of /step/entities whose first rank is 148.
    const CliResult text = run_cli({"run", scenario.string(), "-o", (dir / "t.h5").string()});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const std::string named = "stage " + std::to_string(static_cast<int>(value("slowest_stage"))) +
                              ", replica " +
                              std::to_string(static_cast<int>(value("slowest_replica"))) +
                              " (ranks 148-151, speed 0.80): kernels 1.2";
    EXPECT_NE(text.out.find(named), std::string::npos) << named << "\n" << text.out;
    const results::Table entities =
        results::read_table((dir / "t.h5").string(), "/step/entities");
    const auto& col = [&](const char* name) -> const auto& { return column_of(entities, name); };
    bool found = false;
    for (std::size_t i = 0; i < col("first_rank").ints.size(); ++i) {
        if (col("first_rank").ints[i] == 148) {
            found = true;
            EXPECT_EQ(col("stage").ints[i], static_cast<std::int64_t>(value("slowest_stage")));
            EXPECT_EQ(col("replica").ints[i], static_cast<std::int64_t>(value("slowest_replica")));
            EXPECT_DOUBLE_EQ(col("speed").floats[i], 0.8);
        }
    }
    EXPECT_TRUE(found);
    fs::remove_all(dir);
}


TEST(Cli, TheServingSummaryNamesTheSlowestReplica) {
    // Four inf2 instances at TP 8: 12 replicas (3 of each), one spare instance. Failures drop
    // requests that are retried elsewhere, so some replicas' requests take longer. The
    // /summary columns must be those of the written /serving/requests table: per replica the
    // mean E2E of its requests (the test computes them from the table), the highest of them,
    // and the median over replicas (unit test SlowestReplica.HandCase derives the rule by
    // hand); the text summary's `slowest` line names the same replica.
    const fs::path dir = test::scratch_path("trnsim-cli-serve-slowest");
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string file = (dir / "s.h5").string();
    const CliResult r =
        run_cli({"run", "scenarios/serving/llama3-8b-inf2-failures.yaml", "-o", file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const results::Table summary = results::read_table(file, "/summary");
    const auto scol = [&](const char* name) -> const auto& { return column_of(summary, name); };
    const results::Table requests = results::read_table(file, "/serving/requests");
    const auto rcol = [&](const char* name) -> const auto& { return column_of(requests, name); };
    std::map<std::int64_t, std::pair<double, int>> sums; // replica -> (E2E sum, requests)
    for (std::size_t i = 0; i < rcol("replica").ints.size(); ++i) {
        auto& s = sums[rcol("replica").ints[i]];
        s.first += rcol("e2e_s").floats[i];
        ++s.second;
    }
    ASSERT_GT(sums.size(), 2u);
    std::vector<double> means;
    std::int64_t slowest = -1;
    double worst = -1.0;
    for (const auto& [replica, s] : sums) {
        means.push_back(s.first / s.second);
        if (means.back() > worst) {
            worst = means.back();
            slowest = replica;
        }
    }
    std::sort(means.begin(), means.end());
    const std::size_t n = means.size();
    const double median = n % 2 ? means[n / 2] : 0.5 * (means[n / 2 - 1] + means[n / 2]);
    EXPECT_EQ(scol("slowest_replica").ints.at(0), slowest);
    EXPECT_EQ(scol("slowest_replica_requests").ints.at(0), sums[slowest].second);
    EXPECT_NEAR(scol("slowest_replica_e2e_mean_s").floats.at(0), worst, 1e-9 * worst);
    EXPECT_NEAR(scol("replica_e2e_mean_median_s").floats.at(0), median, 1e-9 * median);
    EXPECT_NEAR(scol("slowest_replica_slowdown").floats.at(0), worst / median, 1e-9);
    EXPECT_GT(scol("slowest_replica_slowdown").floats.at(0), 1.0);
    EXPECT_GT(scol("slowest_replica_tpot_p50_s").floats.at(0), 0.0);
    EXPECT_GT(scol("replica_tpot_p50_median_s").floats.at(0), 0.0);
    const std::string named = "slowest    replica " + std::to_string(slowest) + " (" +
                              std::to_string(sums[slowest].second) + " requests): mean E2E ";
    EXPECT_NE(r.out.find(named), std::string::npos) << named << "\n" << r.out;
    fs::remove_all(dir);
}

} // namespace
} // namespace trnsim::test
