// The output-path contract end to end (issue 15, items 1 to 3): an output that would replace
// an input or another output, or that cannot be written, is refused with exit 2 before the run
// (nothing printed, nothing written, every input unchanged); the results and the trace appear
// together or not at all; temporaries of killed runs are cleaned up; concurrent runs with the
// same trace do not trip over each other. Before, `run s.yaml -o s.yaml` exited 0 and left an
// HDF5 file in place of the scenario, and most unwritable paths were internal errors after
// the simulation.
#include "run_cli.hpp"
#include "small_scenario.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kScenario = kSmallScenario;

class Outputs : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_path("trnsim-outputs-" + std::string(::testing::UnitTest::GetInstance()
                                                                ->current_test_info()
                                                                ->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_ / "d");
        write("s.yaml", kScenario);
        write("sw.yaml", "base: s.yaml\nname: sw\nsweep: {grid: {cluster.ultraservers: [4, 2]}}\n"
                         "output: {file: sw.h5}\n");
        write("pl.yaml", "base: s.yaml\nname: pl\nobjective: min_cost\n"
                         "search: {ultraservers: [4, 2]}\noutput: {file: pl.h5}\n");
        fs::copy_file(fs::path(TRNSIM_SOURCE_DIR) / "scenarios/models/llama3-8b.yaml",
                      dir_ / "m.yaml");
        fs::copy_file(fs::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn2.yaml",
                      dir_ / "chip.yaml");
        fs::create_symlink("s.yaml", dir_ / "link.yaml");
        fs::create_hard_link(dir_ / "s.yaml", dir_ / "hard.yaml");
        snapshot_ = contents();
    }
    void TearDown() override {
        fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
        fs::remove_all(dir_);
    }

    void write(const std::string& name, const std::string& text) {
        std::ofstream(dir_ / name) << text;
    }

    /// Every file below the scratch directory and its content.
    std::map<std::string, std::string> contents() const {
        std::map<std::string, std::string> files;
        for (const auto& e : fs::recursive_directory_iterator(dir_)) {
            files[fs::relative(e.path(), dir_).string()] =
                e.is_regular_file() ? slurp(e.path()) : std::string("<dir>");
        }
        return files;
    }

    /// Exit 2 with `text` in the message, before any simulation (nothing on stdout), and no
    /// file written or changed.
    void expect_refused(const std::vector<std::string>& args, const std::string& text,
                        const std::string& program = "") {
        const CliResult r = program.empty() ? run_cli(args, dir_.string(), 30.0)
                                            : run_program(program, args, dir_.string(), 30.0);
        std::string cmd;
        for (const auto& a : args) {
            cmd += a + " ";
        }
        EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find(text), std::string::npos) << cmd << "\nexpected '" << text
                                                         << "' in: " << r.err;
        EXPECT_TRUE(r.out.empty()) << cmd << "ran: " << r.out;
        EXPECT_EQ(contents(), snapshot_) << cmd << "changed the directory";
    }

    fs::path dir_;
    std::map<std::string, std::string> snapshot_;
};

TEST_F(Outputs, AnOutputNeverReplacesAnInput) {
    const char* reads = "this command reads: writing there would destroy it";
    expect_refused({"run", "s.yaml", "-o", "s.yaml"},
                   "command line (-o s.yaml): output.file: 's.yaml' is a file this command reads");
    expect_refused({"run", "s.yaml", "-o", "./s.yaml"}, reads);
    expect_refused({"run", "s.yaml", "-o", "d/../s.yaml"}, reads);
    expect_refused({"run", "s.yaml", "-o", (dir_ / "s.yaml").string()}, reads);
    expect_refused({"run", "s.yaml", "-o", "link.yaml"}, reads);
    expect_refused({"run", "s.yaml", "-o", "hard.yaml"}, reads);
    expect_refused({"run", "s.yaml", "--set", "output.file=s.yaml"},
                   "command line (--set output.file=s.yaml): output.file");
    expect_refused({"run", "s.yaml", "--set", "workload.model=m.yaml", "-o", "m.yaml"}, reads);
    expect_refused({"run", "s.yaml", "--set", "hardware.chip=./chip.yaml", "-o", "chip.yaml"},
                   reads);
    expect_refused({"run", "s.yaml", "--set", "simulation.fidelity=step", "--trace", "s.yaml",
                    "-o", "o.h5"},
                   "command line (--trace s.yaml): output.trace: 's.yaml' is a file");
    expect_refused({"run", "s.yaml", "--set", "simulation.fidelity=step", "--trace", "o.h5",
                    "-o", "o.h5"},
                   "output.trace: 'o.h5' is also the output.file ('o.h5')");
    expect_refused({"batch", "sw.yaml", "-o", "sw.yaml"}, reads);
    expect_refused({"batch", "sw.yaml", "-o", "s.yaml"}, reads); // the sweep's base
    expect_refused({"plan", "pl.yaml", "-o", "pl.yaml"}, reads);
    expect_refused({"plan", "pl.yaml", "-o", "link.yaml"}, reads);
    expect_refused({"validate", "s.yaml", "--set", "output.file=s.yaml"}, reads);
    std::string self = kScenario;
    self.replace(self.find("small.h5"), 8, "self.yaml");
    write("self.yaml", self);
    snapshot_ = contents();
    expect_refused({"run", "self.yaml"}, "self.yaml:10:16: output.file: 'self.yaml' is a file");
}

