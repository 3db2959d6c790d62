// A workload.type: inference scenario from YAML to figures: the config keys reach the fleet,
// the closed-loop protocol and the cost model's times show in the records, the results do not
// depend on the thread count, and the resolved scenario reloads to itself.
#include "trnsim/config/load.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/workload/model.hpp"

#include <gtest/gtest.h>

#include <string>

namespace trnsim {
namespace {

constexpr const char* kClosedLoop = R"(name: serve
hardware: {chip: inf2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 8, max_batch: 4, max_context: 4096, router_latency: 1ms}
  requests:
    input_tokens: 1000
    output_tokens: 200
    arrival: {closed_loop: {concurrency: 1}}
    count: 5
  slo: {ttft: 1s, tpot: 50ms}
)";

TEST(ServeScenario, KeysReachTheSpec) {
    const config::ScenarioSpec spec = config::load_scenario_text(kClosedLoop, "serve");
    ASSERT_EQ(spec.workload_type, config::WorkloadType::inference);
    const serving::InferenceSpec& inf = spec.inference;
    EXPECT_EQ(inf.model.layers, 32); // llama3-8b
    EXPECT_EQ(inf.serving.tp, 8);
    EXPECT_EQ(inf.serving.max_batch, 4);
    EXPECT_EQ(inf.serving.max_context, 4096);
    EXPECT_EQ(inf.serving.weight_bytes, 2); // auto from precision bf16
    EXPECT_EQ(inf.requests.input.kind, serving::TokenDistribution::Kind::fixed);
    EXPECT_EQ(inf.requests.input.a, 1000.0);
    EXPECT_EQ(inf.requests.arrival.kind, serving::ArrivalSpec::Kind::closed_loop);
    EXPECT_EQ(inf.requests.count, 5);
    EXPECT_EQ(inf.slo.tpot, Duration::from_ns(50'000'000));
}

// One replica, one request in flight, fixed sizes: nothing queues, so each request's first
// token comes exactly one router hop (1 ms) plus one prefill iteration after it was sent, and
// the client, which sits at the router, sends the next request when the finish report reaches
// it, one hop after the finish: arrival[i+1] = finish[i] + 1 hop. The prefill iteration's time is the
// cost model's (this part checks the wiring from the scenario to the fleet, not the costs).
TEST(ServeScenario, ClosedLoopFollowsTheProtocolAndTheCostModel) {
    const config::ScenarioSpec spec = config::load_scenario_text(kClosedLoop, "serve");
    const sim::ServingScenarioRun run = sim::run_serving(spec, 1);
    ASSERT_EQ(run.run.requests.size(), 5u);
    const int lnc = spec.hardware.chip.lnc_default;
    const serving::IterationCostModel cost(
        spec.inference.model, spec.hardware.chip, lnc, spec.inference.serving,
        serving::ReplicaPlacement::single(spec.hardware.chip, lnc, 8), spec.hardware.hbm_reserve);
    serving::IterationShape prefill;
    prefill.prefill_sequences = 1;
    prefill.prefill_tokens = 1000;
    prefill.prefill_max_tokens = 1000;
    prefill.prefill_max_context = 1000;
    const std::int64_t hop = 1'000'000;
    const std::int64_t prefill_ns = cost.time(prefill).ns();
    for (std::size_t i = 0; i < run.run.requests.size(); ++i) {
        const serving::RequestRecord& r = run.run.requests[i];
        EXPECT_EQ(r.input_tokens, 1000);
        EXPECT_EQ(r.output_tokens, 200);
        EXPECT_EQ(r.first_token.ns() - r.arrival.ns(), hop + prefill_ns) << i;
        EXPECT_GT(r.finish.ns(), r.first_token.ns());
        if (i + 1 < run.run.requests.size()) {
            EXPECT_EQ(run.run.requests[i + 1].arrival.ns(), r.finish.ns() + hop) << i;
        }
    }
    // Every request alike: the percentiles collapse onto one value.
    EXPECT_DOUBLE_EQ(run.run.summary.ttft_p50.seconds(), run.run.summary.ttft_p99.seconds());
    EXPECT_EQ(run.run.summary.output_tokens, 5u * 200u);
    // Cost: one inf2.48xlarge for the simulated span at the chip file's on-demand price.
    EXPECT_NEAR(run.cost_usd,
                run.run.stats.end.seconds() / 3600.0 * spec.cost.instance_hour.usd(), 1e-12);
    EXPECT_NEAR(run.cost_per_million_output_tokens_usd, run.cost_usd / 1000.0 * 1e6, 1e-9);
    EXPECT_GT(run.mbu, 0.0);
    EXPECT_LE(run.mbu, 1.0); // no iteration reads faster than the HBM
}

// The measured utilisation comes from the iterations the run simulated. One client keeps one
// replica of the instance's three busy (inf2: 12 chips x 2 cores / tp 8), and it idles two
// router hops per request. Its five requests compute 1,000 prompt tokens and 199 decode tokens
// each; the MFU is 2 x active parameters / tp per token over the replicas' time in service.
// Doubling the instances adds three replicas that never run: the same iterations over twice
// the replica time, so MBU and MFU halve, and the MBU while busy stays.
TEST(ServeScenario, MeasuredUtilisationFollowsTheIterations) {
    const config::ScenarioSpec spec = config::load_scenario_text(kClosedLoop, "serve");
    const sim::ServingScenarioRun run = sim::run_serving(spec, 1);
    const sim::ServingRunStats& st = run.run.stats;
    ASSERT_EQ(st.replicas, 3u);
    EXPECT_EQ(st.prefill_tokens, 5000u);
    EXPECT_EQ(st.decode_tokens, 5u * 199u);
    EXPECT_GT(run.mbu, 0.0);
    EXPECT_LT(run.mbu, run.mbu_busy / 2.9); // two of three replicas idle, and the hops
    EXPECT_LE(run.mbu_busy, 1.0);
    const compute::ChipSpec& chip = spec.hardware.chip;
    const int ranks = chip.ranks_per_chip(run.lnc);
    const double flops = 2.0 * static_cast<double>(workload::compute_stats(spec.inference.model).active) /
                         8.0 * 5995.0;
    const double peak = chip.peak(spec.inference.serving.precision).per_s() / ranks;
    EXPECT_NEAR(run.mfu, flops / (3.0 * st.end.seconds() * peak), 1e-12);

    const config::ScenarioSpec wider =
        config::load_scenario_text(kClosedLoop, "serve", {"cluster.instances=2"});
    const sim::ServingScenarioRun idle = sim::run_serving(wider, 1);
    ASSERT_EQ(idle.run.stats.replicas, 6u);
    ASSERT_EQ(idle.run.stats.end.seconds(), st.end.seconds());
    EXPECT_NEAR(idle.mbu, run.mbu / 2.0, 1e-12);
    EXPECT_NEAR(idle.mfu, run.mfu / 2.0, 1e-12);
    EXPECT_DOUBLE_EQ(idle.mbu_busy, run.mbu_busy);
}

constexpr const char* kTraceFleet = R"(name: fleet
hardware: {chip: inf2}
cluster: {instances: 2}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 4, max_batch: 8, max_context: 8192, prefill_chunk: 1024}
  requests:
    input_tokens: trace
    output_tokens: trace
    arrival: {trace: azure-llm-inference-2023/conv.csv, speedup: 2}
    count: 600
  slo: {ttft: 1s, tpot: 50ms}
)";

