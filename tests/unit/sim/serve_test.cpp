// The serving fleet on the engine: placement, the router, latency, closed-loop clients,
// disaggregated KV transfers, and the same results on 1 and 2 threads.
//
// Iteration costs come from serving::test::TestCost (1 ms + 10 us per computed token), so
// expected times are sums written out in the comments.
#include "serve_parts.hpp"
#include "support/sharing.hpp"
#include "unit/serving/test_cost.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/reliability/outages.hpp"
#include "trnsim/serving/replica_sim.hpp"
#include "trnsim/serving/trace.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace trnsim::sim {
namespace {

using serving::test::TestCost;
using detail::test::cost;
using detail::test::kMs;
using detail::test::kUs;

/// The parts' test fleet (serve_parts.hpp) on `ultraservers` UltraServers.
ServeInput fleet(int ultraservers, int tp, int replicas) {
    return detail::test::fleet(ultraservers, 0, tp, replicas);
}

void fixed_requests(ServeInput& in, std::int64_t count, double rate, std::int64_t input,
                    std::int64_t output) {
    serving::RequestSpec& r = in.spec.requests;
    r.input = {serving::TokenDistribution::Kind::fixed, static_cast<double>(input), 0, 1, 0, {}};
    r.output = {serving::TokenDistribution::Kind::fixed, static_cast<double>(output), 0, 1, 0, {}};
    r.arrival.kind = serving::ArrivalSpec::Kind::poisson;
    r.arrival.rate_per_s = rate;
    r.count = count;
}

void random_requests(ServeInput& in, std::int64_t count, double rate) {
    serving::RequestSpec& r = in.spec.requests;
    r.input = {serving::TokenDistribution::Kind::lognormal, 600, 500, 1, 3000, {}};
    r.output = {serving::TokenDistribution::Kind::lognormal, 120, 120, 1, 1000, {}};
    r.arrival.kind = serving::ArrivalSpec::Kind::gamma;
    r.arrival.rate_per_s = rate;
    r.arrival.gamma_cv = 1.5;
    r.count = count;
    r.prefix = {8, 128, 0.5};
}

/// `in` served on one thread and on two with the helpers in every window: the pair of runs
/// whose results must be identical.
std::pair<ServingRun, ServingRun> on_one_and_two_threads(ServeInput in) {
    in.threads = 1;
    ServingRun a = simulate_serving(in);
    in.threads = 2;
    const test::ScopedSharing every_window("always"); // the helpers in every window
    ServingRun b = simulate_serving(in);
    return {std::move(a), std::move(b)};
}

// trn2 at LNC 2: 4 ranks per chip, 16 chips per instance, 4 instances per UltraServer.
//   tp 16: 4 chips, 4 replicas per instance; 2 UltraServers = 8 instances = 32 replicas in 2
//   partitions, one per UltraServer (+ the router's). tp 2: 2 replicas per chip, 32 per instance. tp 128: 32 chips,
//   2 per UltraServer (partition = UltraServer). tp 48 (12 chips) divides neither.
TEST(ServeFleet, PlacementFromTheChip) {
    ServeInput in = fleet(2, 16, 0);
    fixed_requests(in, 4, 100.0, 10, 2);
    ServingRun r = simulate_serving(in);
    EXPECT_EQ(r.stats.replicas, 32u);
    EXPECT_EQ(r.stats.replicas_per_unit, 4u);
    EXPECT_FALSE(r.stats.unit_is_ultraserver);
    EXPECT_EQ(r.stats.partitions, 3u);
    EXPECT_EQ(r.placement[17].domain, 1u);
    EXPECT_EQ(r.placement[5].first_chip, 16u + 4u); // instance 1, second replica
    EXPECT_EQ(r.placement[5].chips, 4u);

    in = fleet(2, 2, 0);
    fixed_requests(in, 4, 100.0, 10, 2);
    r = simulate_serving(in);
    EXPECT_EQ(r.stats.replicas, 256u);
    EXPECT_EQ(r.placement[3].first_chip, 1u); // replicas 2 and 3 share chip 1

    in = fleet(2, 128, 0);
    fixed_requests(in, 4, 100.0, 10, 2);
    r = simulate_serving(in);
    EXPECT_EQ(r.stats.replicas, 4u);
    EXPECT_TRUE(r.stats.unit_is_ultraserver);
    EXPECT_EQ(r.placement[3].first_chip, 64u + 32u);

    in = fleet(2, 48, 0);
    fixed_requests(in, 4, 100.0, 10, 2);
    EXPECT_THROW(simulate_serving(in), InputError);
    in = fleet(1, 16, 17);
    fixed_requests(in, 4, 100.0, 10, 2);
    EXPECT_THROW(simulate_serving(in), InputError);
}

// One request through the router: it reaches the replica 1 ms after it was sent, prefills 100
// tokens (2 ms: first token at 3 ms) and decodes 4 tokens at 1.01 ms: 7.04 ms.
TEST(ServeFleet, OneRequestPaysTheRouterLatency) {
    ServeInput in = fleet(1, 16, 1);
    fixed_requests(in, 1, 1.0, 100, 5);
    const ServingRun r = simulate_serving(in);
    ASSERT_EQ(r.requests.size(), 1u);
    EXPECT_EQ(r.requests[0].arrival.ns(), 0);
    EXPECT_EQ(r.requests[0].first_token.ns(), 3 * kMs);
    EXPECT_EQ(r.requests[0].finish.ns(), 7 * kMs + 40 * kUs);
    EXPECT_NEAR(r.summary.ttft_p50.seconds(), 0.003, 1e-12);
}

// One replica behind the router is the same schedule as the replica alone, later by the
// router latency: every first token and finish moves by exactly 1 ms.
TEST(ServeFleet, OneReplicaIsTheReplicaShiftedByTheLatency) {
    ServeInput in = fleet(1, 16, 1);
    random_requests(in, 400, 6.0);
    in.spec.serving.prefix_caching = true;
    const ServingRun f = simulate_serving(in);
    const serving::RequestSource src(in.spec.requests, in.spec.serving.max_context, in.seed);
    const serving::ReplicaRun alone =
        serving::simulate_replica(in.spec, cost(), 2000, src, in.seed);
    ASSERT_EQ(f.requests.size(), alone.records.size());
    for (std::size_t i = 0; i < f.requests.size(); ++i) {
        EXPECT_EQ(f.requests[i].arrival.ns(), alone.records[i].arrival.ns());
        EXPECT_EQ(f.requests[i].first_token.ns(), alone.records[i].first_token.ns() + kMs) << i;
        EXPECT_EQ(f.requests[i].finish.ns(), alone.records[i].finish.ns() + kMs) << i;
        EXPECT_EQ(f.requests[i].preemptions, alone.records[i].preemptions);
    }
}

// Round robin sends request i to replica i mod n; least loaded sends simultaneous requests to
// distinct replicas and, with all equally loaded, to the one chosen longest ago.
TEST(ServeFleet, RouterPolicies) {
    ServeInput in = fleet(1, 16, 8);
    fixed_requests(in, 40, 50.0, 50, 3);
    ServingRun r = simulate_serving(in);
    for (const serving::RequestRecord& q : r.requests) {
        EXPECT_EQ(q.replica, q.id % 8);
    }
    // Least loaded at a low rate (each request done long before the next): every request
    // finds all replicas idle and goes to the one chosen longest ago: again 0, 1, ..., 7, 0.
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    fixed_requests(in, 24, 5.0, 50, 3);
    r = simulate_serving(in);
    for (const serving::RequestRecord& q : r.requests) {
        EXPECT_EQ(q.replica, q.id % 8);
    }
    // Prefix affinity: requests of prefix g go to replica (g - 1) mod 8 while it is not
    // max_batch requests busier than the least loaded (never here: the load is light).
    in.spec.serving.router = serving::RouterPolicy::prefix_affinity;
    in.spec.requests.prefix = {3, 32, 1.0};
    r = simulate_serving(in);
    serving::RequestSource src(in.spec.requests, in.spec.serving.max_context, in.seed);
    for (const serving::RequestRecord& q : r.requests) {
        const serving::Request req = src.request(q.id, SimTime::zero());
        EXPECT_EQ(q.replica, (req.prefix_id - 1) % 8);
    }
}

// Closed loop, one client, L = 1 ms, 100 prompt tokens and 2 outputs: a request reaches the
// replica L after it is sent, takes 2 + 1.01 = 3.01 ms, and the client learns of its end L
// later and sends the next at once: requests are sent every 5.01 ms (0, 5.01, 10.02).
TEST(ServeFleet, ClosedLoopClients) {
    ServeInput in = fleet(1, 16, 1);
    fixed_requests(in, 3, 1.0, 100, 2);
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 1;
    const ServingRun r = simulate_serving(in);
    ASSERT_EQ(r.requests.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r.requests[i].arrival.ns(), i * (5 * kMs + 10 * kUs));
        EXPECT_EQ(r.requests[i].finish.ns(), r.requests[i].arrival.ns() + 4 * kMs + 10 * kUs);
    }
    // Two clients keep two requests in flight: both start at 0.
    in.spec.requests.arrival.concurrency = 2;
    in.spec.requests.count = 6;
    const ServingRun two = simulate_serving(in);
    EXPECT_EQ(two.requests[0].arrival.ns(), 0);
    EXPECT_EQ(two.requests[1].arrival.ns(), 0);
    EXPECT_GT(two.requests[2].arrival.ns(), 0);
}

