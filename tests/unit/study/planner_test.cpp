// The planner: the search space it enumerates, its analytic estimates (checked by hand and
// against the full runs of the finalists), the constraints, the Pareto frontier, and results
// that do not depend on the thread count.
#include "trnsim/config/load.hpp"
#include "trnsim/study/planner.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace trnsim::study {
namespace {

const std::string kDir = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/";

config::PlanSpec plan_of(const std::string& body, const std::string& base) {
    return config::load_plan_text("base: " + kDir + base + "\n" + body, "p.yaml");
}

config::ScenarioSpec base_of(const config::PlanSpec& p) {
    return config::load_scenario_with(p.base, {});
}

TEST(Planner, EnumeratesEveryCombinationInOrder) {
    const auto p = plan_of(R"(search:
  ultraservers: [8, 16]
  tp: [8, 16, 32]
  recompute: [selective, full]
  checkpoint_interval: [auto, 1h]
  spares: [0, 2, 4]
)",
                           "llama3-405b-reliability.yaml");
    const auto base = base_of(p);
    const auto c = enumerate(p, base);
    ASSERT_EQ(c.size(), 2u * 3u * 2u * 2u * 3u);
    // Spares vary fastest, cluster size slowest; absent keys keep the base's values.
    EXPECT_EQ(c[1].spares, 2);
    EXPECT_EQ(c[3].checkpoint_interval, Duration::from_ns(std::int64_t{3600} * 1'000'000'000));
    EXPECT_EQ(c[0].checkpoint_interval, Duration::zero());
    EXPECT_EQ(c[6].recompute, workload::Recompute::full);
    EXPECT_EQ(c[12].tp, 16);
    EXPECT_EQ(c[36].domains, 16);
    EXPECT_EQ(c[36].pp, base.training.parallelism.pp);
    EXPECT_EQ(c[36].zero, base.training.parallelism.zero);
}

TEST(Planner, GlobalBatchVariesRightInsideTheClusterSize) {
    const auto p = plan_of(R"(search:
  ultraservers: [8, 16]
  global_batch: [1024, 4096]
  tp: [8, 16]
)",
                           "default.yaml");
    const auto base = base_of(p);
    const auto c = enumerate(p, base);
    ASSERT_EQ(c.size(), 8u);
    EXPECT_EQ(c[0].global_batch, 1024);
    EXPECT_EQ(c[1].global_batch, 1024);
    EXPECT_EQ(c[1].tp, 16);
    EXPECT_EQ(c[2].global_batch, 4096);
    EXPECT_EQ(c[2].tp, 8);
    EXPECT_EQ(c[3].domains, 8);
    EXPECT_EQ(c[4].domains, 16);
    EXPECT_EQ(c[4].global_batch, 1024);
    // The candidate's scenario carries its batch, from the plan file's line.
    const auto o = candidate_overrides(p, base, c[2]);
    const auto it = std::find_if(o.begin(), o.end(), [](const config::Override& x) {
        return x.path == "workload.global_batch";
    });
    ASSERT_NE(it, o.end());
    EXPECT_EQ(it->value, "4096");
    EXPECT_EQ(it->origin.line, 4);
    EXPECT_EQ(config::load_scenario_with(p.base, o).training.global_batch, 4096);

    // Without the key every candidate keeps the base's batch.
    const auto q = plan_of("search: {tp: [8, 16]}\n", "default.yaml");
    for (const auto& x : enumerate(q, base_of(q))) {
        EXPECT_EQ(x.global_batch, base.training.global_batch);
    }
}

TEST(Planner, ContextParallelismIsASearchKeyLikeTp) {
    // 2 cluster sizes x 2 tp x 3 cp = 12 candidates; cp varies right inside tp.
    const auto p = plan_of(R"(search:
  ultraservers: [8, 16]
  tp: [8, 16]
  cp: [1, 2, 4]
)",
                           "default.yaml");
    const auto base = base_of(p);
    const auto c = enumerate(p, base);
    ASSERT_EQ(c.size(), 2u * 2u * 3u);
    EXPECT_EQ(c[0].cp, 1);
    EXPECT_EQ(c[1].cp, 2);
    EXPECT_EQ(c[1].tp, 8);
    EXPECT_EQ(c[2].cp, 4);
    EXPECT_EQ(c[3].cp, 1);
    EXPECT_EQ(c[3].tp, 16);
    EXPECT_EQ(c[6].domains, 16);
    EXPECT_EQ(c[6].cp, 1);
    EXPECT_EQ(c[6].pp, base.training.parallelism.pp);
    // The candidate's scenario carries its cp, from the plan file's line.
    const auto o = candidate_overrides(p, base, c[2]);
    const auto it = std::find_if(o.begin(), o.end(), [](const config::Override& x) {
        return x.path == "workload.parallelism.cp";
    });
    ASSERT_NE(it, o.end());
    EXPECT_EQ(it->value, "4");
    EXPECT_EQ(it->origin.line, 5); // base, search, ultraservers, tp, cp
    EXPECT_EQ(config::load_scenario_with(p.base, o).training.parallelism.cp, 4);

