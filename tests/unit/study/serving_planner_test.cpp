// The serving planner (trnsim plan with a workload.type: inference base): the search space,
// a hand-checked rejection by the SLO, candidates that cannot be built, the max_rate bisection
// against independent runs, and results that do not depend on the thread count.
#include "trnsim/config/load.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/study/planner.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace trnsim::study {
namespace {

namespace fs = std::filesystem;

// Llama 3.2 1B on one trn2.48xlarge: short requests at a low Poisson rate, so nearly every
// request decodes alone and its TPOT is one decode iteration at batch 1.
constexpr const char* kBase = R"(name: small-serving
seed: 3
hardware: {chip: trn2, lnc: 2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3.2-1b
  serving: {tp: 1, max_batch: 4, max_context: 512}
  requests:
    input_tokens: 128
    output_tokens: 64
    arrival: {poisson: {rate: 1/s}}
    count: 20
  slo: {ttft: 1s, tpot: 9ms}
output: {requests: false}
)";

fs::path base_file() {
    static const fs::path p = [] {
        const fs::path d = test::scratch_path("trnsim-serving-planner");
        fs::create_directories(d);
        std::ofstream(d / "base.yaml") << kBase;
        return d / "base.yaml";
    }();
    return p;
}

config::PlanSpec plan_of(const std::string& body) {
    return config::load_plan_text("base: " + base_file().string() + "\n" + body, "p.yaml");
}

config::ScenarioSpec base_of(const config::PlanSpec& p) {
    return config::load_scenario_with(p.base, {});
}

TEST(ServingPlanner, ReadsTheObjectiveMapping) {
    const auto cost = plan_of("objective: {type: min_cost, rate: 1200/min, slo_attainment: 1}\n");
    EXPECT_EQ(cost.objective, config::Objective::min_cost);
    EXPECT_TRUE(cost.serving.given);
    EXPECT_EQ(cost.serving.rate_per_s, 20.0);
    EXPECT_EQ(cost.serving.slo_attainment, 1.0);
    EXPECT_EQ(cost.serving.rate_origin.line, 2);
    EXPECT_EQ(cost.requests, 500); // the default
    const auto rate = plan_of(
        "objective: {type: max_rate, rate_range: [60/min, 2/s], tolerance: 0.05}\nrequests: 9\n");
    EXPECT_EQ(rate.objective, config::Objective::max_rate);
    ASSERT_TRUE(rate.serving.rate_range);
    EXPECT_EQ((*rate.serving.rate_range)[0], 1.0);
    EXPECT_EQ((*rate.serving.rate_range)[1], 2.0);
    EXPECT_EQ(rate.serving.tolerance, 0.05);
    EXPECT_EQ(rate.serving.slo_attainment, 0.99); // the default
    EXPECT_EQ(rate.requests, 9);
    // The scalar form is a training plan's (and a serving plan at the base's own rate).
    const auto plain = plan_of("objective: min_cost\n");
    EXPECT_FALSE(plain.serving.given);
    EXPECT_EQ(enumerate_serving(plain, base_of(plain)).size(), 1u);
}

TEST(ServingPlanner, EnumeratesEveryCombinationInOrder) {
    const auto p = plan_of(R"(objective: {type: min_cost, rate: 2/s}
search:
  chip: [trn2, inf2]
  instances: [1, 2]
  ultraservers: [1]
  tp: [1, 8]
  max_batch: [4, 16]
)");
    const auto base = base_of(p);
    const auto c = enumerate_serving(p, base);
    ASSERT_EQ(c.size(), 2u * 3u * 2u * 2u);
    ASSERT_EQ(candidate_count(p, base), c.size());
    // max_batch varies fastest, the chip slowest; instance counts come before UltraServers.
    EXPECT_EQ(c[1].max_batch, 16);
    EXPECT_EQ(c[2].tp, 8);
    EXPECT_EQ(c[4].domains, 2);
    EXPECT_FALSE(c[4].ultraservers);
    EXPECT_TRUE(c[8].ultraservers);
    EXPECT_EQ(c[12].chip, "inf2");
    EXPECT_EQ(c[12].replicas, base.inference.serving.replicas);
    // The overrides reproduce a candidate's scenario (what trnsim run --set takes).
    const auto s = config::load_scenario_with(p.base, serving_overrides(p, base, c[14], 7.5));
    EXPECT_EQ(s.hardware.chip.name, "inf2");
    EXPECT_EQ(s.hardware.lnc, 1); // inf2's default: the base's lnc 2 is trn2's
    EXPECT_EQ(s.cluster.instances, 1);
    EXPECT_EQ(s.cluster.ultraservers, 0);
    EXPECT_EQ(s.inference.serving.tp, 8);
    EXPECT_EQ(s.inference.requests.arrival.rate_per_s, 7.5);
    EXPECT_EQ(s.inference.requests.count, p.requests);
    EXPECT_EQ(s.inference.requests.duration, Duration::zero());
}

TEST(ServingPlanner, SearchesExpertParallelism) {
    // search.ep is workload.serving.ep: the fastest axis, each candidate overriding it.
    const auto p = plan_of(R"(objective: {type: min_cost, rate: 2/s}
search:
  tp: [8, 16]
  ep: [1, 4, 8]
)");
    const auto base = base_of(p);
    const auto c = enumerate_serving(p, base);
    ASSERT_EQ(c.size(), 6u);
    EXPECT_EQ(c[1].ep, 4);
    EXPECT_EQ(c[3].tp, 16);
    EXPECT_EQ(c[3].ep, 1);
    const auto o = serving_overrides(p, base, c[5], 2.0);
    const auto ep = std::find_if(o.begin(), o.end(), [](const config::Override& x) {
        return x.path == "workload.serving.ep";
    });
    ASSERT_NE(ep, o.end());
    EXPECT_EQ(ep->value, "8");
    // Not searched: the base's, and no override.
    const auto plain = plan_of("objective: {type: min_cost, rate: 2/s}\nsearch: {tp: [8]}\n");
    const auto one = enumerate_serving(plain, base_of(plain));
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].ep, base.inference.serving.ep);
    for (const auto& x : serving_overrides(plain, base, one[0], 2.0)) {
        EXPECT_NE(x.path, "workload.serving.ep");
    }
}

