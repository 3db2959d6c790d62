// The serving fleet's replicas (serve_replicas.hpp) on the engine, fed requests by hand: a
// request's first token and finish, the report to the router, the replicas' time behind the
// engine's, a failure dropping what a replica holds, and the figures after the run. Costs
// from TestCost: a prefill of 100 tokens takes 1 ms + 100 x 10 us = 2 ms, a decode of one
// sequence 1 ms + 10 us.
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "serve_placement.hpp"
#include "serve_records.hpp"
#include "serve_replicas.hpp"
#include "unit/sim/serve_parts.hpp"

namespace trnsim::sim::detail {
namespace {

using test::kMs;
using test::kUs;
using test::Seen;

/// Replicas on the engine; the router entity records what reaches it.
struct ReplicaHarness {
    ReplicaHarness(ServeInput input, bool reports)
        : in(std::move(input)), pl(place(in, 2)), records(pl.shards),
          replicas(in, pl, records, nullptr, reports) {}

    void handle(ServeContext& ctx, const engine::Event& e) {
        const engine::EntityId self = ctx.self();
        if (self >= kFirstReplica && self - kFirstReplica < replicas.size()) {
            replicas.handle(ctx, self - kFirstReplica, e);
        } else {
            received.push_back(test::seen(ctx, e));
        }
    }

    /// Request id (the next) of `input` + `output` tokens that arrived at the router at
    /// `arrival`.
    std::uint64_t add(std::int64_t arrival, std::int32_t input, std::int32_t output) {
        const std::uint64_t id = records.next_id(0);
        Slot& s = records.add(0);
        s.rec.id = id;
        s.rec.arrival = SimTime::from_ns(arrival);
        s.rec.input_tokens = input;
        s.rec.output_tokens = output;
        return id;
    }

    /// Runs `events` (engine time, replica, type, payload).
    void run(const std::vector<
             std::tuple<std::int64_t, std::uint32_t, engine::EventType, std::uint64_t>>& events) {
        const auto entities = static_cast<std::uint32_t>(kFirstReplica + pl.replicas.size());
        engine::Simulator<ReplicaHarness, ServeQueue> sim(
            *this, engine::PartitionMap::from_starts(entities, {0}), Duration::from_ns(hop_ns(in)));
        for (const auto& [t, r, type, payload] : events) {
            sim.schedule(replica_entity(r), SimTime::from_ns(t), type, payload);
        }
        sim.run(SimTime::max(), 1);
    }