    // Without the key every candidate keeps the base's cp (1 in default.yaml).
    ASSERT_EQ(base.training.parallelism.cp, 1);
    const auto q = plan_of("search: {tp: [8, 16]}\n", "default.yaml");
    for (const auto& x : enumerate(q, base_of(q))) {
        EXPECT_EQ(x.cp, 1);
    }
}

TEST(Planner, CandidatesThatDifferOnlyInCpHaveTheirOwnStepEstimate) {
    // default.yaml: 16 UltraServers = 4,096 ranks, tp 16, pp 4, batch 1,024. cp 1 leaves
    // dp = 4,096 / 64 = 64, cp 2 dp = 4,096 / 128 = 32 (both divide the batch). The two
    // candidates are adjacent and equal in every other key, so grouping them by the other keys
    // alone would give one step estimate for both.
    const auto p = plan_of("search: {cp: [1, 2]}\nfinalists: 2\nfrontier: 0\n", "default.yaml");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    ASSERT_EQ(r.candidates.size(), 2u);
    EXPECT_EQ(r.step_estimates, 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& x = r.estimates[i];
        ASSERT_EQ(x.verdict, Verdict::ok) << i << ": " << x.reason;
        EXPECT_EQ(x.dp, i == 0 ? 64 : 32);
        const auto wp = sim::make_plan(
            config::load_scenario_with(p.base, candidate_overrides(p, base, r.candidates[i])));
        EXPECT_EQ(wp.cp, r.candidates[i].cp);
        EXPECT_DOUBLE_EQ(x.step_time.seconds(), sim::estimate_step(wp).step_time.seconds());
    }
    EXPECT_NE(r.estimates[0].step_time.seconds(), r.estimates[1].step_time.seconds());
    // The finalists run with their candidate's cp.
    ASSERT_EQ(r.finalists.size(), 2u);
    for (const auto& f : r.finalists) {
        EXPECT_EQ(f.run.plan.cp, r.candidates[static_cast<std::size_t>(f.candidate)].cp);
    }
}

TEST(Planner, MasterWeightsIsASearchKeyThatSavesMemory) {
    // default.yaml (Llama 3 70B, 16 UltraServers, zero 1 over dp 64) with and without an FP32
    // master copy: the candidate without keeps 4 bytes a parameter less of optimizer state,
    // sharded over the 64 data-parallel ranks, has its own estimate, and its finalist runs so.
    const auto p = plan_of("search: {master_weights: [fp32, none]}\nfinalists: 2\nfrontier: 0\n",
                           "default.yaml");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    ASSERT_EQ(r.candidates.size(), 2u);
    EXPECT_EQ(r.candidates[0].master_weights, workload::MasterWeights::fp32);
    EXPECT_EQ(r.candidates[1].master_weights, workload::MasterWeights::none);
    EXPECT_EQ(r.step_estimates, 2);
    const auto plan_at = [&](std::size_t i) {
        return sim::make_plan(
            config::load_scenario_with(p.base, candidate_overrides(p, base, r.candidates[i])));
    };
    const workload::Plan fp32 = plan_at(0);
    const workload::Plan none = plan_at(1);
    EXPECT_EQ(none.training.optimizer.master_weights, workload::MasterWeights::none);
    const std::int64_t dense = fp32.stages[0].dense_params_per_rank;
    EXPECT_NEAR(static_cast<double>(fp32.memory.stages[0].optimizer.count() -
                                    none.memory.stages[0].optimizer.count()),
                4.0 * static_cast<double>(dense) / 64.0, 1.0);
    EXPECT_LT(r.estimates[1].memory_fraction, r.estimates[0].memory_fraction);
    EXPECT_LT(r.estimates[1].step_time.seconds(), r.estimates[0].step_time.seconds());
    ASSERT_EQ(r.finalists.size(), 2u);
    for (const auto& f : r.finalists) {
        EXPECT_EQ(f.run.plan.training.optimizer.master_weights,
                  r.candidates[static_cast<std::size_t>(f.candidate)].master_weights);
    }
    // FP32 training keeps no master copy: searching none is refused before anything runs.
    const auto f32 = plan_of("search: {master_weights: [fp32, none]}\n", "default.yaml");
    auto b32 = base_of(f32);
    b32.training.precision = compute::Precision::fp32;
    try {
        enumerate(f32, b32);
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search.master_weights");
    }
}

