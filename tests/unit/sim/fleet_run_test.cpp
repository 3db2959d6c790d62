// A `fleet:` scenario: each job class's step time, steps and checkpoint costs are what its
// workload gives alone on a cluster of its gang; its jobs follow the queue by hand; the records
// do not depend on the thread count; and what the loader and the checks refuse, with the key
// path and the place in the file.
#include "support/scratch.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/reliability/expectation.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace trnsim::sim {
namespace {

namespace fs = std::filesystem;

const std::string kFile = std::string(TRNSIM_SOURCE_DIR) + "/scenarios/fleet/shared-trn2.yaml";

/// The shipped fleet's 70B class as a scenario of its own on its 8 UltraServers.
constexpr const char* kPlainPretrain = R"(name: pretrain-70b
seed: 7
hardware: {chip: trn2, lnc: 2}
cluster: {ultraservers: 8}
workload:
  type: training
  model: llama3-70b
  sequence_length: 8192
  global_batch: 512
  tokens: 20B
  precision: bf16
  parallelism: {tp: 16, pp: 4, dp: auto, zero: 1, microbatch: 1, schedule: 1f1b, recompute: selective}
reliability:
  preset: llama3-16k-h100
  recovery: {restart: 10min}
  checkpoint: {interval: auto, mode: sync, storage_bandwidth: 2TB/s}
)";

TEST(Fleet, AClassRunsAtWhatItsWorkloadGivesAloneOnItsGang) {
    const FleetRun run = run_fleet(config::load_scenario(kFile));
    ASSERT_EQ(run.classes.size(), 3u);
    const FleetClassRun& c = run.classes[0];
    const config::ScenarioSpec alone = config::load_scenario_text(kPlainPretrain, "alone");
    const workload::Plan plan = check_training(alone);
    const StepEstimate step = estimate_step(plan);
    EXPECT_EQ(c.step, step.step_time);
    EXPECT_EQ(c.steps, plan.steps);
    EXPECT_EQ(c.plan.dp, plan.dp);
    const reliability::Expectation x =
        reliability::expect(reliability_input(alone, plan, step));
    ASSERT_TRUE(std::isfinite(x.facts.checkpoint_interval.seconds()));
    // The interval in whole steps, rounded up: its checkpoints come no more often than asked.
    EXPECT_GE(c.step * static_cast<double>(c.checkpoint_steps), x.facts.checkpoint_interval);
    EXPECT_LT(c.step * static_cast<double>(c.checkpoint_steps - 1), x.facts.checkpoint_interval);
    EXPECT_EQ(c.save, x.facts.checkpoint_stall);
    EXPECT_EQ(c.restore, x.facts.restore);
    EXPECT_EQ(c.launch.seconds(), 600.0);
    // Every job ran all its steps, and the jobs are the classes' counts in order.
    ASSERT_EQ(run.result.jobs.size(), 2u + 16u + 8u);
    EXPECT_EQ(run.class_of_job[2], 1);
    EXPECT_EQ(run.index_in_class[3], 1);
    for (std::size_t j = 0; j < run.result.jobs.size(); ++j) {
        EXPECT_EQ(run.result.jobs[j].steps_done,
                  run.classes[static_cast<std::size_t>(run.class_of_job[j])].steps);
    }
}

/// Two classes without reliability sections (no checkpoints, no launch time) on 4
/// UltraServers, first come first served: a big job from the start, a small one an hour later.
constexpr const char* kQueue = R"(name: queue
hardware: {chip: trn2}
cluster: {ultraservers: 4}
fleet:
  policy: fifo
  jobs:
    - name: big
      gang: 3
      workload: {type: training, model: llama3-8b, sequence_length: 8192, global_batch: 96, steps: 20000, precision: bf16, parallelism: {tp: 8, pp: 1, dp: auto}}
    - name: small
      gang: 2
      submit: 1h
      workload: {type: training, model: llama3-8b, sequence_length: 8192, global_batch: 64, steps: 100, precision: bf16, parallelism: {tp: 8, pp: 1, dp: auto}}
)";

