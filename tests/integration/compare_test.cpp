// `trnsim compare` on files that are not what it expects (issue 28: CR1, CR3, H1, SW5). Each
// must exit 2 at once with a message naming the file and what is wrong, or compare correctly:
// before, a 2-D integer /summary corrupted the heap (SIGABRT), a variable-length string column
// printed pointer bytes, a FIFO blocked forever, and multi-row files (sweeps, plans) were
// compared on their first row only with counts such as '54 of 49 summary values differ'.
// The odd files are made with h5py (Debian's python3-h5py, as the analysis tests use).
#include "run_cli.hpp"
#include "small_scenario.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

class Compare : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = scratch_path("trnsim-compare-" + std::string(::testing::UnitTest::GetInstance()
                                                                ->current_test_info()
                                                                ->name()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        std::ofstream(dir_ / "s.yaml") << kSmallScenario;
        std::ofstream(dir_ / "sw.yaml")
            << "base: s.yaml\nsweep: {grid: {cluster.ultraservers: [4, 2]}}\n";
        std::ofstream(dir_ / "sw3.yaml")
            << "base: s.yaml\nsweep: {grid: {cluster.ultraservers: [4, 2, 1]}}\n";
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"run", "s.yaml", "-o", "a.h5"},
              {"run", "s.yaml", "--set", "workload.parallelism.tp=8", "-o", "b.h5"},
              {"batch", "sw.yaml", "-o", "sw.h5"},
              {"batch", "sw.yaml", "-o", "sw-again.h5"},
              {"batch", "sw3.yaml", "-o", "sw3.h5"}}) {
            std::vector<std::string> quiet = args;
            quiet.push_back("-q");
            const CliResult r = run_cli(quiet, dir_.string(), 60.0);
            ASSERT_EQ(r.exit_code, 0) << args[1] << "\n" << r.err;
        }
    }
    void TearDown() override { fs::remove_all(dir_); }

    /// Runs /usr/bin/python3 with h5py and numpy (as np) on `code` in the scratch directory.
    void python(const std::string& code) {
        const CliResult r = run_program(
            "/usr/bin/python3", {"-c", "import h5py, numpy as np\n" + code}, dir_.string());
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }

    /// Exit 2 within 10 s, nothing on stdout, the message starting with `prefix`.
    void expect_refused(const std::string& b, const std::string& prefix) {
        const CliResult r = run_cli({"compare", "a.h5", b}, dir_.string(), 10.0);
        EXPECT_FALSE(r.timed_out) << b;
        EXPECT_EQ(r.exit_code, 2) << b << "\n" << r.err;
        EXPECT_EQ(r.err.rfind(prefix, 0), 0u) << b << "\nexpected '" << prefix << "' in: "
                                              << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
    }

    fs::path dir_;
};

TEST_F(Compare, ATwoDimensionalSummaryIsRefused) {
    python("f = h5py.File('ints.h5', 'w'); f['summary'] = np.zeros((3, 4), 'i8');"
           "f.create_group('meta'); f.close()");
    expect_refused("ints.h5", "trnsim: trnsim compare: ints.h5: not a trnsim results file "
                              "(/summary is a 2-dimensional dataset, not a table");
    python("f = h5py.File('flat.h5', 'w'); f['summary'] = np.zeros(3, 'f8'); f.close()");
    expect_refused("flat.h5", "trnsim: trnsim compare: flat.h5: not a trnsim results file "
                              "(/summary holds float values, not rows of named columns");
    python("f = h5py.File('nested.h5', 'w');"
           "f['summary'] = np.zeros(2, [('a', [('b', 'f8')])]); f.close()");
    expect_refused("nested.h5", "trnsim: trnsim compare: nested.h5: not a trnsim results file "
                                "(column 'a' of /summary holds compound values");
    python("f = h5py.File('scen.h5', 'w'); f['summary'] = np.zeros(1, [('x', 'f8')]);"
           "f['meta/scenario'] = np.array([['a', 'b']], dtype=h5py.string_dtype()); f.close()");
    expect_refused("scen.h5", "trnsim: trnsim compare: scen.h5: not a trnsim results file "
                              "(/meta/scenario is not a single string");
}

