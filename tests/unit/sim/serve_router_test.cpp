// The serving fleet's router (serve_router.hpp): the pools' choices by policy, and a router
// shard on the engine sending requests to the replicas its policy picks. The replicas here
// only record what reaches them; the tests send the router's reports by hand.
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "serve_failures.hpp"
#include "serve_placement.hpp"
#include "serve_records.hpp"
#include "serve_router.hpp"
#include "unit/sim/serve_parts.hpp"

namespace trnsim::sim::detail {
namespace {

using test::kMs;
using test::Seen;

ReplicaPool pool_of(std::uint32_t members) {
    ReplicaPool p;
    for (std::uint32_t m = 0; m < members; ++m) {
        p.add(10 + m);
    }
    p.build();
    return p;
}

TEST(ServeRouterPool, LeastLoadedTakesTheFewestInFlightThenTheOneChosenLongestAgo) {
    ReplicaPool p = pool_of(3);
    const auto policy = serving::RouterPolicy::least_loaded;
    // All idle: members in index order.
    EXPECT_EQ(p.choose(policy, 0, 1), 0u);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u);
    EXPECT_EQ(p.choose(policy, 0, 1), 2u);
    EXPECT_EQ(p.member(2), 12u);
    // One each: member 0 was chosen longest ago.
    EXPECT_EQ(p.choose(policy, 0, 1), 0u);
    // Loads 2, 1, 1: member 1 finishes one: loads 2, 0, 1.
    p.done(1);
    EXPECT_EQ(p.load(1), 0);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u);
    // Loads 2, 1, 1: member 2 (chosen at 3) before member 1 (chosen at 5).
    EXPECT_EQ(p.choose(policy, 0, 1), 2u);
}

TEST(ServeRouterPool, RoundRobinCyclesAndSkipsDisabledMembers) {
    ReplicaPool p = pool_of(3);
    const auto policy = serving::RouterPolicy::round_robin;
    EXPECT_EQ(p.choose(policy, 0, 1), 0u);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u);
    p.set_enabled(2, false);
    EXPECT_EQ(p.choose(policy, 0, 1), 0u);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u);
    p.set_enabled(2, true);
    EXPECT_EQ(p.choose(policy, 0, 1), 2u);
    EXPECT_EQ(p.load(0), 2);
    EXPECT_EQ(p.load(2), 1);
}

TEST(ServeRouterPool, PrefixAffinityKeepsAPrefixOnItsMemberWithinTheSlack) {
    ReplicaPool p = pool_of(4);
    const auto policy = serving::RouterPolicy::prefix_affinity;
    // Prefix 6 belongs to member (6 - 1) mod 4 = 1; slack 1 allows one more than the least.
    EXPECT_EQ(p.choose(policy, 6, 1), 1u); // loads 0 / 0
    EXPECT_EQ(p.choose(policy, 6, 1), 1u); // 1 <= 0 + 1
    EXPECT_EQ(p.choose(policy, 6, 1), 0u); // 2 > 0 + 1: the least loaded
    // No prefix: the least loaded (members 2 and 3 idle; 2 first).
    EXPECT_EQ(p.choose(policy, 0, 1), 2u);
    // A disabled owner is passed over.
    p.set_enabled(1, false);
    EXPECT_EQ(p.choose(policy, 6, 5), 3u);
}

TEST(ServeRouterPool, DisabledMembersAreNeverChosenAndNoneLeftIsNone) {
    ReplicaPool p = pool_of(2);
    const auto policy = serving::RouterPolicy::least_loaded;
    p.set_enabled(0, false);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u);
    EXPECT_EQ(p.choose(policy, 0, 1), 1u); // loads 0 / 2, but 0 is down
    p.set_enabled(1, false);
    EXPECT_EQ(p.choose(policy, 0, 1), ReplicaPool::kNone);
    EXPECT_EQ(p.choose(serving::RouterPolicy::round_robin, 0, 1), ReplicaPool::kNone);
    p.set_enabled(0, true);
    EXPECT_EQ(p.choose(policy, 0, 1), 0u);
}

/// One router shard and its replicas on the engine; the replicas record their events.
struct RouterHarness {
    explicit RouterHarness(ServeInput input)
        : in(std::move(input)), pl(place(in, 2)),
          source(in.spec.requests, in.spec.serving.max_context, in.seed, nullptr),
          records(pl.shards), failures(in, pl), router(in, pl, source, records, failures) {}

    void handle(ServeContext& ctx, const engine::Event& e) {
        if (ctx.self() == kRouter) {
            router.handle(ctx, 0, e);
        } else {
            received.push_back(test::seen(ctx, e));
        }
    }

    /// Runs from the router's kStart with `reports` (time, replica) of finished requests.
    void run(const std::vector<std::pair<std::int64_t, std::uint32_t>>& reports) {
        const auto entities = static_cast<std::uint32_t>(kFirstReplica + pl.replicas.size());
        engine::Simulator<RouterHarness, ServeQueue> sim(
            *this, engine::PartitionMap::from_starts(entities, {0}), Duration::from_ns(kMs));
        sim.schedule(kRouter, SimTime::zero(), kStart);
        for (const auto& [t, r] : reports) {
            sim.schedule(kRouter, SimTime::from_ns(t), kReport, r, kFinished);
        }
        sim.run(SimTime::max(), 1);
    }

