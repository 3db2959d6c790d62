// A `tenants:` scenario: two tenants that do not interact (a training job with failures on 8
// UltraServers, a serving fleet on 8 others) run on one engine, and each gives exactly what
// its workload gives alone, for 1 and 2 threads: alone as the same file with only that
// tenant, and as the single-workload scenario it stands for on a cluster of its 8
// UltraServers. Then what the loader and the checks refuse.
#include "support/reliability_expect.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trnsim::sim {
namespace {

const std::string kFile = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/tenants/train-and-serve.yaml";

/// The shipped two-tenant scenario with a shorter serving run, its request records kept.
std::vector<std::string> small() {
    return {"tenants.chat.workload.requests.count=1200", "output.requests=true"};
}

/// The plain scenario of the serving tenant: the same sections on 8 UltraServers.
constexpr const char* kPlainServing = R"(name: chat
seed: 7
hardware: {chip: trn2, lnc: 2}
cluster: {ultraservers: 8}
workload:
  type: inference
  model: llama3-70b
  precision: bf16
  serving: {tp: 64, max_batch: 16, max_context: 4096, router: least_loaded}
  requests:
    input_tokens: {lognormal: {mean: 1000, sd: 600}, max: 3072}
    output_tokens: {lognormal: {mean: 250, sd: 150}, max: 1024}
    arrival: {poisson: {rate: 60/s}}
    count: 1200
  slo: {ttft: 1s, tpot: 50ms}
output: {requests: true}
)";

void expect_same_training(const TrainingRun& a, const TrainingRun& b) {
    ASSERT_TRUE(a.reliability && b.reliability);
    reliability::test::expect_same_replication(a.reliability->replications.at(0),
                                               b.reliability->replications.at(0));
    EXPECT_EQ(a.step.step_time.seconds(), b.step.step_time.seconds());
    EXPECT_EQ(a.time_to_train.seconds(), b.time_to_train.seconds());
    EXPECT_EQ(a.cost_usd, b.cost_usd);
}

void expect_same_serving(const ServingScenarioRun& a, const ServingScenarioRun& b) {
    const auto& x = a.run.requests;
    const auto& y = b.run.requests;
    ASSERT_EQ(x.size(), y.size());
    ASSERT_EQ(x.size(), 1200u);
    for (std::size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(x[i].arrival.ns(), y[i].arrival.ns());
        EXPECT_EQ(x[i].first_token.ns(), y[i].first_token.ns());
        EXPECT_EQ(x[i].finish.ns(), y[i].finish.ns());
        EXPECT_EQ(x[i].input_tokens, y[i].input_tokens);
        EXPECT_EQ(x[i].output_tokens, y[i].output_tokens);
        EXPECT_EQ(x[i].replica, y[i].replica);
        if (x[i].finish.ns() != y[i].finish.ns()) {
            break; // one difference says it all
        }
    }
    EXPECT_EQ(a.run.summary.ttft_p99.seconds(), b.run.summary.ttft_p99.seconds());
    EXPECT_EQ(a.run.stats.end.seconds(), b.run.stats.end.seconds());
    EXPECT_EQ(a.run.stats.events, b.run.stats.events);
    EXPECT_EQ(a.cost_usd, b.cost_usd);
    EXPECT_EQ(a.mbu, b.mbu);
}

TEST(Tenants, EachTenantGivesWhatItsWorkloadGivesAlone) {
    const config::ScenarioSpec both = config::load_scenario(kFile, small());
    ASSERT_EQ(both.tenants.size(), 2u);
    EXPECT_EQ(both.cluster.ultraservers, 16);
    const config::ScenarioSpec& train = *both.tenants[0].scenario;
    const config::ScenarioSpec& chat = *both.tenants[1].scenario;
    EXPECT_EQ(train.cluster.ultraservers, 8);
    EXPECT_EQ(chat.cluster.ultraservers, 8);
    EXPECT_EQ(both.tenants[1].allocation.first, 8);

    // Alone: each tenant's own scenario through the single-workload path, and the plain
    // scenario of the serving tenant.
    const TrainingRun train_alone = run_training(train);
    const ServingScenarioRun chat_alone = run_serving(chat, 1);
    const ServingScenarioRun plain =
        run_serving(config::load_scenario_text(kPlainServing, "chat.yaml"), 1);
    expect_same_serving(plain, chat_alone);
    EXPECT_GT(train_alone.reliability->replications.at(0).failures, 0);

    for (const int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        const TenantsRun run = run_tenants(both, threads);
        ASSERT_EQ(run.tenants.size(), 2u);
        EXPECT_EQ(run.tenants[0].name, "pretrain");
        EXPECT_EQ(run.tenants[1].name, "chat");
        expect_same_training(std::get<TrainingRun>(run.tenants[0].outcome), train_alone);
        expect_same_serving(std::get<ServingScenarioRun>(run.tenants[1].outcome), chat_alone);
        // The engine ran both: its events are the tenants' (the training job's after its end
        // dropped, none here: it ends before its next pause).
        EXPECT_EQ(run.events, run.tenants[0].engine_events + run.tenants[1].engine_events);
        EXPECT_EQ(run.tenants[1].engine_events, chat_alone.run.stats.events);
    }
}

