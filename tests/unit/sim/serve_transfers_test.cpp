// The KV transfers of disaggregated serving (serve_transfers.hpp): the flows of a transfer,
// when it arrives over the fabric (hand-computed), the hand-offs a prefill replica keeps, and
// lost transfers arriving as cancellations.
#include <functional>
#include <map>
#include <set>

#include "trnsim/topology/routing.hpp"

#include <gtest/gtest.h>

#include "serve_transfers.hpp"
#include "unit/sim/serve_parts.hpp"

namespace trnsim::sim::detail {
namespace {

/// Two plain Trn2 instances on the EFA fabric of the Trn2 UltraCluster (no NeuronLink between
/// them), room for 8.
topology::Fabric two_instances() {
    topology::FabricSpec s = config::load_fabric("trn2-ultracluster");
    s.scale_up.ultraserver_instances = 0;
    return topology::Fabric::build(s, 8);
}

std::int64_t latency(const topology::Fabric& f, std::uint32_t a, std::uint32_t b) {
    std::vector<std::uint32_t> links;
    topology::route(f, a, b, 0, links);
    return topology::route_latency_ns(f, links.data(), links.size());
}

/// What the fabric sends, by (entity, type): the time and the payload.
using Arrivals = std::map<std::pair<engine::EntityId, engine::EventType>,
                          std::pair<std::int64_t, std::uint64_t>>;

/// Resolves `t` at `edges` and 1 ns after every wake it asks for (the window edges of 1 ns
/// windows), as the engine would, until it asks for none; `before(now)` runs before each
/// resolution (a handler's work in the window that ends there).
Arrivals drive(KvTransfers& t, std::set<std::int64_t> edges = {0},
               const std::function<void(std::int64_t)>& before = {}) {
    Arrivals out;
    for (int guard = 0; !edges.empty() && guard < 100000; ++guard) {
        const std::int64_t now = *edges.begin();
        edges.erase(edges.begin());
        if (before) {
            before(now);
        }
        t.network().resolve(now, [&](engine::EntityId target, std::int64_t at,
                                     engine::EventType type, std::uint64_t payload) {
            if (type == kWakeUp) {
                EXPECT_EQ(target, kWake);
                edges.insert(at + 1);
            } else {
                out[{target, type}] = {at, payload};
            }
        });
    }
    return out;
}

ServeInput input() {
    ServeInput in = test::fleet(0, 2, 4, 2);
    in.kv_bytes_per_token = Bytes(1'000'000);
    return in;
}

TEST(ServeTransfers, ATransferIsOneFlowPerChipPairWithTheBytesSplit) {
    ReplicaPlacement from, to;
    from.first_chip = 4;
    from.chips = 2;
    to.first_chip = 20;
    to.chips = 4;
    const std::vector<network::FlowSpec> flows = kv_flows(from, to, 300.0);
    ASSERT_EQ(flows.size(), 2u); // min(2, 4) pairs
    EXPECT_EQ(flows[0].src, 4u);
    EXPECT_EQ(flows[0].dst, 20u);
    EXPECT_EQ(flows[1].src, 5u);
    EXPECT_EQ(flows[1].dst, 21u);
    EXPECT_EQ(flows[0].bytes, 150.0);
    EXPECT_EQ(flows[1].bytes, 150.0);
    EXPECT_EQ(flows[1].weight, 1.0);
}

TEST(ServeTransfers, TheKvCacheOfAPromptIsItsTokensTimesTheBytesPerToken) {
    const topology::Fabric f = two_instances();
    const KvTransfers t(input(), f, 1, 2);
    EXPECT_EQ(t.bytes_of(250), 250e6);
    EXPECT_EQ(transfer_tag(7, 3), 7u | (std::uint64_t{3} << 32));
    EXPECT_EQ(tag_request(transfer_tag(7, 3)), 7u);
    EXPECT_EQ(tag_attempt(transfer_tag(7, 3)), 3u);
}

TEST(ServeTransfers, AKvCacheArrivesWhenItsFlowHasCrossedTheFabric) {
    // Chip 0 of instance 0 to chip 0 of instance 1 (one chip each): one flow on its rail,
    // limited by the 200 Gbps NIC (25 GB/s): 250 tokens of 1 MB = 250 MB take 10 ms, plus
    // the route's latency. The decode replica's entity gets kKvArrived with the tag.
    const topology::Fabric f = two_instances();
    KvTransfers t(input(), f, 1, 2);
    ReplicaPlacement a, b;
    a.first_chip = 0;
    a.chips = 1;
    b.first_chip = f.chips_per_instance();
    b.chips = 1;
    t.send(0, 0, 0, a, 1, b, 0, 42, 1, t.bytes_of(250));
    ASSERT_EQ(t.outgoing(0).size(), 1u);
    EXPECT_TRUE(t.outgoing(0)[0].live);
    EXPECT_EQ(t.outgoing(0)[0].request, 42u);
    EXPECT_EQ(t.outgoing(0)[0].decode, 1u);
    EXPECT_EQ(t.outgoing(0)[0].attempt, 1u);
    const Arrivals got = drive(t);
    ASSERT_EQ(got.size(), 1u);
    const auto& [at, tag] = got.at({replica_entity(1), kKvArrived});
    const std::int64_t expect = 10 * test::kMs + latency(f, a.first_chip, b.first_chip);
    EXPECT_NEAR(static_cast<double>(at), static_cast<double>(expect), 2.0);
    EXPECT_EQ(tag, transfer_tag(42, 1));
    EXPECT_EQ(t.cancelled(), 0u);
    t.released(0, 0);
    EXPECT_FALSE(t.outgoing(0)[0].live);
}

TEST(ServeTransfers, HandOffsAreKeptByIndexUntilTheReplicaFails) {
    const topology::Fabric f = two_instances();
    KvTransfers t(input(), f, 1, 2);
    ReplicaPlacement a, b;
    a.chips = 1;
    b.first_chip = 16;
    b.chips = 1;
    t.send(0, 0, 0, a, 1, b, 2, 9, 0, 1e6);
    ASSERT_EQ(t.outgoing(0).size(), 3u); // hand-off 2: slots 0 and 1 unused
    EXPECT_FALSE(t.outgoing(0)[0].live);
    EXPECT_TRUE(t.outgoing(0)[2].live);
    EXPECT_TRUE(t.outgoing(1).empty());
    t.clear_outgoing(0);
    EXPECT_TRUE(t.outgoing(0).empty());
}

TEST(ServeTransfers, ALostTransferIsCancelledAndMatchedOnce) {
    // The source of transfer (42, 0) failed: the decode replica notes it and its flow stops at
    // 1 ms; the fabric sends kKvCancelled instead of kKvArrived. The note matches once, and
    // only its own attempt.
    const topology::Fabric f = two_instances();
    KvTransfers t(input(), f, 1, 2);
    ReplicaPlacement a, b;
    a.chips = 1;
    b.first_chip = 16;
    b.chips = 1;
    t.send(0, 0, 0, a, 1, b, 0, 42, 0, t.bytes_of(250));
    const Arrivals got = drive(t, {0, test::kMs}, [&](std::int64_t now) {
        if (now == test::kMs) {
            t.lose(0, now, 1, 42, 0);
        }
    });
    EXPECT_EQ(got.count({replica_entity(1), kKvArrived}), 0u);
    ASSERT_EQ(got.count({replica_entity(1), kKvCancelled}), 1u);
    EXPECT_EQ(got.at({replica_entity(1), kKvCancelled}).second, transfer_tag(42, 0));
    EXPECT_EQ(t.cancelled(), 1u);
    EXPECT_FALSE(t.take_lost(1, 42, 1));
    EXPECT_FALSE(t.take_lost(0, 42, 0));
    EXPECT_TRUE(t.take_lost(1, 42, 0));
    EXPECT_FALSE(t.take_lost(1, 42, 0));
}

TEST(ServeTransfers, AFailedDecodeReplicaCancelsEveryTransferToIt) {
    const topology::Fabric f = two_instances();
    KvTransfers t(input(), f, 1, 3);
    ReplicaPlacement a, b, c;
    a.chips = 1;
    b.first_chip = 16;
    b.chips = 1;
    c.first_chip = 17;
    c.chips = 1;
    t.send(0, 0, 0, a, 1, b, 0, 1, 0, 1e8);
    t.send(0, 0, 0, a, 1, b, 1, 2, 0, 1e8);
    t.send(0, 0, 0, a, 2, c, 2, 3, 0, 1e8);
    const Arrivals got = drive(t, {0, test::kMs}, [&](std::int64_t now) {
        if (now == test::kMs) {
            t.cancel_incoming(0, now, 1);
        }
    });
    EXPECT_EQ(got.count({replica_entity(1), kKvCancelled}), 1u); // one key for both
    EXPECT_EQ(got.count({replica_entity(1), kKvArrived}), 0u);
    EXPECT_EQ(got.count({replica_entity(2), kKvArrived}), 1u);
    EXPECT_EQ(t.cancelled(), 2u);
}

} // namespace
} // namespace trnsim::sim::detail