// Disaggregated, on one UltraServer: tp 4 (one chip per replica), 2 replicas, 1 prefill.
// Prefill replicas are spread evenly: r is one when floor((r + 1) / 2) > floor(r / 2), so
// replica 1 (chip 1) prefills and replica 0 (chip 0) decodes; the chips are torus neighbours
// (one NeuronLink hop: 256 GB/s, 2 us).
//   Request: 1000 prompt tokens, 3 outputs, sent at 0; at the prefill replica at 1 ms; prefill
//   1 + 10 = 11 ms: first token at 12 ms. KV: 1000 x 256,000 bytes = 256 MB over the hop:
//   1 ms + 2 us: it reaches the decode replica at 13.002 ms; two decodes of 1.01 ms finish it
//   at 15.022 ms.
TEST(ServeFleet, DisaggregatedKvTransferOverNeuronLink) {
    ServeInput in = fleet(1, 4, 2);
    in.fabric = config::load_fabric("trn2-ultraserver");
    in.spec.serving.disaggregated.prefill_replicas = 1;
    in.kv_bytes_per_token = Bytes(256'000);
    fixed_requests(in, 1, 1.0, 1000, 3);
    const ServingRun r = simulate_serving(in);
    EXPECT_TRUE(r.placement[1].prefill);
    EXPECT_FALSE(r.placement[0].prefill);
    ASSERT_EQ(r.requests.size(), 1u);
    const serving::RequestRecord& q = r.requests[0];
    EXPECT_EQ(q.prefill_replica, 1u);
    EXPECT_EQ(q.replica, 0u);
    EXPECT_EQ(q.first_token.ns(), 12 * kMs);
    EXPECT_NEAR(static_cast<double>(q.finish.ns()), 15'022'000.0, 2.0);
    EXPECT_EQ(r.stats.kv_transfers, 1u);
    EXPECT_DOUBLE_EQ(r.stats.kv_transfer_bytes, 256e6);
    // Two gaps after the first token; the first spans the transfer, together the request's
    // finish - first token.
    EXPECT_EQ(r.summary.itl_count, 2u);
    EXPECT_NEAR(r.summary.itl_mean.seconds() * 2.0,
                (q.finish - q.first_token).seconds(), 1e-12);
}

// A one-token request ends on its prefill replica (its first token is its last): it takes no
// decode replica, and its finish frees its prefill replica in the router's counts. Four
// one-chip replicas, two prefilling (replicas 1 and 3: r prefills when floor((r + 1) 2 / 4) >
// floor(r 2 / 4)), least-loaded routing (ties to the one chosen longest ago, then the lower).
// Requests from a trace (arrival, prompt, output tokens):
//   0: 0 s,     100, 5  -> prefill 1 (both idle), decode 0 (both idle)
//   1: 0.5 ms,  100, 1  -> prefill 3 (1 still counts request 0: its prefilled report reaches
//                          the router at 1 + 2 + 1 = 4 ms); no decode replica. At replica 3 at
//                          1.5 ms, prefill 1 ms + 100 x 10 us = 2 ms: first token and finish at
//                          3.5 ms, reported at 4.5 ms.
//   2: 1 s,     100, 5  -> everything is idle again: prefill 1 (chosen before 3), decode 2
//                          (never chosen; 0 was)
//   3: 2 s,     100, 5  -> prefill 3 (chosen before 1 now), decode 0
// Counting the one-token request on a decode replica sends request 2 to decode replica 0, and
// never freeing its prefill replica sends request 3 to prefill replica 1.
TEST(ServeFleet, OneTokenRequestsFinishOnTheirPrefillReplica) {
    ServeInput in = fleet(1, 4, 4);
    in.fabric = config::load_fabric("trn2-ultraserver");
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.spec.serving.disaggregated.prefill_replicas = 2;
    in.kv_bytes_per_token = Bytes(256'000);
    in.trace = std::make_shared<serving::AzureTrace>(
        serving::parse_azure_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                   "2023-11-16 00:00:00.0000,100,5\n"
                                   "2023-11-16 00:00:00.0005,100,1\n"
                                   "2023-11-16 00:00:01.0000,100,5\n"
                                   "2023-11-16 00:00:02.0000,100,5\n",
                                   "t.csv"));
    serving::RequestSpec& r = in.spec.requests;
    r.input.kind = serving::TokenDistribution::Kind::trace;
    r.output.kind = serving::TokenDistribution::Kind::trace;
    r.arrival.kind = serving::ArrivalSpec::Kind::trace;
    r.count = 4;
    const ServingRun run = simulate_serving(in);
    ASSERT_EQ(run.requests.size(), 4u);
    const std::uint32_t prefill[] = {1, 3, 1, 3}, decode[] = {0, 3, 2, 0};
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(run.requests[i].finished()) << i;
        EXPECT_EQ(run.requests[i].prefill_replica, prefill[i]) << i;
        EXPECT_EQ(run.requests[i].replica, decode[i]) << i;
    }
    EXPECT_EQ(run.requests[1].first_token.ns(), 3'500'000);
    EXPECT_EQ(run.requests[1].finish.ns(), 3'500'000);
    EXPECT_EQ(run.stats.kv_transfers, 3u);
}