    ServeInput in;
    Placement pl;
    FleetRecords records;
    ServeReplicas replicas;
    std::vector<Seen> received;
};

TEST(ServeReplicas, ARequestIsPrefilledDecodedAndReported) {
    // Request 0 (100 + 2 tokens) reaches replica 1 at 1 ms: prefill to 3 ms (its first token),
    // one decode to 4.01 ms (its finish); the router hears of it at 5.01 ms.
    ReplicaHarness h(test::fleet(0, 1, 16, 2), true);
    const std::uint64_t id = h.add(0, 100, 2);
    h.run({{kMs, 1, kRequest, id}});
    const serving::RequestRecord& r = h.records.slot(id).rec;
    EXPECT_EQ(r.first_token.ns(), 3 * kMs);
    EXPECT_EQ(r.finish.ns(), 4 * kMs + 10 * kUs);
    EXPECT_EQ(r.replica, 1u);
    EXPECT_EQ(r.prefill_replica, 1u);
    EXPECT_EQ(r.retries, 0u);
    const std::vector<Seen> expected = {{5 * kMs + 10 * kUs, kRouter, kReport, 1, kFinished}};
    EXPECT_EQ(h.received, expected);
    EXPECT_EQ(h.replicas.last_event(), 4 * kMs + 10 * kUs);
}

TEST(ServeReplicas, WithoutReportsTheRouterHearsNothing) {
    ReplicaHarness h(test::fleet(0, 1, 16, 1), false);
    const std::uint64_t id = h.add(0, 100, 2);
    h.run({{kMs, 0, kRequest, id}});
    EXPECT_EQ(h.records.slot(id).rec.finish.ns(), 4 * kMs + 10 * kUs);
    EXPECT_TRUE(h.received.empty());
}

TEST(ServeReplicas, ReplicasRunBehindTheEngineByTheRouterWindowLessTheLatency) {
    // Router window 3 ms, latency 1 ms: events between router and replicas take 3 ms of
    // engine time, and the replicas run 2 ms behind. A request sent at 0 reaches the replica
    // at engine 3 ms, replica time 1 ms: its times are those of the exact run; the report
    // leaves at engine 6.01 ms and reaches the router at 9.01 ms.
    ServeInput in = test::fleet(0, 1, 16, 1);
    in.options.router_window = Duration::from_ns(3 * kMs);
    ReplicaHarness h(std::move(in), true);
    const std::uint64_t id = h.add(0, 100, 2);
    h.run({{3 * kMs, 0, kRequest, id}});
    EXPECT_EQ(h.records.slot(id).rec.first_token.ns(), 3 * kMs);
    EXPECT_EQ(h.records.slot(id).rec.finish.ns(), 4 * kMs + 10 * kUs);
    const std::vector<Seen> expected = {{9 * kMs + 10 * kUs, kRouter, kReport, 0, kFinished}};
    EXPECT_EQ(h.received, expected);
}

TEST(ServeReplicas, AFailedReplicaSendsItsRequestsBackAndStartsEmptyWhenUp) {
    // Request 0 reaches the replica at 1 ms; its domain fails at 2 ms (mid-prefill): the
    // request goes back to the router (kRetry at 3 ms, before its first token). A request
    // reaching the replica while it is down bounces too. Up at 10 ms, the retry of request 0
    // reaching it at 11 ms finishes at 14.01 ms.
    ReplicaHarness h(test::fleet(0, 1, 16, 1), true);
    const std::uint64_t a = h.add(0, 100, 2);
    const std::uint64_t b = h.add(0, 100, 2);
    h.run({{kMs, 0, kRequest, a},
           {2 * kMs, 0, kDown, 0},
           {4 * kMs, 0, kRequest, b},
           {10 * kMs, 0, kUp, 0},
           {11 * kMs, 0, kRequest, a}});
    const std::vector<Seen> expected = {{3 * kMs, kRouter, kRetry, a, kAtPrefill},
                                        {5 * kMs, kRouter, kRetry, b, kAtPrefill},
                                        {15 * kMs + 10 * kUs, kRouter, kReport, 0, kFinished}};
    EXPECT_EQ(h.received, expected);
    const serving::RequestRecord& r = h.records.slot(a).rec;
    EXPECT_EQ(r.retries, 1u);
    EXPECT_EQ(r.first_token.ns(), 13 * kMs);
    EXPECT_EQ(r.finish.ns(), 14 * kMs + 10 * kUs);
    EXPECT_EQ(h.records.slot(b).rec.retries, 1u);
    EXPECT_FALSE(h.records.slot(b).rec.finished());
}

TEST(ServeReplicas, TheFiguresAfterTheRunAddUpTheReplicas) {
    // One request on one replica, KV sampled every millisecond: samples at 0 .. 4 ms (the
    // run ends at 4.01 ms); none in use at 0, some during the prefill; the peak fraction is
    // at least every sample's.
    ServeInput in = test::fleet(0, 1, 16, 1);
    in.options.kv_sample = Duration::from_ns(kMs);
    ReplicaHarness h(std::move(in), true);
    const std::uint64_t id = h.add(0, 100, 2);
    h.run({{kMs, 0, kRequest, id}});
    ServingRun out;
    std::vector<serving::TokenGap> gaps;
    h.replicas.finish(h.replicas.last_event(), out, gaps);
    EXPECT_EQ(out.stats.iterations, 2u); // the prefill and one decode
    EXPECT_EQ(out.stats.kv_transfers, 0u);
    ASSERT_EQ(out.kv_series.size(), 5u);
    for (std::size_t k = 0; k < out.kv_series.size(); ++k) {
        EXPECT_DOUBLE_EQ(out.kv_series[k].time.seconds(), static_cast<double>(k) * 1e-3);
        EXPECT_LE(out.kv_series[k].used_fraction, out.kv_cache_peak_fraction);
    }
    EXPECT_EQ(out.kv_series[0].used_fraction, 0.0);
    EXPECT_GT(out.kv_series[2].used_fraction, 0.0);
    ASSERT_EQ(out.replica_kv_peak_fraction.size(), 1u);
    EXPECT_EQ(out.replica_kv_peak_fraction[0], out.kv_cache_peak_fraction);
    EXPECT_GT(out.kv_cache_peak_fraction, 0.0);
}

} // namespace
} // namespace trnsim::sim::detail