TEST(Fleet, JobsFollowTheQueueByHand) {
    const FleetRun run = run_fleet(config::load_scenario_text(kQueue, "queue"));
    const auto tick = [](double s) { return Duration::from_seconds_ceil(s); };
    const Duration big = tick(run.classes[0].step.seconds()) * 20000;
    const Duration small = tick(run.classes[1].step.seconds()) * 100;
    ASSERT_GT(big.seconds(), 3600.0) << "the small job must arrive while the big one runs";
    const auto& jobs = run.result.jobs;
    EXPECT_EQ(jobs[0].end, SimTime::zero() + big);
    EXPECT_EQ(jobs[1].first_start, SimTime::zero() + big); // 1 of 4 free until then
    EXPECT_EQ(jobs[1].end, SimTime::zero() + big + small);
    EXPECT_EQ(jobs[1].waiting, big - tick(3600.0));
    EXPECT_EQ(run.classes[0].checkpoint_steps, 0);
    EXPECT_EQ(jobs[0].overhead, Duration::zero());
}

TEST(Fleet, APoolRunsItsOwnJobsAtItsOwnPrice) {
    // The queue above with the small class in a pool of its own (4 more UltraServers at $10
    // an instance-hour): it no longer waits for the big job; each pool's run is what it would
    // be alone.
    std::string text = kQueue;
    text.replace(text.find("  policy: fifo\n"), 15,
                 "  policy: fifo\n  pools:\n    - {name: b, ultraservers: 4, spares: 1, "
                 "cost: {instance_hour: 10USD}}\n");
    text.replace(text.find("      gang: 2\n"), 14, "      gang: 2\n      pool: b\n");
    const FleetRun run = run_fleet(config::load_scenario_text(text, "pools"));
    const auto tick = [](double s) { return Duration::from_seconds_ceil(s); };
    const Duration big = tick(run.classes[0].step.seconds()) * 20000;
    const Duration small = tick(run.classes[1].step.seconds()) * 100;
    const auto& jobs = run.result.jobs;
    ASSERT_EQ(run.pools.size(), 2u);
    EXPECT_EQ(jobs[0].end, SimTime::zero() + big);
    EXPECT_EQ(jobs[1].first_start, SimTime::zero() + tick(3600.0)); // at once, in its pool
    EXPECT_EQ(jobs[1].end, SimTime::zero() + tick(3600.0) + small);
    EXPECT_EQ(jobs[1].waiting, Duration::zero());
    EXPECT_EQ(run.pools[0].jobs, std::vector<std::int64_t>{0});
    EXPECT_EQ(run.pools[1].jobs, std::vector<std::int64_t>{1});
    EXPECT_EQ(run.pool_of_job, (std::vector<std::int32_t>{0, 1}));
    // Its price: $10 x the 4 instances of an UltraServer; its spare.
    EXPECT_DOUBLE_EQ(run.pools[1].domain_hour.usd(), 40.0);
    EXPECT_EQ(run.pools[1].input.domains, 4);
    EXPECT_EQ(run.pools[1].input.spares, 1);
    EXPECT_EQ(run.pools[1].result.end, jobs[1].end);
    // Each pool's domain time adds up to its domains over its run.
    for (const FleetPoolRun& p : run.pools) {
        double sum = 0.0;
        for (const Seconds t : p.result.pool.domain_time) {
            sum += t.seconds();
        }
        EXPECT_NEAR(sum, 4.0 * p.result.end.seconds(), 1e-6 * sum) << p.name;
    }
    // The same small job alone in a fleet of its 4-UltraServer pool.
    std::string alone = kQueue;
    alone.replace(alone.find("fleet:\n"), 7, "fleet:\n  spares: 1\n");
    alone.replace(alone.find("    - name: big\n"), alone.find("    - name: small\n") -
                                                          alone.find("    - name: big\n"),
                  "");
    const FleetRun one = run_fleet(config::load_scenario_text(alone, "alone"));
    ASSERT_EQ(one.result.jobs.size(), 1u);
    EXPECT_EQ(one.result.jobs[0].end, jobs[1].end);
    EXPECT_EQ(one.result.pool.timeline.size(), run.pools[1].result.pool.timeline.size());
}

