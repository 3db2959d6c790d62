#include "trnsim/config/load.hpp"
#include "trnsim/workload/plan.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace trnsim::workload {
namespace {

config::ScenarioSpec scenario(const std::vector<std::string>& overrides = {}) {
    return config::load_scenario(std::string(TRNSIM_SOURCE_DIR) + "/scenarios/default.yaml",
                                 overrides);
}

Plan plan_of(const config::ScenarioSpec& s) {
    return build_plan(s.training, s.hardware.chip, s.hardware.lnc, s.cluster,
                      s.hardware.hbm_reserve);
}

InputError plan_error(const std::vector<std::string>& overrides) {
    const auto s = scenario(overrides);
    try {
        plan_of(s);
    } catch (const InputError& e) {
        return e;
    }
    ADD_FAILURE() << "expected a plan error";
    return InputError("", "");
}

std::vector<int> members(const network::GroupShape& g) {
    std::vector<int> m;
    for (const auto& l : g.levels) {
        m.push_back(l.members);
    }
    return m;
}

TEST(Plan, DefaultScenarioShape) {
    const Plan p = plan_of(scenario());
    EXPECT_EQ(p.cluster.chips(), 1024);
    EXPECT_EQ(p.cluster.instances(), 64);
    EXPECT_EQ(p.ranks, 4096);
    EXPECT_EQ(p.dp, 64);
    EXPECT_EQ(p.microbatches, 16); // 1024 / (64 x 1)
    EXPECT_EQ(p.tokens_per_step, 1024 * 8192);
    EXPECT_EQ(p.steps, 238'419); // ceil(2e12 / 8,388,608)
    ASSERT_EQ(p.stages.size(), 4u);
    EXPECT_EQ(p.stages[0].dense_layers, 20);
    EXPECT_TRUE(p.stages[0].has_embedding);
    EXPECT_TRUE(p.stages[3].has_head);
}

TEST(Plan, GroupsFollowThePlacement) {
    const Plan p = plan_of(scenario());
    // TP 16 = 4 ranks on each of 4 chips of one instance.
    EXPECT_EQ(members(p.group_shape(CommGroup::tp)), (std::vector<int>{4, 4, 1, 1}));
    // DP 64 with stride 16 ranks (4 chips): 4 chips per instance, 4 instances per UltraServer,
    // 4 UltraServers.
    EXPECT_EQ(members(p.group_shape(CommGroup::dp)), (std::vector<int>{1, 4, 4, 4}));
    // Pipeline neighbours are 1024 ranks (4 UltraServers) apart: EFA.
    const auto pp = p.group_shape(CommGroup::pp);
    ASSERT_EQ(pp.levels.size(), 1u);
    EXPECT_EQ(pp.levels[0].link, network::LinkClass::efa);
    // Per-member bandwidth is the chip's link shared by its 4 ranks.
    EXPECT_DOUBLE_EQ(p.group_shape(CommGroup::dp).levels[3].bandwidth.bytes_per_s(), 25e9 / 4);
    EXPECT_DOUBLE_EQ(p.group_shape(CommGroup::tp).levels[1].bandwidth.bytes_per_s(),
                     1024e9 / 4);
}

TEST(Plan, GroupShapesOfProgressionsMatchTheirMembers) {
    // A plan's group shapes come in closed form for groups that are one progression of
    // ranks; every shape must be what its members, enumerated, give (group_shape_with_engine).
    // By hand, two of them (16 UltraServers, 4,096 ranks): tp 8 = 2 chips of 4 ranks; dp 512
    // with stride 8 ranks (2 chips): 8 members per instance, 4 instances, 16 UltraServers.
    const std::vector<std::vector<std::string>> plans = {
        {},
        {"workload.model=llama3-8b", "workload.parallelism={tp: 8, pp: 1}"},
        {"workload.model=llama3-8b", "workload.parallelism={tp: 2, pp: 2, cp: 2}"},
        {"workload.parallelism={tp: 64, pp: 2}"},
        {"workload.model=llama3-8b", "workload.parallelism={tp: 4, pp: 1}",
         "cluster.ultraservers=null", "cluster.instances=64"},
        {"workload.parallelism={tp: 16, pp: 4, cp: 4}", "cluster.ultraservers=null",
         "cluster.instances=64"},
        {"workload.model=mixtral-8x7b", "workload.parallelism={tp: 4, pp: 1, ep: 8}"},
        {"workload.model=mixtral-8x7b", "workload.parallelism={tp: 4, pp: 1, ep: 4, cp: 2}"},
    };
    for (const auto& o : plans) {
        const Plan p = plan_of(scenario(o));
        for (const CommGroup g : {CommGroup::tp, CommGroup::cp, CommGroup::dp, CommGroup::ep,
                                  CommGroup::expert_dp}) {
            const network::GroupShape a = p.group_shape(g);
            const network::GroupShape b =
                group_shape_with_engine(p.chip, p.cluster, p.ranks_per_chip, p.group_members(g, 0),
                                        CollectiveIssue::in_graph);
            ASSERT_EQ(a.levels.size(), b.levels.size());
            for (std::size_t k = 0; k < a.levels.size(); ++k) {
                EXPECT_EQ(a.levels[k].members, b.levels[k].members)
                    << to_string(g) << " level " << k << " of plan " << (o.empty() ? "" : o[0]);
                EXPECT_EQ(a.levels[k].bandwidth.bytes_per_s(), b.levels[k].bandwidth.bytes_per_s());
                EXPECT_EQ(a.levels[k].step_latency.ns(), b.levels[k].step_latency.ns());
            }
            EXPECT_EQ(a.reduce_bandwidth.bytes_per_s(), b.reduce_bandwidth.bytes_per_s());
            // A step's collectives are operations of its compiled graph: no launch of their own.
            EXPECT_EQ(a.launch, b.launch);
            EXPECT_EQ(a.launch, Duration::zero());
        }
    }
    const Plan p =
        plan_of(scenario({"workload.model=llama3-8b", "workload.parallelism={tp: 8, pp: 1}"}));
    EXPECT_EQ(members(p.group_shape(CommGroup::tp)), (std::vector<int>{4, 2, 1, 1}));
    EXPECT_EQ(members(p.group_shape(CommGroup::dp)), (std::vector<int>{1, 8, 4, 16}));
}

TEST(Plan, OnlyACollectiveIssuedAlonePaysTheLaunch) {
    // nccom-test runs one collective a graph execution and pays the engine's launch each time;
    // inside a compiled graph the launch is the graph's (docs/network.md).
    const Plan p = plan_of(scenario({}));
    ASSERT_GT(p.chip.collectives.launch, Duration::zero());
    EXPECT_EQ(collective_launch(p.chip, CollectiveIssue::alone), p.chip.collectives.launch);
    EXPECT_EQ(collective_launch(p.chip, CollectiveIssue::in_graph), Duration::zero());
    const std::vector<std::int64_t> ranks{0, 1, 2, 3, 4, 5, 6, 7};
    const auto alone =
        group_shape_with_engine(p.chip, p.cluster, p.ranks_per_chip, ranks, CollectiveIssue::alone);
    const auto in_graph = group_shape_with_engine(p.chip, p.cluster, p.ranks_per_chip, ranks,
                                                  CollectiveIssue::in_graph);
    const double bytes = 1 << 20;
    EXPECT_NEAR(network::collective_seconds(network::CollectiveOp::all_reduce, bytes, alone) -
                    network::collective_seconds(network::CollectiveOp::all_reduce, bytes, in_graph),
                p.chip.collectives.launch.seconds(), 1e-12);
}

TEST(Plan, PlainInstancesHaveNoUltraServerLevel) {
    const Plan p = plan_of(scenario({"cluster.ultraservers=null", "cluster.instances=64"}));
    EXPECT_EQ(p.cluster.ultraservers(), 0);
    EXPECT_EQ(p.cluster.chips(), 1024);
    // DP: 4 per instance, then 16 instances over EFA (no NeuronLink between instances).
    EXPECT_EQ(members(p.group_shape(CommGroup::dp)), (std::vector<int>{1, 4, 16}));
}

TEST(Plan, ConstraintErrorsNameTheKey) {
    struct Case {
        std::vector<std::string> overrides;
        const char* path;
        const char* text;
    };
    const std::vector<Case> cases = {
        {{"workload.parallelism.tp=48"}, "workload.parallelism.tp", "64 attention heads"},
        {{"workload.parallelism.pp=81"}, "workload.parallelism.pp", "80 layers"},
        {{"workload.parallelism.schedule=interleaved", "workload.parallelism.virtual_stages=3"},
         "workload.parallelism.pp", "x virtual_stages = 3 must divide the model's 80 layers"},
        {{"workload.parallelism.pp=5", "cluster.ultraservers=3"}, "workload.parallelism",
         "tp x pp = 80 does not divide the 768 ranks"},
        {{"workload.parallelism.dp=32"}, "workload.parallelism.dp", "use dp: 64"},
        {{"workload.parallelism.ep=2"}, "workload.parallelism.ep", "dense"},
        {{"workload.global_batch=1000"}, "workload.global_batch", "multiple of dp x microbatch"},
        {{"workload.parallelism.schedule=interleaved"}, "workload.parallelism.virtual_stages",
         ">= 2"},
        {{"workload.parallelism.virtual_stages=2"}, "workload.parallelism.virtual_stages",
         "interleaved"},
        {{"hardware.lnc=4"}, "hardware.lnc", "allowed: 1, 2"},
    };
    for (const auto& c : cases) {
        const InputError e = plan_error(c.overrides);
        EXPECT_EQ(e.key_path(), c.path) << e.what();
        EXPECT_NE(std::string(e.what()).find(c.text), std::string::npos) << e.what();
    }
}

TEST(Plan, Trn1HasNoUltraServers) {
    const InputError e = plan_error({"hardware.chip=trn1", "hardware.lnc=null"});
    EXPECT_EQ(e.key_path(), "cluster.ultraservers");
    EXPECT_NE(e.message().find("cluster.instances"), std::string::npos);
}

TEST(Plan, ChipsWithoutEfaRunOnOneInstance) {
    // inf2 has no EFA (instance.efa_bandwidth 0): two instances cannot form one job.
    const compute::ChipSpec inf2 = config::load_chip("inf2");
    const auto s = scenario();
    cluster::ClusterSpec two;
    two.instances = 2;
    try {
        build_plan(s.training, inf2, 1, two, inf2.hbm_runtime_reserve);
        ADD_FAILURE() << "expected a plan error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "cluster.instances");
        EXPECT_NE(e.message().find("no EFA"), std::string::npos);
    }
}

TEST(Plan, MemoryThatDoesNotFitSaysWhatToChange) {
    const InputError e = plan_error({"workload.model=llama3-405b", "cluster.ultraservers=1",
                                     "workload.parallelism.tp=64", "workload.parallelism.pp=2",
                                     "workload.global_batch=64", "workload.parallelism.zero=0",
                                     "workload.parallelism.recompute=none"});
    EXPECT_EQ(e.key_path(), "workload.parallelism");
    const std::string w = e.what();
    EXPECT_NE(w.find("does not fit in HBM"), std::string::npos) << w;
    EXPECT_NE(w.find("24.0 GiB per rank"), std::string::npos) << w;
    EXPECT_NE(w.find("higher zero stage"), std::string::npos) << w;
    EXPECT_NE(w.find("recompute: full"), std::string::npos) << w;
    // zero 0 shards nothing over dp: more chips cannot help.
    EXPECT_NE(w.find("more chips would not help: at zero 0 a larger dp shards nothing"),
              std::string::npos)
        << w;
}

// More chips are suggested only when a larger dp could shard away the excess. Llama 3 70B at
// tp 8, pp 4 on 32 UltraServers (zero 1): stage 0 needs 29.0 GiB of 24.0 GiB, and zero 1 shards
// only the 101 MiB optimizer state (the user guide's old example). At zero 3 on 2 UltraServers
// (dp 8) the weights, gradients and optimizer state sharded without limit would free more than
// the excess.
TEST(Plan, MoreChipsAreAdvisedOnlyWhenShardingCouldCloseTheGap) {
    const InputError z1 = plan_error({"cluster.ultraservers=32", "workload.parallelism.tp=8"});
    const std::string w1 = z1.what();
    EXPECT_NE(w1.find("needs 29.0 GiB"), std::string::npos) << w1;
    EXPECT_NE(w1.find("more chips would not help: at zero 1 a larger dp shards only 101 MiB"),
              std::string::npos)
        << w1;
    EXPECT_EQ(w1.find("or use more chips"), std::string::npos) << w1;
}

TEST(Plan, WeightAndOptimizerBytesByHand) {
    // Llama 3 8B on one trn2 instance (64 ranks), tp 8: each rank holds 1/8 of every matrix.
    const auto s = scenario({"workload.model=llama3-8b", "cluster.ultraservers=null",
                             "cluster.instances=1", "workload.parallelism.tp=8",
                             "workload.parallelism.pp=1", "workload.global_batch=64"});
    const Plan p = plan_of(s);
    EXPECT_EQ(p.dp, 8);
    const std::int64_t per_rank = 8'030'261'248 / 8; // divides exactly
    EXPECT_EQ(p.stages[0].dense_params_per_rank, per_rank);
    const MemoryBreakdown& b = p.memory.stages[0];
    EXPECT_EQ(b.weights.count(), 2 * per_rank);
    EXPECT_EQ(b.gradients.count(), 2 * per_rank);
    EXPECT_EQ(b.optimizer.count(), 12 * per_rank / 8); // ZeRO-1 over dp = 8
    EXPECT_EQ(b.reserve.count(), (std::int64_t{2} << 30) / 4);
}

TEST(Plan, OptimizerStateBytesByHand) {
    // The same plan with no FP32 master copy (BF16 weights updated with stochastic rounding)
    // and with BF16 moments: 12, 8, 8 and 4 bytes a parameter, sharded over dp = 8; and the
    // checkpoint (tests/unit/sim) holds the BF16 weights beside that state.
    const std::int64_t per_rank = 8'030'261'248 / 8;
    const std::pair<std::vector<std::string>, std::int64_t> cases[] = {
        {{}, 12},
        {{"workload.optimizer.master_weights=none"}, 8},
        {{"workload.optimizer.moments=bf16"}, 8},
        {{"workload.optimizer.master_weights=none", "workload.optimizer.moments=bf16"}, 4},
    };
    for (const auto& [extra, bytes] : cases) {
        std::vector<std::string> sets = {"workload.model=llama3-8b", "cluster.ultraservers=null",
                                         "cluster.instances=1", "workload.parallelism.tp=8",
                                         "workload.parallelism.pp=1",
                                         "workload.global_batch=64"};
        sets.insert(sets.end(), extra.begin(), extra.end());
        const Plan p = plan_of(scenario(sets));
        EXPECT_EQ(p.memory.stages[0].optimizer.count(), bytes * per_rank / 8) << bytes;
        EXPECT_EQ(p.memory.stages[0].weights.count(), 2 * per_rank) << bytes;
    }
}

TEST(Plan, HigherZeroStagesNeverNeedMoreMemory) {
    std::int64_t prev = std::numeric_limits<std::int64_t>::max();
    for (int zero = 0; zero <= 3; ++zero) {
        const Plan p = plan_of(scenario({"workload.model=llama3-8b",
                                         "workload.parallelism.zero=" + std::to_string(zero)}));
        const auto& b = p.memory.stages[0];
        EXPECT_LE((b.weights + b.gradients + b.optimizer).count(), prev) << zero;
        prev = (b.weights + b.gradients + b.optimizer).count();
    }
}

TEST(Plan, ActivationBytesByHand) {
    ModelSpec m;
    m.layers = 1;
    m.hidden = 128;
    m.heads = 4;
    m.kv_heads = 2;
    m.head_dim = 32;
    m.ffn_hidden = 256;
    m.vocab = 1000;
    // tokens 10, tp 1, BF16. Norm inputs/outputs 4 x 2,560; q,k,v 10 x 8 heads x 32 x 2 = 5,120;
    // attention output 2,560 + softmax statistics 160; SwiGLU 10 x 3 x 256 x 2 = 15,360.
    EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, false, 10, 1, false, RecomputeSet::of(Recompute::none), 2, 0),
                     33'440.0);
    EXPECT_DOUBLE_EQ(
        activation_bytes_per_layer(m, false, 10, 1, false, RecomputeSet::of(Recompute::selective), 2, 0), 30'720.0);
    EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, false, 10, 1, false, RecomputeSet::of(Recompute::full), 2, 0),
                     2'560.0);
}

TEST(Plan, FewMicrobatchesWarn) {
    const Plan p = plan_of(scenario({"workload.global_batch=128"}));
    EXPECT_EQ(p.microbatches, 2);
    ASSERT_FALSE(p.warnings.empty());
    EXPECT_NE(p.warnings[0].find("pipeline bubble"), std::string::npos);
}

// ---------------------------------------------------------------- uneven pipeline stages

std::vector<std::int64_t> counts(int pp, std::int64_t layers, StageBalance b = StageBalance::even,
                                 std::vector<int> list = {}) {
    ParallelismSpec par;
    par.pp = pp;
    par.balance = b;
    par.stage_layers = std::move(list);
    return stage_layer_counts(par, layers);
}

TEST(StageLayers, TheLayoutRules) {
    using V = std::vector<std::int64_t>;
    // even: pp divides the layers, layers / pp each (the layout before stage layouts existed).
    EXPECT_EQ(counts(4, 80), V(4, 20));
    // even with a remainder: 126 = 16 x 7 + 14, one more on stages 1 to 14.
    V llama(16, 8);
    llama.front() = llama.back() = 7;
    EXPECT_EQ(counts(16, 126), llama);
    // 10 = 4 x 2 + 2: stages 1 and 2; 11 = 4 x 2 + 3: stages 1 to 3 (the last one too).
    EXPECT_EQ(counts(4, 10), (V{2, 3, 3, 2}));
    EXPECT_EQ(counts(4, 11), (V{2, 3, 3, 3}));
    EXPECT_EQ(counts(4, 4), (V{1, 1, 1, 1}));
    // llama3: k = (126 + 2) / 16 = 8, the first and the last stage 7 (Llama 3 405B's layout).
    EXPECT_EQ(counts(16, 126, StageBalance::llama3), llama);
    // k = (10 + 2) / 4 = 3; k = (32 + 2) / 17 = 2: [1, 2 x 15, 1].
    EXPECT_EQ(counts(4, 10, StageBalance::llama3), (V{2, 3, 3, 2}));
    V two(17, 2);
    two.front() = two.back() = 1;
    EXPECT_EQ(counts(17, 32, StageBalance::llama3), two);
    // An explicit list wins over the balance.
    EXPECT_EQ(counts(3, 10, StageBalance::llama3, {5, 4, 1}), (V{5, 4, 1}));
}

TEST(StageLayers, ImpossibleLayoutsNameTheKey) {
    const auto error = [](int pp, std::int64_t layers, StageBalance b, std::vector<int> list) {
        try {
            counts(pp, layers, b, std::move(list));
        } catch (const InputError& e) {
            return e;
        }
        ADD_FAILURE() << "expected an error";
        return InputError("", "");
    };
    const auto even = StageBalance::even, llama3 = StageBalance::llama3;
    struct Case {
        InputError e;
        const char* path;
        const char* text;
    };
    const Case cases[] = {
        {error(4, 10, even, {2, 3, 5}), "workload.parallelism.stage_layers", "lists 3 stages"},
        {error(4, 10, even, {2, 3, 3, 3}), "workload.parallelism.stage_layers",
         "hold 11 layers but the model has 10"},
        {error(4, 10, even, {2, 0, 5, 3}), "workload.parallelism.stage_layers[1]",
         "at least one"},
        {error(11, 10, even, {}), "workload.parallelism.pp", "exceeds the model's 10 layers"},
        {error(2, 10, llama3, {}), "workload.parallelism.balance", "pp >= 3"},
        {error(12, 126, llama3, {}), "workload.parallelism.balance", "layers + 2 = 128"},
        {error(6, 4, llama3, {}), "workload.parallelism.balance", "layers + 2 = 6"}, // k = 1
    };
    for (const auto& c : cases) {
        EXPECT_EQ(c.e.key_path(), c.path) << c.e.what();
        EXPECT_NE(std::string(c.e.what()).find(c.text), std::string::npos) << c.e.what();
    }
}

/// Llama 3 8B cut to 10 layers on one UltraServer (256 ranks): tp 4, pp 4, dp 16, 4
/// microbatches.
config::ScenarioSpec ten_layers(const std::vector<std::string>& more = {}) {
    std::vector<std::string> o = {"workload.model={preset: llama3-8b, layers: 10}",
                                  "cluster.ultraservers=1",
                                  "workload.parallelism={tp: 4, pp: 4, zero: 1}",
                                  "workload.global_batch=64"};
    o.insert(o.end(), more.begin(), more.end());
    return scenario(o);
}

TEST(StageLayers, ParameterMemoryPerStageByHand) {
    // Llama 3 8B: hidden 4096, 32 heads, 8 kv heads of 128, ffn 14336, vocab 128256, RMSNorm.
    // A layer: q and o 2 x 4096^2 = 33,554,432, k and v 2 x 4096 x 1024 = 8,388,608, two
    // norms 8,192, SwiGLU 3 x 4096 x 14336 = 176,160,768: 218,112,000. The embedding and the
    // output head 128256 x 4096 = 525,336,576 each, the final norm 4,096 (the 32-layer
    // model: 32 x 218,112,000 + 2 x 525,336,576 + 4,096 = 8,030,261,248 as published).
    // stage_layers [2, 3, 3, 2], each matrix split over tp 4:
    //   stage 0: (2 x 218,112,000 + 525,336,576) / 4 = 240,390,144
    //   stages 1, 2: 3 x 218,112,000 / 4 = 163,584,000
    //   stage 3: (2 x 218,112,000 + 4,096 + 525,336,576) / 4 = 240,391,168
    const Plan p = plan_of(ten_layers({"workload.parallelism.stage_layers=[2, 3, 3, 2]"}));
    ASSERT_EQ(p.stages.size(), 4u);
    EXPECT_EQ(p.dp, 16);
    EXPECT_EQ(p.microbatches, 4);
    const std::int64_t per_rank[] = {240'390'144, 163'584'000, 163'584'000, 240'391'168};
    const std::int64_t first[] = {0, 2, 5, 8};
    for (int i = 0; i < 4; ++i) {
        const StageLayout& st = p.stages[static_cast<std::size_t>(i)];
        const MemoryBreakdown& b = p.memory.stages[static_cast<std::size_t>(i)];
        EXPECT_EQ(st.first_layer, first[i]) << i;
        EXPECT_EQ(st.dense_params_per_rank, per_rank[i]) << i;
        EXPECT_EQ(b.weights.count(), 2 * per_rank[i]) << i;   // BF16
        EXPECT_EQ(b.gradients.count(), 2 * per_rank[i]) << i; // BF16, not sharded by ZeRO-1
        EXPECT_EQ(b.optimizer.count(), 12 * per_rank[i] / 16) << i; // over dp 16, exact
    }
    EXPECT_TRUE(p.stages[0].has_embedding);
    EXPECT_TRUE(p.stages[3].has_head);
    // 1F1B keeps min(m, pp - i) = 4, 3, 2, 1 microbatches in flight: 2 x 4 = 8, 3 x 3 = 9,
    // 3 x 2 = 6 and 2 x 1 = 2 layer-microbatches of activations (the last stage adds logits).
    const double a0 = static_cast<double>(p.memory.stages[0].activations.count());
    EXPECT_NEAR(static_cast<double>(p.memory.stages[1].activations.count()), a0 * 9.0 / 8.0, 1.0);
    EXPECT_NEAR(static_cast<double>(p.memory.stages[2].activations.count()), a0 * 6.0 / 8.0, 1.0);
    // The same plan from the default layout: 10 = 4 x 2 + 2 puts the extra layers on stages
    // 1 and 2; balance: llama3 gives k = 3, [2, 3, 3, 2] too.
    for (const auto& more : {std::vector<std::string>{},
                             std::vector<std::string>{"workload.parallelism.balance=llama3"}}) {
        const Plan q = plan_of(ten_layers(more));
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(q.memory.stages[static_cast<std::size_t>(i)].total(),
                      p.memory.stages[static_cast<std::size_t>(i)].total());
        }
    }
}

