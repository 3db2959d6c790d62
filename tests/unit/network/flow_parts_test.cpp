// The parts of FlowNetwork on their own (flow_network_test.cpp tests the whole): the groups
// and their events, link ownership and home shards, and one shard's part of a window edge.
#include "flow_shard.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/topology/routing.hpp"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace trnsim::network {
namespace {

using Event = std::tuple<engine::EntityId, std::int64_t, engine::EventType, std::uint64_t>;

FlowNetwork::Schedule recorder(std::vector<Event>& out) {
    return [&out](engine::EntityId e, std::int64_t t, engine::EventType type, std::uint64_t tag) {
        out.emplace_back(e, t, type, tag);
    };
}

/// 8 trn2.48xlarge instances (16 chips each) on the EFA Clos: 128 chips.
topology::Fabric eight_instances() {
    topology::FabricSpec s = config::load_fabric("trn2-ultracluster");
    s.scale_up.ultraserver_instances = 0;
    return topology::Fabric::build(s, 8);
}

TEST(FlowGroups, ACompletionWaitsForEveryFlowAndTheToken) {
    // Two flows plus the admission token: the event comes with the third arrival, at the
    // latest arrival (500) even though the edge is earlier (400).
    FlowGroups groups(1);
    groups.start(0, 100, 7, 3, 42, {FlowSpec{0, 1, 10.0}, FlowSpec{1, 2, 10.0}});
    const std::uint32_t gid = groups.admit(groups.pending()[0][0]);
    std::vector<Event> ev;
    groups.arrive(gid, 100, 100, recorder(ev)); // the token, at the start
    groups.arrive(gid, 500, 300, recorder(ev));
    EXPECT_TRUE(ev.empty());
    groups.arrive(gid, 300, 400, recorder(ev));
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0], Event(7, 500, 3, 42));
    // The slot is free again: the next group takes it.
    groups.clear_pending();
    groups.start(0, 600, 8, 3, 43, {});
    EXPECT_EQ(groups.admit(groups.pending()[0][0]), gid);
    EXPECT_EQ(groups[gid].outstanding, 1u); // an empty group waits for its token only
}

TEST(FlowGroups, AStoppedFlowMakesTheGroupCancelled) {
    FlowGroups groups(1);
    groups.start(0, 0, 7, 3, 42, {FlowSpec{0, 1, 10.0}});
    const std::uint32_t gid = groups.admit(groups.pending()[0][0]);
    std::vector<Event> ev;
    groups.arrive(gid, 0, 0, recorder(ev));
    groups.arrive(gid, FlowGroups::kStopped, 250, recorder(ev));
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0], Event(7, 250, 0, 42)); // the cancelled type a cancel had not set: 0
    EXPECT_EQ(groups.cancelled(), 1u);
}

TEST(FlowGroups, ACancelDropsEarlierBufferedGroupsAndMarksAdmittedOnes) {
    FlowGroups groups(2);
    // Admitted before this window: owner 7, tag 1.
    groups.start(0, 0, 7, 3, 1, {FlowSpec{0, 1, 10.0}});
    const std::uint32_t admitted = groups.admit(groups.pending()[0][0]);
    groups.clear_pending();
    // This window: partition 0 starts (7, tag 2) then cancels every tag of 7 at 20;
    // partition 1 starts (7, tag 3) at 10 (before the cancel's time: dropped), (7, tag 4)
    // at 30 (after it: kept) and (8, tag 5) at 5 (another owner: kept).
    groups.start(0, 15, 7, 3, 2, {});
    groups.start_view(1, 10, 7, 3, 3, {});
    groups.start_view(1, 30, 7, 3, 4, {});
    groups.start_view(1, 5, 8, 3, 5, {});
    groups.cancel(0, 20, 7, FlowNetwork::kAnyTag, 9);
    EXPECT_TRUE(groups.has_cancels());
    EXPECT_FALSE(groups.nothing_buffered());
    std::vector<Event> ev;
    EXPECT_TRUE(groups.apply_cancels(100, recorder(ev)));
    EXPECT_EQ(ev, (std::vector<Event>{{7, 100, 9, 2}, {7, 100, 9, 3}}));
    EXPECT_EQ(groups.cancelled(), 2u);
    EXPECT_TRUE(groups.pending()[0].empty());
    ASSERT_EQ(groups.pending()[1].size(), 2u);
    EXPECT_EQ(groups.pending()[1][0].tag, 4u);
    EXPECT_EQ(groups.pending()[1][1].tag, 5u);
    EXPECT_EQ(groups[admitted].cancel_at, 20);
    EXPECT_EQ(groups[admitted].cancelled_type, 9);
    EXPECT_FALSE(groups.has_cancels());
}

TEST(LinkOwners, ALinkIsFreeWithoutUsers) {
    LinkOwners owners(3);
    owners.owner = {2, 2, LinkOwners::kFree};
    owners.users = {2, 1, 0};
    const std::vector<std::uint32_t> links{0, 1};
    owners.release(links);
    EXPECT_EQ(owners.owner, (std::vector<std::uint16_t>{2, LinkOwners::kFree, LinkOwners::kFree}));
    EXPECT_EQ(owners.users, (std::vector<std::uint32_t>{1, 0, 0}));
}