TEST(Planner, ACpThatDoesNotDivideIsRejectedNamingCp) {
    // default.yaml: sequence 8,192 = 2^13, tp 16, pp 4, 4,096 ranks. cp 3: 2 x 3 = 6 does not
    // divide 8,192. cp 128: 2 x 128 divides 8,192, but tp x cp x pp = 8,192 ranks are more
    // than the 4,096. cp 4: dp = 4,096 / 256 = 16 divides the batch of 1,024: it runs.
    const auto p = plan_of("search: {cp: [3, 128, 4]}\n", "default.yaml");
    const PlanResult r = run_plan(p, base_of(p), 1);
    ASSERT_EQ(r.candidates.size(), 3u);
    EXPECT_EQ(r.estimates[0].verdict, Verdict::invalid);
    EXPECT_EQ(r.estimates[0].reason.rfind("workload.parallelism.cp: cp = 3 must split", 0), 0u)
        << r.estimates[0].reason;
    EXPECT_EQ(r.estimates[1].verdict, Verdict::invalid);
    EXPECT_NE(r.estimates[1].reason.find("tp x cp x pp = 8192 does not divide the 4096 ranks"),
              std::string::npos)
        << r.estimates[1].reason;
    EXPECT_TRUE(std::isnan(r.estimates[1].step_time.seconds()));
    EXPECT_EQ(r.estimates[2].verdict, Verdict::ok) << r.estimates[2].reason;
    EXPECT_EQ(r.estimates[2].dp, 16);
    EXPECT_EQ(r.feasible, 1);
}

TEST(Planner, PipelineDegreesThatDoNotDivideTheLayersRunWithTheDefaultLayout) {
    // default.yaml: Llama 3 70B (80 layers), tp 16, 4,096 ranks. pp 32 does not divide the 80
    // layers: 80 = 32 x 2 + 16, so stages 1 to 16 hold 3 layers and the others 2 (balance:
    // even); dp = 4,096 / 512 = 8. Both candidates are estimated, and a finalist runs too.
    const auto p = plan_of("search: {pp: [4, 32]}\nfinalists: 2\nfrontier: 0\n", "default.yaml");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    ASSERT_EQ(r.candidates.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const auto& x = r.estimates[i];
        ASSERT_EQ(x.verdict, Verdict::ok) << i << ": " << x.reason;
        const auto wp = sim::make_plan(
            config::load_scenario_with(p.base, candidate_overrides(p, base, r.candidates[i])));
        EXPECT_DOUBLE_EQ(x.step_time.seconds(), sim::estimate_step(wp).step_time.seconds());
    }
    EXPECT_EQ(r.estimates[1].dp, 8);
    ASSERT_EQ(r.finalists.size(), 2u);
    for (const auto& f : r.finalists) {
        if (f.run.plan.pp == 32) {
            EXPECT_EQ(f.run.plan.stages[0].layers(), 2);
            EXPECT_EQ(f.run.plan.stages[16].layers(), 3);
            EXPECT_EQ(f.run.plan.stages[17].layers(), 2);
        }
    }
}

TEST(Planner, AnExplicitStageListCannotSearchOtherPipelineDegrees) {
    namespace fs = std::filesystem;
    const fs::path dir = test::scratch_path("trnsim-planner-stage-layers");
    fs::create_directories(dir);
    const fs::path scenario = dir / "base.yaml";
    std::ifstream in(kDir + "default.yaml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = "pp: 4,";
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), "pp: 4, stage_layers: [20, 20, 20, 20],");
    std::ofstream(scenario) << text;
    const auto p = config::load_plan_text(
        "base: " + scenario.string() + "\nsearch: {pp: [4, 8]}\n", "p.yaml");
    try {
        enumerate(p, base_of(p));
        ADD_FAILURE() << "expected an input error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search.pp");
        EXPECT_NE(e.message().find("cannot run with pp = 8"), std::string::npos) << e.what();
    }
}

TEST(Planner, TheCandidateCountGuardCountsCp) {
    // 1,000 cluster sizes x 1,001 cp values = 1,001,000 candidates: over the limit of one
    // million (10 million before: 800 MB of candidates) only with cp counted.
    const auto p = plan_of(R"(search:
  ultraservers: {from: 1, to: 1000, step: 1}
  cp: {from: 1, to: 1001, step: 1}
)",
                           "default.yaml");
    try {
        enumerate(p, base_of(p));
        FAIL() << "enumerated more than a million candidates";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search");
        EXPECT_NE(std::string(e.what()).find("has 1,001,000 candidates"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("at most 1,000,000"), std::string::npos) << e.what();
    }
}

