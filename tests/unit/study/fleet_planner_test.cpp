// The fleet planner (trnsim plan with a fleet: base): the fewest domains that meet every job's
// deadline, found by bisection and derived by hand; spares count in the pool; the plan's
// deadline for classes without one; keys a fleet plan refuses; the same answer on any number
// of threads.
#include "trnsim/config/load.hpp"
#include "trnsim/sim/fleet_run.hpp"
#include "trnsim/study/planner.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace trnsim::study {
namespace {

namespace fs = std::filesystem;

// Four jobs of two UltraServers each, all submitted at 0, no failures. DEADLINE is replaced by
// a time between one job's run and two: a job meets it only if it starts at once, so the pool
// must hold all four at the same time: 8 UltraServers plus its spares.
constexpr const char* kBase = R"(name: four-jobs
hardware: {chip: trn2}
cluster: {ultraservers: 12}
fleet:
  policy: fifo
  jobs:
    - name: pair
      gang: 2
      count: 4
      deadline: DEADLINE
      workload: {type: training, model: llama3-8b, sequence_length: 8192, global_batch: 128, steps: 200, precision: bf16, parallelism: {tp: 8, pp: 1, dp: auto}}
)";

/// The base with its deadline at `factor` times one job's run (the class's step time on its
/// gang times its steps), written to a scratch file.
fs::path base_file(double factor, const std::string& name) {
    std::string text = kBase;
    const config::ScenarioSpec probe = config::load_scenario_text(
        std::string(text).replace(text.find("DEADLINE"), 8, "1h"), "probe");
    const sim::FleetRun prepared = sim::prepare_fleet(probe, 1);
    const double run_s =
        Duration::from_seconds_ceil(prepared.classes[0].step.seconds()).seconds() *
        static_cast<double>(prepared.classes[0].steps);
    text.replace(text.find("DEADLINE"), 8, std::to_string(static_cast<long long>(run_s * factor)) + "s");
    const fs::path d = test::scratch_path("trnsim-fleet-planner");
    fs::create_directories(d);
    std::ofstream(d / name) << text;
    return d / name;
}

config::PlanSpec plan_of(const fs::path& base, const std::string& body) {
    return config::load_plan_text("base: " + base.string() + "\n" + body, "p.yaml");
}

TEST(FleetPlanner, FindsTheFewestUltraServersByBisection) {
    const fs::path base = base_file(1.5, "base.yaml");
    const config::PlanSpec plan =
        plan_of(base, "search:\n  ultraservers: [4, 16]\n  spares: [0, 2]\n");
    const config::ScenarioSpec b = config::load_scenario_with(plan.base, {});
    const PlanResult r = run_plan(plan, b, 2);
    ASSERT_TRUE(r.fleet.has_value());
    const FleetPlanResult& f = *r.fleet;
    ASSERT_EQ(f.fewest.size(), 2u);
    EXPECT_EQ(f.fewest[0].spares, 0);
    EXPECT_EQ(f.fewest[0].domains, 8); // four gangs of two at once
    EXPECT_FALSE(f.fewest[0].at_low_end);
    EXPECT_EQ(f.fewest[1].spares, 2);
    EXPECT_EQ(f.fewest[1].domains, 10); // the spares are the pool's too
    ASSERT_FALSE(f.ranking.empty());
    const auto best = static_cast<std::size_t>(f.ranking.front());
    EXPECT_EQ(f.candidates[best].domains, 8);
    EXPECT_EQ(f.evaluations[best].rank, 1);
    EXPECT_EQ(f.evaluations[best].deadlines_missed, 0);
    EXPECT_EQ(f.evaluations[best].finished, 4);
    // Every size the bisection tried, and the verdict each must have.
    for (std::size_t i = 0; i < f.candidates.size(); ++i) {
        const FleetCandidate& c = f.candidates[i];
        const FleetEvaluation& x = f.evaluations[i];
        const bool meets = c.domains - c.spares >= 8;
        EXPECT_EQ(x.verdict == Verdict::ok, meets) << c.domains << " with " << c.spares;
        if (!meets && x.verdict == Verdict::deadline) {
            // (D - S) / 2 jobs start at once; the others wait one run and miss.
            EXPECT_EQ(x.deadlines_missed, 4 - (c.domains - c.spares) / 2)
                << c.domains << " with " << c.spares;
            EXPECT_NE(x.reason.find("missed their deadline"), std::string::npos) << x.reason;
        }
        EXPECT_EQ(c.refined, c.domains != 4 && c.domains != 16);
    }
    // The cost is the pool's: 16 trn2 instances an UltraServer at the base's instance price.
    EXPECT_DOUBLE_EQ(f.evaluations[best].cost_per_hour_usd,
                     8.0 * 4.0 * b.cost.instance_hour.usd());
}