/// Two UltraServers of 16 replicas of tp 16 each, `prefill` of them prefilling over the
/// UltraCluster fabric (EFA between the UltraServers), least-loaded routing, a router latency
/// of 10 ms (few windows) and Llama 3 70B's KV bytes per token.
ServeInput disaggregated_fleet(int prefill) {
    ServeInput in = fleet(2, 16, 0);
    in.fabric = config::load_fabric("trn2-ultracluster");
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.spec.serving.router_latency = Duration::from_ns(10 * kMs);
    in.spec.serving.disaggregated.prefill_replicas = prefill;
    in.kv_bytes_per_token = Bytes(327'680);
    return in;
}

// More prefill than decode replicas, with many one-token requests (each ends on its prefill
// replica): every request finishes, the same on 1 and 2 threads. Two UltraServers (2
// partitions, 32 replicas of tp 16), 20 of them prefilling, over the UltraCluster fabric.
TEST(ServeFleet, MorePrefillThanDecodeReplicasWithOneTokenRequests) {
    ServeInput in = disaggregated_fleet(20);
    random_requests(in, 800, 400.0);
    in.spec.requests.output = {serving::TokenDistribution::Kind::lognormal, 3, 4, 1, 40, {}};
    in.threads = 1;
    const ServingRun a = simulate_serving(in);
    in.threads = 2;
    const ServingRun b = simulate_serving(in);
    EXPECT_EQ(b.stats.threads, 2);
    EXPECT_EQ(a.stats.prefill_replicas, 20u);
    ASSERT_EQ(a.requests.size(), 800u);
    ASSERT_EQ(b.requests.size(), 800u);
    std::uint64_t one = 0;
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
        ASSERT_TRUE(x.finished()) << i;
        one += x.output_tokens == 1 ? 1 : 0;
        EXPECT_EQ(x.output_tokens == 1, x.replica == x.prefill_replica) << i;
        ASSERT_EQ(x.first_token.ns(), y.first_token.ns()) << i;
        ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
        ASSERT_EQ(x.replica, y.replica) << i;
        ASSERT_EQ(x.prefill_replica, y.prefill_replica) << i;
    }
    EXPECT_GT(one, 100u); // the case under test is common
    EXPECT_EQ(a.stats.kv_transfers, 800u - one);
    EXPECT_EQ(a.stats.events, b.stats.events);
}