TEST(Planner, CpBeatsPipelineStagesWhenTheBatchCapsDp) {
    // Llama 3 8B (32 layers) on 32,768-token sequences, 2 trn2 instances = 32 chips = 128
    // ranks, tp 8, microbatch 1, a global batch of only 8 sequences: at most 8 replicas.
    //   cp 1, pp 1: dp = 128 / 8 = 16 > 8 replicas the batch can feed: invalid.
    //   cp 1, pp 2: dp = 128 / 16 = 8, one microbatch per replica (m = 1).
    //   cp 2, pp 1: dp = 128 / 16 = 8, m = 1.
    //   cp 2, pp 2: dp = 128 / 32 = 4, m = 2.
    // Same chips, same tp, same dp: the 2x of ranks the batch cannot use as replicas goes to a
    // second pipeline stage or to a second CP rank. With m = 1 a pipeline does not overlap
    // anything: step ~ (m + pp - 1) x t_stage = 2 x t, where t is a microbatch through half the
    // layers on all 32,768 tokens (docs of sim/analytic.hpp). With cp 2 and pp 1 the one stage
    // runs all the layers on 16,384 tokens per rank; the per-token work is the same half, and
    // causal attention splits exactly in half over the two CP ranks (workload/program.hpp), so
    // step ~ 1 x t plus the key/value ring exchange, which is small next to the attention it
    // feeds at this length. So cp 2 takes half the step of pp 2 plus what only it pays: the
    // ring exchange, and the gradient reduction and optimizer over all 32 layers' parameters
    // per rank (pp 2: 16): more than 1/2 of it, and we allow up to 0.6. One stage has no bubble
    // at all; the two stages' bubble is one of their two stage-times, about half the step.
    const auto dir = test::scratch_path("trnsim-planner-cp-test");
    std::filesystem::create_directories(dir);
    const auto scenario = dir / "long-sequence.yaml";
    {
        std::ofstream f(scenario);
        f << R"(name: llama3-8b-32k
hardware: {chip: trn2, lnc: 2}
cluster: {instances: 2}
workload:
  type: training
  model: llama3-8b
  sequence_length: 32768
  global_batch: 8
  tokens: 100B
  precision: bf16
  parallelism: {tp: 8, cp: 2, pp: 1, dp: auto, zero: 1, microbatch: 1, recompute: selective}
simulation: {fidelity: analytic}
cost: {instance_hour: 35.76USD}
)";
    }
    const auto p = config::load_plan_text("base: " + scenario.string() + R"(
search:
  cp: [1, 2]
  pp: [1, 2]
finalists: 1
frontier: 0
)",
                                          "p.yaml");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 2);
    ASSERT_EQ(r.candidates.size(), 4u);
    const auto at = [&](int cp, int pp) -> std::size_t {
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            if (r.candidates[i].cp == cp && r.candidates[i].pp == pp) {
                return i;
            }
        }
        ADD_FAILURE() << "no candidate cp " << cp << " pp " << pp;
        return 0;
    };
    const auto& none = r.estimates[at(1, 1)];
    EXPECT_EQ(none.verdict, Verdict::invalid);
    EXPECT_EQ(none.reason.rfind("workload.global_batch", 0), 0u) << none.reason;
    const auto& pipe = r.estimates[at(1, 2)];
    const auto& ctx = r.estimates[at(2, 1)];
    ASSERT_EQ(pipe.verdict, Verdict::ok) << pipe.reason;
    ASSERT_EQ(ctx.verdict, Verdict::ok) << ctx.reason;
    EXPECT_EQ(pipe.dp, 8);
    EXPECT_EQ(ctx.dp, 8);
    EXPECT_EQ(pipe.chips, ctx.chips);
    EXPECT_EQ(r.estimates[at(2, 2)].dp, 4);
    EXPECT_GT(ctx.step_time.seconds(), 0.5 * pipe.step_time.seconds())
        << "cp 2: " << ctx.step_time.seconds() << " s, pp 2: " << pipe.step_time.seconds() << " s";
    EXPECT_LT(ctx.step_time.seconds(), 0.6 * pipe.step_time.seconds())
        << "cp 2: " << ctx.step_time.seconds() << " s, pp 2: " << pipe.step_time.seconds() << " s";
    const auto step_of = [&](std::size_t i) {
        return sim::estimate_step(sim::make_plan(
            config::load_scenario_with(p.base, candidate_overrides(p, base, r.candidates[i]))));
    };
    const sim::StepEstimate pipe_step = step_of(at(1, 2));
    const sim::StepEstimate ctx_step = step_of(at(2, 1));
    EXPECT_EQ(ctx_step.bubble.seconds(), 0.0);
    EXPECT_GT(pipe_step.bubble.seconds(), 0.4 * pipe_step.step_time.seconds());
    EXPECT_LT(pipe_step.bubble.seconds(), 0.5 * pipe_step.step_time.seconds());
    // min_cost at the same chips: the faster cp 2 candidate is the finalist.
    ASSERT_EQ(r.finalists.size(), 1u);
    EXPECT_EQ(r.finalists.front().candidate, static_cast<std::int64_t>(at(2, 1)));
    std::filesystem::remove_all(dir);
}