TEST(StageLayers, UnevenDefaultWarnsAndChosenLayoutsDoNot) {
    const auto warned = [](const config::ScenarioSpec& s) {
        for (const auto& w : s.warnings) {
            if (w.key_path == "workload.parallelism.pp") {
                return w.message;
            }
        }
        return std::string();
    };
    const std::string w = warned(ten_layers());
    EXPECT_NE(w.find("does not divide the model's 10 layers: stages 1 to 2 hold 3 layers, the "
                     "others 2 (balance: even)"),
              std::string::npos)
        << w;
    EXPECT_EQ(warned(ten_layers({"workload.parallelism.balance=even"})), "");
    EXPECT_EQ(warned(ten_layers({"workload.parallelism.stage_layers=[2, 3, 3, 2]"})), "");
    EXPECT_EQ(warned(ten_layers({"workload.model={preset: llama3-8b, layers: 12}"})), "");
}

TEST(StageLayers, MixtureOfExpertsLayersFollowTheStageBoundaries) {
    // DeepSeek-V3-like first dense layers: the stage that holds layer first_dense_layers
    // starts the MoE layers. Mixtral has none dense, so use an inline count of 3.
    const Plan p = plan_of(scenario({"workload.model={preset: mixtral-8x7b, layers: 10, "
                                     "moe: {first_dense_layers: 3}}",
                                     "cluster.ultraservers=1",
                                     "workload.parallelism={tp: 4, pp: 4, zero: 1}",
                                     "workload.parallelism.stage_layers=[2, 3, 3, 2]",
                                     "workload.global_batch=64"}));
    // Layers 0-1 | 2-4 | 5-7 | 8-9; dense are 0, 1, 2.
    EXPECT_EQ(p.stages[0].dense_layers, 2);
    EXPECT_EQ(p.stages[0].moe_layers, 0);
    EXPECT_EQ(p.stages[1].dense_layers, 1);
    EXPECT_EQ(p.stages[1].moe_layers, 2);
    EXPECT_EQ(p.stages[2].moe_layers, 3);
    EXPECT_EQ(p.stages[3].moe_layers, 2);
}