// The same fleet on 1 and 2 threads: identical per-request records and figures. Two
// UltraServers (2 partitions, 32 replicas of tp 16), gamma arrivals, prefix caching,
// least-loaded routing and speculative decoding; then disaggregated with 8 prefill replicas
// and chunked prefill over the UltraCluster fabric (EFA between the UltraServers), with a
// router window.
TEST(ServeFleet, SameResultsOnOneAndTwoThreads) {
    for (bool disaggregated : {false, true}) {
        ServeInput in = fleet(2, 16, 0);
        in.spec.serving.router = serving::RouterPolicy::least_loaded;
        in.spec.serving.prefix_caching = true;
        in.options.kv_sample = Duration::from_ns(100 * kMs);
        // A long router latency keeps the windows few (each costs barriers, slow on a loaded
        // machine); determinism does not depend on it.
        in.spec.serving.router_latency = Duration::from_ns(10 * kMs);
        in.options.router_window = Duration::from_ns(disaggregated ? 15 * kMs : 0);
        random_requests(in, 3000, 400.0);
        if (!disaggregated) {
            serving::SpeculativeSpec sp;
            sp.k = 2;
            sp.acceptance = {0.7, 0.5};
            in.spec.serving.speculative = sp;
        } else {
            in.spec.serving.prefill_chunk = 256;
            in.fabric = config::load_fabric("trn2-ultracluster");
            in.spec.serving.disaggregated.prefill_replicas = 8;
            in.kv_bytes_per_token = Bytes(327'680);
        }
        const auto [a, b] = on_one_and_two_threads(in);
        EXPECT_EQ(b.stats.threads, 2);
        EXPECT_EQ(b.stats.shared_windows, b.stats.windows);
        EXPECT_EQ(a.stats.shared_windows, 0u);
        ASSERT_EQ(a.requests.size(), 3000u);
        ASSERT_EQ(a.requests.size(), b.requests.size());
        for (std::size_t i = 0; i < a.requests.size(); ++i) {
            const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
            ASSERT_EQ(x.first_token.ns(), y.first_token.ns()) << i;
            ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
            ASSERT_EQ(x.replica, y.replica) << i;
            ASSERT_EQ(x.prefill_replica, y.prefill_replica) << i;
            ASSERT_EQ(x.preemptions, y.preemptions) << i;
        }
        EXPECT_EQ(a.stats.events, b.stats.events);
        EXPECT_EQ(a.stats.iterations, b.stats.iterations);
        EXPECT_EQ(a.summary.ttft_p99.seconds(), b.summary.ttft_p99.seconds());
        ASSERT_EQ(a.kv_series.size(), b.kv_series.size());
        for (std::size_t k = 0; k < a.kv_series.size(); ++k) {
            EXPECT_EQ(a.kv_series[k].used_fraction, b.kv_series[k].used_fraction);
        }
        EXPECT_GT(a.kv_cache_peak_fraction, 0.0);
        if (disaggregated) {
            std::uint64_t multi = 0; // one-token requests finish on their prefill replica
            for (const serving::RequestRecord& q : a.requests) {
                multi += q.output_tokens > 1 ? 1 : 0;
                EXPECT_EQ(q.output_tokens > 1, q.replica != q.prefill_replica);
            }
            EXPECT_EQ(a.stats.kv_transfers, multi);
            EXPECT_EQ(a.stats.prefill_replicas, 8u);
        }
    }
}

/// Hosts that fail every `mtbf_s` on average, repaired in `repair_s` (never by hand).
reliability::ReliabilitySpec failing_hosts(double mtbf_s, double repair_s, double detection_s,
                                           double restart_s) {
    reliability::ReliabilitySpec rs;
    rs.enabled = true;
    reliability::FailureSpec f;
    f.component = reliability::ComponentClass::host;
    f.cause = "host";
    f.mtbf = Seconds::of(mtbf_s);
    rs.failures = {f};
    rs.repair.automatic = Duration::from_seconds_ceil(repair_s);
    rs.repair.manual_fraction = 0.0;
    rs.recovery.detection = Duration::from_seconds_ceil(detection_s);
    rs.recovery.restart = Duration::from_seconds_ceil(restart_s);
    return rs;
}

// One replica on one UltraServer (one failure domain, no spare) and a closed-loop client: a
// request of 100 + 2 tokens takes 4.01 ms from its arrival (1 ms to the replica, prefill 2 ms,
// one decode 1.01 ms) and the next one arrives 1 ms after it finished. The host failure at t1
// (taken from the same outage schedule the fleet uses) drops or bounces the request in flight;
// the router notices at t1 + 0.5 s with no replica left, and the domain is back after its
// repair (60 s, longer than the detection) and the restart (1 s): tb = t1 + 61 s. The
// request is routed at tb + 1 ns (the router enables the replica 1 ns after it is back),
// reaches the replica 1 ms later, and has its first token at tb + 1 ns + 3 ms and its finish at
// tb + 1 ns + 4.01 ms.
/// The outage schedule the fleet of `in` draws when only its hosts fail (as serve.cpp builds
/// it: the instance's facts, `spares` spare domains, `units` domains holding replicas), for
/// the tests to read the failures' times from.
struct HostOutages {
    static reliability::HardwareFacts facts(const compute::ChipSpec& chip) {
        return hardware_facts(chip);
    }
    static std::array<bool, reliability::kClassCount> hosts_only() {
        std::array<bool, reliability::kClassCount> present{};
        present[static_cast<std::size_t>(reliability::ComponentClass::host)] = true;
        return present;
    }
    HostOutages(const ServeInput& in, std::int64_t spares, std::int64_t units)
        : layout(cluster::make_cluster_shape(in.cluster, in.chip.instance.chips, 4),
                 facts(in.chip), reliability::FabricSpec{}, spares, hosts_only()),
          schedule(in.reliability, layout, units, in.seed) {}
    reliability::Layout layout;
    reliability::OutageSchedule schedule;
};

TEST(ServeFleet, AFailedDomainsRequestIsRetriedWhenItReturns) {
    ServeInput in = fleet(1, 16, 1);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.reliability = failing_hosts(200.0, 60.0, 0.5, 1.0);
    HostOutages outages(in, 0, 1);
    reliability::OutageSchedule& sched = outages.schedule;
    const auto down = sched.next(), up = sched.next(), again = sched.next();
    ASSERT_TRUE(down && up && again);
    ASSERT_FALSE(down->up);
    ASSERT_TRUE(up->up);
    const std::int64_t t1 = down->time.ns(), tb = up->time.ns();
    EXPECT_EQ(tb - t1, 61 * 1000 * kMs);
    const std::int64_t period = 5 * kMs + 10 * kUs;
    const std::int64_t before = t1 / period; // requests issued before the failure, about
    fixed_requests(in, before + 4, 1.0, 100, 2);
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 1;
    ASSERT_GT(again->time.ns(), tb + 1000 * kMs) << "a second failure would end the test early";

    const ServingRun r = simulate_serving(in);
    ASSERT_EQ(r.requests.size(), static_cast<std::size_t>(before + 4));
    EXPECT_EQ(r.stats.outages, 1u);
    std::size_t spanning = 0;
    for (std::size_t i = 0; i < r.requests.size(); ++i) {
        const serving::RequestRecord& q = r.requests[i];
        ASSERT_TRUE(q.finished());
        if (q.arrival.ns() <= t1 + period && q.finish.ns() > tb) {
            ++spanning;
            // Routed at tb + 1 ns, 1 ms to the replica, prefill 2 ms, decode 1.01 ms.
            EXPECT_EQ(q.finish.ns(), tb + 1 + 4 * kMs + 10 * kUs);
            EXPECT_EQ(q.first_token.ns(), tb + 1 + 3 * kMs);
            EXPECT_LE(q.retries, 1u);
        } else if (i > 0 && q.arrival.ns() > tb) {
            EXPECT_EQ(q.arrival.ns(), r.requests[i - 1].finish.ns() + kMs);
            EXPECT_EQ(q.finish.ns(), q.arrival.ns() + 4 * kMs + 10 * kUs);
        } else {
            EXPECT_LT(q.finish.ns(), t1 + 2 * kMs);
        }
    }
    EXPECT_EQ(spanning, 1u);
    EXPECT_LE(r.summary.retried_requests, 1u);
    const double end = r.stats.end.seconds() * 1e9;
    EXPECT_NEAR(r.stats.availability, 1.0 - static_cast<double>(tb - t1) / end, 1e-9);
    EXPECT_NEAR(r.stats.replica_down.seconds(), static_cast<double>(tb - t1) * 1e-9, 1e-9);
}

// Failures on a fleet of 32 replicas over two UltraServers and a spare: the same records on 1
// and 2 threads, every request finished once, and the retried ones counted.
TEST(ServeFleet, FailuresGiveTheSameResultsOnOneAndTwoThreads) {
    ServeInput in = fleet(2, 16, 0);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.spec.serving.router_latency = Duration::from_ns(10 * kMs);
    in.reliability = failing_hosts(4.0, 3.0, 0.5, 1.0);
    in.reliability.spares.ultraservers = 1;
    reliability::FailureSpec bug;
    bug.component = reliability::ComponentClass::software;
    bug.cause = "software";
    bug.mtbf = Seconds::of(6.0);
    in.reliability.failures.push_back(bug);
    random_requests(in, 3000, 400.0);
    const auto [a, b] = on_one_and_two_threads(in);
    ASSERT_EQ(a.requests.size(), 3000u);
    ASSERT_EQ(b.requests.size(), 3000u);
    EXPECT_GT(a.stats.outages, 0u);
    EXPECT_GT(a.summary.retried_requests, 0u);
    EXPECT_EQ(a.stats.spare_instances, 4u);
    std::uint64_t retried = 0;
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
        ASSERT_TRUE(x.finished());
        ASSERT_GE(x.first_token.ns(), x.arrival.ns());
        ASSERT_GE(x.finish.ns(), x.first_token.ns());
        ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
        ASSERT_EQ(x.first_token.ns(), y.first_token.ns()) << i;
        ASSERT_EQ(x.replica, y.replica) << i;
        ASSERT_EQ(x.retries, y.retries) << i;
        retried += x.retries > 0 ? 1 : 0;
    }
    EXPECT_EQ(retried, a.summary.retried_requests);
    EXPECT_EQ(a.stats.outages, b.stats.outages);
    EXPECT_EQ(a.stats.availability, b.stats.availability);
    EXPECT_LT(a.stats.availability, 1.0);
}

