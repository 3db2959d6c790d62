// Every output aimed at every input, on the command line (issue 28, DL2 and the output
// contract): each command of tests/data/every-input/cases.txt is run with each of its outputs
// (-o, --set output.file, --trace, a study file's own output.file) naming each file it reads
// (the scenario, sweep, plan and plan base, model, chip and fabric files, the request trace,
// a chip named only in search.chip). Each must exit 2 before it runs with the contract's
// message, leave every file byte-identical and write nothing. The Python module's twin is
// tests/python/test_outputs.py, over the same cases. Before, `trnsim plan` with
// `search: {chip: [./ci.yaml]}` and `-o ci.yaml` exited 0 and left an HDF5 file there.
#include "run_cli.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

/// One line of cases.txt: a command ("run", "train.yaml") and the files it reads.
struct Case {
    std::vector<std::string> command;
    std::vector<std::string> inputs;
};

std::vector<Case> read_cases(const fs::path& file) {
    std::vector<Case> cases;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const auto colon = line.find(':');
        Case c;
        std::istringstream head(line.substr(0, colon)), tail(line.substr(colon + 1));
        for (std::string w; head >> w;) {
            c.command.push_back(w);
        }
        for (std::string w; tail >> w;) {
            c.inputs.push_back(w);
        }
        cases.push_back(c);
    }
    return cases;
}

class EveryInput : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_path("trnsim-every-input-" +
                            std::string(::testing::UnitTest::GetInstance()
                                            ->current_test_info()
                                            ->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        const fs::path src(TRNSIM_SOURCE_DIR);
        for (const auto& e : fs::directory_iterator(src / "tests/data/every-input")) {
            fs::copy_file(e.path(), dir_ / e.path().filename());
        }
        fs::copy_file(src / "topologies/chips/trn2.yaml", dir_ / "c.yaml");
        fs::copy_file(src / "topologies/chips/inf2.yaml", dir_ / "ci.yaml");
        fs::copy_file(src / "topologies/trn2-ultracluster.yaml", dir_ / "f.yaml");
        fs::copy_file(src / "scenarios/models/llama3-8b.yaml", dir_ / "m.yaml");
        cases_ = read_cases(dir_ / "cases.txt");
        snapshot_ = contents();
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::map<std::string, std::string> contents() const {
        std::map<std::string, std::string> files;
        for (const auto& e : fs::recursive_directory_iterator(dir_)) {
            files[fs::relative(e.path(), dir_).string()] = slurp(e.path());
        }
        return files;
    }

    /// Exit 2 before the run with the contract's message naming `input`, nothing changed.
    void expect_refused(const std::vector<std::string>& args, const std::string& input) {
        std::string cmd;
        for (const auto& a : args) {
            cmd += a + " ";
        }
        const CliResult r = run_cli(args, dir_.string(), 30.0);
        EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find("output."), std::string::npos) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find("this command reads: writing there would destroy it"),
                  std::string::npos)
            << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find("'" + input + "'"), std::string::npos) << cmd << "\n" << r.err;
        EXPECT_TRUE(r.out.empty()) << cmd << "ran: " << r.out;
        EXPECT_EQ(contents(), snapshot_) << cmd << "changed or added a file";
        ++refused_;
    }

    fs::path dir_;
    std::vector<Case> cases_;
    std::map<std::string, std::string> snapshot_;
    int refused_ = 0;
};

TEST_F(EveryInput, TheCommandLineNeverWritesOverAnInput) {
    ASSERT_EQ(cases_.size(), 5u);
    for (const Case& c : cases_) {
        for (const std::string& input : c.inputs) {
            std::vector<std::string> args = c.command;
            args.insert(args.end(), {"-o", input});
            expect_refused(args, input);
            if (c.command[0] == "run") {
                args = c.command;
                args.insert(args.end(), {"--set", "output.file=" + input});
                expect_refused(args, input);
                if (c.command[1] == "train.yaml") {
                    args = c.command;
                    args.insert(args.end(), {"--set", "simulation.fidelity=step", "--trace",
                                             input, "-o", "o.h5"});
                    expect_refused(args, input);
                }
            } else {
                // The study file's own output.file, in a copy of it naming the input (the
                // copy itself where the input is the study file).
                const std::string study = "x-" + c.command[1];
                const std::string target = input == c.command[1] ? study : input;
                std::string text = slurp(dir_ / c.command[1]);
                const auto at = text.find("output: {file: ");
                ASSERT_NE(at, std::string::npos) << c.command[1];
                text = text.substr(0, at) + "output: {file: " + target + "}\n";
                std::ofstream(dir_ / study) << text;
                snapshot_ = contents();
                expect_refused({c.command[0], study}, target);
                fs::remove(dir_ / study);
                snapshot_ = contents();
            }
        }
    }
    EXPECT_EQ(refused_, 4 * 3 + 3 * 2 + 5 * 2 + 5 * 2 + 5 * 2);
}

TEST_F(EveryInput, EachCommandRunsWithAFreshOutput) {
    // The same commands with an output of their own succeed: the refusals above are the
    // contract's, not a broken fixture.
    for (const Case& c : cases_) {
        std::vector<std::string> args = c.command;
        args.insert(args.end(), {"-q", "-o", "fresh.h5"});
        const CliResult r = run_cli(args, dir_.string(), 60.0);
        EXPECT_EQ(r.exit_code, 0) << c.command[0] << " " << c.command[1] << "\n" << r.err;
        EXPECT_TRUE(fs::exists(dir_ / "fresh.h5"));
        fs::remove(dir_ / "fresh.h5");
    }
    EXPECT_EQ(contents(), snapshot_);
}

} // namespace
} // namespace trnsim::test