TEST(Fleet, AResolvedFleetOfPoolsAndServicesLoadsBackToTheSameRun) {
    // What a results file stores as /meta/scenario runs again to the same records: the pools
    // with their resolved hardware and prices, each entry's pool, a service's load.
    const config::ScenarioSpec spec = config::load_scenario(
        std::string(TRNSIM_SOURCE_DIR) + "/scenarios/fleet/three-pools.yaml",
        {"fleet.horizon=6h"});
    const config::ScenarioSpec back = config::load_scenario_text(spec.resolved_yaml, "back");
    ASSERT_EQ(back.fleet->pools.size(), 3u);
    EXPECT_EQ(back.fleet->pools[1].hardware.chip.name, "trn1");
    EXPECT_EQ(back.fleet->services[0].pool, 2u);
    EXPECT_DOUBLE_EQ(back.fleet->services[0].load.rate, spec.fleet->services[0].load.rate);
    const FleetRun a = run_fleet(spec, 2);
    const FleetRun b = run_fleet(back, 1);
    ASSERT_EQ(a.result.jobs.size(), b.result.jobs.size());
    for (std::size_t j = 0; j < a.result.jobs.size(); ++j) {
        EXPECT_EQ(a.result.jobs[j].end, b.result.jobs[j].end) << j;
        EXPECT_EQ(a.result.jobs[j].held, b.result.jobs[j].held) << j;
    }
    EXPECT_EQ(a.result.services[0].held, b.result.services[0].held);
    EXPECT_EQ(a.result.services[0].met, b.result.services[0].met);
    for (std::size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(a.pools[k].domain_hour.usd(), b.pools[k].domain_hour.usd()) << k;
        EXPECT_EQ(a.pools[k].result.pool.timeline.size(), b.pools[k].result.pool.timeline.size());
    }
}

TEST(Fleet, TheRecordsDoNotDependOnTheThreads) {
    const config::ScenarioSpec spec = config::load_scenario(kFile);
    const FleetRun one = run_fleet(spec, 1);
    const FleetRun two = run_fleet(spec, 2);
    ASSERT_EQ(one.result.jobs.size(), two.result.jobs.size());
    for (std::size_t j = 0; j < one.result.jobs.size(); ++j) {
        EXPECT_EQ(one.result.jobs[j].first_start, two.result.jobs[j].first_start);
        EXPECT_EQ(one.result.jobs[j].end, two.result.jobs[j].end);
        EXPECT_EQ(one.result.jobs[j].lost, two.result.jobs[j].lost);
    }
    for (std::size_t u = 0; u < fleet::kDomainUses; ++u) {
        EXPECT_EQ(one.result.pool.domain_time[u], two.result.pool.domain_time[u]);
    }
    std::int64_t preemptions = 0;
    for (const fleet::JobRecord& j : one.result.jobs) {
        preemptions += j.preemptions;
    }
    EXPECT_GT(preemptions, 0) << "the shipped fleet shows a preemption";
}

TEST(Fleet, TheFleetsCheckpointSettingsWarnThatTheClassesHoldThem) {
    const config::ScenarioSpec spec =
        config::load_scenario(kFile, {"reliability.checkpoint.interval=1h"});
    ASSERT_EQ(spec.warnings.size(), 1u);
    EXPECT_EQ(spec.warnings[0].key_path, "reliability.checkpoint");
    EXPECT_TRUE(config::load_scenario(kFile).warnings.empty());
}

