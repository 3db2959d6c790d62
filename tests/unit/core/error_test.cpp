#include "trnsim/core/error.hpp"

#include <gtest/gtest.h>

namespace trnsim {
namespace {

TEST(InputError, FormatsLocationPathAndMessage) {
    const InputError e("workload.parallelism.tp", "must divide 64 heads",
                       {"scenario.yaml", 12, 17});
    EXPECT_STREQ(e.what(), "scenario.yaml:12:17: workload.parallelism.tp: must divide 64 heads");
    const InputError bare("cluster", "give one of cluster.ultraservers or cluster.instances");
    EXPECT_STREQ(bare.what(), "cluster: give one of cluster.ultraservers or cluster.instances");
}

TEST(SourceMap, FallsBackToNearestAncestor) {
    SourceMap m;
    m.add("", {"s.yaml", 1, 1});
    m.add("workload", {"s.yaml", 5, 1});
    m.add("workload.parallelism", {"s.yaml", 9, 16});
    EXPECT_EQ(m.find("workload.parallelism").line, 9);
    EXPECT_EQ(m.find("workload.parallelism.tp").line, 9);
    EXPECT_EQ(m.find("workload.global_batch").line, 5);
    EXPECT_EQ(m.find("cluster.ultraservers").line, 1);
}

TEST(InputError, LocatedKeepsAnExistingLocation) {
    SourceMap m;
    m.add("workload", {"s.yaml", 5, 3});
    const InputError unlocated("workload.global_batch", "not a multiple of 64");
    EXPECT_STREQ(unlocated.located(m).what(), "s.yaml:5:3: workload.global_batch: not a multiple of 64");
    const InputError located("workload", "x", {"other.yaml", 2, 2});
    EXPECT_EQ(located.located(m).location().file, "other.yaml");
}

} // namespace
} // namespace trnsim
