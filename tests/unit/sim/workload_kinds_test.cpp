// The registry of workload kinds: one kind per workload.type, named as the scenario names it;
// run_scenario gives what the kind's own entry point gives; checks fail located, before
// anything runs.
#include "trnsim/config/load.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace trnsim::sim {
namespace {

constexpr const char* kTraining = R"(name: train
hardware: {chip: trn1}
cluster: {instances: 2}
workload:
  model: llama2-7b
  tokens: 1B
  global_batch: 64
  sequence_length: 4096
  parallelism: {tp: 8}
)";

constexpr const char* kServing = R"(name: serve
hardware: {chip: inf2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 8, max_batch: 4, max_context: 4096}
  requests:
    input_tokens: 500
    output_tokens: 20
    arrival: {closed_loop: {concurrency: 2}}
    count: 6
  slo: {ttft: 1s, tpot: 50ms}
)";

TEST(WorkloadKinds, OneKindPerWorkloadTypeNamedAsTheScenarioNamesIt) {
    std::set<config::WorkloadType> seen;
    for (const WorkloadKind& k : workload_kinds()) {
        EXPECT_TRUE(seen.insert(k.type).second);
        EXPECT_EQ(k.name, to_string(k.type));
        EXPECT_EQ(&workload_kind(k.type), &k);
        EXPECT_NE(k.check, nullptr);
        EXPECT_NE(k.run, nullptr);
    }
    EXPECT_EQ(seen.size(), enum_names(config::WorkloadType{}).size());
    EXPECT_TRUE(workload_kind(config::WorkloadType::training).in_studies);
    EXPECT_TRUE(workload_kind(config::WorkloadType::inference).in_studies);
    EXPECT_FALSE(workload_kind(config::WorkloadType::collective).in_studies);
}

TEST(WorkloadKinds, RunScenarioGivesWhatTheKindsEntryPointGives) {
    const config::ScenarioSpec train = config::load_scenario_text(kTraining, "train");
    const ScenarioOutcome a = run_scenario(train);
    ASSERT_TRUE(std::holds_alternative<TrainingRun>(a));
    EXPECT_EQ(std::get<TrainingRun>(a).step.step_time.seconds(),
              run_training(train).step.step_time.seconds());
    EXPECT_EQ(std::get<TrainingRun>(a).cost_usd, run_training(train).cost_usd);

    const config::ScenarioSpec serve = config::load_scenario_text(kServing, "serve");
    const ScenarioOutcome b = run_scenario(serve);
    ASSERT_TRUE(std::holds_alternative<ServingScenarioRun>(b));
    const ServingRun& got = std::get<ServingScenarioRun>(b).run;
    const ServingRun want = run_serving(serve).run;
    ASSERT_EQ(got.requests.size(), want.requests.size());
    for (std::size_t i = 0; i < got.requests.size(); ++i) {
        EXPECT_EQ(got.requests[i].finish.ns(), want.requests[i].finish.ns());
    }
}

TEST(WorkloadKinds, ChecksFailLocatedBeforeAnythingRuns) {
    // tp 24 does not divide llama2-7b's 32 heads: the plan refuses it.
    config::ScenarioSpec bad = config::load_scenario_text(kTraining, "train");
    bad.training.parallelism.tp = 24;
    try {
        check_scenario(bad);
        FAIL() << "tp 24 should be refused";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "workload.parallelism.tp");
    }
    EXPECT_THROW((void)run_scenario(bad), InputError);
    // More replicas than the instance holds: refused by the check before the fleet runs.
    config::ScenarioSpec crowded = config::load_scenario_text(kServing, "serve");
    crowded.inference.serving.replicas = 3; // an inf2 instance holds 24 ranks: 3 of tp 8 fit
    EXPECT_NO_THROW(check_scenario(crowded));
    crowded.inference.serving.replicas = 4;
    EXPECT_THROW(check_scenario(crowded), InputError);
}

} // namespace
} // namespace trnsim::sim