TEST(Fleet, AClassSparesWarnThatTheFleetsAreShared) {
    const config::ScenarioSpec spec = config::load_scenario(
        kFile, {"fleet.jobs.pretrain-70b.reliability.spares.ultraservers=2"});
    ASSERT_EQ(spec.warnings.size(), 1u);
    EXPECT_EQ(spec.warnings[0].key_path, "fleet.jobs[0].reliability.spares");
    EXPECT_TRUE(spec.warnings[0].location.known());
}

TEST(Fleet, AFailureFromTheTraceLandsOnTheJobHoldingTheDomain) {
    // Three UltraServers, one a spare; one job on the other two, without checkpoints. The
    // fleet's failure process replays one chip failure on UltraServer 0 at 1 h (nothing
    // else fails): the job loses its hour, and the spare takes the failed domain's place after
    // the 5 min detection; the domain comes back from its 2 h repair to the spare pool.
    const fs::path dir = test::scratch_path("trnsim-fleet-trace");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "failures.csv") << "time,component,index\n1h,chip,0\n";
    std::ofstream(dir / "fleet.yaml") << R"(name: traced
hardware: {chip: trn2}
cluster: {ultraservers: 3}
reliability:
  trace: failures.csv
  recovery: {detection: 5min, restart: 10min}
  repair: {auto: 2h, manual_fraction: 0}
fleet:
  spares: 1
  jobs:
    - name: one
      gang: 2
      workload: {type: training, model: llama3-8b, sequence_length: 8192, global_batch: 256, steps: 12000, precision: bf16, parallelism: {tp: 8, pp: 1, dp: auto}}
)";
    const FleetRun run = run_fleet(config::load_scenario((dir / "fleet.yaml").string()));
    const fleet::JobRecord& j = run.result.jobs.at(0);
    const Duration step = Duration::from_seconds_ceil(run.classes[0].step.seconds());
    const Duration hour = Duration::from_seconds_ceil(3600.0);
    EXPECT_EQ(j.failures, 1);
    EXPECT_EQ(j.starts, 2);
    EXPECT_EQ(j.lost, hour);
    EXPECT_EQ(j.end, SimTime::zero() + hour + Duration::from_seconds_ceil(300.0) + step * 12000);
    const auto& last = run.result.pool.timeline.back().domains;
    EXPECT_EQ(last[static_cast<std::size_t>(fleet::DomainUse::spare)], 1);
    EXPECT_EQ(last[static_cast<std::size_t>(fleet::DomainUse::idle)], 2); // the job is done
    EXPECT_GE(run.result.pool.domain_time[static_cast<std::size_t>(fleet::DomainUse::down)]
                  .seconds(),
              2 * 3600.0);
    fs::remove_all(dir);
}

TEST(Fleet, TheFailureProcessGivesTheSameRecordsOnOneAndTwoThreads) {
    const std::vector<std::string> failing = {
        "reliability.preset=llama3-16k-h100", "reliability.repair.auto=6h",
        "fleet.jobs.pretrain-70b.workload.tokens=200B"};
    const config::ScenarioSpec spec = config::load_scenario(kFile, failing);
    const FleetRun one = run_fleet(spec, 1);
    const FleetRun two = run_fleet(spec, 2);
    std::int64_t failures = 0;
    for (std::size_t j = 0; j < one.result.jobs.size(); ++j) {
        const fleet::JobRecord& a = one.result.jobs[j];
        EXPECT_EQ(a.end, two.result.jobs[j].end);
        EXPECT_EQ(a.failures, two.result.jobs[j].failures);
        failures += a.failures;
        const Duration step =
            Duration::from_seconds_ceil(one.classes[static_cast<std::size_t>(
                one.class_of_job[j])].step.seconds());
        EXPECT_EQ(a.held, step * a.steps_done + a.overhead + a.lost + a.unsaved);
    }
    EXPECT_GT(failures, 0) << "the 70B runs last ten days on 8 UltraServers";
    // A fleet's spares are fleet.spares.
    try {
        (void)config::load_scenario(kFile, {"reliability.spares.ultraservers=1"});
        ADD_FAILURE() << "loaded";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "reliability.spares") << e.what();
    }
}

