// A fleet's services: one domain's capacity measured by the request-level simulation, and the
// rate-level model agreeing with the request-level simulation (within 5 points of SLO
// attainment, either way) at loads from half the capacity to 2.5 times it, over a window twice
// as long as the measurement's and at rates it did not measure (but the capacity itself).
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/sim/fleet_run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

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
        fleet::FleetInput in = base.pools[0].input; // its one pool: domains, jobs, services
        in.services[0].load.at = {SimTime::zero()};
        in.services[0].load.rate = {rate};
        const fleet::FleetResult r = fleet::simulate_fleet(in);
        const double rate_level = r.services[0].attainment();
        std::printf("load %.2f x capacity (%.2f/s): request level %.3f, rate level %.3f\n", f,
                    rate, request_level, rate_level);
        EXPECT_NEAR(rate_level, request_level, 0.05) << "at " << f << " x capacity";
    }
}

/// `s` with `from` replaced by `to` (kService by default).
std::string with(const std::string& from, const std::string& to,
                 std::string s = std::string(kService));

TEST(FleetServices, AWindowAtRequestLevelAgreesWithTheRateLevel) {
    // Two domains held throughout (min = max = 2 of 3), a constant load; the whole run is the
    // window. Below capacity both levels meet the SLO; above it both miss it alike.
    const FleetRun probe = run_fleet(config::load_scenario_text(kService, "one-service"), 1);
    const double capacity = probe.services[0].capacity;
    for (const double f : {0.8, 1.15}) {
        const std::string text =
            with("autoscale: {min: 1, max: 1}", "autoscale: {min: 2, max: 2}",
                 with("load: {rate: 1/s}",
                      "load: {rate: " + std::to_string(f * 2.0 * capacity) + "/s}",
                      with("cluster: {ultraservers: 2}", "cluster: {ultraservers: 3}",
                           with("  horizon: 10min\n",
                                "  horizon: 10min\n  request_level: {from: 0s, to: 10min}\n"))));
        const FleetRun run = run_fleet(config::load_scenario_text(text, "window"), 1);
        ASSERT_EQ(run.windows.size(), 1u);
        const FleetServiceWindow& w = run.windows[0];
        EXPECT_EQ(w.domains, 2);
        EXPECT_EQ(w.changes, 0);
        EXPECT_NEAR(w.rate, f * 2.0 * capacity, 1e-6 * capacity);
        // Poisson arrivals of that rate over the 10 minutes: within 5 standard deviations.
        const double mean = w.rate * 600.0;
        EXPECT_NEAR(static_cast<double>(w.requests), mean, 5.0 * std::sqrt(mean));
        EXPECT_EQ(w.retried, 0);
        std::printf("%.2f x capacity on 2 domains: request level %.3f, rate level %.3f\n", f,
                    w.attainment, w.rate_level_attainment);
        EXPECT_NEAR(w.attainment, w.rate_level_attainment, 0.05) << f << " x capacity";
    }
}