TEST_F(Outputs, UnwritablePathsAreRefusedBeforeTheRun) {
    expect_refused({"run", "s.yaml", "-o", "s.yaml/out.h5"}, "which is a file, not a directory");
    expect_refused({"run", "s.yaml", "-o", "/sys/out.h5"}, "a kernel file system");
    expect_refused({"run", "s.yaml", "-o", "/proc/out.h5"}, "a kernel file system");
    expect_refused({"run", "s.yaml", "-o", "d"}, "'d' is a directory");
    expect_refused({"run", "s.yaml", "-o", "new/"}, "'new/' ends with '/'");
    expect_refused({"run", "s.yaml", "-o", std::string(300, 'a') + ".h5"},
                   "has a file name of 303 bytes");
    expect_refused({"run", "s.yaml", "-o", ""}, "command line (-o ): output.file: is empty");
    expect_refused({"run", "s.yaml", "-o", "a\x01" "b\nc.h5"},
                   "command line (-o a\\x01b\\x0ac.h5): output.file: contains a control character");
    // A special file in the scratch directory, never a system one such as /dev/null: a build
    // that fails this test must not replace a device of the machine running it.
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
    snapshot_ = contents();
    expect_refused({"run", "s.yaml", "-o", "fifo"}, "exists and is not a regular file (a FIFO)");
    expect_refused({"run", "s.yaml", "--set", "simulation.fidelity=step", "--trace", "d", "-o",
                    "o.h5"},
                   "output.trace: 'd' is a directory");
    expect_refused({"run", "s.yaml", "--set", "simulation.fidelity=step", "--trace", "", "-o",
                    "o.h5"},
                   "output.trace: is empty");
    expect_refused({"batch", "sw.yaml", "-o", "d"}, "'d' is a directory");
    expect_refused({"plan", "pl.yaml", "-o", "/proc/x.h5"}, "a kernel file system");
    fs::create_directory_symlink(dir_ / "gone", dir_ / "dangling");
    snapshot_ = contents();
    expect_refused({"run", "s.yaml", "-o", "dangling/x.h5"}, "a symbolic link to nothing");

    std::string empty = kScenario;
    empty.replace(empty.find("small.h5"), 8, "''");
    write("empty.yaml", empty);
    std::string nul = kScenario;
    nul.replace(nul.find("small.h5"), 8, "\"a\\0b.h5\"");
    write("nul.yaml", nul);
    write("swe.yaml", "base: s.yaml\nsweep: {grid: {seed: [1]}}\noutput: {file: ''}\n");
    snapshot_ = contents();
    // An empty name was replaced by results/<name>.h5 without a word.
    expect_refused({"run", "empty.yaml"}, "empty.yaml:10:16: output.file: is empty");
    expect_refused({"run", "nul.yaml"}, "control character (byte 0x00)");
    expect_refused({"batch", "swe.yaml"}, "swe.yaml:3:16: output.file: is empty");
}