TEST(ServingPlanner, RejectsByTheSloWhatTheRooflineForbids) {
    // Two candidates on one trn2.48xlarge (the same $/hour): tp 1 and tp 8, TPOT <= 9 ms.
    // By hand, tp 1 cannot meet it. A decode iteration reads every weight of the rank once:
    // Llama 3.2 1B's 16 layers hold 16 x (2 x 2048^2 + 2 x 2048 x 512 + 3 x 2048 x 8192) =
    // 973.1M parameters and the LM head 128256 x 2048 = 262.7M, 1.2358G x 2 bytes = 2.47 GB.
    // A trn2 rank at LNC 2 has a quarter of the chip's 2.9 TB/s, 725 GB/s, so an iteration
    // takes at least 2.47 / 725 = 3.41 ms, plus trn2's cost per graph, 6.40 ms (trn2.yaml,
    // fitted on INF-T2b): 9.81 ms > 9 ms, and every request's TPOT (the mean gap between its
    // tokens, at least one iteration each) exceeds the SLO: attainment 0.
    const auto p = plan_of(R"(objective: {type: min_cost, rate: 1/s, slo_attainment: 0.9}
search: {tp: [1, 8]}
requests: 20
)");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 2);
    ASSERT_TRUE(r.serving);
    const auto& s = *r.serving;
    ASSERT_EQ(s.candidates.size(), 2u);
    const auto& tp1 = s.evaluations[0];
    const auto& tp8 = s.evaluations[1];
    EXPECT_EQ(tp1.verdict, Verdict::slo) << tp1.reason;
    EXPECT_EQ(tp1.slo_attainment, 0.0);
    EXPECT_GT(tp1.tpot_p99.seconds(), (3.41e-3 + 6.4027e-3) * 0.999);
    EXPECT_EQ(tp1.replicas, 64); // 64 ranks of one rank each
    EXPECT_EQ(tp8.verdict, Verdict::ok) << tp8.reason;
    EXPECT_GE(tp8.slo_attainment, 0.9);
    EXPECT_EQ(tp8.replicas, 8);
    ASSERT_EQ(s.ranking.size(), 1u);
    EXPECT_EQ(s.ranking[0], 1);
    EXPECT_EQ(tp8.rank, 1);
    EXPECT_EQ(tp1.rank, 0);
    // One trn2.48xlarge at the chip file's on-demand price.
    EXPECT_DOUBLE_EQ(tp8.cost_per_hour_usd, base.cost.instance_hour.usd());
    EXPECT_EQ(tp8.simulations, 1);
}