// Disaggregated over two UltraServers (the failure domains): replica 0 (UltraServer 0)
// decodes, replica 1 (UltraServer 1) prefills (r prefills when floor((r + 1) / 2) >
// floor(r / 2)); tp 256 at LNC 2 is the 64 chips of one UltraServer. One request of 1,000 +
// 3 tokens with a KV cache of 100 MB a token: its 100 GB cross EFA as 64 flows from 12 ms (1 ms
// to the prefill replica, prefill 11 ms) to about 12 ms + 1.56 GB / a chip's EFA rate. A trace
// fails a host of one UltraServer at 20 ms, inside the transfer; no spare, repair 60 s,
// detection 0.5 s, restart 1 s: the UltraServer serves again at tb = 61.02 s.
//   prefill side (host 4, UltraServer 1): the prefill replica loses the cache at 21 ms, and
//     the decode replica hears of it at 22 ms, before the cache would have arrived; it drops
//     the request, and the router retries it when the prefill replica returns.
//   decode side (host 0, UltraServer 0): the decode replica fails at 21 ms; the cache
//     arrives at a failed replica, which releases the prefill replica's copy and drops it.
// Either way the router sends the request again at tb + 1 ns (it enables a returned domain's
// replicas 1 ns after it is back), and the second attempt runs as the first would have
// without the failure: first token at tb + 1 ns + 12 ms, finish at tb + 1 ns + the finish
// without failures; retried once, one transfer accepted.
TEST(ServeFleet, DisaggregatedFailuresLoseTheKvCacheInFlight) {
    ServeInput base = fleet(2, 256, 2);
    base.fabric = config::load_fabric("trn2-ultracluster");
    base.spec.serving.disaggregated.prefill_replicas = 1;
    base.kv_bytes_per_token = Bytes(100'000'000);
    fixed_requests(base, 1, 1.0, 1000, 3);
    const ServingRun clean = simulate_serving(base);
    ASSERT_EQ(clean.requests.size(), 1u);
    ASSERT_EQ(clean.requests[0].first_token.ns(), 12 * kMs);
    const std::int64_t finish0 = clean.requests[0].finish.ns();
    const std::int64_t arrives = finish0 - 2 * kMs - 20 * kUs; // two decodes of 1.01 ms
    ASSERT_GT(arrives, 22 * kMs) << "the transfer must outlast the failure's notice";

    for (const std::int64_t host : {4, 0}) {
        ServeInput in = base;
        in.reliability = failing_hosts(1e12, 60.0, 0.5, 1.0);
        in.reliability.failures.clear(); // only the trace fails
        in.reliability.trace.failures = {{Duration::from_ns(20 * kMs),
                                          reliability::ComponentClass::host, host, "host", 1}};
        const ServingRun r = simulate_serving(in);
        ASSERT_EQ(r.requests.size(), 1u);
        const serving::RequestRecord& q = r.requests[0];
        const std::int64_t tb = 20 * kMs + 61'000 * kMs;
        EXPECT_EQ(r.stats.outages, 1u) << "host " << host;
        EXPECT_EQ(q.retries, 1u) << "host " << host;
        EXPECT_EQ(q.prefill_replica, 1u);
        EXPECT_EQ(q.replica, 0u);
        EXPECT_EQ(q.first_token.ns(), tb + 1 + 12 * kMs) << "host " << host;
        EXPECT_EQ(q.finish.ns(), tb + 1 + finish0) << "host " << host;
        EXPECT_EQ(r.stats.kv_transfers, 1u) << "host " << host;
        // The lost transfer's flows were stopped on the fabric (not run to their end).
        EXPECT_EQ(r.stats.kv_transfers_cancelled, 1u) << "host " << host;
        EXPECT_EQ(r.summary.retried_requests, 1u);
    }
}