TEST(Planner, EachCandidateIsEstimatedAtItsOwnBatch) {
    // Llama 3 70B on 2T tokens of 8,192-token sequences, tp 16, microbatch 1. By hand:
    // 16 UltraServers are 1,024 chips, 4,096 ranks: dp 128 with pp 2, 64 with pp 4; 64
    // UltraServers are 16,384 ranks: dp 512 with pp 2, 256 with pp 4. A batch of 256
    // sequences cannot feed 512 replicas: that one candidate is invalid, the other 11 run.
    // Steps: 2e12 tokens / (batch x 8,192), rounded up: 953,675 at 256 (2,097,152 tokens a
    // step), 238,419 at 1,024 (8,388,608), 59,605 at 4,096 (33,554,432).
    const auto p = plan_of(R"(search:
  ultraservers: [16, 64]
  global_batch: [256, 1024, 4096]
  tp: [16]
  pp: [2, 4]
finalists: 3
frontier: 0
)",
                           "default.yaml");
    const auto base = base_of(p);
    ASSERT_EQ(base.training.tokens, 2'000'000'000'000);
    const PlanResult r = run_plan(p, base, 2);
    ASSERT_EQ(r.candidates.size(), 12u);
    EXPECT_EQ(r.step_estimates, 12);
    EXPECT_EQ(r.feasible, 11);
    const std::map<std::int64_t, std::int64_t> steps_at{
        {256, 953'675}, {1024, 238'419}, {4096, 59'605}};
    const std::map<std::pair<std::int64_t, int>, int> dp_at{
        {{16, 2}, 128}, {{16, 4}, 64}, {{64, 2}, 512}, {{64, 4}, 256}};
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const auto& c = r.candidates[i];
        const auto& x = r.estimates[i];
        const config::ScenarioSpec s =
            config::load_scenario_with(p.base, candidate_overrides(p, base, c));
        ASSERT_EQ(s.training.global_batch, c.global_batch);
        if (c.domains == 64 && c.pp == 2 && c.global_batch == 256) {
            EXPECT_EQ(x.verdict, Verdict::invalid);
            EXPECT_EQ(x.reason.rfind("workload.global_batch", 0), 0u) << x.reason;
            EXPECT_THROW(sim::make_plan(s), InputError);
            continue;
        }
        ASSERT_EQ(x.verdict, Verdict::ok) << i << ": " << x.reason;
        EXPECT_EQ(x.dp, dp_at.at({c.domains, c.pp})) << i;
        const workload::Plan wp = sim::make_plan(s);
        // The tokens stay the base's; the steps follow the batch.
        EXPECT_EQ(wp.tokens_per_step, c.global_batch * 8192);
        EXPECT_EQ(wp.steps, steps_at.at(c.global_batch)) << i;
        EXPECT_DOUBLE_EQ(x.step_time.seconds(), sim::estimate_step(wp).step_time.seconds());
        EXPECT_DOUBLE_EQ(x.time_to_train.seconds(),
                         static_cast<double>(wp.steps) * x.step_time.seconds());
    }
    // Finalists run the scenario of their candidate, batch included.
    ASSERT_EQ(r.finalists.size(), 3u);
    for (const auto& f : r.finalists) {
        const auto& c = r.candidates[static_cast<std::size_t>(f.candidate)];
        EXPECT_EQ(f.spec.training.global_batch, c.global_batch);
        EXPECT_EQ(f.run.plan.tokens_per_step, c.global_batch * 8192);
        EXPECT_EQ(f.run.plan.steps, steps_at.at(c.global_batch));
        EXPECT_DOUBLE_EQ(
            f.run.time_to_train.seconds(),
            r.estimates[static_cast<std::size_t>(f.candidate)].time_to_train.seconds());
    }
}