    ServeInput in;
    Placement pl;
    serving::RequestSource source;
    FleetRecords records;
    ServeFailures failures;
    ServeRouter router;
    std::vector<Seen> received;
};

Seen request(std::int64_t t, std::uint32_t replica, std::uint64_t id) {
    return {t, replica_entity(replica), kRequest, id, 0};
}

TEST(ServeRouter, LeastLoadedSendsEachRequestToTheReplicaWithTheFewestInFlight) {
    // Three replicas of tp 16 on one instance, five closed-loop clients: requests 0..4 go to
    // replicas 0, 1, 2, 0, 1 at time 0 and arrive 1 ms later. Replica 2 finishes at 5 ms (the
    // least loaded then, 0 against 2 and 2): request 5 goes to it. Replica 0 finishes at 7 ms:
    // loads 1, 2, 1, and replica 0 was chosen longer ago than replica 2: request 6 goes to 0.
    ServeInput in = test::fleet(0, 1, 16, 3);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    test::closed_loop(in, 10, 5, 100, 2);
    RouterHarness h(std::move(in));
    h.run({{5 * kMs, 2}, {7 * kMs, 0}});
    const std::vector<Seen> expected = {
        request(kMs, 0, 0), request(kMs, 1, 1),     request(kMs, 2, 2),    request(kMs, 0, 3),
        request(kMs, 1, 4), request(6 * kMs, 2, 5), request(8 * kMs, 0, 6)};
    EXPECT_EQ(h.received, expected);
    EXPECT_EQ(h.records.issued(0), 7u);
    EXPECT_EQ(h.records.slot(5).rec.arrival.ns(), 5 * kMs);
    EXPECT_EQ(h.records.slot(5).rec.input_tokens, 100);
    EXPECT_EQ(h.router.shard(0).finished, 2u);
    EXPECT_FALSE(h.router.all_done(0));
}

TEST(ServeRouter, RoundRobinIgnoresTheLoads) {
    // The same fleet round-robin: 0, 1, 2, 0, 1, then replica 2's finish sends request 5 to
    // replica 2 (next in turn) and replica 0's request 6 to replica 0.
    ServeInput in = test::fleet(0, 1, 16, 3);
    test::closed_loop(in, 10, 5, 100, 2);
    RouterHarness h(std::move(in));
    h.run({{5 * kMs, 1}, {7 * kMs, 1}});
    ASSERT_EQ(h.received.size(), 7u);
    EXPECT_EQ(h.received[5], request(6 * kMs, 2, 5));
    EXPECT_EQ(h.received[6], request(8 * kMs, 0, 6));
}

TEST(ServeRouter, ARouterThatIssuedItsLastRequestIsDoneWhenAllFinished) {
    // Two requests from one client: the second is issued at the first's report, and the
    // router is done at the second's.
    ServeInput in = test::fleet(0, 1, 16, 2);
    test::closed_loop(in, 2, 1, 100, 2);
    RouterHarness h(std::move(in));
    h.run({{5 * kMs, 0}, {9 * kMs, 1}});
    ASSERT_EQ(h.received.size(), 2u);
    EXPECT_EQ(h.received[1], request(6 * kMs, 1, 1));
    EXPECT_TRUE(h.router.all_done(0));
    EXPECT_EQ(h.router.shard(0).done_ns, 9 * kMs);
    EXPECT_EQ(h.router.latest_done(), 9 * kMs);
}

TEST(ServeRouter, DisaggregatedRequestsGoToAPrefillReplicaWithTheirDecodeReplica) {
    // Four replicas, one prefill (replica 3, spread evenly): both requests go to replica 3,
    // and the router picks decode replicas 0 and 1 (least loaded) for their KV caches; a
    // request of one output token needs none.
    ServeInput in = test::fleet(0, 1, 16, 4);
    in.spec.serving.router = serving::RouterPolicy::least_loaded;
    in.spec.serving.disaggregated.prefill_replicas = 1;
    test::closed_loop(in, 2, 2, 100, 2);
    RouterHarness h(std::move(in));
    h.run({});
    ASSERT_EQ(h.received.size(), 2u);
    EXPECT_EQ(h.received[0], request(kMs, 3, 0));
    EXPECT_EQ(h.received[1], request(kMs, 3, 1));
    EXPECT_EQ(h.records.slot(0).decode_replica, 0u);
    EXPECT_EQ(h.records.slot(1).decode_replica, 1u);

    ServeInput one = test::fleet(0, 1, 16, 4);
    one.spec.serving.disaggregated.prefill_replicas = 1;
    test::closed_loop(one, 1, 1, 100, 1);
    RouterHarness h1(std::move(one));
    h1.run({});
    ASSERT_EQ(h1.received.size(), 1u);
    EXPECT_EQ(h1.records.slot(0).decode_replica, kNoReplica);
}

} // namespace
} // namespace trnsim::sim::detail