// Random failures of a disaggregated fleet (two UltraServers and a spare, 8 of 32 replicas
// prefilling over the UltraCluster fabric): every request finishes once, the same records on
// 1 and 2 threads, some of them retried.
TEST(ServeFleet, DisaggregatedFailuresGiveTheSameResultsOnOneAndTwoThreads) {
    ServeInput in = disaggregated_fleet(8);
    in.reliability = failing_hosts(4.0, 3.0, 0.5, 1.0);
    in.reliability.spares.ultraservers = 1;
    random_requests(in, 3000, 400.0);
    const auto [a, b] = on_one_and_two_threads(in);
    ASSERT_EQ(a.requests.size(), 3000u);
    ASSERT_EQ(b.requests.size(), 3000u);
    EXPECT_GT(a.stats.outages, 0u);
    EXPECT_GT(a.summary.retried_requests, 0u);
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
        ASSERT_TRUE(x.finished()) << i;
        ASSERT_GE(x.first_token.ns(), x.arrival.ns());
        ASSERT_GE(x.finish.ns(), x.first_token.ns());
        ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
        ASSERT_EQ(x.first_token.ns(), y.first_token.ns()) << i;
        ASSERT_EQ(x.replica, y.replica) << i;
        ASSERT_EQ(x.prefill_replica, y.prefill_replica) << i;
        ASSERT_EQ(x.retries, y.retries) << i;
        EXPECT_EQ(x.output_tokens > 1, x.replica != x.prefill_replica) << i;
    }
    EXPECT_EQ(a.stats.outages, b.stats.outages);
    EXPECT_EQ(a.stats.kv_transfers, b.stats.kv_transfers);
    EXPECT_EQ(a.stats.kv_transfers_cancelled, b.stats.kv_transfers_cancelled);
    EXPECT_EQ(a.stats.events, b.stats.events);
    EXPECT_LT(a.stats.availability, 1.0);
}

// Fast-forwarded decode steps, cut by arrivals that come as events, give the records of
// stepping every iteration, in the fleet too.
TEST(ServeFleet, FastForwardEqualsStepwise) {
    ServeInput in = fleet(1, 16, 0);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    random_requests(in, 1500, 150.0);
    const ServingRun fast = simulate_serving(in);
    in.options.fast_forward = false;
    const ServingRun slow = simulate_serving(in);
    ASSERT_EQ(fast.requests.size(), slow.requests.size());
    for (std::size_t i = 0; i < fast.requests.size(); ++i) {
        ASSERT_EQ(fast.requests[i].first_token.ns(), slow.requests[i].first_token.ns()) << i;
        ASSERT_EQ(fast.requests[i].finish.ns(), slow.requests[i].finish.ns()) << i;
        ASSERT_EQ(fast.requests[i].replica, slow.requests[i].replica) << i;
    }
    EXPECT_EQ(fast.stats.iterations, slow.stats.iterations);
    EXPECT_LT(fast.stats.steps * 2, slow.stats.steps);
}

// The router window W > L shifts the replicas W - L behind the router in engine time without
// changing any replica-side time: with round robin and open-loop arrivals the router uses no
// report, so every record equals the exact run's. With least-loaded routing only the router's
// information is older (finishes heard 2W - L late): the figures stay close.
TEST(ServeFleet, RouterWindowChangesOnlyTheRoutersInformation) {
    ServeInput in = fleet(1, 16, 0);
    random_requests(in, 1500, 150.0);
    const ServingRun exact = simulate_serving(in);
    in.options.router_window = Duration::from_ns(20 * kMs);
    const ServingRun w = simulate_serving(in);
    EXPECT_EQ(w.stats.lookahead.ns(), 20 * kMs);
    EXPECT_LT(w.stats.windows * 4, exact.stats.windows);
    ASSERT_EQ(exact.requests.size(), w.requests.size());
    for (std::size_t i = 0; i < w.requests.size(); ++i) {
        ASSERT_EQ(exact.requests[i].arrival.ns(), w.requests[i].arrival.ns()) << i;
        ASSERT_EQ(exact.requests[i].first_token.ns(), w.requests[i].first_token.ns()) << i;
        ASSERT_EQ(exact.requests[i].finish.ns(), w.requests[i].finish.ns()) << i;
    }
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.options.router_window = Duration::zero();
    const ServingRun ll = simulate_serving(in);
    in.options.router_window = Duration::from_ns(20 * kMs);
    const ServingRun llw = simulate_serving(in);
    EXPECT_NEAR(llw.summary.ttft_p50.seconds(), ll.summary.ttft_p50.seconds(),
                0.05 * ll.summary.ttft_p50.seconds());
    EXPECT_NEAR(llw.summary.e2e_p50.seconds(), ll.summary.e2e_p50.seconds(),
                0.05 * ll.summary.e2e_p50.seconds());
    // Closed loop: a client hears of its finish 2W - L = 39 ms after it instead of 1 ms, so
    // requests follow each other 38 ms later than in the exact case (5.01 ms apart there).
    ServeInput c = fleet(1, 16, 1);
    fixed_requests(c, 3, 1.0, 100, 2);
    c.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    c.options.router_window = Duration::from_ns(20 * kMs);
    const ServingRun cl = simulate_serving(c);
    EXPECT_EQ(cl.requests[1].arrival.ns(), 5 * kMs + 10 * kUs + 38 * kMs);
    EXPECT_EQ(cl.requests[1].finish.ns() - cl.requests[1].arrival.ns(), 4 * kMs + 10 * kUs);
}