/// The frontier's definition on the simulated candidates: a point is marked exactly when no
/// other point is at least as good in both ($/M tokens, TTFT p99) and better in one (or equal
/// in both and earlier).
void expect_frontier(const ServingPlanResult& s, bool max_rate) {
    std::vector<std::size_t> pts;
    for (std::size_t i = 0; i < s.evaluations.size(); ++i) {
        const auto& x = s.evaluations[i];
        if (max_rate ? x.verdict == Verdict::ok : x.simulations > 0) {
            pts.push_back(i);
        }
    }
    ASSERT_FALSE(pts.empty());
    for (std::size_t i : pts) {
        const auto& x = s.evaluations[i];
        bool dominated = false;
        for (std::size_t j : pts) {
            const auto& y = s.evaluations[j];
            const double xc = x.cost_per_million_output_tokens_usd;
            const double yc = y.cost_per_million_output_tokens_usd;
            const bool no_worse = yc <= xc && y.ttft_p99.seconds() <= x.ttft_p99.seconds();
            const bool better = yc < xc || y.ttft_p99.seconds() < x.ttft_p99.seconds();
            dominated = dominated || (j != i && no_worse && (better || j < i));
        }
        EXPECT_EQ(x.pareto, !dominated) << "candidate " << i;
    }
}

TEST(ServingPlanner, CandidatesThatCannotBeBuiltAreRejectedWithTheReason) {
    const auto p = plan_of(R"(objective: {type: min_cost, rate: 1/s}
search:
  chip: [trn2, inf2]
  ultraservers: [1]
  tp: [3]
requests: 10
)");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    const auto& s = *r.serving;
    ASSERT_EQ(s.evaluations.size(), 2u);
    // tp 3 does not divide Llama 3.2 1B's 32 heads; inf2 has no UltraServer.
    EXPECT_EQ(s.evaluations[0].verdict, Verdict::invalid);
    EXPECT_NE(s.evaluations[0].reason.find("workload.serving.tp"), std::string::npos)
        << s.evaluations[0].reason;
    EXPECT_EQ(s.evaluations[1].verdict, Verdict::invalid);
    EXPECT_NE(s.evaluations[1].reason.find("UltraServer"), std::string::npos)
        << s.evaluations[1].reason;
    EXPECT_EQ(s.simulations, 0);
    EXPECT_TRUE(s.ranking.empty());

    // Llama 3 70B's 141 GB of BF16 weights on 8 inf2 ranks (4 chips of 32 GB): not in HBM.
    const fs::path d = base_file().parent_path();
    std::string text = kBase;
    text.replace(text.find("llama3.2-1b"), 11, "llama3-70b");
    std::ofstream(d / "big.yaml") << text;
    const auto big = config::load_plan_text("base: " + (d / "big.yaml").string() + R"(
objective: {type: min_cost, rate: 1/s}
search: {chip: [inf2], tp: [8]}
)",
                                            "p.yaml");
    const PlanResult rb = run_plan(big, config::load_scenario_with(big.base, {}), 1);
    EXPECT_EQ(rb.serving->evaluations[0].verdict, Verdict::hbm)
        << rb.serving->evaluations[0].reason;
}

