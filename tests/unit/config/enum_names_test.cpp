// One spelling per enum (core/enum_names.hpp): every table names each value of its enum
// exactly once, names are distinct, and name -> value -> name round-trips. The enums are
// dense (0 .. N-1), so a table of N distinct values in range covers all of them.
#include "trnsim/compute/core_model.hpp"
#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/network/collective_spec.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/study/planner.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/workload/plan.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace trnsim {
namespace {

template <class E>
void check_table(std::size_t enumerators) {
    const auto table = enum_names(E{});
    ASSERT_EQ(table.size(), enumerators);
    std::set<std::string> names;
    std::set<std::size_t> values;
    for (const auto& n : table) {
        const auto v = static_cast<std::size_t>(n.value);
        EXPECT_LT(v, enumerators) << n.name;
        EXPECT_TRUE(values.insert(v).second) << "value listed twice: " << n.name;
        EXPECT_TRUE(names.insert(n.name).second) << "name used twice: " << n.name;
        EXPECT_EQ(enum_from_name<E>(n.name), n.value);
        EXPECT_STREQ(enum_name(n.value), n.name);
    }
    EXPECT_FALSE(enum_from_name<E>("no such name").has_value());
}

TEST(EnumNames, EveryTableNamesEveryValueOnce) {
    check_table<compute::Precision>(3);
    check_table<compute::KernelClass>(15);
    check_table<compute::EngineKind>(5);
    check_table<network::CollectiveOp>(6);
    check_table<network::LinkClass>(5);
    check_table<network::Algorithm>(7);
    check_table<topology::LinkKind>(7);
    check_table<topology::NodeKind>(6);
    check_table<ScaleUpKind>(2);
    check_table<workload::MlpKind>(2);
    check_table<workload::NormKind>(2);
    check_table<workload::PositionKind>(2);
    check_table<workload::AttentionKind>(2);
    check_table<workload::Schedule>(2);
    check_table<workload::Recompute>(3);
    check_table<workload::GradAccumulator>(2);
    check_table<workload::MasterWeights>(2);
    check_table<workload::OptimizerMoments>(2);
    check_table<workload::CommGroup>(6);
    check_table<reliability::ComponentClass>(reliability::kClassCount);
    check_table<reliability::LifetimeKind>(3);
    check_table<reliability::Effect>(3);
    check_table<reliability::RecoveryScope>(2);
    check_table<reliability::CheckpointMode>(3);
    check_table<reliability::RepairDistribution>(2);
    check_table<reliability::Impact>(5);
    check_table<reliability::JobState>(8);
    check_table<reliability::EventKind>(9);
    check_table<config::WorkloadType>(3);
    check_table<serving::RouterPolicy>(3);
    check_table<serving::GqaLayout>(2);
    check_table<config::Fidelity>(2);
    check_table<config::StepEntityMode>(2);
    check_table<config::FabricCollectiveMode>(2);
    check_table<config::Distribution>(3);
    check_table<config::Objective>(4);
    check_table<study::Verdict>(8);
}

TEST(EnumNames, TheWordsUsersWriteAreTheTablesNames) {
    // Spellings that differ from the C++ enumerator (hand-checked against the scenario schema
    // in docs/scenario-schema.md).
    EXPECT_STREQ(to_string(network::Algorithm::automatic), "auto");
    EXPECT_STREQ(workload::to_string(workload::Schedule::one_f_one_b), "1f1b");
    EXPECT_STREQ(reliability::to_string(reliability::Effect::automatic), "auto");
    EXPECT_EQ(enum_name_list<workload::Recompute>(), "none, selective, full");
}

} // namespace
} // namespace trnsim