TEST(Fleet, AJobTraceAddsItsJobsAndRefusesWhatIsWrongAtItsLineAndColumn) {
    const fs::path dir = test::scratch_path("trnsim-fleet-jobs");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string scenario = kQueue;
    scenario.replace(scenario.find("  policy: fifo\n"), 15,
                     "  policy: priority\n  trace: jobs.csv\n");
    std::ofstream(dir / "fleet.yaml") << scenario;
    const auto load = [&](const std::string& csv) {
        std::ofstream(dir / "jobs.csv") << csv;
        return config::load_scenario((dir / "fleet.yaml").string());
    };
    // The classes' own jobs (one each), then the trace's: a small job at 30 min with 50 steps,
    // one of priority 2 at 2 h.
    const FleetRun run = run_fleet(load("submit,class,steps,priority,duration\n"
                                        "30min,small,50,,\n2h,small,,2,\n3h,big,,,90min\n"));
    ASSERT_EQ(run.result.jobs.size(), 5u);
    EXPECT_EQ(run.class_of_job[2], 1);
    EXPECT_EQ(run.index_in_class[3], 2); // the class's third job
    EXPECT_EQ(run.input.jobs[2].steps, 50);
    EXPECT_EQ(run.input.jobs[2].submit, SimTime::zero() + Duration::from_seconds_ceil(1800.0));
    EXPECT_EQ(run.input.jobs[3].priority, 2);
    // 90 minutes of the big class's steps, the last one whole.
    const double big_step = run.classes[0].step.seconds();
    EXPECT_EQ(run.input.jobs[4].steps, static_cast<std::int64_t>(std::ceil(5400.0 / big_step)));
    EXPECT_LT(static_cast<double>(run.input.jobs[4].steps - 1) * big_step, 5400.0);
    EXPECT_GE(static_cast<double>(run.input.jobs[4].steps) * big_step, 5400.0);
    EXPECT_EQ(run.result.jobs[0].preemptions, 1) << "the priority-2 job preempts the big one";
    const std::vector<std::tuple<std::string, int, int, std::string>> bad = {
        {"submit,class,size\n0h,big,3\n", 1, 14, "unknown column"},
        {"submit,steps\n0h,3\n", 1, 1, "submit and class"},
        {"class,class\n", 1, 7, "appears twice"},
        {"submit,class\n0h,big,3\n", 2, 1, "expected 2 fields"},
        {"submit,class\n-1h,big\n", 2, 1, "negative"},
        {"submit,class\n2h,big\n1h,big\n", 3, 1, "must not decrease"},
        {"submit,class\n1h, bigg\n", 2, 5, "not a job class"},
        {"submit,class,steps\n1h,big,0\n", 2, 8, "1 to 2^40 steps"},
        {"submit,class,steps\n1h,big,-4\n", 2, 8, ""},
        {"submit,class,priority\n1h,big,2000000\n", 2, 8, "priority is 0 to"},
        {"submit,class,duration\n1h,big,0s\n", 2, 8, "duration must be positive"},
        {"submit,class,duration\n1h,big,long\n", 2, 8, "duration"},
        {"submit,class,steps,duration\n1h,big,4,2h\n", 2, 1, "not both"},
        {"submit,class\nsoon,big\n", 2, 1, "duration"},
        {"# nothing\n", 1, 1, "no header line"},
    };
    for (const auto& [csv, line, column, says] : bad) {
        try {
            (void)load(csv);
            ADD_FAILURE() << "accepted:\n" << csv;
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), "fleet.trace") << e.what();
            EXPECT_EQ(e.location().line, line) << e.what();
            EXPECT_EQ(e.location().column, column) << e.what();
            EXPECT_NE(std::string(e.what()).find("jobs.csv:"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    }
    fs::remove(dir / "jobs.csv");
    try {
        (void)config::load_scenario((dir / "fleet.yaml").string());
        ADD_FAILURE() << "loaded without its trace";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "fleet.trace") << e.what();
        EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
}

/// The queue scenario with one line replaced (`from` must occur in it).
std::string with(const std::string& from, const std::string& to) {
    std::string s = kQueue;
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) {
        s.replace(at, from.size(), to);
    }
    return s;
}