TEST(ServingPlanner, WeightsAndSparsityAreSearchKeysAndAChipWithoutThemIsInvalid) {
    // trn2 and trn1 x {bf16, mxfp4} x {dense, 2:4}: trn2 has a sparse matmul and no MX one;
    // trn1 neither. Sparsity varies fastest, then the weights, then the chip.
    const auto p = plan_of(R"(objective: {type: min_cost, rate: 1/s}
search:
  chip: [trn2, trn1]
  tp: [8]
  weights: [bf16, mxfp4]
  sparsity: [dense, "2:4"]
requests: 10
)");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    const auto& s = *r.serving;
    ASSERT_EQ(s.candidates.size(), 8u);
    EXPECT_EQ(s.candidates[1].sparsity, "2:4");
    EXPECT_EQ(s.candidates[2].weights, "mxfp4");
    EXPECT_EQ(s.candidates[4].chip, "trn1");
    const auto reason = [&](std::size_t i) { return s.evaluations[i].reason; };
    EXPECT_NE(s.evaluations[0].verdict, Verdict::invalid) << reason(0); // trn2 bf16 dense
    EXPECT_NE(s.evaluations[1].verdict, Verdict::invalid) << reason(1); // trn2 bf16 2:4
    for (std::size_t i : {2u, 3u, 6u, 7u}) { // mxfp4 on trn2 and trn1
        EXPECT_EQ(s.evaluations[i].verdict, Verdict::invalid) << i;
        EXPECT_NE(reason(i).find("workload.serving."), std::string::npos) << reason(i);
    }
    EXPECT_NE(s.evaluations[4].verdict, Verdict::invalid) << reason(4); // trn1 bf16 dense
    EXPECT_EQ(s.evaluations[5].verdict, Verdict::invalid);              // trn1 2:4
    EXPECT_NE(reason(5).find("workload.serving.sparsity"), std::string::npos) << reason(5);
    // Both trn2 candidates are simulated; the 2:4 one streams 1.125 instead of 2 bytes a
    // weight, so its decode steps are shorter.
    ASSERT_TRUE(std::isfinite(s.evaluations[0].tpot_p99.seconds()));
    ASSERT_TRUE(std::isfinite(s.evaluations[1].tpot_p99.seconds()));
    EXPECT_LT(s.evaluations[1].tpot_p99.seconds(), s.evaluations[0].tpot_p99.seconds());
    // A training plan refuses them.
    const auto t = config::load_plan_text("base: " + std::string(TRNSIM_SOURCE_DIR) +
                                              "/scenarios/default.yaml" + R"(
search: {weights: [bf16]}
)",
                                          "p.yaml");
    try {
        (void)run_plan(t, config::load_scenario_with(t.base, {}), 1);
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "search.weights");
    }
}

/// SLO attainment of the base at `rate` with tp 8, built from hand-written overrides (as
/// `trnsim run --set` would), independently of the planner's own.
double attainment_at(const config::PlanSpec& p, double rate) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g/s", rate); // a rate needs its unit
    const config::ScenarioSpec s = config::load_scenario_with(
        p.base, {{"workload.serving.tp", "8", {}},
                 {"workload.requests.count", std::to_string(p.requests), {}},
                 {"workload.requests.arrival.poisson.rate", text, {}}});
    return sim::run_serving(s, 1).run.summary.slo_attainment;
}

TEST(ServingPlanner, MaxRateBracketsTheRateWhereTheAttainmentCrossesTheTarget) {
    const auto p = plan_of(R"(objective: {type: max_rate, slo_attainment: 0.9,
            rate_range: [1/s, 5000/s], tolerance: 0.05}
search: {tp: [8]}
requests: 200
)");
    const auto base = base_of(p);
    const PlanResult r = run_plan(p, base, 1);
    const auto& x = r.serving->evaluations.at(0);
    ASSERT_EQ(x.verdict, Verdict::ok) << x.reason;
    ASSERT_TRUE(std::isfinite(x.rate_high)) << "met the SLO at the top of the range";
    EXPECT_EQ(x.rate, x.rate_low);
    EXPECT_GT(x.rate_high, x.rate_low);
    EXPECT_LE(x.rate_high / x.rate_low, 1.05);
    // Geometric bisection of 1..5000 to a ratio of 1.05: ln 5000 / ln 1.05 = 174.6 and
    // 2^8 = 256 > 174.6 > 2^7, so 8 halvings after the two ends.
    EXPECT_EQ(x.simulations, 10);
    // Independent runs at the bracket's ends: the target holds at the low end, not at the
    // high end.
    EXPECT_GE(attainment_at(p, x.rate_low), 0.9);
    EXPECT_LT(attainment_at(p, x.rate_high), 0.9);
    EXPECT_EQ(attainment_at(p, x.rate_low), x.slo_attainment);
    EXPECT_EQ(attainment_at(p, x.rate_high), x.attainment_high);
}

bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same(const ServingPlanResult& a, const ServingPlanResult& b) {
    ASSERT_EQ(a.evaluations.size(), b.evaluations.size());
    EXPECT_EQ(a.ranking, b.ranking);
    EXPECT_EQ(a.simulations, b.simulations);
    for (std::size_t i = 0; i < a.evaluations.size(); ++i) {
        const auto& x = a.evaluations[i];
        const auto& y = b.evaluations[i];
        EXPECT_EQ(x.verdict, y.verdict);
        EXPECT_EQ(x.reason, y.reason);
        EXPECT_EQ(x.pareto, y.pareto);
        EXPECT_EQ(x.rank, y.rank);
        for (auto m : {&ServingEvaluation::rate, &ServingEvaluation::slo_attainment,
                       &ServingEvaluation::cost_per_million_output_tokens_usd,
                       &ServingEvaluation::rate_low, &ServingEvaluation::rate_high,
                       &ServingEvaluation::attainment_high}) {
            EXPECT_TRUE(same(x.*m, y.*m)) << "candidate " << i;
        }
        for (auto m : {&ServingEvaluation::ttft_p99, &ServingEvaluation::tpot_p99}) {
            EXPECT_TRUE(same((x.*m).seconds(), (y.*m).seconds())) << "candidate " << i;
        }
    }
}

TEST(ServingPlanner, ResultsDoNotDependOnTheThreadCount) {
    const auto cost = plan_of(R"(objective: {type: min_cost, rate: 40/s, slo_attainment: 0.5}
search: {tp: [1, 2, 4, 8], max_batch: [1, 4], replicas: [auto, 4]}
requests: 100
)");
    const auto rate = plan_of(R"(objective: {type: max_rate, slo_attainment: 0.9,
            rate_range: [1/s, 2000/s], tolerance: 0.1}
search: {tp: [4, 8], max_batch: [1, 4]}
requests: 100
)");
    for (const auto* p : {&cost, &rate}) {
        const auto base = base_of(*p);
        const PlanResult one = run_plan(*p, base, 1);
        const PlanResult two = run_plan(*p, base, 2);
        expect_same(*one.serving, *two.serving);
        EXPECT_FALSE(one.serving->ranking.empty());
        expect_frontier(*one.serving, p->objective == config::Objective::max_rate);
    }
}

TEST(ServingPlanner, RefusesPlanKeysTheBaseCannotTake) {
    const auto base_for = [](const config::PlanSpec& p) { return base_of(p); };
    const auto key_of = [&](const std::string& body) {
        const auto p = plan_of(body);
        try {
            (void)enumerate_serving(p, base_for(p));
        } catch (const InputError& e) {
            EXPECT_GT(e.location().line, 0) << e.what();
            return e.key_path();
        }
        return std::string("accepted");
    };
    EXPECT_EQ(key_of("search: {pp: [1, 2]}\n"), "search.pp");
    EXPECT_EQ(key_of("objective: {type: min_cost, speedup: 2}\n"), "objective.speedup");
    EXPECT_EQ(key_of("objective: min_time\n"), "objective");
    EXPECT_EQ(key_of("constraints: {deadline: 30d}\n"), "constraints.deadline");
    EXPECT_EQ(key_of("objective: {type: max_rate, speedup_range: [1, 2]}\n"),
              "objective.speedup_range");
    EXPECT_EQ(key_of("objective: {type: min_cost, rate: 3/s}\n"), "accepted");
}

} // namespace
} // namespace trnsim::study
