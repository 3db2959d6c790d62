#include "trnsim/config/load.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/topology/routing.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace trnsim::network {
namespace {

constexpr engine::EntityId kWakeEntity = 1000;
constexpr engine::EventType kWake = 7;
constexpr engine::EventType kDone = 1;

topology::Fabric two_leaf_instances() {
    topology::FabricSpec s = config::load_fabric("trn2-ultracluster");
    s.scale_up.ultraserver_instances = 0;
    return topology::Fabric::build(s, 8);
}

/// Drives a FlowNetwork without the engine: resolves at time 0 and then 1 ns after every wake
/// it asks for (the window edge that follows the wake event with 1 ns windows). Returns the
/// time of each owner's completion event.
std::map<engine::EntityId, std::int64_t> run(FlowNetwork& net) {
    std::map<engine::EntityId, std::int64_t> done;
    std::set<std::int64_t> wakes{0};
    int edges = 0;
    while (!wakes.empty()) {
        const std::int64_t now = *wakes.begin();
        wakes.erase(wakes.begin());
        if (++edges > 100) {
            ADD_FAILURE() << "the network keeps asking for edges";
            break;
        }
        net.resolve(now, [&](engine::EntityId target, std::int64_t t, engine::EventType type,
                             std::uint64_t) {
            EXPECT_GE(t, now);
            if (type == kWake) {
                EXPECT_EQ(target, kWakeEntity);
                wakes.insert(t + 1);
            } else {
                EXPECT_EQ(type, kDone);
                done[target] = t;
            }
        });
    }
    EXPECT_TRUE(net.idle());
    return done;
}

TEST(FlowNetwork, AWeightedFlowSharesLikeTheFlowsItStandsFor) {
    // Chip 0 of instance 0 to chip 0 of instance 1: the same rail, so one path through their
    // leaf, limited by the 200 Gbps NIC (25 GB/s). A flow of weight 3 carrying 3 N bytes beside
    // a competitor of N bytes must finish when three flows of N bytes would.
    const topology::Fabric f = two_leaf_instances();
    const std::uint32_t a = 0, b = f.chips_per_instance();
    std::vector<std::uint32_t> route;
    topology::route(f, a, b, 0, route);
    const std::int64_t latency = topology::route_latency_ns(f, route.data(), route.size());
    const double n = 250e6; // bytes
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);

    FlowNetwork weighted(f, 1, kWakeEntity, kWake, hbm, step);
    weighted.start_group(0, 0, 1, kDone, 0, {FlowSpec{a, b, 3 * n, 3.0}});
    weighted.start_group(0, 0, 2, kDone, 0, {FlowSpec{a, b, n}});
    const auto w = run(weighted);

    FlowNetwork separate(f, 1, kWakeEntity, kWake, hbm, step);
    for (engine::EntityId owner : {10, 11, 12}) {
        separate.start_group(0, 0, owner, kDone, 0, {FlowSpec{a, b, n}});
    }
    separate.start_group(0, 0, 2, kDone, 0, {FlowSpec{a, b, n}});
    const auto s = run(separate);

    // By hand: four equal shares of 25 GB/s, everything ends at 4 N / 25 GB/s.
    const auto expect = static_cast<std::int64_t>(4 * n / 25e9 * 1e9) + latency;
    EXPECT_NEAR(static_cast<double>(w.at(1)), static_cast<double>(expect), 2.0);
    EXPECT_NEAR(static_cast<double>(w.at(2)), static_cast<double>(expect), 2.0);
    EXPECT_EQ(w.at(1), s.at(12));
    EXPECT_EQ(w.at(2), s.at(2));

    // Weight 1 (the ranks' data merged, sharing as one flow): the competitor gets half the NIC,
    // ends at 2 N / 25 GB/s, and the merged flow then has it alone: 4 N / 25 GB/s.
    FlowNetwork merged(f, 1, kWakeEntity, kWake, hbm, step);
    merged.start_group(0, 0, 1, kDone, 0, {FlowSpec{a, b, 3 * n}});
    merged.start_group(0, 0, 2, kDone, 0, {FlowSpec{a, b, n}});
    const auto m = run(merged);
    EXPECT_NEAR(static_cast<double>(m.at(2)),
                static_cast<double>(static_cast<std::int64_t>(2 * n / 25e9 * 1e9) + latency), 2.0);
    EXPECT_NEAR(static_cast<double>(m.at(1)), static_cast<double>(expect), 2.0);
}

} // namespace
} // namespace trnsim::network