TEST(Tenants, TheLoaderChecksTheList) {
    const auto refused = [](const std::vector<std::string>& sets, const std::string& key,
                            const std::string& words, bool in_file = true) {
        SCOPED_TRACE(key);
        try {
            (void)config::load_scenario(kFile, sets);
            ADD_FAILURE() << "loaded";
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), key) << e.what();
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
            EXPECT_EQ(std::string(e.what()).find("train-and-serve.yaml:") != std::string::npos,
                      in_file)
                << e.what();
        }
    };
    refused({"tenants.chat.allocation.first=4"}, "tenants[1].allocation", "overlaps allocation 0");
    refused({"tenants.chat.allocation.ultraservers=9"}, "tenants[1].allocation",
            "the cluster has 16");
    refused({"tenants.chat.name=pretrain"}, "tenants[1].name", "another tenant is named");
    refused({"tenants.chat.allocation.instances=4"}, "tenants[1].allocation.instances",
            "counted in ultraservers");
    refused({"tenants.chat.workload.serving.max_batch=0"}, "tenants[1].workload.serving.max_batch",
            "");
    refused({"workload.type=training"}, "workload", "unknown key");
    refused({"tenants.chat.colour=blue"}, "tenants[1].colour", "unknown key");
    refused({"tenants.nobody.workload.type=training"}, "tenants.nobody.workload.type",
            "no entry named nobody", false);
}

TEST(Tenants, ASharedSettingWarnsOnlyWhenNoTenantUsesIt) {
    const auto warned = [](const config::ScenarioSpec& spec, const std::string& key) {
        int n = 0;
        for (const config::Warning& w : spec.warnings) {
            n += w.key_path == key ? 1 : 0;
        }
        return n;
    };
    // Replications serve the training tenant's run simulation, the KV sampling the serving
    // fleet: neither warns. Chip speeds serve neither (analytic training, serving): one
    // warning.
    const config::ScenarioSpec spec = config::load_scenario(
        kFile, {"simulation.replications=1", "simulation.kv_sample=2s", "hardware.speed.sd=0.1",
                "tenants.chat.workload.serving.max_batch=8"});
    EXPECT_EQ(warned(spec, "simulation.replications"), 0);
    EXPECT_EQ(warned(spec, "simulation.kv_sample"), 0);
    EXPECT_EQ(warned(spec, "hardware.speed.sd") + warned(spec, "hardware.speed"), 1);
}

TEST(Tenants, AnEntryWithoutItsKeysIsAnInputError) {
    // Keys missing from a tenant (its name, its allocation) are input errors at the entry,
    // not a failed lookup in the document.
    const std::string head = "name: t\nhardware: {chip: trn2}\ncluster: {ultraservers: 4}\n";
    const std::pair<std::string, std::string> cases[] = {
        {head + "tenants:\n  - allocation: {ultraservers: 2}\n    workload: {type: training}\n",
         "tenants[0].name"},
        {head + "tenants:\n  - name: a\n    workload: {type: training}\n",
         "tenants[0].allocation"},
        {head + "tenants:\n  - name: a\n    allocation: {ultraservers: 2}\n",
         "tenants[0].workload"},
        {"name: t\nhardware: {chip: trn2}\ntenants:\n  - name: a\n", "cluster"},
    };
    for (const auto& [text, key] : cases) {
        try {
            (void)config::load_scenario_text(text, "t");
            ADD_FAILURE() << "loaded: " << key;
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), key) << e.what();
        }
    }
}

TEST(Tenants, WhatCannotBeATenantIsRefusedBeforeAnythingRuns) {
    // A tenant's own checks (here serving's: tp must divide the heads), located and keyed
    // under its entry.
    try {
        check_scenario(config::load_scenario(kFile, {"tenants.chat.workload.serving.tp=3"}));
        ADD_FAILURE() << "checked";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "tenants[1].workload.serving.tp") << e.what();
        EXPECT_NE(std::string(e.what()).find("train-and-serve.yaml:"), std::string::npos)
            << e.what();
    }
    // One replication per training job.
    const config::ScenarioSpec spec = config::load_scenario(
        kFile, {"tenants.pretrain.workload.parallelism.tp=16", "simulation.replications=3"});
    try {
        check_scenario(spec);
        ADD_FAILURE() << "checked";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "simulation.replications") << e.what();
        EXPECT_NE(std::string(e.what()).find("one replication"), std::string::npos);
    }
}

} // namespace
} // namespace trnsim::sim
