#include "trnsim/results/hdf5_writer.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace trnsim::results {
namespace {

namespace fs = std::filesystem;

ResultsFile sample() {
    ResultsFile f;
    f.meta = {"0.1.0", "unit", "name: unit\n", 7, 2};
    f.summary.add_int("chips");
    f.summary.add_float("step_time_s");
    f.summary.add_string("label", 8);
    f.summary.add_row({std::int64_t{1024}, 9.1, std::string("a")});
    f.summary.add_row({std::int64_t{2048}, std::int64_t{5}, std::string("bbbbbbbb")});
    Table t;
    t.add_string("op", 16);
    t.add_float("time_per_step_s");
    t.add_row({std::string("gate_up_proj"), 0.97});
    f.tables.emplace_back("/step/breakdown", std::move(t));
    return f;
}

fs::path temp_dir(const char* name) {
    const fs::path d = test::scratch_path(name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

std::string bytes_of(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Table, RejectsBadRowsWithoutChangingTheTable) {
    Table t;
    t.add_int("a");
    t.add_string("s", 2);
    EXPECT_THROW(t.add_row({1.5, std::string("x")}), std::invalid_argument);
    EXPECT_THROW(t.add_row({std::int64_t{1}, std::string("xyz")}), std::invalid_argument);
    EXPECT_THROW(t.add_row({std::int64_t{1}}), std::invalid_argument);
    EXPECT_EQ(t.rows(), 0u);
    EXPECT_TRUE(t.columns()[0].ints.empty());
    EXPECT_THROW(t.add_int("a"), std::invalid_argument);
}

TEST(Hdf5Writer, SummaryRoundTrips) {
    const fs::path dir = temp_dir("trnsim-h5-roundtrip");
    const fs::path file = dir / "nested" / "out.h5";
    write_hdf5(file.string(), sample());
    ASSERT_TRUE(fs::exists(file));
    const Table t = read_summary(file.string());
    ASSERT_EQ(t.rows(), 2u);
    ASSERT_EQ(t.columns().size(), 3u);
    EXPECT_EQ(t.columns()[0].name, "chips");
    EXPECT_EQ(t.columns()[0].ints, (std::vector<std::int64_t>{1024, 2048}));
    EXPECT_EQ(t.columns()[1].floats, (std::vector<double>{9.1, 5.0}));
    EXPECT_EQ(t.columns()[2].strings, (std::vector<std::string>{"a", "bbbbbbbb"}));
    // Nothing else is left in the directory: the temporary file was renamed.
    EXPECT_EQ(std::distance(fs::directory_iterator(dir / "nested"), fs::directory_iterator{}), 1);
    fs::remove_all(dir);
}

TEST(Hdf5Writer, SameInputGivesIdenticalBytes) {
    const fs::path dir = temp_dir("trnsim-h5-identical");
    write_hdf5((dir / "a.h5").string(), sample());
    write_hdf5((dir / "b.h5").string(), sample());
    const std::string a = bytes_of(dir / "a.h5");
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, bytes_of(dir / "b.h5"));
    fs::remove_all(dir);
}

TEST(Hdf5Writer, FailureLeavesNoFile) {
    const fs::path dir = temp_dir("trnsim-h5-fail");
    ResultsFile f = sample();
    // An invalid dataset path makes the write fail half-way.
    Table t;
    t.add_int("x");
    f.tables.emplace_back("", std::move(t));
    EXPECT_THROW(write_hdf5((dir / "out.h5").string(), f), std::runtime_error);
    EXPECT_TRUE(fs::is_empty(dir));
    // An existing file is not touched by a failed write.
    write_hdf5((dir / "out.h5").string(), sample());
    const std::string before = bytes_of(dir / "out.h5");
    EXPECT_THROW(write_hdf5((dir / "out.h5").string(), f), std::runtime_error);
    EXPECT_EQ(bytes_of(dir / "out.h5"), before);
    fs::remove_all(dir);
}

} // namespace
} // namespace trnsim::results

namespace trnsim::results {
namespace {

TEST(Hdf5Writer, LongTablesAreCompressedAndReadBackExactly) {
    // 200,000 rows of a timeline-like table: 8 + 20 + 8 bytes = 36 bytes a row, 7.2 MB raw.
    // Shuffled and deflated, its repetitive bytes shrink many times; values round-trip.
    const fs::path dir = temp_dir("trnsim-h5-compressed");
    ResultsFile f = sample();
    Table t;
    t.add_float("time_s");
    t.add_string("state", 20);
    t.add_float("progress_s");
    constexpr std::size_t kRows = 200000;
    for (std::size_t i = 0; i < kRows; ++i) {
        t.add_row({18.8 * static_cast<double>(i), std::string(i % 2 ? "running" : "checkpointing"),
                   18.7 * static_cast<double>(i / 2 * 2)});
    }
    f.tables.emplace_back("/run/timeline", t);
    const fs::path file = dir / "long.h5";
    write_hdf5(file.string(), f);
    const double raw = 36.0 * kRows;
    EXPECT_LT(static_cast<double>(fs::file_size(file)), raw / 4.0)
        << fs::file_size(file) << " bytes for " << raw << " bytes of rows";
    const Table back = read_table(file.string(), "/run/timeline");
    ASSERT_EQ(back.rows(), kRows);
    EXPECT_EQ(back.columns()[0].floats, t.columns()[0].floats);
    EXPECT_EQ(back.columns()[1].strings, t.columns()[1].strings);
    EXPECT_EQ(back.columns()[2].floats, t.columns()[2].floats);
    // The same content gives the same bytes (compression is deterministic).
    const fs::path again = dir / "again.h5";
    write_hdf5(again.string(), f);
    EXPECT_EQ(bytes_of(file), bytes_of(again));
    fs::remove_all(dir);
}

} // namespace
} // namespace trnsim::results