TEST(Planner, WithNoFeasibleCandidateSaysHowCloseItCame) {
    // Llama 3 70B on 2T tokens cannot be trained in a day on 64 UltraServers: no candidate
    // is feasible and no finalist runs, but the fastest and the cheapest estimates are kept.
    const auto p = plan_of(R"(constraints: {deadline: 1d}
search:
  ultraservers: [16, 64]
  global_batch: [256, 1024]
  tp: [16]
  pp: [2, 4]
)",
                           "default.yaml");
    const PlanResult r = run_plan(p, base_of(p), 2);
    ASSERT_EQ(r.candidates.size(), 8u);
    EXPECT_EQ(r.feasible, 0);
    EXPECT_TRUE(r.finalists.empty());
    ASSERT_GE(r.fastest, 0);
    ASSERT_GE(r.cheapest, 0);
    // 7 candidates run (64 UltraServers, pp 2 and a batch of 256 does not), all over the
    // deadline; the fastest and the cheapest are the extremes of their estimates.
    int runnable = 0;
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const auto& x = r.estimates[i];
        if (x.verdict == Verdict::invalid) {
            continue;
        }
        ++runnable;
        EXPECT_EQ(x.verdict, Verdict::deadline) << i;
        EXPECT_GT(x.time_to_train.seconds(), 86400.0);
        EXPECT_LE(r.estimates[static_cast<std::size_t>(r.fastest)].time_to_train.seconds(),
                  x.time_to_train.seconds());
        EXPECT_LE(r.estimates[static_cast<std::size_t>(r.cheapest)].cost_usd, x.cost_usd);
    }
    EXPECT_EQ(runnable, 7);
    // Four times the chips is the faster way, and at the same work the smaller cluster
    // (less communication) the cheaper one.
    EXPECT_EQ(r.candidates[static_cast<std::size_t>(r.fastest)].domains, 64);
    EXPECT_EQ(r.candidates[static_cast<std::size_t>(r.cheapest)].domains, 16);

    // With a feasible candidate they are still set: the fastest is at most the best's time.
    const auto q = plan_of("search: {ultraservers: [16, 64], tp: [16], pp: [2, 4]}\n",
                           "default.yaml");
    const PlanResult s = run_plan(q, base_of(q), 1);
    ASSERT_FALSE(s.finalists.empty());
    ASSERT_GE(s.fastest, 0);
    EXPECT_LE(s.estimates[static_cast<std::size_t>(s.fastest)].time_to_train.seconds(),
              s.estimates[static_cast<std::size_t>(s.finalists.front().candidate)]
                  .time_to_train.seconds());
}

TEST(Planner, SearchesTheBaseCannotTake) {
    const auto no_reliability = plan_of("search: {spares: [1, 2]}\n", "default.yaml");
    try {
        enumerate(no_reliability, base_of(no_reliability));
        FAIL();
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search.spares");
        EXPECT_EQ(e.location().str(), "p.yaml:2:18");
    }
    const auto instances = plan_of("search: {instances: [8]}\n", "default.yaml");
    EXPECT_THROW(enumerate(instances, base_of(instances)), InputError);
    // A training plan searches one kind of cluster (a serving plan may search both; the plan
    // file alone cannot tell, so the check waits for the base).
    const auto both = plan_of("search: {ultraservers: [8], instances: [4]}\n", "default.yaml");
    try {
        enumerate(both, base_of(both));
        FAIL();
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search.instances");
        EXPECT_EQ(e.location().str(), "p.yaml:2:40");
        EXPECT_NE(e.message().find("not both"), std::string::npos) << e.message();
    }
    // Serving keys and objectives in a training plan.
    for (const auto& [body, key] : std::vector<std::pair<std::string, std::string>>{
             {"search: {max_batch: [4]}\n", "search.max_batch"},
             {"search: {chip: [trn1]}\n", "search.chip"},
             {"requests: 100\n", "requests"},
             {"objective: {type: max_rate}\n", "objective"}}) {
        const auto p = plan_of(body, "default.yaml");
        try {
            enumerate(p, base_of(p));
            ADD_FAILURE() << body;
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), key);
            EXPECT_EQ(e.location().line, 2) << e.what();
        }
    }
}

