#include "run_cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>

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
    const fs::path dir = fs::temp_directory_path() / "trnsim-cli-run";
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

TEST(Cli, QuietRunAndOverrides) {
    const fs::path dir = fs::temp_directory_path() / "trnsim-cli-quiet";
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
    const CliResult model = run_cli({"describe", "model", "llama3-405b"});
    EXPECT_EQ(model.exit_code, 0);
    EXPECT_NE(model.out.find("405853388800"), std::string::npos) << model.out;
    const CliResult list = run_cli({"describe", "model"});
    EXPECT_NE(list.out.find("deepseek-v3"), std::string::npos);
    const CliResult bad = run_cli({"describe", "chip", "trn9"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("unknown chip preset"), std::string::npos);
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
        const CliResult r = run_cli({"validate", p.string()});
        EXPECT_EQ(r.exit_code, 0) << p << "\n" << r.err;
    }
}

} // namespace
} // namespace trnsim::test
