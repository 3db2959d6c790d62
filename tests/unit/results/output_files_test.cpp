// The output contract of results/output_files.hpp: checks before a run, temporaries, commits
// of several files together, stale temporaries of dead processes.
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/output_files.hpp"
#include "trnsim/results/trace.hpp"

#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace trnsim::results {
namespace {

namespace fs = std::filesystem;

class OutputFiles : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = test::scratch_path("trnsim-output-files-" +
                                  std::string(::testing::UnitTest::GetInstance()
                                                  ->current_test_info()
                                                  ->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        std::ofstream(dir_ / "s.yaml") << "name: s\n";
    }
    void TearDown() override { fs::remove_all(dir_); }

    /// The message of check_outputs for one output, or "" when it passes.
    std::string problem(const std::string& path, const std::vector<std::string>& inputs = {}) {
        try {
            check_outputs({{path, "output.file", {"s.yaml", 9, 3}}}, inputs);
            return "";
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), "output.file");
            EXPECT_EQ(e.location().line, 9);
            return e.message();
        }
    }

    static ResultsFile small_file() {
        ResultsFile f;
        f.meta.name = "t";
        f.summary.add_int("chips");
        f.summary.add_row({std::int64_t{4}});
        return f;
    }

    fs::path dir_;
};

TEST_F(OutputFiles, AnOutputMayNotBeAnInputUnderAnyName) {
    const std::string s = (dir_ / "s.yaml").string();
    EXPECT_NE(problem(s, {s}).find("is a file this command reads"), std::string::npos);
    // ./, .., a symlink and a hard link all name the same file.
    const std::string dotted = (dir_ / "." / "sub" / ".." / "s.yaml").string();
    fs::create_directories(dir_ / "sub");
    EXPECT_NE(problem(dotted, {s}).find("is the same file as"), std::string::npos);
    fs::create_symlink(dir_ / "s.yaml", dir_ / "link.yaml");
    EXPECT_NE(problem((dir_ / "link.yaml").string(), {s}).find("this command reads"),
              std::string::npos);
    fs::create_hard_link(dir_ / "s.yaml", dir_ / "hard.yaml");
    EXPECT_NE(problem((dir_ / "hard.yaml").string(), {s}).find("this command reads"),
              std::string::npos);
    EXPECT_EQ(problem((dir_ / "other.h5").string(), {s}), "");
}

TEST_F(OutputFiles, TwoOutputsMayNotShareAFile) {
    const std::string out = (dir_ / "out.h5").string();
    try {
        check_outputs({{out, "output.file", {}}, {(dir_ / "." / "out.h5").string(), "output.trace", {}}},
                      {});
        ADD_FAILURE() << "accepted a trace on the results file";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "output.trace");
        EXPECT_NE(e.message().find("is also the output.file"), std::string::npos) << e.what();
    }
}

TEST_F(OutputFiles, PlacesThatCannotHoldAFileAreRefusedBeforeAnythingRuns) {
    fs::create_directories(dir_ / "d");
    EXPECT_NE(problem("").find("is empty"), std::string::npos);
    EXPECT_NE(problem(std::string("a\x01.h5")).find("control character (byte 0x01"),
              std::string::npos);
    EXPECT_NE(problem(std::string("a\0b", 3)).find("byte 0x00"), std::string::npos);
    EXPECT_NE(problem((dir_ / "new").string() + "/").find("ends with '/'"), std::string::npos);
    EXPECT_NE(problem((dir_ / "d").string()).find("is a directory"), std::string::npos);
    EXPECT_NE(problem((dir_ / "d" / "..").string()).find("names a directory"), std::string::npos);
    EXPECT_NE(problem((dir_ / "s.yaml" / "out.h5").string()).find("which is a file"),
              std::string::npos);
    EXPECT_NE(problem((dir_ / "s.yaml" / "x" / "y" / "out.h5").string()).find("which is a file"),
              std::string::npos);
    EXPECT_NE(problem("/proc/out.h5").find("(proc, a kernel file system)"), std::string::npos);
    EXPECT_NE(problem("/sys/x/out.h5").find("(sysfs, a kernel file system)"), std::string::npos);
    EXPECT_NE(problem("/dev/null").find("not a regular file (a character device)"),
              std::string::npos);
    ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0644), 0);
    EXPECT_NE(problem((dir_ / "fifo").string()).find("(a FIFO)"), std::string::npos);
    // 255 bytes per name on ext4, tmpfs and most others; 15 are kept for ".tmp-<pid>".
    const long name_max = ::pathconf(dir_.c_str(), _PC_NAME_MAX);
    ASSERT_GT(name_max, 20);
    const auto name = [](long n) { return std::string(static_cast<std::size_t>(n), 'a'); };
    EXPECT_EQ(problem((dir_ / name(name_max - 15)).string()), "");
    EXPECT_NE(problem((dir_ / name(name_max - 14)).string()).find("kept for the temporary name"),
              std::string::npos);
    EXPECT_NE(problem((dir_ / name(name_max + 1) / "x.h5").string()).find("directory name of"),
              std::string::npos);
    EXPECT_NE(problem(std::string(5000, 'a')).find("paths are limited"), std::string::npos);
    // Nothing was created by any check.
    EXPECT_FALSE(fs::exists(dir_ / "new"));
    EXPECT_EQ(problem((dir_ / "new" / "deeper" / "out.h5").string()), "");
    EXPECT_FALSE(fs::exists(dir_ / "new"));
}