TEST(Planner, EstimatesWithoutFailuresAreStepsTimesStepTime) {
    const auto p = plan_of(R"(search:
  ultraservers: [8, 16, 32]
  tp: [4, 8, 16]
  pp: [1, 2, 4]
finalists: 2
frontier: 0
)",
                           "default.yaml");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 2);
    ASSERT_EQ(r.candidates.size(), 27u);
    EXPECT_EQ(r.step_estimates, 27);
    int estimated = 0;
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const auto& x = r.estimates[i];
        if (x.verdict != Verdict::ok) {
            continue;
        }
        ++estimated;
        config::ScenarioSpec s = config::load_scenario_with(
            p.base, candidate_overrides(p, base, r.candidates[i]));
        const auto wp = sim::make_plan(s);
        const double steps = static_cast<double>(wp.steps);
        EXPECT_DOUBLE_EQ(x.step_time.seconds(), sim::estimate_step(wp).step_time.seconds());
        EXPECT_DOUBLE_EQ(x.time_to_train.seconds(), steps * x.step_time.seconds());
        EXPECT_DOUBLE_EQ(x.cost_usd, static_cast<double>(wp.cluster.instances()) *
                                         x.time_to_train.seconds() / 3600.0 * 35.76);
        EXPECT_EQ(x.ettr, 1.0);
        EXPECT_EQ(x.chips, wp.cluster.chips());
    }
    EXPECT_GT(estimated, 5);
    ASSERT_EQ(r.finalists.size(), 2u);
    // min_cost: the finalists are the two cheapest estimates.
    std::vector<double> costs;
    for (const auto& x : r.estimates) {
        if (x.verdict == Verdict::ok) {
            costs.push_back(x.cost_usd);
        }
    }
    std::sort(costs.begin(), costs.end());
    for (const auto& f : r.finalists) {
        EXPECT_LE(r.estimates[static_cast<std::size_t>(f.candidate)].cost_usd, costs[1]);
        EXPECT_TRUE(f.meets);
        // Analytic fidelity: the full run's step is the estimate's.
        EXPECT_DOUBLE_EQ(f.run.step.step_time.seconds(),
                         r.estimates[static_cast<std::size_t>(f.candidate)].step_time.seconds());
    }
    EXPECT_LE(r.finalists[0].run.cost_usd, r.finalists[1].run.cost_usd);
}

/// A plan with failures over a real search space.
config::PlanSpec reliability_plan() {
    return plan_of(R"(objective: min_cost
constraints: {deadline: 30d, max_chips: 30000, min_ettr: 0.8, hbm_headroom: 0.05}
search:
  ultraservers: [64, 128, 256, 512]
  tp: [32, 64]
  pp: [1, 2, 3]
  zero: [1, 2]
  recompute: [selective, full]
  checkpoint_interval: [auto, 30min, 2h]
  spares: [0, 4, 16]
finalists: 3
frontier: 3
replications: 6
)",
                   "llama3-405b-reliability.yaml");
}