TEST(FleetServices, AWindowGivesEachDomainASlotWhileItServes) {
    using K = fleet::ServiceChange::Kind;
    const auto at = [](double minutes) {
        return SimTime::zero() + Duration::from_seconds_ceil(minutes * 60.0);
    };
    // Domains 7 and 3 ready at 60 and 120 min; 7 drains at 180 and leaves at 181; 5 ready at
    // 210 and lost to a failure at 300. Window 150 to 240 min.
    const std::vector<fleet::ServiceChange> changes = {
        {at(60), 7, K::up},    {at(120), 3, K::up},  {at(180), 7, K::drain},
        {at(181), 7, K::down}, {at(210), 5, K::up},  {at(300), 5, K::down}};
    const auto [got, slots] = window_changes(changes, at(150), at(240));
    // At the start 3 and 7 serve: slots 0 and 1 (by domain). 7 drains and leaves slot 1; 5
    // takes it. Nothing after the window's end.
    EXPECT_EQ(slots, 2);
    ASSERT_EQ(got.size(), 3u);
    const auto rel = [](double minutes) {
        return SimTime::zero() + Duration::from_seconds_ceil(minutes * 60.0);
    };
    EXPECT_EQ(got[0].at, rel(30));
    EXPECT_EQ(got[0].domain, 1u);
    EXPECT_EQ(got[0].kind, DomainChange::Kind::drain);
    EXPECT_EQ(got[1].at, rel(31));
    EXPECT_EQ(got[1].kind, DomainChange::Kind::down);
    EXPECT_EQ(got[2].at, rel(60));
    EXPECT_EQ(got[2].domain, 1u);
    EXPECT_EQ(got[2].kind, DomainChange::Kind::up);
    // A window before any domain: one slot, down from the start.
    const auto [none, one] = window_changes(changes, at(0), at(30));
    EXPECT_EQ(one, 1);
    ASSERT_EQ(none.size(), 1u);
    EXPECT_EQ(none[0].kind, DomainChange::Kind::down);
    // A domain that comes in the window takes a slot down until then.
    const auto [late, two] = window_changes(changes, at(100), at(130));
    EXPECT_EQ(two, 2);
    ASSERT_EQ(late.size(), 2u);
    EXPECT_EQ(late[0].at, SimTime::zero());
    EXPECT_EQ(late[0].kind, DomainChange::Kind::down);
    EXPECT_EQ(late[1].at, rel(20));
    EXPECT_EQ(late[1].kind, DomainChange::Kind::up);
}

TEST(FleetServices, ADrainingDomainDropsNoRequestALeavingOneDoes) {
    // The load falls from 4 to 1 times its low over the first 10 minutes: the autoscaler
    // scales in while requests are in flight. With a drain nothing is retried; without one the
    // domains leave with requests on them, which are sent elsewhere.
    const auto retried = [](const std::string& drain) {
        const std::string text =
            with("autoscale: {min: 1, max: 1}",
                 "autoscale: {min: 1, max: 2, interval: 30s, lag: 30s, provisioning: 1min, "
                 "drain: " + drain + "}",
                 with("load: {rate: 1/s}", "load: {rate: 2/s, peak: 4, period: 20min}",
                      with("cluster: {ultraservers: 2}", "cluster: {ultraservers: 3}",
                           with("  horizon: 10min\n",
                                "  horizon: 20min\n  request_level: {from: 0s, to: 20min}\n"))));
        const FleetRun run = run_fleet(config::load_scenario_text(text, "drain"), 1);
        EXPECT_GT(run.windows[0].changes, 0) << "the service must scale in";
        // The arrivals follow the falling load: as many as the rate level's, within Poisson's
        // 5 standard deviations.
        const double arrived = run.result.services[0].window_arrived;
        EXPECT_NEAR(static_cast<double>(run.windows[0].requests), arrived,
                    5.0 * std::sqrt(arrived));
        EXPECT_EQ(run.windows[0].unfinished, 0);
        return run.windows[0].retried;
    };
    EXPECT_EQ(retried("1min"), 0);
    EXPECT_GT(retried("0s"), 0);
}

/// `s` with `from` replaced by `to` (kService by default).
std::string with(const std::string& from, const std::string& to, std::string s) {
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) {
        s.replace(at, from.size(), to);
    }
    return s;
}

struct Bad {
    std::string text;
    std::string key;
    std::string says;
};