/// kQueue with its class `big` in pool b, fleet.pools given as `pools` (its list's lines).
std::string big_in_pool(const std::string& pools) {
    std::string t = with("gang: 3\n", "gang: 3\n      pool: b\n");
    t.replace(t.find("  policy: fifo\n"), 15, "  policy: fifo\n  pools:\n" + pools);
    return t;
}

struct Bad {
    std::string text;
    std::string key;
    std::string says;
};

TEST(Fleet, BadInputIsRefusedWithItsKeyAndPlace) {
    const std::string small = "    - name: small\n";
    const std::vector<Bad> cases = {
        {"name: q\nhardware: {chip: trn2}\ncluster: {ultraservers: 4}\nfleet: 3\n", "fleet",
         "expected a mapping"},
        {with("  policy: fifo\n", "  policy: fifo\n  bogus: 1\n"), "fleet.bogus",
         "unknown key"},
        {with("policy: fifo", "policy: lifo"), "fleet.policy", "expected one of fifo"},
        {with("policy: fifo", "policy: fifo\n  spares: 4"), "fleet.spares", "leave none"},
        {with("policy: fifo", "policy: fifo\n  spares: -1"), "fleet.spares", "whole number"},
        {with("policy: fifo", "policy: fifo\n  horizon: 0s"), "fleet.horizon", "positive"},
        {with("policy: fifo", "policy: fifo\n  horizon: soon"), "fleet.horizon", "duration"},
        {with("policy: fifo", "policy: fifo\n  quotas: 3"), "fleet.quotas", "mapping"},
        {with("policy: fifo", "policy: fifo\n  quotas: {big: 0}"), "fleet.quotas.big",
         "at least 1"},
        {with("policy: fifo", "policy: fifo\n  quotas: {ghost: 2}"), "fleet.quotas.ghost",
         "no job class"},
        {with("policy: fifo", "policy: fifo\n  quotas: {big: 2}"), "fleet.jobs[0].gang",
         "quota"},
        {"name: q\nhardware: {chip: trn2}\ncluster: {ultraservers: 4}\nfleet: {jobs: []}\n",
         "fleet.jobs", "list of job classes"},
        {with("    - name: big\n", "    - 7\n    - name: big\n"), "fleet.jobs[0]",
         "mapping"},
        {with("name: big", "name: big one"), "fleet.jobs[0].name", "letters"},
        {with("name: small", "name: big"), "fleet.jobs[1].name", "another job class"},
        {with("      gang: 3\n", ""), "fleet.jobs[0].gang", "give the ultraservers"},
        {with("gang: 3", "gang: 5"), "fleet.jobs[0].gang", "1 to 4"},
        {with("gang: 3", "gang: 3\n      count: 0"), "fleet.jobs[0].count", "0 with a fleet.trace"},
        {with("submit: 1h", "submit: -1h"), "fleet.jobs[1].submit", "negative"},
        {with("submit: 1h", "submit: 1h\n      count: 1000\n      every: 1y"),
         "fleet.jobs[1].every", "100 years"},
        {with("gang: 2\n", "gang: 2\n      priority: x\n"), "fleet.jobs[1].priority",
         "whole number"},
        {with("{type: training, model: llama3-8b, sequence_length: 8192, global_batch: 64",
              "{type: inference, model: llama3-8b, sequence_length: 8192, global_batch: 64"),
         "fleet.jobs[1].workload.type", "training jobs"},
        {with("global_batch: 64, steps: 100", "global_batch: 64, steps: 0"),
         "fleet.jobs[1].workload.steps", ""},
        // Both classes wrong, loaded side by side: the first one's error, as in order.
        {[](std::string t) {
             for (const char* m : {"global_batch: 96", "global_batch: 64"}) {
                 const auto at = t.find(std::string("model: llama3-8b, sequence_length: 8192, ") + m);
                 t.replace(at, 16, "model: llama9-8b");
             }
             return t;
         }(with("hardware: {chip: trn2}", "hardware: {chip: trn2}\nsimulation: {threads: 2}")),
         "fleet.jobs[0].workload.model", "llama9-8b"},
        // An elastic class's gangs.
        {with("gang: 3", "gang: [3, 2]"), "fleet.jobs[0].gang[1]", "increase"},
        {with("gang: 3", "gang: [3]"), "fleet.jobs[0].gang", "at least two"},
        {with("gang: 3", "gang: [3, 5]"), "fleet.jobs[0].gang[1]", "1 to 4"},
        // Pools beside the cluster's (main).
        {with("policy: fifo", "policy: fifo\n  pools: 3"), "fleet.pools", "list of pools"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: main, ultraservers: 2}]"),
         "fleet.pools[0].name", "cluster's own pool"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: b, ultraservers: 2, instances: 2}]"),
         "fleet.pools[0]", "exactly one of ultraservers or instances"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: b, ultraservers: 2, spares: 2}]"),
         "fleet.pools[0].spares", "0 to 1"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: b, ultraservers: 2, colour: red}]"),
         "fleet.pools[0].colour", "unknown key"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: b, ultraservers: 2}, {name: b, "
                              "instances: 2}]"),
         "fleet.pools[1].name", "another pool"},
        {with("policy: fifo", "policy: fifo\n  pools: [{name: b, ultraservers: 2}]"),
         "fleet.pools[0].name", "no job class or service runs in pool b"},
        {with("gang: 3\n", "gang: 3\n      pool: nowhere\n"), "fleet.jobs[0].pool",
         "no pool is named 'nowhere'"},
        {big_in_pool("    - {name: b, ultraservers: 2}\n"), "fleet.jobs[0].gang",
         "pool b's 2 less 0 spares"},
        {big_in_pool("    - name: b\n      hardware: {chip: trn9}\n      ultraservers: 4\n"),
         "fleet.pools[0].hardware.chip", "trn9"},
        {big_in_pool("    - name: b\n      hardware: {chip: inf2}\n      ultraservers: 4\n"),
         "fleet.pools[0].ultraservers", ""},
        {with("cluster: {ultraservers: 4}\n", ""), "cluster", "needs the cluster"},
        {with("fleet:", "workload: {type: training}\nfleet:"), "workload", "unknown key"},
    };
    for (const Bad& b : cases) {
        SCOPED_TRACE(b.key);
        try {
            (void)check_scenario(config::load_scenario_text(b.text, "bad"));
            ADD_FAILURE() << "accepted: " << b.key << "\n" << b.text;
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), b.key) << e.what();
            EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
            EXPECT_TRUE(e.location().known()) << e.what();
            if (b.key != "cluster") { // a key left out is refused at the file's start
                EXPECT_GT(e.location().line, 1) << e.what(); // at its place, not line 1
            }
        }
    }
    // A class's own plan, checked before anything runs: tp 3 does not divide the heads.
    try {
        const std::string tp3 = with("{tp: 8, pp: 1, dp: auto}}\n    - name: small",
                                     "{tp: 3, pp: 1, dp: auto}}\n    - name: small");
        check_scenario(config::load_scenario_text(tp3, "bad"));
        ADD_FAILURE() << "checked";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path().rfind("fleet.jobs[0].workload.parallelism", 0), 0u) << e.what();
    }
}

} // namespace
} // namespace trnsim::sim