// Two router shards on two UltraServers (32 replicas of tp 16, 16 per UltraServer): shard k
// owns UltraServer k's replicas 16k .. 16k + 15 and the requests with id = k mod 2. Round robin
// within a shard: its n-th request (id 2n + k) goes to replica 16k + (n mod 16), so request i
// lands on replica 16 (i mod 2) + (i / 2) mod 16. Each shard and its replicas are one
// partition, so no event crosses partitions. The arrival stream is the fleet's, unsplit:
// every arrival time equals that of one router.
TEST(ServeFleet, RouterShardsSplitRequestsByIdAndReplicasByDomain) {
    ServeInput in = fleet(2, 16, 0);
    fixed_requests(in, 80, 2000.0, 100, 3);
    const ServingRun one = simulate_serving(in);
    in.spec.serving.router_shards = 2;
    const ServingRun two = simulate_serving(in);
    EXPECT_EQ(two.stats.router_shards, 2u);
    EXPECT_EQ(two.stats.partitions, 2u);
    EXPECT_EQ(two.stats.remote_events, 0u);
    ASSERT_EQ(two.requests.size(), 80u);
    ASSERT_EQ(one.requests.size(), 80u);
    for (std::uint64_t i = 0; i < 80; ++i) {
        const serving::RequestRecord& q = two.requests[i];
        EXPECT_EQ(q.id, i);
        EXPECT_EQ(q.replica, 16 * (i % 2) + (i / 2) % 16) << i;
        EXPECT_EQ(q.arrival.ns(), one.requests[i].arrival.ns()) << i;
        EXPECT_TRUE(q.finished());
    }
}

// A duration limit issues the same requests with shards as with one router (the arrivals
// do not decrease with the id, so each shard's requests stop where the fleet's do): gamma
// arrivals, the trace-free sizes, 4 shards on 4 UltraServers.
TEST(ServeFleet, RouterShardsIssueTheSameRequestsUnderADuration) {
    ServeInput in = fleet(4, 16, 0);
    random_requests(in, 0, 3000.0);
    in.spec.requests.duration = Duration::from_ns(500 * kMs);
    const ServingRun one = simulate_serving(in);
    in.spec.serving.router_shards = 4;
    const ServingRun four = simulate_serving(in);
    ASSERT_GT(one.requests.size(), 1000u);
    ASSERT_EQ(four.requests.size(), one.requests.size());
    for (std::size_t i = 0; i < one.requests.size(); ++i) {
        ASSERT_EQ(four.requests[i].arrival.ns(), one.requests[i].arrival.ns()) << i;
        ASSERT_EQ(four.requests[i].input_tokens, one.requests[i].input_tokens) << i;
        ASSERT_EQ(four.requests[i].output_tokens, one.requests[i].output_tokens) << i;
        // shard i mod 4 owns UltraServer i mod 4 (16 replicas each)
        ASSERT_EQ(four.requests[i].replica / 16, i % 4) << i;
    }
}

// Router shards give the same records on 1 and 2 threads (the helpers in every window):
// least-loaded routing, prefix caching and a router window, then with failures (two
// UltraServers and a spare; each shard acts on its own domains' outages), then disaggregated
// as well (each router's prompts prefilled and decoded in its own UltraServer, the windows
// the router's so that the fabric resolves its flows on time).
TEST(ServeFleet, RouterShardsGiveTheSameResultsOnOneAndTwoThreads) {
    for (int mode : {0, 1, 2}) {
        const bool failures = mode > 0, disaggregated = mode == 2;
        ServeInput in = fleet(2, 16, 0);
        in.spec.serving.router = serving::RouterPolicy::least_loaded;
        in.spec.serving.prefix_caching = true;
        in.spec.serving.router_shards = 2;
        in.spec.serving.router_latency = Duration::from_ns(2 * kMs);
        in.options.router_window = Duration::from_ns(5 * kMs);
        in.options.kv_sample = Duration::from_ns(100 * kMs);
        random_requests(in, 3000, 400.0);
        if (failures) {
            in.reliability = failing_hosts(4.0, 3.0, 0.5, 1.0);
            in.reliability.spares.ultraservers = 1;
        }
        if (disaggregated) { // 4 prefill replicas in each router's UltraServer
            in.fabric = config::load_fabric("trn2-ultracluster");
            in.spec.serving.disaggregated.prefill_replicas = 8;
            in.kv_bytes_per_token = Bytes(327'680);
        }
        const auto [a, b] = on_one_and_two_threads(in);
        EXPECT_EQ(b.stats.threads, 2);
        EXPECT_EQ(b.stats.shared_windows, b.stats.windows);
        EXPECT_EQ(a.stats.remote_events, 0u);
        ASSERT_EQ(a.requests.size(), 3000u);
        ASSERT_EQ(b.requests.size(), 3000u);
        std::uint64_t retried = 0;
        for (std::size_t i = 0; i < a.requests.size(); ++i) {
            const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
            ASSERT_TRUE(x.finished());
            ASSERT_EQ(x.first_token.ns(), y.first_token.ns()) << i;
            ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
            ASSERT_EQ(x.replica, y.replica) << i;
            ASSERT_EQ(x.retries, y.retries) << i;
            ASSERT_EQ(x.replica / 16, i % 2) << i; // the shard's own UltraServer
            ASSERT_EQ(x.prefill_replica / 16, i % 2) << i;
            ASSERT_EQ(x.prefill_replica, y.prefill_replica) << i;
            retried += x.retries > 0 ? 1 : 0;
        }
        EXPECT_EQ(a.stats.events, b.stats.events);
        ASSERT_EQ(a.kv_series.size(), b.kv_series.size());
        for (std::size_t k = 0; k < a.kv_series.size(); ++k) {
            EXPECT_EQ(a.kv_series[k].used_fraction, b.kv_series[k].used_fraction);
        }
        EXPECT_EQ(retried, a.summary.retried_requests);
        if (disaggregated) {
            EXPECT_EQ(a.stats.kv_transfers, b.stats.kv_transfers);
            EXPECT_GT(a.stats.kv_transfers, 2000u);
            EXPECT_EQ(a.stats.lookahead.ns(), 5 * kMs); // the router window, not 1 s
        }
        if (failures) {
            EXPECT_GT(a.stats.outages, 0u);
            EXPECT_GT(retried, 0u);
            EXPECT_EQ(a.stats.outages, b.stats.outages);
            EXPECT_EQ(a.stats.availability, b.stats.availability);
            EXPECT_LT(a.stats.availability, 1.0);
        }
    }
}

// Closed-loop clients split over the routers (client c at router c mod K): 5 clients over 2
// routers are 3 at router 0 and 2 at router 1, each router's requests on its own UltraServer.
// A client sends its next request one router latency after its last finished, so at no time
// are more than 3 of router 0's requests or 2 of router 1's in flight, and with a count every
// id below it is issued; under a duration the records are numbered without gaps. The same on 1
// and 2 threads.
TEST(ServeFleet, RouterShardsSplitTheClosedLoopClients) {
    ServeInput in = fleet(2, 16, 0);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.spec.serving.router_shards = 2;
    random_requests(in, 600, 1.0);
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 5;
    const auto [a, b] = on_one_and_two_threads(in);
    ASSERT_EQ(a.requests.size(), 600u);
    ASSERT_EQ(b.requests.size(), 600u);
    std::vector<std::pair<std::int64_t, int>> changes[2]; // (time, +1 arrival / -1 finish)
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const serving::RequestRecord &x = a.requests[i], &y = b.requests[i];
        ASSERT_TRUE(x.finished()) << i;
        ASSERT_EQ(x.id, i);
        ASSERT_EQ(x.replica / 16, i % 2) << i;
        ASSERT_EQ(x.finish.ns(), y.finish.ns()) << i;
        ASSERT_EQ(x.replica, y.replica) << i;
        changes[i % 2].emplace_back(x.arrival.ns(), 1);
        changes[i % 2].emplace_back(x.finish.ns(), -1);
    }
    for (int k : {0, 1}) {
        std::sort(changes[k].begin(), changes[k].end()); // finishes before arrivals at a tie
        int in_flight = 0, most = 0;
        for (const auto& [t, d] : changes[k]) {
            in_flight += d;
            most = std::max(most, in_flight);
        }
        EXPECT_EQ(most, k == 0 ? 3 : 2) << "router " << k;
    }
    in.spec.requests.count = 0;
    in.spec.requests.duration = Duration::from_ns(400 * kMs);
    in.threads = 1;
    const ServingRun d = simulate_serving(in);
    ASSERT_GT(d.requests.size(), 10u); // 19: about four a client
    for (std::size_t i = 0; i < d.requests.size(); ++i) {
        ASSERT_EQ(d.requests[i].id, i);
        ASSERT_LT(d.requests[i].arrival.ns(), 400 * kMs);
        ASSERT_TRUE(d.requests[i].finished());
    }
}