// ---------------------------------------------------------------- context parallelism

TEST(ContextParallel, PlacementByHand) {
    // tp 2, cp 2, dp 2, pp 2 = 16 ranks: rank = t + 2 (c + 2 (d + 2 s)).
    Plan p;
    p.tp = 2;
    p.cp = 2;
    p.dp = 2;
    p.pp = 2;
    p.ranks = 16;
    using V = std::vector<std::int64_t>;
    // Rank 13: t 1, c 0, d 1, s 1 (1 + 2 (0 + 2 (1 + 2))).
    EXPECT_EQ(p.group_members(CommGroup::tp, 13), (V{12, 13}));
    EXPECT_EQ(p.group_members(CommGroup::cp, 13), (V{13, 15}));
    // Gradients are reduced over dp x cp: every (c, d) of stage 1 at t = 1.
    EXPECT_EQ(p.group_members(CommGroup::dp, 13), (V{9, 11, 13, 15}));
    EXPECT_EQ(p.group_members(CommGroup::pp, 13), (V{5, 13}));
    // Rank 6: t 0, c 1, d 1, s 0.
    EXPECT_EQ(p.group_members(CommGroup::cp, 6), (V{4, 6}));
    EXPECT_EQ(p.group_members(CommGroup::dp, 6), (V{0, 2, 4, 6}));
    EXPECT_EQ(p.group_members(CommGroup::pp, 6), (V{6, 14}));
    EXPECT_EQ(p.group_size(CommGroup::cp), 2);
    EXPECT_EQ(p.group_size(CommGroup::dp), 4);
    // Every rank is in exactly one CP group.
    std::vector<int> seen(16, 0);
    for (std::int64_t r = 0; r < 16; r += 1) {
        const V g = p.group_members(CommGroup::cp, r);
        if (g.front() == r) {
            for (auto m : g) {
                ++seen[static_cast<std::size_t>(m)];
            }
        }
    }
    EXPECT_EQ(seen, std::vector<int>(16, 1));
}