TEST(Planner, ConstraintsFrontierAndFinalists) {
    const auto p = reliability_plan();
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 2);
    ASSERT_EQ(r.candidates.size(), 4u * 2 * 3 * 2 * 2 * 3 * 3);
    std::map<Verdict, int> count;
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const auto& x = r.estimates[i];
        ++count[x.verdict];
        switch (x.verdict) {
        case Verdict::ok:
            EXPECT_LE(x.time_to_train.seconds(), 30 * 86400.0);
            EXPECT_LE(x.chips, 30000);
            EXPECT_GE(x.ettr, 0.8);
            EXPECT_LE(x.memory_fraction, 0.95);
            break;
        case Verdict::deadline:
            EXPECT_GT(x.time_to_train.seconds(), 30 * 86400.0);
            break;
        case Verdict::chips:
            EXPECT_GT(x.chips, 30000);
            break;
        case Verdict::ettr:
            EXPECT_LT(x.ettr, 0.8);
            break;
        case Verdict::hbm:
            EXPECT_FALSE(x.reason.empty());
            break;
        case Verdict::invalid:
            EXPECT_EQ(x.reason.compare(0, 9, "workload."), 0) << x.reason;
            break;
        case Verdict::budget:
            ADD_FAILURE() << "no budget was given";
            break;
        case Verdict::slo:
            ADD_FAILURE() << "slo is a serving plan's verdict";
            break;
        }
    }
    // The space exercises every rejection but the budget.
    for (Verdict v : {Verdict::ok, Verdict::invalid, Verdict::hbm, Verdict::chips, Verdict::ettr,
                      Verdict::deadline}) {
        EXPECT_GT(count[v], 0) << to_string(v);
    }
    EXPECT_EQ(r.feasible, count[Verdict::ok]);

    // The frontier: no runnable candidate dominates a frontier point, and every other runnable
    // candidate is dominated by one.
    const auto runnable = [&](std::size_t i) {
        const Verdict v = r.estimates[i].verdict;
        return v == Verdict::ok || v == Verdict::deadline || v == Verdict::budget;
    };
    const auto dominates = [&](std::size_t a, std::size_t b) {
        const auto& x = r.estimates[a];
        const auto& y = r.estimates[b];
        return x.time_to_train.seconds() <= y.time_to_train.seconds() && x.cost_usd <= y.cost_usd &&
               (x.time_to_train.seconds() < y.time_to_train.seconds() || x.cost_usd < y.cost_usd);
    };
    int on_frontier = 0;
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        if (!runnable(i)) {
            EXPECT_FALSE(r.estimates[i].frontier);
            continue;
        }
        bool dominated = false;
        for (std::size_t j = 0; j < r.candidates.size() && !dominated; ++j) {
            dominated = runnable(j) && dominates(j, i);
        }
        if (r.estimates[i].frontier) {
            ++on_frontier;
            EXPECT_FALSE(dominated) << i;
        } else {
            // Not dominated only when it ties a frontier point exactly.
            if (!dominated) {
                bool tie = false;
                for (std::size_t j = 0; j < r.candidates.size() && !tie; ++j) {
                    tie = r.estimates[j].frontier &&
                          r.estimates[j].time_to_train.seconds() ==
                              r.estimates[i].time_to_train.seconds() &&
                          r.estimates[j].cost_usd == r.estimates[i].cost_usd;
                }
                EXPECT_TRUE(tie) << i;
            }
        }
    }
    EXPECT_GE(on_frontier, 3);

    // Finalists: the 3 cheapest feasible estimates first, then up to 3 frontier points.
    ASSERT_GE(r.finalists.size(), 3u);
    ASSERT_LE(r.finalists.size(), 6u);
    std::vector<double> costs;
    for (const auto& x : r.estimates) {
        if (x.verdict == Verdict::ok) {
            costs.push_back(x.cost_usd);
        }
    }
    std::sort(costs.begin(), costs.end());
    int by_objective = 0;
    for (std::size_t k = 0; k < r.finalists.size(); ++k) {
        const auto& f = r.finalists[k];
        const auto& x = r.estimates[static_cast<std::size_t>(f.candidate)];
        EXPECT_EQ(f.rank, static_cast<int>(k) + 1);
        EXPECT_EQ(x.verdict, Verdict::ok);
        EXPECT_TRUE(x.finalist);
        if (f.by_objective) {
            ++by_objective;
            EXPECT_LE(x.cost_usd, costs[2]);
        } else {
            EXPECT_TRUE(x.frontier);
        }
        // The finalist ran the candidate: its plan and step are the estimate's (analytic
        // fidelity), and the simulated ETTR is near the closed form.
        EXPECT_EQ(f.run.plan.dp, x.dp);
        EXPECT_DOUBLE_EQ(f.run.step.step_time.seconds(), x.step_time.seconds());
        ASSERT_TRUE(f.run.reliability.has_value());
        EXPECT_EQ(f.run.reliability->replications.size(), 6u);
        EXPECT_NEAR(f.ettr, x.ettr, 0.05) << "candidate " << f.candidate;
        EXPECT_DOUBLE_EQ(f.run.reliability->facts.checkpoint_interval.seconds(),
                         x.checkpoint_interval.seconds());
        // Ranked: constraint-meeting finalists first, cheapest first.
        if (k > 0 && f.meets == r.finalists[k - 1].meets) {
            EXPECT_GE(f.run.cost_usd, r.finalists[k - 1].run.cost_usd);
        }
        if (k > 0) {
            EXPECT_LE(f.meets, r.finalists[k - 1].meets);
        }
    }
    EXPECT_EQ(by_objective, 3);
}

TEST(Planner, ResultsDoNotDependOnTheThreadCount) {
    const auto p = reliability_plan();
    const auto base = base_of(p);
    const PlanResult a = run_plan(p, base, 1);
    const PlanResult b = run_plan(p, base, 2);
    ASSERT_EQ(a.estimates.size(), b.estimates.size());
    for (std::size_t i = 0; i < a.estimates.size(); ++i) {
        EXPECT_EQ(a.estimates[i].verdict, b.estimates[i].verdict);
        // Bit equality (NaN for candidates that could not be estimated).
        EXPECT_EQ(std::memcmp(&a.estimates[i].cost_usd, &b.estimates[i].cost_usd, sizeof(double)),
                  0);
        EXPECT_EQ(a.estimates[i].chips, b.estimates[i].chips);
        EXPECT_EQ(a.estimates[i].frontier, b.estimates[i].frontier);
    }
    ASSERT_EQ(a.finalists.size(), b.finalists.size());
    for (std::size_t i = 0; i < a.finalists.size(); ++i) {
        EXPECT_EQ(a.finalists[i].candidate, b.finalists[i].candidate);
        EXPECT_EQ(a.finalists[i].run.time_to_train.seconds(),
                  b.finalists[i].run.time_to_train.seconds());
        EXPECT_EQ(a.finalists[i].frontier, b.finalists[i].frontier);
    }
}

} // namespace
} // namespace trnsim::study
