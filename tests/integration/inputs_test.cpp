// Inputs that are not what they claim to be (issue 15, items 4 and 5): special files (a
// directory, a FIFO, /dev/zero), files over the size limit, several YAML documents in one
// file or --set value, and dotted keys beside nested ones. Each must exit 2 at once with a
// message naming the file or key, and write nothing; before, /dev/zero and FIFOs hung, a
// directory was an internal error, and second documents and dotted keys were silently used
// or dropped.
#include "run_cli.hpp"
#include "small_scenario.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScenario = kSmallScenario;

/// A scratch directory with s.yaml (kScenario), a FIFO, a directory named like a YAML file
/// and a sparse file just over the 64 MiB limit.
class SpecialInputs : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_path("trnsim-inputs-" +
                            std::string(::testing::UnitTest::GetInstance()
                                            ->current_test_info()
                                            ->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "dir.yaml");
        std::ofstream(dir_ / "s.yaml") << kScenario;
        ASSERT_EQ(::mkfifo((dir_ / "fifo.yaml").c_str(), 0644), 0);
        {
            std::ofstream big(dir_ / "big.yaml");
        }
        fs::resize_file(dir_ / "big.yaml", (std::uintmax_t{64} << 20) + 1);
        before_ = listing();
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::set<std::string> listing() const {
        std::set<std::string> names;
        for (const auto& e : fs::recursive_directory_iterator(dir_)) {
            names.insert(fs::relative(e.path(), dir_).string());
        }
        return names;
    }

    /// Runs trnsim in the scratch directory: exit 2 within 10 s, `text` in the message,
    /// nothing new in the directory and under 1 GiB of memory.
    void expect_rejected(const std::vector<std::string>& args, const std::string& text) {
        const CliResult r = run_cli(args, dir_.string(), 10.0);
        std::string cmd;
        for (const auto& a : args) {
            cmd += a + " ";
        }
        EXPECT_FALSE(r.timed_out) << cmd << "hung";
        EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find(text), std::string::npos) << cmd << "\nexpected '" << text
                                                         << "' in: " << r.err;
        EXPECT_LT(r.max_rss_kib, 1L << 20) << cmd;
        EXPECT_EQ(listing(), before_) << cmd << "wrote a file";
    }

    fs::path dir_;
    std::set<std::string> before_;
};

TEST_F(SpecialInputs, ScenarioFilesMustBeRegularAndSmall) {
    expect_rejected({"run", "/dev/zero"}, "'/dev/zero' is not a regular file (a character device)");
    expect_rejected({"run", "fifo.yaml", "-o", "o.h5"}, "'fifo.yaml' is not a regular file (a FIFO)");
    expect_rejected({"validate", "fifo.yaml"}, "a FIFO");
    expect_rejected({"validate", "dir.yaml"}, "scenario file 'dir.yaml' is a directory");
    expect_rejected({"validate", "."}, "is a directory");
    expect_rejected({"run", "big.yaml", "-o", "o.h5"},
                    "'big.yaml' is too large: 65 MiB, the limit is 64 MiB");
    expect_rejected({"batch", "fifo.yaml", "-o", "o.h5"}, "a FIFO");
    expect_rejected({"plan", "dir.yaml", "-o", "o.h5"}, "is a directory");
}

TEST_F(SpecialInputs, FilesAScenarioNamesMustBeRegularAndSmall) {
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "workload.model=/dev/zero"},
                    "workload.model: model file '/dev/zero' is not a regular file");
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "workload.model=./fifo.yaml"},
                    "workload.model: model file");
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "hardware.chip=dir.yaml"},
                    "hardware.chip: chip file");
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "cluster.fabric=big.yaml"},
                    "cluster.fabric: fabric file");
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "reliability.trace=/dev/zero"},
                    "reliability.trace: trace file '/dev/zero' is not a regular file");
    expect_rejected({"run", "s.yaml", "-o", "o.h5", "--set", "reliability.preset=./fifo.yaml"},
                    "reliability.preset: reliability preset file");
    expect_rejected({"describe", "model", "/dev/zero"}, "is not a regular file");
    expect_rejected({"describe", "chip", "./dir.yaml"}, "is a directory");
    expect_rejected({"describe", "topology", "./fifo.yaml"}, "a FIFO");
}

TEST_F(SpecialInputs, StudyBasesMustBeRegular) {
    std::ofstream(dir_ / "sw.yaml") << "base: fifo.yaml\nsweep: {grid: {seed: [1, 2]}}\n";
    std::ofstream(dir_ / "pl.yaml") << "base: /dev/zero\nsearch: {tp: [4, 8]}\n";
    before_ = listing();
    expect_rejected({"batch", "sw.yaml", "-o", "o.h5"}, "base: scenario file 'fifo.yaml'");
    expect_rejected({"validate", "sw.yaml"}, "a FIFO");
    expect_rejected({"plan", "pl.yaml", "-o", "o.h5"}, "a character device");
}

TEST_F(SpecialInputs, OneYamlDocumentPerFileAndValue) {
    std::ofstream(dir_ / "two.yaml") << kScenario << "---\nname: second\n";
    std::ofstream(dir_ / "sw.yaml") << "base: s.yaml\nsweep: {grid: {seed: [1, 2]}}\n---\n"
                                    << "base: s.yaml\n";
    before_ = listing();
    expect_rejected({"run", "two.yaml", "-o", "o.h5"},
                    "two.yaml:11:1: the file holds more than one YAML document");
    expect_rejected({"validate", "s.yaml", "--set", "seed=3\n---\n4"},
                    "seed: the value holds more than one YAML document");
    expect_rejected({"batch", "sw.yaml", "-o", "o.h5"}, "sw.yaml:3:1: the file holds more");
}

TEST_F(SpecialInputs, DottedKeysAreNotASecondSpelling) {
    std::ofstream(dir_ / "dotted.yaml") << kScenario << "workload.parallelism.tp: 8\n";
    before_ = listing();
    expect_rejected({"run", "dotted.yaml", "-o", "o.h5"},
                    "dotted.yaml:11:1: workload.parallelism.tp: a key is one name");
    std::ofstream(dir_ / "nested.yaml")
        << "name: n\nhardware: {chip: trn2}\ncluster: {ultraservers: 4}\nworkload:\n"
           "  model: llama3-8b\n  sequence_length: 4096\n  global_batch: 256\n  tokens: 10B\n"
           "  parallelism.tp: 8\n";
    before_ = listing();
    expect_rejected({"validate", "nested.yaml"}, "workload.parallelism.tp: a key is one name");
}

} // namespace
} // namespace trnsim::test
