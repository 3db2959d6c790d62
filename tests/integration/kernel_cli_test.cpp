// trnsim kernel and trnsim calibrate: output format, exit codes, and that the checked-in
// calibrations are what `trnsim calibrate` writes today.
#include "run_cli.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

TEST(KernelCli, HelpListsTheClasses) {
    for (const char* cmd : {"kernel", "calibrate"}) {
        const CliResult h = run_cli({cmd, "--help"});
        EXPECT_EQ(h.exit_code, 0) << cmd;
        EXPECT_TRUE(contains(h.out, std::string("usage: trnsim ") + cmd)) << h.out;
    }
    const CliResult h = run_cli({"kernel", "--help"});
    for (const char* cls : {"matmul", "attention", "softmax", "rms_norm", "gather", "elementwise",
                            "reduce", "adamw"}) {
        EXPECT_TRUE(contains(h.out, cls)) << cls;
    }
    EXPECT_TRUE(contains(run_cli({"--help"}).out, "calibrate --chip"));
}

TEST(KernelCli, MatmulPrintsBothModels) {
    const CliResult r = run_cli({"kernel", "--chip", "trn2", "matmul", "2048x4096x4096", "--dtype", "bf16"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // "detailed: 0.9 ms, 150 TFLOP/s = 95.1% of TensorE peak (...), HBM ...; compute-bound ..."
    int lines = 0;
    std::istringstream in(r.out);
    for (std::string l; std::getline(in, l);) {
        if (l.rfind("detailed: ", 0) == 0 || l.rfind("analytic: ", 0) == 0) {
            ++lines;
            const auto ms = l.find(" ms, ");
            ASSERT_NE(ms, std::string::npos) << l;
            EXPECT_GT(std::stod(l.substr(10, ms - 10)), 0.0) << l;
            EXPECT_TRUE(contains(l, " TFLOP/s = ")) << l;
            EXPECT_TRUE(contains(l, "% of TensorE peak (")) << l;
            EXPECT_TRUE(contains(l, ", HBM ")) << l;
        }
    }
    EXPECT_EQ(lines, 2) << r.out;
    for (const char* text : {"trn2 matmul 2048x4096x4096 bf16", "LNC=2", "compute-bound",
                             "busy: TensorE", "busy (nominal): TensorE", "vs detailed"}) {
        EXPECT_TRUE(contains(r.out, text)) << text << "\n" << r.out;
    }
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(KernelCli, MatrixVectorIsBandwidthBound) {
    const CliResult r = run_cli({"kernel", "matmul", "1x8192x8192"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto detailed = r.out.find("detailed:");
    const auto analytic = r.out.find("analytic:");
    ASSERT_NE(detailed, std::string::npos);
    ASSERT_NE(analytic, std::string::npos);
    EXPECT_TRUE(contains(r.out.substr(detailed, analytic - detailed), "bandwidth-bound")) << r.out;
    EXPECT_TRUE(contains(r.out.substr(analytic), "bandwidth-bound")) << r.out;
}

TEST(KernelCli, EveryClassRunsOnBothChips) {
    const std::vector<std::vector<std::string>> kernels{
        {"attention", "8x2x2048x128", "--causal", "yes"},
        {"attention", "4x4x1024x64", "--causal", "no", "--kv-len", "2048"},
        {"softmax", "1024x4096"},
        {"rms_norm", "2048x8192"},
        {"layer_norm", "512x1024", "--dtype", "fp32"},
        {"gather", "4096x8192"},
        {"silu", "1000000"},
        {"swiglu", "3000000"},
        {"elementwise", "65536", "--inputs", "3", "--passes", "2"},
        {"reduce", "4000000", "--inputs", "4"},
        {"adamw", "10000000"},
        {"matmul", "100x300x700", "--dtype", "fp8", "--batch", "3"},
    };
    for (const char* chip : {"trn2", "trn1"}) {
        for (const auto& k : kernels) {
            std::vector<std::string> args{"kernel", "--chip", chip};
            args.insert(args.end(), k.begin(), k.end());
            const CliResult r = run_cli(args);
            ASSERT_EQ(r.exit_code, 0) << chip << " " << k[0] << " " << k[1] << "\n" << r.err;
            EXPECT_TRUE(contains(r.out, "\ndetailed: ")) << r.out;
            EXPECT_TRUE(contains(r.out, "\nanalytic: ")) << r.out;
            EXPECT_TRUE(contains(r.out, " ms, ")) << r.out;
        }
    }
}

TEST(KernelCli, BadInputExitsTwoNamingTheArgument) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"kernel"}, "needs a kernel class and a shape"},
        {{"kernel", "matmul"}, "needs a kernel class and a shape"},
        {{"kernel", "convolution", "1x2x3"}, "unknown kernel class 'convolution'"},
        {{"kernel", "matmul", "12x"}, "shape '12x'"},
        {{"kernel", "matmul", "0x4x4"}, "shape '0x4x4'"},
        {{"kernel", "attention", "8192x8192"}, "HEADSxKV_HEADSxSEQxHEAD_DIM"},
        {{"kernel", "matmul", "1x2x3", "--dtype", "fp16"}, "--dtype 'fp16'"},
        {{"kernel", "--chip", "trn9", "matmul", "1x2x3"}, "unknown chip preset 'trn9'"},
        {{"kernel", "matmul", "1x2x3", "--bogus"}, "bogus"},
        {{"calibrate"}, "needs --chip"},
        {{"calibrate", "--chip", "trn2", "--grid", "huge"}, "--grid 'huge'"},
        {{"calibrate", "--chip", "trn2", "--threads", "0"}, "--threads"},
        {{"calibrate", "--chip", "trn2", "-o", "/no/such/dir/trn2.yaml"}, "-o '/no/such/dir/trn2.yaml'"},
    };
    for (const auto& [args, message] : cases) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 2) << args[0] << " " << message;
        EXPECT_TRUE(contains(r.err, message)) << message << "\n" << r.err;
    }
}