TEST(FleetServices, BadInputIsRefusedWithItsKeyAndPlace) {
    const std::string s0 = "fleet.services[0]";
    const std::string job = "  jobs:\n    - name: train\n      gang: 1\n      workload: {type: "
                            "training, model: llama3-8b, sequence_length: 8192, global_batch: "
                            "64, steps: 10, parallelism: {tp: 8, pp: 1, dp: auto}}\n";
    const std::vector<Bad> cases = {
        {with("  horizon: 10min\n", ""), "fleet.horizon", "runs for a given time"},
        {"name: q\nhardware: {chip: trn2}\ncluster: {ultraservers: 2}\n"
         "fleet: {horizon: 1h, services: []}\n",
         "fleet.services", "list of services"},
        {with("      load: {rate: 1/s}", "      load: {rate: 1/s}\n      bogus: 1"),
         s0 + ".bogus", "unknown key"},
        {with("load: {rate: 1/s}", "load: {peak: 2}"), s0 + ".load.rate", "requests per second"},
        {with("load: {rate: 1/s}", "load: {rate: 1}"), s0 + ".load.rate", "needs a unit"},
        {with("load: {rate: 1/s}", "load: {rate: 0/s}"), s0 + ".load.rate", "out of range"},
        {with("load: {rate: 1/s}", "load: {rate: 1/s, peak: 0.5}"), s0 + ".load.peak",
         "1 to 1,000"},
        {with("load: {rate: 1/s}", "load: {rate: 1/s, peak_at: 25h}"), s0 + ".load.peak_at",
         "within the period"},
        {with("load: {rate: 1/s}", "load: {rate: 1/s, step: 0s}"), s0 + ".load.step",
         "at least 1 s"},
        {with("load: {rate: 1/s}", "load: 3"), s0 + ".load", "expected a mapping"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 2, max: 1}"),
         s0 + ".autoscale.min", "must be 0 to the maximum"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1, max: 3}"),
         s0 + ".autoscale.max", "1 to 2"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1}"), s0 + ".autoscale.max",
         "give the maximum"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1, max: 1, signal: cpu}"),
         s0 + ".autoscale.signal", "expected one of utilisation"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1, max: 1, target: 1.5}"),
         s0 + ".autoscale.target", "at most 1"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1, max: 1, interval: 0s}"),
         s0 + ".autoscale.interval", "at least 1 s"},
        {with("autoscale: {min: 1, max: 1}", "autoscale: {min: 1, max: 1, drain: -1min}"),
         s0 + ".autoscale.drain", "negative"},
        {with("autoscale: {min: 1, max: 1}",
              "autoscale: {min: 1, max: 1, load_bandwidth: fast}"),
         s0 + ".autoscale.load_bandwidth", ""},
        {with("{min: 1, max: 1}", "{min: 2, max: 2}",
              with("  horizon: 10min\n", "  horizon: 10min\n  quotas: {chat: 1}\n")),
         s0 + ".autoscale.min", "quota"},
        {with("        type: inference", "        type: training"), s0 + ".workload.type",
         "inference workload"},
        {with("      load:", "      attainment: 1.5\n      load:"), s0 + ".attainment",
         "between 0 and 1"},
        {with("      load:", "      borrow: maybe\n      load:"), s0 + ".borrow", ""},
        {with("name: chat", "name: train", with("  services:\n", job + "  services:\n")),
         s0 + ".name", "another job class or service"},
        {with("  horizon: 10min\n", "  horizon: 10min\n  trace: jobs.csv\n"), "fleet.trace",
         "needs the job classes"},
        {with("  horizon: 10min\n", "  horizon: 10min\n  request_level: {from: 5min}\n"),
         "fleet.request_level.to", "from and to"},
        {with("  horizon: 10min\n",
              "  horizon: 10min\n  request_level: {from: 5min, to: 5min}\n"),
         "fleet.request_level.to", "ends after it starts"},
        {with("  horizon: 10min\n",
              "  horizon: 10min\n  request_level: {from: 5min, to: 11min}\n"),
         "fleet.request_level.to", "within the run"},
        {with("  horizon: 10min\n", "  horizon: 10min\n  request_level: 5min\n"),
         "fleet.request_level", "expected a mapping"},
        {with("  horizon: 10min\n",
              "  horizon: 10min\n  request_level: {from: 1min, to: 2min, at: 3}\n"),
         "fleet.request_level.at", "unknown key"},
        // Checked before anything runs, located in the file:
        {with("arrival: {poisson: {rate: 2/s}}", "arrival: {closed_loop: {concurrency: 4}}"),
         s0 + ".workload.requests.arrival", "open loop"},
        {with("tp: 64", "tp: 4"), s0 + ".workload.serving", "HBM"},
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
            EXPECT_GT(e.location().line, 1) << e.what(); // at its place, not the first line
        }
    }
}

} // namespace
} // namespace trnsim::sim
