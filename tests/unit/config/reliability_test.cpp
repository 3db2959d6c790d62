// The reliability section of scenarios: defaults, lists of failure processes, presets (and the
// published numbers they were derived from), trace files, and the resolved scenario.
#include "trnsim/config/load.hpp"
#include "trnsim/reliability/failure_model.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

namespace trnsim::config {
namespace {

using reliability::ComponentClass;

constexpr const char* kBase = R"(cluster: {ultraservers: 2}
workload:
  model: llama3-8b
  sequence_length: 4096
  global_batch: 64
  tokens: 1B
)";

ScenarioSpec load(const std::string& extra, const std::vector<std::string>& overrides = {}) {
    return load_scenario_text(std::string(kBase) + extra, "rel.yaml", overrides);
}

TEST(ReliabilitySection, AbsentMeansNoRunSimulation) {
    const ScenarioSpec s = load("");
    EXPECT_FALSE(s.reliability.enabled);
    EXPECT_EQ(s.resolved_yaml.find("reliability"), std::string::npos) << s.resolved_yaml;
    EXPECT_NE(s.resolved_yaml.find("replications: 1"), std::string::npos);
}

TEST(ReliabilitySection, DocumentedDefaults) {
    const ScenarioSpec s = load("reliability: {}\n");
    const auto& r = s.reliability;
    EXPECT_TRUE(r.enabled);
    EXPECT_TRUE(r.failures.empty());
    EXPECT_EQ(r.recovery.detection, Duration::from_ns(120'000'000'000));
    EXPECT_EQ(r.recovery.restart, Duration::from_ns(600'000'000'000));
    EXPECT_EQ(r.recovery.scope, reliability::RecoveryScope::job);
    EXPECT_FALSE(r.recovery.run_degraded);
    EXPECT_EQ(r.spares.count(), 0);
    EXPECT_EQ(r.repair.automatic, Duration::from_ns(7'200'000'000'000));
    EXPECT_EQ(r.repair.manual, Duration::from_ns(259'200'000'000'000));
    EXPECT_DOUBLE_EQ(r.repair.manual_fraction, 0.2);
    EXPECT_EQ(r.checkpoint.interval, Duration::zero()); // auto
    EXPECT_EQ(r.checkpoint.mode, reliability::CheckpointMode::sync);
    EXPECT_FALSE(r.checkpoint.size.has_value());
    EXPECT_DOUBLE_EQ(r.checkpoint.storage_bandwidth.bytes_per_s(), 2e12);
    EXPECT_DOUBLE_EQ(r.checkpoint.restore_bandwidth.bytes_per_s(), 0.0); // auto
    EXPECT_EQ(r.fabric.switch_radix, 128);
    EXPECT_EQ(r.fabric.power_domain_instances, 8);
    EXPECT_EQ(s.simulation.duration, Duration::zero()); // until_done
    EXPECT_EQ(s.simulation.replications, 1);
    EXPECT_NEAR(s.simulation.time_limit.seconds(), 5 * 365.25 * 86400, 1e-6);
}

TEST(ReliabilitySection, FailureProcesses) {
    const ScenarioSpec s = load(R"(reliability:
  failures:
    - {component: chip, mtbf: 10y}
    - {component: host, mtbf: 400y, distribution: {weibull: {shape: 0.8}}, cause: psu}
    - {component: leaf, mtbf: 5y, distribution: {lognormal: {sigma: 1.5}}, effect: degrade,
       bad_fraction: 10%, bad_multiplier: 4}
simulation: {duration: 30d, replications: 8}
)");
    const auto& f = s.reliability.failures;
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].component, ComponentClass::chip);
    EXPECT_NEAR(f[0].mtbf.seconds(), 10 * 365.25 * 86400, 1e-3);
    EXPECT_EQ(f[0].distribution.kind, reliability::LifetimeKind::exponential);
    EXPECT_EQ(f[0].cause, "");
    // Beyond the 292 years a Duration holds.
    EXPECT_NEAR(f[1].mtbf.seconds(), 400 * 365.25 * 86400, 1e-2);
    EXPECT_EQ(f[1].distribution.kind, reliability::LifetimeKind::weibull);
    EXPECT_DOUBLE_EQ(f[1].distribution.shape, 0.8);
    EXPECT_EQ(f[1].cause, "psu");
    EXPECT_EQ(f[2].distribution.kind, reliability::LifetimeKind::lognormal);
    EXPECT_DOUBLE_EQ(f[2].distribution.sigma, 1.5);
    EXPECT_EQ(f[2].effect, reliability::Effect::degrade);
    EXPECT_DOUBLE_EQ(f[2].bad_fraction, 0.1);
    EXPECT_DOUBLE_EQ(f[2].bad_multiplier, 4.0);
    EXPECT_EQ(s.simulation.duration, Duration::from_ns(std::int64_t{30} * 86400 * 1'000'000'000));
    EXPECT_EQ(s.simulation.replications, 8);
}

TEST(ReliabilitySection, ResolvedScenarioFillsEachProcessAndRoundTrips) {
    const ScenarioSpec a = load("reliability:\n  failures: [{component: chip, mtbf: 10y}]\n");
    for (const char* key : {"component: chip", "distribution: exponential", "effect: auto",
                            "bad_fraction: 0", "detection: 2min", "mode: sync"}) {
        EXPECT_NE(a.resolved_yaml.find(key), std::string::npos) << key << "\n" << a.resolved_yaml;
    }
    const ScenarioSpec b = load_scenario_text(a.resolved_yaml, "again.yaml");
    EXPECT_EQ(b.resolved_yaml, a.resolved_yaml);
    EXPECT_TRUE(b.reliability.enabled);
}

TEST(ReliabilitySection, SetOverridesKeysOfTheSection) {
    const ScenarioSpec s = load("reliability: {failures: [{component: chip, mtbf: 10y}]}\n",
                                {"reliability.recovery.scope=replica",
                                 "reliability.failures=[{component: hbm, mtbf: 30y}]"});
    EXPECT_EQ(s.reliability.recovery.scope, reliability::RecoveryScope::replica);
    ASSERT_EQ(s.reliability.failures.size(), 1u);
    EXPECT_EQ(s.reliability.failures[0].component, ComponentClass::hbm);
}

TEST(ReliabilityPresets, ScenarioKeysWinOverThePreset) {
    const ScenarioSpec p = load("reliability: {preset: meta-rsc1, recovery: {restart: 20min}}\n");
    EXPECT_EQ(p.reliability.preset, "meta-rsc1");
    ASSERT_EQ(p.reliability.failures.size(), 1u);
    EXPECT_EQ(p.reliability.failures[0].cause, "node_failure");
    EXPECT_EQ(p.reliability.recovery.restart, Duration::from_ns(1'200'000'000'000));
    const ScenarioSpec q = load(
        "reliability: {preset: meta-rsc1, failures: [{component: hbm, mtbf: 1y}]}\n");
    ASSERT_EQ(q.reliability.failures.size(), 1u); // lists are replaced whole
    EXPECT_EQ(q.reliability.failures[0].component, ComponentClass::hbm);
}

/// Expected failures of a preset's processes on a population: sum over processes of
/// components x days / MTBF.
double expected_failures(const std::vector<reliability::FailureSpec>& failures,
                         const std::map<ComponentClass, double>& components, double days) {
    double n = 0.0;
    for (const auto& f : failures) {
        n += components.at(f.component) * days * 86400.0 / f.mtbf.seconds();
    }
    return n;
}

TEST(ReliabilityPresets, Llama3PresetReproducesThe419Interruptions) {
    // On the cluster it was measured on (reliability.md §1): 16,384 GPUs, 2,048 hosts, 16,384
    // NICs, 256 leaves (trnsim's fabric counts for 2,048 hosts with 8 rails and 128-port
    // switches), 54 days: the processes must add up to the 419 unexpected interruptions
    // (MTBFs are rounded to days).
    const ScenarioSpec s = load("reliability: {preset: llama3-16k-h100}\n");
    const auto& f = s.reliability.failures;
    EXPECT_EQ(f.size(), 18u);
    const std::map<ComponentClass, double> llama = {
        {ComponentClass::chip, 16384}, {ComponentClass::hbm, 16384},
        {ComponentClass::host, 2048},  {ComponentClass::software, 2048},
        {ComponentClass::nic, 16384},  {ComponentClass::leaf, 256}};
    EXPECT_NEAR(expected_failures(f, llama, 54), 419.0, 0.2);
    // Per-GPU rate: 0.173 failures per GPU-year, MTBF 3.09 h for the job (reliability.md §1).
    EXPECT_NEAR(54.0 * 24.0 / expected_failures(f, llama, 54), 3.09, 0.01);
}

TEST(ReliabilityPresets, MetaPresetsGiveKokolisProjections) {
    // 16,384 GPUs: MTTF 1.8 h at RSC-1's 6.50 failures per 1,000 node-days (8 GPUs a node).
    const ScenarioSpec rsc1 = load("reliability: {preset: meta-rsc1}\n");
    const double per_day = expected_failures(rsc1.reliability.failures,
                                             {{ComponentClass::chip, 16384}}, 1.0);
    EXPECT_NEAR(24.0 / per_day, 1.8, 0.05);
    EXPECT_NEAR(per_day / 2048 * 1000, 6.50, 0.01); // per 1,000 node-days
    const ScenarioSpec rsc2 = load("reliability: {preset: meta-rsc2}\n");
    EXPECT_NEAR(expected_failures(rsc2.reliability.failures, {{ComponentClass::chip, 8}}, 1000),
                2.34, 0.01);
}

TEST(ReliabilityTrace, ReadsSortsAndNamesCauses) {
    const auto dir = test::scratch_path("trnsim-trace-test");
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "t.csv") << "# an incident\ntime,component,index,cause\n"
                                 << "3h, host, 7, psu\n1.5h,chip,12\n";
    std::ofstream(dir / "s.yaml") << kBase << "reliability: {trace: t.csv}\n";
    const ScenarioSpec s = load_scenario((dir / "s.yaml").string());
    const auto& t = s.reliability.trace.failures;
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0].component, ComponentClass::chip);
    EXPECT_EQ(t[0].index, 12);
    EXPECT_EQ(t[0].cause, "trace");
    EXPECT_EQ(t[0].line, 4);
    EXPECT_EQ(t[0].time, Duration::from_ns(5'400'000'000'000));
    EXPECT_EQ(t[1].component, ComponentClass::host);
    EXPECT_EQ(t[1].cause, "psu");
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace trnsim::config