TEST(ContextParallel, ExpertGroupsWithContextParallelism) {
    // tp 2, cp 2, dp 4, ep 2, pp 1: the experts are split over consecutive replicas (stride
    // tp x cp = 4); the ranks that hold the same experts are both CP ranks of replicas 1 and 3.
    Plan p;
    p.tp = 2;
    p.cp = 2;
    p.dp = 4;
    p.ep = 2;
    p.pp = 1;
    p.ranks = 16;
    using V = std::vector<std::int64_t>;
    // Rank 5: t 1, c 0, d 1.
    EXPECT_EQ(p.group_members(CommGroup::ep, 5), (V{1, 5}));
    EXPECT_EQ(p.group_members(CommGroup::expert_dp, 5), (V{5, 7, 13, 15}));
    const GroupLayout l = p.group_layout(CommGroup::expert_dp);
    EXPECT_EQ(l.inner_stride, 2);
    EXPECT_EQ(l.inner_size, 2);
    EXPECT_EQ(l.outer_stride, 8);
    EXPECT_EQ(l.outer_size, 2);
    EXPECT_EQ(p.group_size(CommGroup::expert_dp), 4);
}

TEST(ContextParallel, DataParallelDegreeAndGroupShapes) {
    // 4,096 ranks / (tp 16 x cp 2 x pp 4) = 32 replicas.
    const Plan p = plan_of(scenario({"workload.parallelism.cp=2"}));
    EXPECT_EQ(p.cp, 2);
    EXPECT_EQ(p.dp, 32);
    EXPECT_EQ(p.microbatches, 32); // 1024 / 32
    EXPECT_EQ(p.tokens_per_rank(), 4096);
    // A CP group is two TP groups of 16 ranks = 4 chips each: 8 chips of one instance.
    EXPECT_EQ(members(p.group_shape(CommGroup::cp)), (std::vector<int>{1, 2, 1, 1}));
    EXPECT_EQ(p.group_shape(CommGroup::dp).size(), 64);
    // Pipeline neighbours are tp x cp x dp = 1,024 ranks apart, as without CP.
    EXPECT_EQ(p.group_shape(CommGroup::pp).levels[0].link, network::LinkClass::efa);
}

