// A fleet's services: one domain's capacity measured by the request-level simulation, and the
// rate-level model agreeing with the request-level simulation (within 5 points of SLO
// attainment, either way) at loads from half the capacity to 2.5 times it, over a window twice
// as long as the measurement's and at rates it did not measure (but the capacity itself).
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/sim/fleet_run.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace trnsim::sim {
namespace {

/// Llama 3 70B on one Trn2 UltraServer (4 replicas of tp 64), Poisson arrivals of lognormal
/// sizes, measured over 5 minutes; the fleet holds one domain throughout.
constexpr const char* kService = R"(name: one-service
seed: 3
hardware: {chip: trn2, lnc: 2}
cluster: {ultraservers: 2}
fleet:
  horizon: 10min
  services:
    - name: chat
      workload:
        type: inference
        model: llama3-70b
        precision: bf16
        serving: {tp: 64, max_batch: 16, max_context: 8192, prefill_chunk: 0}
        requests:
          input_tokens: {lognormal: {mean: 1200, sd: 1000}, max: 7000}
          output_tokens: {lognormal: {mean: 250, sd: 200}, max: 1000}
          arrival: {poisson: {rate: 2/s}}
          duration: 5min
        slo: {ttft: 1s, tpot: 50ms}
      load: {rate: 1/s}
      autoscale: {min: 1, max: 1}
)";

TEST(FleetServices, RateLevelAgreesWithRequestLevelAtLoadsItDidNotMeasure) {
    const config::ScenarioSpec spec = config::load_scenario_text(kService, "one-service");
    const FleetRun base = run_fleet(spec, 1);
    ASSERT_EQ(base.services.size(), 1u);
    const FleetServiceRun& v = base.services[0];
    ASSERT_GT(v.capacity, 0.0);
    ASSERT_GE(v.throughput, v.capacity);
    for (const double f : {0.45, 0.8, 1.0, 1.15, 1.6, 2.5}) {
        const double rate = f * v.capacity;
        // Request level: the service's workload at this rate for 10 minutes.
        config::ScenarioSpec one = *spec.fleet->services[0].scenario;
        one.inference.requests.arrival.rate_per_s = rate;
        one.inference.requests.duration = Duration::from_seconds_ceil(600.0);
        one.output.requests = false;
        const double request_level = run_serving(one, 1).run.summary.slo_attainment;
        // Rate level: the same load on one domain.
        fleet::FleetInput in = base.input;
        in.services[0].load.at = {SimTime::zero()};
        in.services[0].load.rate = {rate};
        const fleet::FleetResult r = fleet::simulate_fleet(in);
        const double rate_level = r.services[0].attainment();
        std::printf("load %.2f x capacity (%.2f/s): request level %.3f, rate level %.3f\n", f,
                    rate, request_level, rate_level);
        EXPECT_NEAR(rate_level, request_level, 0.05) << "at " << f << " x capacity";
    }
}

} // namespace
} // namespace trnsim::sim