TEST(HomeShard, OwnSourceOverNeuronLinkFirstSourceOverEfa) {
    // 128 chips in 4 shards: blocks of 32 chips.
    const topology::Fabric f = eight_instances();
    ASSERT_EQ(f.chips(), 128u);
    FlowGroups::Pending p{0, 0, 0, 0, {FlowSpec{5, 96, 1.0}, FlowSpec{40, 41, 1.0}}, {}};
    p.flows = p.owned;
    std::vector<std::uint32_t> route;
    topology::route(f, 40, 41, 0, route); // inside instance 2: NeuronLink
    EXPECT_EQ(home_shard(f, 4, p, route, 40), 1u);
    route.clear();
    topology::route(f, 40, 96, 0, route); // instance 2 to 6: EFA, the first source's block
    EXPECT_EQ(home_shard(f, 4, p, route, 40), 0u);
}

struct ShardFixture {
    topology::Fabric fabric = eight_instances();
    LinkOwners owners{fabric.capacity().size()};
    FlowShard shard{MaxMinSolver::make_links(fabric.capacity()), 0, 1};
    FlowGroups groups{1};
    std::vector<std::uint32_t> route;
    double capacity = 0.0; ///< the route's narrowest link
    std::int64_t latency = 0;

    ShardFixture() {
        topology::route(fabric, 0, 1, 0, route);
        latency = topology::route_latency_ns(fabric, route.data(), route.size());
        capacity = fabric.capacity()[route[0]];
        for (const std::uint32_t l : route) {
            capacity = std::min(capacity, fabric.capacity()[l]);
        }
    }
    /// Queues a flow of group `gid` on the route, as placement does.
    void queue(std::uint32_t gid, double bytes) {
        shard.enqueue(gid, latency, 0, bytes, route, 1.0, false);
        for (const std::uint32_t l : route) {
            owners.owner[l] = 0;
        }
    }
};

TEST(FlowShard, AFinishedFlowLeavesItsBandwidthToTheOther) {
    // Two flows on one route share its narrowest link C: C/2 each. With B = C / 2000 bytes,
    // a (B bytes) ends at 2B/C = 1 ms; then b (3B) has 3B - B = 2B left at C: 1 ms more.
    ShardFixture s;
    const double b = s.capacity / 2000;
    s.queue(0, b);
    s.queue(1, 3 * b);
    s.shard.resolve(0, false, s.groups, s.fabric, s.owners);
    EXPECT_EQ(s.shard.solver.active_flows(), 2u);
    EXPECT_EQ(s.owners.users[s.route[0]], 2u);
    EXPECT_NEAR(static_cast<double>(s.shard.next_finish), 1e6, 1.0);
    EXPECT_TRUE(s.shard.arrivals.empty());
    const std::int64_t edge = s.shard.next_finish;
    s.shard.resolve(edge, false, s.groups, s.fabric, s.owners);
    ASSERT_EQ(s.shard.arrivals.size(), 1u);
    EXPECT_EQ(s.shard.arrivals[0].group, 0u);
    EXPECT_EQ(s.shard.arrivals[0].when, edge + s.latency);
    EXPECT_NEAR(static_cast<double>(s.shard.next_finish), 2e6, 2.0);
    EXPECT_EQ(s.owners.users[s.route[0]], 1u);
    // At b's end the shard empties and its links are free again.
    s.shard.resolve(s.shard.next_finish, false, s.groups, s.fabric, s.owners);
    EXPECT_EQ(s.shard.arrivals.size(), 2u);
    EXPECT_EQ(s.shard.next_finish, kNoFinish);
    EXPECT_EQ(s.owners.owner[s.route[0]], LinkOwners::kFree);
    EXPECT_EQ(s.owners.users[s.route[0]], 0u);
}

TEST(FlowShard, ACancelStopsAFlowAtItsTime) {
    // One flow of B = C / 1000 bytes alone: rate C, 1 ms. Its group is cancelled at 0.25 ms
    // and the shard runs at 0.5 ms: the flow stops at 0.25 ms with 0.75 B unsent on every link
    // of its route, and arrives as stopped.
    ShardFixture s;
    const double b = s.capacity / 1000;
    s.groups.start(0, 0, 7, 3, 42, {FlowSpec{0, 1, b}});
    const std::uint32_t gid = s.groups.admit(s.groups.pending()[0][0]);
    s.groups.clear_pending();
    s.queue(gid, b);
    s.shard.resolve(0, false, s.groups, s.fabric, s.owners);
    EXPECT_NEAR(static_cast<double>(s.shard.next_finish), 1e6, 1.0);
    s.groups.cancel(0, 250'000, 7, 42, 9);
    std::vector<Event> ev;
    ASSERT_TRUE(s.groups.apply_cancels(500'000, recorder(ev)));
    EXPECT_TRUE(ev.empty()); // an admitted group: its event waits for its flows
    s.shard.resolve(500'000, true, s.groups, s.fabric, s.owners);
    ASSERT_EQ(s.shard.arrivals.size(), 1u);
    EXPECT_EQ(s.shard.arrivals[0].when, FlowGroups::kStopped);
    std::array<double, topology::kLinkKinds> unsent{};
    for (const std::uint32_t l : s.route) {
        unsent[static_cast<std::size_t>(s.fabric.kind()[l])] += 0.75 * b;
    }
    for (std::size_t k = 0; k < unsent.size(); ++k) {
        EXPECT_NEAR(s.shard.unsent[k], unsent[k], 1e-6 * b);
    }
    EXPECT_EQ(s.shard.solver.active_flows(), 0u);
    EXPECT_EQ(s.shard.next_finish, kNoFinish);
    EXPECT_EQ(s.owners.owner[s.route[0]], LinkOwners::kFree);
}

} // namespace
} // namespace trnsim::network
