// The up-front bounds of a serving run (serve_bounds.hpp): where the progress check under
// failures draws its line, derived by hand from the cost model's iteration times.
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "serve_layout.hpp"

namespace trnsim {
namespace {

constexpr const char* kFleet = R"(name: serve
hardware: {chip: inf2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 8, max_batch: 4, max_context: 4096}
  requests:
    input_tokens: 1000
    output_tokens: 200
    arrival: {poisson: {rate: 4/s}}
    count: 50
  slo: {ttft: 1s, tpot: 50ms}
)";

/// A request of 1,000 + 200 tokens alone on one of the fleet's tp-8 replicas, by hand from the
/// cost model: one prefill of 1,000 tokens and 199 decode iterations at batch 1 over the mean
/// context (1,000 + 100).
double request_alone_s() {
    const config::ScenarioSpec probe = config::load_scenario_text(kFleet, "serve");
    const int lnc = probe.hardware.chip.lnc_default;
    const serving::IterationCostModel cost(
        probe.inference.model, probe.hardware.chip, lnc, probe.inference.serving,
        serving::ReplicaPlacement::single(probe.hardware.chip, lnc, 8),
        probe.hardware.hbm_reserve);
    serving::IterationShape prefill;
    prefill.prefill_sequences = 1;
    prefill.prefill_tokens = 1000;
    prefill.prefill_max_tokens = 1000;
    prefill.prefill_max_context = 1000;
    serving::IterationShape decode;
    decode.decode_sequences = 1;
    decode.decode_context_tokens = 1100;
    decode.decode_max_context = 1100;
    return cost.seconds(prefill) + 199.0 * cost.seconds(decode);
}

/// The fleet with one exponential host process of mean `mtbf_s` and a 6 s return.
config::ScenarioSpec with_host_mtbf(double mtbf_s) {
    char mtbf[64];
    std::snprintf(mtbf, sizeof mtbf, "%.9gs", mtbf_s);
    return config::load_scenario_text(
        std::string(kFleet) + "reliability: {failures: [{component: host, mtbf: " + mtbf +
            "}], recovery: {detection: 1s, restart: 5s}}\n",
        "serve");
}

// A request of 1,000 + 200 tokens alone on a tp-8 replica takes t = one prefill of 1,000
// tokens + 199 decode iterations at batch 1 (context 1,000 + 100 for the mean), and after a
// failure the instance returns in w = 1 s + 5 s. The instance has one host, so it survives
// t + w with probability exp(-(t + w) / m) and a request needs exp((t + w) / m) attempts: the
// line of kMaxAttempts = 1,000 attempts is m* = (t + w) / ln 1000. 2% either side of it is
// accepted and refused.
TEST(ServeBounds, ProgressUnderFailuresDrawsItsLineAtAThousandAttempts) {
    const double t = request_alone_s();
    ASSERT_GT(t, 1.0); // about 2.6 s: the line is near 1.3 s of mtbf
    const double line = (t + 6.0) / std::log(static_cast<double>(sim::detail::kMaxAttempts));

    EXPECT_NO_THROW((void)sim::check_serving(with_host_mtbf(line * 1.02)));
    try {
        (void)sim::check_serving(with_host_mtbf(line * 0.98));
        ADD_FAILURE() << "an mtbf 2% below the line was accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("reliability.failures[0].mtbf: failures outpace "
                                              "recovery",
                                              0),
                  0u)
            << e.what();
    }
}

// The memory estimate of the fleet above (no failures), term by term: 50 requests x 320
// bytes = 16,000; one inf2.48xlarge holds 3 replicas of tp 8 in one domain, so 2 engine
// partitions (the router's and the domain's): 3 x 4,096 + 2^2 x 25 = 12,388; the arrivals span
// 49 / 4 = 12.25 s on average, plus t for the last request, sampled every second: 12.25 + t + 1
// samples of 3 x 4 + 16 = 28 bytes. A limit one byte under the sum refuses the run at the key
// of its largest term (the requests), one byte over accepts it.
TEST(ServeBounds, TheMemoryEstimateAddsItsTermsByHand) {
    const double t = request_alone_s();
    const double total = 16000.0 + 12388.0 + (12.25 + t + 1.0) * 28.0;
    const auto with_limit = [](double bytes) {
        return config::load_scenario_text(kFleet, "serve",
                                          {"simulation.max_memory=" +
                                           std::to_string(static_cast<long long>(bytes)) + "B"});
    };
    EXPECT_NO_THROW((void)sim::check_serving(with_limit(std::ceil(total) + 1.0)));
    try {
        (void)sim::check_serving(with_limit(std::floor(total) - 1.0));
        ADD_FAILURE() << "a limit under the estimate of " << total << " bytes was accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("workload.requests.count: the run would need", 0),
                  0u)
            << e.what();
    }
}

} // namespace
} // namespace trnsim
