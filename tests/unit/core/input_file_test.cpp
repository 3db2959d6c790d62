#include "trnsim/core/input_file.hpp"

#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace trnsim {
namespace {

namespace fs = std::filesystem;

TEST(InputFile, ReadsARegularFileWhole) {
    const fs::path dir = test::scratch_path("trnsim-input-file-read");
    fs::create_directories(dir);
    std::ofstream(dir / "a.yaml") << "name: a\n";
    EXPECT_EQ(read_input_file(dir / "a.yaml", "scenario"), "name: a\n");
    EXPECT_EQ(input_file_problem(dir / "a.yaml"), "");
    fs::remove_all(dir);
}

TEST(InputFile, RefusesWhatIsNotARegularFileWithoutOpeningIt) {
    const fs::path dir = test::scratch_path("trnsim-input-file-special");
    fs::remove_all(dir);
    fs::create_directories(dir / "sub");
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
    EXPECT_EQ(input_file_problem(dir / "sub"), "is a directory");
    // A FIFO with no writer would block an open for reading: the check must not open it.
    EXPECT_EQ(input_file_problem(dir / "fifo"), "is not a regular file (a FIFO)");
    EXPECT_EQ(input_file_problem("/dev/zero"), "is not a regular file (a character device)");
    EXPECT_EQ(input_file_problem(dir / "none"), "not found");
    EXPECT_EQ(input_file_problem(""), "is an empty path");
    try {
        read_input_file(dir / "fifo", "model", "workload.model", {"s.yaml", 5, 10});
        ADD_FAILURE() << "read a FIFO";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), "s.yaml:5:10: workload.model: model file '" +
                                             (dir / "fifo").string() +
                                             "' is not a regular file (a FIFO)");
    }
    fs::remove_all(dir);
}

TEST(InputFile, RefusesFilesOverTheLimit) {
    const fs::path dir = test::scratch_path("trnsim-input-file-big");
    fs::create_directories(dir);
    {
        std::ofstream(dir / "big.yaml");
    }
    // Sparse: no disk is used. One byte over 64 MiB is refused from its size alone.
    fs::resize_file(dir / "big.yaml", kMaxInputFileBytes + 1);
    EXPECT_EQ(input_file_problem(dir / "big.yaml"), "is too large: 65 MiB, the limit is 64 MiB");
    fs::resize_file(dir / "big.yaml", 100);
    EXPECT_EQ(input_file_problem(dir / "big.yaml", 99), "is too large: 1 MiB, the limit is 1 MiB");
    EXPECT_THROW(read_input_file(dir / "big.yaml", "trace", "reliability.trace", {}, 99),
                 InputError);
    EXPECT_EQ(read_input_file(dir / "big.yaml", "trace", "", {}, 100).size(), 100u);
    fs::remove_all(dir);
}

} // namespace
} // namespace trnsim