TEST(ServeScenario, SameRecordsOnOneAndTwoThreads) {
    const config::ScenarioSpec spec = config::load_scenario_text(kTraceFleet, "fleet");
    const sim::ServingScenarioRun one = sim::run_serving(spec, 1);
    const sim::ServingScenarioRun two = sim::run_serving(spec, 2);
    ASSERT_EQ(one.run.requests.size(), 600u);
    ASSERT_EQ(two.run.requests.size(), 600u);
    EXPECT_EQ(one.run.stats.replicas, 12u); // 24 chips x 2 cores / tp 4
    for (std::size_t i = 0; i < 600; ++i) {
        const auto& a = one.run.requests[i];
        const auto& b = two.run.requests[i];
        ASSERT_EQ(a.arrival.ns(), b.arrival.ns()) << i;
        ASSERT_EQ(a.first_token.ns(), b.first_token.ns()) << i;
        ASSERT_EQ(a.finish.ns(), b.finish.ns()) << i;
        ASSERT_EQ(a.replica, b.replica) << i;
    }
    EXPECT_EQ(one.run.summary.ttft_p99.seconds(), two.run.summary.ttft_p99.seconds());
    EXPECT_EQ(one.run.kv_series.size(), two.run.kv_series.size());
}

TEST(ServeScenario, ResolvedScenarioReloadsToItself) {
    const config::ScenarioSpec spec = config::load_scenario_text(kTraceFleet, "fleet");
    EXPECT_EQ(spec.resolved_yaml.find("parallelism"), std::string::npos);
    EXPECT_EQ(spec.resolved_yaml.find("fidelity"), std::string::npos);
    const config::ScenarioSpec again = config::load_scenario_text(spec.resolved_yaml, "fleet");
    EXPECT_EQ(again.resolved_yaml, spec.resolved_yaml);
    // And a training scenario's resolved text carries none of the serving keys.
    const config::ScenarioSpec training = config::load_scenario_text(
        "cluster: {ultraservers: 1}\nworkload: {model: llama3-8b, sequence_length: 4096, "
        "global_batch: 64, steps: 10}\n",
        "t");
    EXPECT_EQ(training.resolved_yaml.find("serving"), std::string::npos);
    EXPECT_EQ(training.resolved_yaml.find("router_window"), std::string::npos);
    EXPECT_EQ(config::load_scenario_text(training.resolved_yaml, "t").resolved_yaml,
              training.resolved_yaml);
}

} // namespace
} // namespace trnsim