TEST_F(Outputs, AReadOnlyDirectoryIsRefusedForAnOrdinaryUser) {
    fs::create_directories(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec |
                                     fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    snapshot_ = contents();
    if (::geteuid() != 0) {
        expect_refused({"run", "s.yaml", "-o", "ro/out.h5"}, "may not create files in");
        return;
    }
    // As root, run trnsim as user nobody (root may write anywhere).
    if (!fs::exists("/usr/bin/setpriv")) {
        GTEST_SKIP() << "running as root without setpriv to become another user";
    }
    // Nobody may not read the checkout (it may sit under a mode-700 directory, issue 28 item
    // 7): the binary and the presets it reads go to a directory of their own that nobody can
    // read, and TRNSIM_DATA_DIR points there.
    const fs::path copy = scratch_path("trnsim-outputs-nobody");
    fs::remove_all(copy);
    fs::create_directories(copy / "data" / "scenarios");
    const fs::path src(TRNSIM_SOURCE_DIR);
    fs::copy(src / "topologies", copy / "data" / "topologies", fs::copy_options::recursive);
    fs::copy(src / "scenarios" / "models", copy / "data" / "scenarios" / "models",
             fs::copy_options::recursive);
    fs::copy_file(cli_path(), copy / "trnsim");
    const auto readable = fs::perms::owner_all | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read |
                          fs::perms::others_exec;
    fs::permissions(copy, readable);
    for (const auto& e : fs::recursive_directory_iterator(copy)) {
        fs::permissions(e.path(), readable);
    }
    for (const fs::path& p : {dir_, dir_ / "s.yaml"}) {
        fs::permissions(p, fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec,
                        fs::perm_options::add);
    }
    snapshot_ = contents();
    expect_refused({"--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env",
                    "TRNSIM_DATA_DIR=" + (copy / "data").string(), (copy / "trnsim").string(),
                    "run", "s.yaml", "-o", "ro/out.h5"},
                   "may not create files in", "/usr/bin/setpriv");
    fs::remove_all(copy);
}

TEST_F(Outputs, ATraceThatCannotBeWrittenLeavesNoResultsBehind) {
    // The results file (about 40 KB) fits in a 200 KiB file-size limit, the timeline of eight
    // ranks (about 800 KB) does not: its write fails with EFBIG after the run.
    const CliResult r = run_program(
        "/bin/bash",
        {"-c", "ulimit -f 200; trap '' XFSZ; exec \"$0\" \"$@\"", cli_path(), "run",
         "s.yaml", "-q", "--set", "simulation.fidelity=step", "--set",
         "output.trace_ranks=[0, 1, 2, 3, 4, 5, 6, 7]", "--trace", "t.json", "-o", "o.h5"},
        dir_.string(), 60.0);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot write trace file 't.json'"), std::string::npos) << r.err;
    EXPECT_EQ(contents(), snapshot_) << "a results file without its trace, or a temporary";
    // Without the limit both files appear.
    const CliResult ok = run_cli({"run", "s.yaml", "-q", "--set", "simulation.fidelity=step",
                                  "--trace", "t.json", "-o", "o.h5"},
                                 dir_.string(), 60.0);
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_TRUE(fs::exists(dir_ / "o.h5"));
    EXPECT_TRUE(fs::exists(dir_ / "t.json"));
}

TEST_F(Outputs, ConcurrentRunsWithTheSameTraceAllSucceed) {
    // Each run writes its own temporaries (.tmp-<pid>); with one fixed "t.json.tmp" two runs
    // renamed each other's file away (5 failures in 8 before).
    constexpr int kRuns = 8;
    std::vector<CliResult> results(kRuns);
    std::vector<std::thread> threads;
    for (int i = 0; i < kRuns; ++i) {
        threads.emplace_back([&, i] {
            results[static_cast<std::size_t>(i)] =
                run_cli({"run", "s.yaml", "-q", "--threads", "1", "--set",
                         "simulation.fidelity=step", "--trace", "t.json", "-o",
                         "o" + std::to_string(i) + ".h5"},
                        dir_.string(), 60.0);
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    for (const auto& r : results) {
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    const std::string trace = slurp(dir_ / "t.json");
    EXPECT_EQ(trace.rfind("{\"displayTimeUnit\"", 0), 0u) << trace.substr(0, 80);
    for (const auto& e : fs::directory_iterator(dir_)) {
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
    }
}

TEST_F(Outputs, TemporariesOfKilledRunsAreRemovedByTheNextWrite) {
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ASSERT_GT(child, 0);
    ::waitpid(child, nullptr, 0);
    const std::string suffix = ".tmp-" + std::to_string(child);
    write("o.h5" + suffix, "partial");
    write("sw.h5" + suffix, "partial");
    write("o.h5.tmp-1", "a file of a running process (init)");
    EXPECT_EQ(run_cli({"run", "s.yaml", "-q", "-o", "o.h5"}, dir_.string()).exit_code, 0);
    EXPECT_FALSE(fs::exists(dir_ / ("o.h5" + suffix)));
    EXPECT_TRUE(fs::exists(dir_ / "o.h5.tmp-1"));
    const CliResult resumed = run_cli({"batch", "sw.yaml", "-q", "--resume"}, dir_.string());
    EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_FALSE(fs::exists(dir_ / ("sw.h5" + suffix)));
    EXPECT_TRUE(fs::exists(dir_ / "sw.h5"));
}

} // namespace
} // namespace trnsim::test