TEST_F(Compare, ColumnsOfOtherWidthsAndVariableLengthStringsAreRead) {
    python("d = np.zeros(1, [('name', h5py.string_dtype()), ('n', 'i4'), ('f', 'f4'),"
           "('s', 'S5'), ('a', h5py.string_dtype('ascii'))]);"
           "d['name'][0] = 'a variable-length name'; d['n'] = 7; d['f'] = 2.5; d['s'] = b'ab';"
           "d['a'][0] = b'ascii';"
           "f = h5py.File('v.h5', 'w'); f['summary'] = d; f.close()");
    const CliResult r = run_cli({"compare", "v.h5", "v.h5"}, dir_.string(), 10.0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* text : {"  name    a variable-length name  a variable-length name  \n",
                             "  n                      7                 7  \n",
                             "  f                    2.5               2.5  \n",
                             "  s                     ab                ab  \n",
                             "  a                  ascii             ascii  \n",
                             "0 of 5 summary values differ"}) {
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
    }
}

TEST_F(Compare, SpecialFilesAreRefusedBeforeTheyAreOpened) {
    ASSERT_EQ(::mkfifo((dir_ / "fifo.h5").c_str(), 0644), 0);
    expect_refused("fifo.h5", "trnsim: trnsim compare: fifo.h5: not a trnsim results file "
                              "('fifo.h5' is a FIFO, not a regular file; only regular files "
                              "are read)");
    expect_refused("/dev/zero", "trnsim: trnsim compare: /dev/zero: not a trnsim results file "
                                "('/dev/zero' is a character device, not a regular file");
    expect_refused(".", "trnsim: trnsim compare: .: not a trnsim results file ('.' is a "
                        "directory");
    expect_refused("missing.h5", "trnsim: trnsim compare: missing.h5: not a trnsim results "
                                 "file (cannot open 'missing.h5': No such file or directory)");
}

TEST_F(Compare, ManyRowsAreComparedRowByRowOrRefused) {
    // A run against a two-point sweep, or a two-point sweep against a three-point one.
    expect_refused("sw.h5", "trnsim: trnsim compare: a.h5 has 1 summary row and sw.h5 has 2 "
                            "summary rows: compare compares row by row");
    const CliResult three = run_cli({"compare", "sw.h5", "sw3.h5"}, dir_.string(), 10.0);
    EXPECT_EQ(three.exit_code, 2);
    EXPECT_NE(three.err.find("sw.h5 has 2 summary rows and sw3.h5 has 3 summary rows"),
              std::string::npos)
        << three.err;
    // The same sweep twice: every value of both rows, none differing.
    const CliResult same = run_cli({"compare", "sw.h5", "sw-again.h5"}, dir_.string(), 10.0);
    ASSERT_EQ(same.exit_code, 0) << same.err;
    EXPECT_NE(same.out.find("  row 1 of 2\n"), std::string::npos) << same.out;
    EXPECT_NE(same.out.find("  row 2 of 2\n"), std::string::npos) << same.out;
    const auto columns = same.out.substr(same.out.find("(2 rows x ") + 10);
    const int n = std::stoi(columns);
    EXPECT_GT(n, 10);
    EXPECT_NE(same.out.find("  0 of " + std::to_string(2 * n) +
                            " summary values differ (2 rows x " + std::to_string(n) +
                            " columns)"),
              std::string::npos)
        << same.out;
    // The second row is compared: the sweep's second point has 2 UltraServers.
    const auto row2 = same.out.substr(same.out.find("  row 2 of 2\n"));
    EXPECT_NE(row2.find("  ultraservers                          2                 2  \n"),
              std::string::npos)
        << row2;
}

TEST_F(Compare, TheCountIsOfEveryColumnOfEitherFile) {
    // Before: '54 of 49' when the files had different columns.
    python("d = np.zeros(1, [('tp', 'i8'), ('only_here', 'f8')]); d['tp'] = 4;"
           "f = h5py.File('few.h5', 'w'); f['summary'] = d; f.close()");
    const CliResult r = run_cli({"compare", "a.h5", "few.h5"}, dir_.string(), 10.0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CliResult a = run_cli({"compare", "a.h5", "a.h5"}, dir_.string(), 10.0);
    const auto of = a.out.rfind(" of ");
    const int columns = std::stoi(a.out.substr(of + 4));
    // Every column of a.h5 but tp is only in A, only_here only in B; tp is equal.
    EXPECT_NE(r.out.find(std::to_string(columns) + " of " + std::to_string(columns + 1) +
                         " summary values differ"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("only in A"), std::string::npos);
    EXPECT_NE(r.out.find("only in B"), std::string::npos);
}

} // namespace
} // namespace trnsim::test