TEST(ContextParallel, ConfigErrors) {
    // 2 x cp must divide the sequence length (8192 = 2^13): cp 3 does not, nor does cp 8192.
    InputError e = plan_error({"workload.parallelism.cp=3"});
    EXPECT_EQ(e.key_path(), "workload.parallelism.cp");
    EXPECT_NE(e.message().find("2 x cp = 6"), std::string::npos) << e.what();
    e = plan_error({"workload.parallelism.cp=8192", "workload.parallelism.tp=1"});
    EXPECT_EQ(e.key_path(), "workload.parallelism.cp");
    // tp 16 x cp 16 x pp 4 = 1,024 divides 4,096 ranks; on 3 UltraServers (768) it does not.
    e = plan_error({"workload.parallelism.cp=16", "cluster.ultraservers=3"});
    EXPECT_EQ(e.key_path(), "workload.parallelism");
    EXPECT_NE(e.message().find("tp x cp x pp = 1024 does not divide the 768 ranks"),
              std::string::npos)
        << e.what();
    e = plan_error({"workload.parallelism.cp=2", "workload.parallelism.dp=64"});
    EXPECT_EQ(e.key_path(), "workload.parallelism.dp");
    EXPECT_NE(e.message().find("use dp: 32"), std::string::npos) << e.what();
}