TEST(KernelCli, ShapesBeyondTheDetailedModelExitTwoWithTheLimitAtOnce) {
    // Before: 9e18 aborted on a check (SIGABRT); the others ran out of memory (bad_alloc)
    // after gigabytes. Each names the limit it is over, quickly and in little memory.
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"matmul", "9e18x9e18x9e18"}, "above the limit of 1099511627776 (2^40)"},
        {{"matmul", "1Mx1Mx1M"}, "the detailed model simulates at most 8388608"},
        {{"elementwise", "1P"}, "above the limit of 1099511627776 (2^40)"},
        {{"elementwise", "1T", "--bytes", "8"}, "the detailed model simulates at most 8388608"},
        {{"attention", "32x8x16777216x128"}, "the detailed model simulates at most 8388608"},
        {{"adamw", "1P"}, "above the limit"},
        {{"adamw", "1T"}, "the detailed model simulates at most 8388608"},
        {{"softmax", "1Tx1"}, "the detailed model simulates at most 8388608"},
        {{"matmul", "1099511627776x1x1"}, "the detailed model simulates at most 8388608"},
        // Under the estimate but over the limit while lowering: refused at the limit.
        {{"attention", "32x8x65536x128"}, "more than 8388608 instructions on one core"},
        {{"reduce", "1T", "--inputs", "8"}, "the detailed model simulates at most 8388608"},
    };
    for (const auto& [args, text] : cases) {
        std::vector<std::string> cmd{"kernel"};
        cmd.insert(cmd.end(), args.begin(), args.end());
        const CliResult r = run_cli(cmd, TRNSIM_SOURCE_DIR, 30.0);
        EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1] << "\n" << r.err;
        EXPECT_NE(r.err.find(text), std::string::npos) << text << " in: " << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_LT(r.wall_s, 10.0) << args[1];
        EXPECT_LT(r.max_rss_kib, 1L << 20) << args[1] << ": " << r.max_rss_kib << " KiB";
    }
}

TEST(KernelCli, QuickCalibrationWritesALoadableChipTwiceTheSame) {
    const fs::path dir = test::scratch_path("trnsim-cli-calibrate");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::string> outputs;
    for (const char* name : {"a", "b"}) {
        const fs::path out = dir / (std::string(name) + ".yaml");
        const CliResult r = run_cli({"calibrate", "--chip", "trn1", "--grid", "quick", "--threads",
                                     name[0] == 'a' ? "1" : "2", "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        // One table line per class ("matmul: MAPE 2.31%, max 7.90%"), progress on stderr.
        int rows = 0;
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);) {
            if (contains(l, ": MAPE ")) {
                ++rows;
                EXPECT_TRUE(contains(l, "%, max ") && l.back() == '%') << l;
            }
        }
        EXPECT_EQ(rows, 15) << r.out; // compute::kKernelClassCount
        EXPECT_TRUE(contains(r.err, "calibrate trn1: matmul")) << r.err;
        EXPECT_TRUE(contains(r.out, "wrote " + out.string())) << r.out;
        const fs::path csv = dir / (std::string(name) + ".calibration.csv");
        ASSERT_TRUE(fs::exists(csv));
        EXPECT_EQ(slurp(csv).rfind("class,set,shape,detailed_s,analytic_s,relative_error\n", 0), 0u);
        outputs.push_back(slurp(out) + slurp(csv));
        // The written chip loads and is used.
        const CliResult k = run_cli({"kernel", "--chip", out.string(), "rms_norm", "256x4096"});
        EXPECT_EQ(k.exit_code, 0) << k.err;
    }
    EXPECT_EQ(outputs[0], outputs[1]);
    EXPECT_TRUE(contains(outputs[0], "kernel_model:\n  matmul:\n    coefficients: ["));
    // The hardware part of the chip file is unchanged.
    const std::string original = slurp(fs::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn1.yaml");
    const std::string marker = "# Calibrated analytic kernel model";
    EXPECT_EQ(outputs[0].substr(0, outputs[0].find(marker)), original.substr(0, original.find(marker)));
    fs::remove_all(dir);
}

class CheckedInCalibration : public ::testing::TestWithParam<const char*> {};

TEST_P(CheckedInCalibration, IsWhatCalibrateWritesToday) {
    // The full grid (about a second per chip): the checked-in coefficients, error table and
    // calibration data must be reproduced byte for byte.
    const std::string chip = GetParam();
    const fs::path dir = test::scratch_path("trnsim-cli-checked-in-" + chip);
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path out = dir / (chip + ".yaml");
    const CliResult r = run_cli({"calibrate", "--chip", chip, "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const fs::path chips = fs::path(TRNSIM_SOURCE_DIR) / "topologies" / "chips";
    const std::string hint = "stale: rerun `build/src/cli/trnsim calibrate --chip " + chip + "`";
    EXPECT_EQ(slurp(out), slurp(chips / (chip + ".yaml"))) << chip << ".yaml is " << hint;
    EXPECT_EQ(slurp(dir / (chip + ".calibration.csv")), slurp(chips / (chip + ".calibration.csv")))
        << chip << ".calibration.csv is " << hint;
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Chips, CheckedInCalibration, ::testing::Values("trn2", "trn1", "inf2"));

} // namespace
} // namespace trnsim::test