TEST_F(OutputFiles, AReadOnlyDirectoryIsRefusedUnlessTheUserMayWriteIt) {
    fs::create_directories(dir_ / "ro");
    fs::permissions(dir_ / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    const std::string msg = problem((dir_ / "ro" / "out.h5").string());
    if (::geteuid() == 0) {
        EXPECT_EQ(msg, ""); // root may write anywhere but on a read-only file system
    } else {
        EXPECT_NE(msg.find("may not create files in"), std::string::npos) << msg;
    }
    fs::permissions(dir_ / "ro", fs::perms::owner_all);
}

TEST_F(OutputFiles, AFailedSecondFileLeavesNeitherBehind) {
    const std::string results = (dir_ / "out.h5").string();
    std::vector<PendingFile> files;
    files.push_back(stage_hdf5(results, small_file()));
    EXPECT_TRUE(fs::exists(files[0].temporary()));
    EXPECT_FALSE(fs::exists(results)); // not before every file is complete
    // The trace's directory cannot be created (its parent is a file): staging it throws.
    TraceData trace;
    EXPECT_THROW(files.push_back(stage_chrome_trace((dir_ / "s.yaml" / "t.json").string(), trace)),
                 std::runtime_error);
    const std::string tmp = files[0].temporary();
    files.clear(); // the error unwinds: uncommitted files remove their temporaries
    EXPECT_FALSE(fs::exists(tmp));
    EXPECT_FALSE(fs::exists(results));
    for (const auto& e : fs::directory_iterator(dir_)) {
        EXPECT_EQ(e.path().filename(), "s.yaml") << e.path();
    }
}

TEST_F(OutputFiles, CommitAllMovesCompleteFilesIntoPlace) {
    std::vector<PendingFile> files;
    files.push_back(stage_hdf5((dir_ / "out.h5").string(), small_file()));
    files.push_back(stage_chrome_trace((dir_ / "trace" / "t.json").string(), TraceData{}));
    commit_all(files);
    EXPECT_TRUE(fs::exists(dir_ / "out.h5"));
    EXPECT_TRUE(fs::exists(dir_ / "trace" / "t.json"));
    EXPECT_EQ(read_summary((dir_ / "out.h5").string()).rows(), 1u);
    files.clear(); // committed files stay
    EXPECT_TRUE(fs::exists(dir_ / "out.h5"));
    // An incomplete file stops the commit of all.
    std::vector<PendingFile> partial;
    partial.emplace_back((dir_ / "a.h5").string());
    EXPECT_THROW(commit_all(partial), std::logic_error);
}

TEST_F(OutputFiles, TemporariesOfDeadProcessesAreRemovedOthersKept) {
    const std::string target = (dir_ / "out.h5").string();
    // A process that has exited: its pid names no process (until the system reuses it).
    const pid_t child = ::fork();
    if (child == 0) {
        ::_exit(0);
    }
    ASSERT_GT(child, 0);
    ::waitpid(child, nullptr, 0);
    const std::string dead = target + ".tmp-" + std::to_string(child);
    const std::string alive = target + ".tmp-1"; // init always runs
    const std::string mine = temporary_name(target);
    for (const auto& f : {dead, alive, mine, target + ".tmp-12x", target + ".tmp-"}) {
        std::ofstream(f) << "x";
    }
    EXPECT_EQ(remove_stale_temporaries(target), 1);
    EXPECT_FALSE(fs::exists(dead));
    for (const auto& f : {alive, mine, target + ".tmp-12x", target + ".tmp-"}) {
        EXPECT_TRUE(fs::exists(f)) << f;
    }
    // Writing the target removes them too (the next run on that path).
    std::ofstream(dead) << "x";
    write_hdf5(target, small_file());
    EXPECT_FALSE(fs::exists(dead));
    EXPECT_FALSE(fs::exists(mine)); // this process's own temporary became the file
}

} // namespace
} // namespace trnsim::results