// With failures the shards together see the outages of one router: each walks the fleet's
// outage schedule and acts on its own domains' transitions, and those after its own last
// request (before the fleet's) are counted at the end. So the outages are the schedule's
// failures before the run's end (two UltraServers and a spare, host failures).
TEST(ServeFleet, RouterShardsSeeTheFleetsOutages) {
    ServeInput in = fleet(2, 16, 0);
    in.reliability = failing_hosts(4.0, 3.0, 0.5, 1.0);
    in.reliability.spares.ultraservers = 1;
    in.spec.serving.router_shards = 2;
    fixed_requests(in, 4000, 400.0, 100, 20);
    const ServingRun r = simulate_serving(in);

    HostOutages outages(in, 1, 2);
    reliability::OutageSchedule& sched = outages.schedule;
    // The fleet is done when the last report reaches its router: after the last finish
    // (stats.end), within a router latency.
    const auto end = static_cast<std::int64_t>(r.stats.end.seconds() * 1e9);
    std::uint64_t downs = 0;
    while (const auto t = sched.next()) {
        if (t->time.ns() >= end) {
            ASSERT_GE(t->time.ns(), end + kMs) << "a transition at the fleet's last report";
            break;
        }
        downs += t->up ? 0 : 1;
    }
    ASSERT_GT(downs, 2u);
    EXPECT_EQ(r.stats.outages, downs);
    EXPECT_LT(r.stats.availability, 1.0);
}

// Router shards need a domain each and a closed-loop client each; disaggregated, prefill and
// decode replicas of their own.
TEST(ServeFleet, RouterShardsBadInput) {
    const auto key_of = [](ServeInput in) {
        try {
            simulate_serving(in);
        } catch (const InputError& e) {
            return e.key_path();
        }
        return std::string("no error");
    };
    ServeInput in = fleet(2, 16, 0);
    fixed_requests(in, 4, 100.0, 10, 2);
    in.spec.serving.router_shards = 3; // 2 UltraServers
    EXPECT_EQ(key_of(in), "workload.serving.router_shards");
    in.spec.serving.router_shards = -1;
    EXPECT_EQ(key_of(in), "workload.serving.router_shards");
    in.spec.serving.router_shards = 2;
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 1; // a client per router at least
    EXPECT_EQ(key_of(in), "workload.serving.router_shards");
    in.spec.requests.arrival.concurrency = 2;
    EXPECT_EQ(key_of(in), "no error");
    // Disaggregated, every router needs a prefill and a decode replica of its own: one prefill
    // replica of 32 (replica 31: r prefills when floor((r + 1) / 32) > floor(r / 32)) leaves
    // the first router's UltraServer without one; two (15 and 31) give each one.
    ServeInput dis = fleet(2, 16, 0);
    fixed_requests(dis, 4, 100.0, 10, 2);
    dis.fabric = config::load_fabric("trn2-ultracluster");
    dis.spec.serving.disaggregated.prefill_replicas = 1;
    dis.kv_bytes_per_token = Bytes(1000);
    dis.spec.serving.router_shards = 2;
    EXPECT_EQ(key_of(dis), "workload.serving.router_shards");
    dis.spec.serving.disaggregated.prefill_replicas = 2;
    EXPECT_EQ(key_of(dis), "no error");
}

TEST(ServeFleet, DisaggregationNeedsAFabric) {
    ServeInput in = fleet(1, 4, 2);
    in.spec.serving.disaggregated.prefill_replicas = 1;
    in.kv_bytes_per_token = Bytes(1000);
    fixed_requests(in, 1, 1.0, 10, 2);
    EXPECT_THROW(simulate_serving(in), InputError);
    in.fabric = config::load_fabric("trn2-ultraserver");
    in.spec.serving.disaggregated.prefill_replicas = 2;
    EXPECT_THROW(simulate_serving(in), InputError);
}

} // namespace
} // namespace trnsim::sim