TEST(FleetPlanner, ThePlansDeadlineHoldsForClassesWithoutOne) {
    // Two and a half runs' time: two rounds of two jobs at once meet it (4 UltraServers); on 2
    // or 3 one job runs at a time and the third and fourth end after 3 and 4 runs.
    std::string text = kBase;
    text.replace(text.find("      deadline: DEADLINE\n"), 25, "");
    const fs::path d = test::scratch_path("trnsim-fleet-planner");
    fs::create_directories(d);
    std::ofstream(d / "open.yaml") << text;
    const config::ScenarioSpec probe = config::load_scenario_with((d / "open.yaml").string(), {});
    const sim::FleetRun prepared = sim::prepare_fleet(probe, 1);
    const double run_s =
        Duration::from_seconds_ceil(prepared.classes[0].step.seconds()).seconds() *
        static_cast<double>(prepared.classes[0].steps);
    const config::PlanSpec plan = plan_of(
        d / "open.yaml", "constraints: {deadline: " +
                             std::to_string(static_cast<long long>(run_s * 2.5)) +
                             "s}\nsearch: {ultraservers: [2, 3, 4, 12]}\n");
    const PlanResult r = run_plan(plan, config::load_scenario_with(plan.base, {}), 1);
    ASSERT_TRUE(r.fleet.has_value());
    EXPECT_EQ(r.fleet->fewest[0].domains, 4);
    EXPECT_FALSE(r.fleet->fewest[0].at_low_end);
}

TEST(FleetPlanner, GivesTheSameAnswerOnAnyNumberOfThreads) {
    const fs::path base = base_file(1.5, "threads.yaml");
    const config::PlanSpec plan = plan_of(base, "search: {ultraservers: [6, 9, 12, 20]}\n");
    const config::ScenarioSpec b = config::load_scenario_with(plan.base, {});
    const PlanResult one = run_plan(plan, b, 1);
    const PlanResult two = run_plan(plan, b, 2);
    ASSERT_EQ(one.fleet->candidates.size(), two.fleet->candidates.size());
    for (std::size_t i = 0; i < one.fleet->candidates.size(); ++i) {
        EXPECT_EQ(one.fleet->candidates[i].domains, two.fleet->candidates[i].domains);
        EXPECT_EQ(one.fleet->evaluations[i].verdict, two.fleet->evaluations[i].verdict);
        EXPECT_EQ(one.fleet->evaluations[i].end.seconds(), two.fleet->evaluations[i].end.seconds());
    }
    EXPECT_EQ(one.fleet->fewest[0].domains, 8);
}

TEST(FleetPlanner, RefusesWhatAFleetPlanDoesNotTake) {
    const fs::path base = base_file(1.5, "refuse.yaml");
    const config::ScenarioSpec b = config::load_scenario_with(base.string(), {});
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"search: {tp: [8, 16]}\n", "search.tp"},
        {"search: {instances: [4, 8]}\n", "search.instances"},
        {"objective: min_time\n", "objective"},
        {"constraints: {min_ettr: 0.9}\n", "constraints.min_ettr"},
        {"finalists: 3\n", "finalists"},
    };
    for (const auto& [body, key] : cases) {
        try {
            (void)enumerate_fleet(plan_of(base, body), b);
            ADD_FAILURE() << "accepted: " << body;
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), key) << e.what();
            EXPECT_GT(e.location().line, 0) << e.what();
        }
    }
    // Without a deadline anywhere and without services there is nothing to meet.
    std::string text = kBase;
    text.replace(text.find("      deadline: DEADLINE\n"), 25, "");
    const fs::path d = test::scratch_path("trnsim-fleet-planner");
    std::ofstream(d / "none.yaml") << text;
    try {
        (void)enumerate_fleet(plan_of(d / "none.yaml", "search: {ultraservers: [4, 8]}\n"),
                              config::load_scenario_with((d / "none.yaml").string(), {}));
        ADD_FAILURE() << "accepted a plan with nothing to meet";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "constraints.deadline") << e.what();
    }
}

} // namespace
} // namespace trnsim::study
