// Tables from rows of named values: the column set, order and fill values are fixed by the
// rows alone (a sweep's /summary joins runs whose scenarios have different columns).
#include "trnsim/results/table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace trnsim::results {
namespace {

TEST(TableFromRows, UnionOfColumnsInFirstSeenOrderWithFills) {
    // Row 0 has a, b; row 1 has c, a: columns a, b, c; b missing in row 1 is NaN, c missing
    // in row 0 is the string fill "", and c's width is its longest value (5).
    const Table t = table_from_rows({{{"a", std::int64_t{1}}, {"b", 2.5}},
                                     {{"c", std::string("hello")}, {"a", std::int64_t{7}}}});
    ASSERT_EQ(t.columns().size(), 3u);
    EXPECT_EQ(t.columns()[0].name, "a");
    EXPECT_EQ(t.columns()[1].name, "b");
    EXPECT_EQ(t.columns()[2].name, "c");
    EXPECT_EQ(t.rows(), 2u);
    EXPECT_EQ(t.columns()[0].ints, (std::vector<std::int64_t>{1, 7}));
    EXPECT_EQ(t.columns()[1].floats[0], 2.5);
    EXPECT_TRUE(std::isnan(t.columns()[1].floats[1]));
    EXPECT_EQ(t.columns()[2].strings, (std::vector<std::string>{"", "hello"}));
    EXPECT_EQ(t.columns()[2].string_width, 5);
}

TEST(TableFromRows, AnIntegerMissingFromARowIsMinusOne) {
    const Table t = table_from_rows({{{"n", std::int64_t{3}}}, {{"x", 1.0}}});
    EXPECT_EQ(t.columns()[0].ints, (std::vector<std::int64_t>{3, -1}));
}

TEST(TableFromRows, AColumnThatChangesTypeIsAnError) {
    EXPECT_THROW(table_from_rows({{{"n", std::int64_t{3}}}, {{"n", 1.0}}}), std::logic_error);
}

} // namespace
} // namespace trnsim::results