TEST(ContextParallel, MemoryByHand) {
    // Llama 3 8B (hidden 4096, 8 kv heads of 128), sequence 8192, tp 4, pp 4 on 2 UltraServers
    // (512 ranks). A global batch of 256 keeps at least pp microbatches in flight either way
    // (dp 32: 8 microbatches; cp 2, dp 16: 16), so the activations differ only by the tokens.
    const std::vector<std::string> base = {
        "workload.model=llama3-8b", "cluster.ultraservers=2", "workload.parallelism.tp=4",
        "workload.parallelism.pp=4", "workload.global_batch=256"};
    std::vector<std::string> with_cp = base;
    with_cp.push_back("workload.parallelism.cp=2");
    const Plan one = plan_of(scenario(base));
    const Plan two = plan_of(scenario(with_cp));
    ASSERT_EQ(one.dp, 32);
    ASSERT_EQ(two.dp, 16);
    for (int s = 0; s < 4; ++s) {
        const MemoryBreakdown& a = one.memory.stages[static_cast<std::size_t>(s)];
        const MemoryBreakdown& b = two.memory.stages[static_cast<std::size_t>(s)];
        // Per-token tensors (and the last stage's logits) halve; int64 rounding aside.
        EXPECT_NEAR(static_cast<double>(b.activations.count()),
                    static_cast<double>(a.activations.count()) / 2.0, 1.0)
            << s;
        // Parameters do not depend on CP; ZeRO-1 shards over dp x cp = 32 in both plans.
        EXPECT_EQ(b.weights.count(), a.weights.count());
        EXPECT_EQ(b.gradients.count(), a.gradients.count());
        EXPECT_EQ(b.optimizer.count(), a.optimizer.count());
        // Buffers. Without CP: two sequence-parallel gathered activations,
        // 2 x 8192 x 4096 x 2 = 134,217,728. With cp 2: the same over 4,096 tokens
        // (67,108,864) plus four K/V blocks of 4,096 tokens x 2 kv heads (8 / tp 4) x
        // (128 + 128) x 2 bytes = 4 x 4,194,304 = 16,777,216.
        EXPECT_EQ(a.buffers.count(), 134'217'728);
        EXPECT_EQ(b.buffers.count(), 67'108'864 + 16'777'216);
    }
    EXPECT_DOUBLE_EQ(kv_block_bytes(two.training.model, 4096, 4, 2), 4'194'304.0);
}

} // namespace
} // namespace trnsim::workload
