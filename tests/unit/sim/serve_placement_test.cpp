// The serving fleet's placement (serve_placement.hpp) on hand-worked Trn2 clusters at LNC 2:
// 4 ranks per chip, 16 chips per instance, 4 instances (64 chips) per UltraServer.
#include "trnsim/core/error.hpp"

#include <gtest/gtest.h>

#include "serve_placement.hpp"
#include "unit/sim/serve_parts.hpp"

namespace trnsim::sim::detail {
namespace {

using test::fleet;

TEST(ServePlacement, ReplicasOfTwoChipsFillPlainInstancesInOrder) {
    // tp 8 = 2 chips of 4 ranks: 16 / 2 = 8 replicas per instance, 16 on two instances.
    const ServeInput in = fleet(0, 2, 8, 0);
    const Placement p = place(in, 2);
    ASSERT_EQ(p.replicas.size(), 16u);
    EXPECT_EQ(p.per_unit, 8u);
    EXPECT_EQ(p.units, 2u);
    EXPECT_FALSE(p.unit_is_ultraserver);
    EXPECT_EQ(p.instances, 2);
    EXPECT_EQ(p.chips, 32);
    EXPECT_EQ(p.chips_per_domain, 16); // plain instances: a domain is an instance
    // Replica 9: unit 1, slot 1: chips 16 + 2 .. 19, domain 1.
    EXPECT_EQ(p.replicas[9].unit, 1u);
    EXPECT_EQ(p.replicas[9].first_chip, 18u);
    EXPECT_EQ(p.replicas[9].chips, 2u);
    EXPECT_EQ(p.replicas[9].domain, 1u);
    EXPECT_EQ(p.replicas[7].first_chip, 14u);
    EXPECT_EQ(p.replicas[7].domain, 0u);
    for (const ReplicaPlacement& r : p.replicas) {
        EXPECT_FALSE(r.prefill);
    }
    EXPECT_EQ(p.shards, 1u);
    EXPECT_EQ(p.shard_of_domain, (std::vector<std::uint32_t>{0, 0}));
}

TEST(ServePlacement, SmallReplicasShareAChip) {
    // tp 2: two replicas per chip, 32 per instance; 5 replicas sit on chips 0, 0, 1, 1, 2.
    const Placement p = place(fleet(0, 1, 2, 5), 2);
    ASSERT_EQ(p.replicas.size(), 5u);
    EXPECT_EQ(p.per_unit, 32u);
    EXPECT_EQ(p.units, 1u);
    const std::uint32_t chips[] = {0, 0, 1, 1, 2};
    for (std::size_t r = 0; r < 5; ++r) {
        EXPECT_EQ(p.replicas[r].first_chip, chips[r]) << r;
        EXPECT_EQ(p.replicas[r].chips, 1u);
    }
}

TEST(ServePlacement, ReplicasLargerThanAnInstanceTakeUltraServers) {
    // tp 128 = 32 chips, more than an instance's 16: two per UltraServer of 64 chips; two
    // UltraServers hold four, in domains 0, 0, 1, 1.
    const Placement p = place(fleet(2, 0, 128, 0), 2);
    ASSERT_EQ(p.replicas.size(), 4u);
    EXPECT_TRUE(p.unit_is_ultraserver);
    EXPECT_EQ(p.per_unit, 2u);
    EXPECT_EQ(p.chips_per_domain, 64);
    const std::uint32_t first[] = {0, 32, 64, 96};
    const std::uint32_t domain[] = {0, 0, 1, 1};
    for (std::size_t r = 0; r < 4; ++r) {
        EXPECT_EQ(p.replicas[r].first_chip, first[r]) << r;
        EXPECT_EQ(p.replicas[r].chips, 32u);
        EXPECT_EQ(p.replicas[r].domain, domain[r]) << r;
    }
    // Plain instances cannot hold them.
    EXPECT_THROW(place(fleet(0, 4, 128, 0), 2), InputError);
}

TEST(ServePlacement, PrefillReplicasSpreadEvenly) {
    // 8 replicas, 2 prefill: r is one when floor((r + 1) 2 / 8) > floor(2 r / 8): r = 3, 7.
    ServeInput in = fleet(0, 1, 8, 8);
    in.spec.serving.disaggregated.prefill_replicas = 2;
    const Placement p = place(in, 2);
    ASSERT_EQ(p.replicas.size(), 8u);
    for (std::size_t r = 0; r < 8; ++r) {
        EXPECT_EQ(p.replicas[r].prefill, r == 3 || r == 7) << r;
    }
    // Every replica prefilling leaves none to decode.
    in.spec.serving.disaggregated.prefill_replicas = 8;
    EXPECT_THROW(place(in, 2), InputError);
}

TEST(ServePlacement, RouterShardsOwnBlocksOfDomains) {
    // tp 16 = 4 chips: 4 per instance; 16 replicas fill 4 instances (domains); 2 shards own
    // domains [0, 2) and [2, 4) (d K / D). Each router needs a closed-loop client of its own.
    ServeInput in = fleet(0, 4, 16, 16);
    in.spec.serving.router_shards = 2;
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 1;
    EXPECT_THROW(place(in, 2), InputError);
    in.spec.requests.arrival.concurrency = 4;
    const Placement p = place(in, 2);
    EXPECT_EQ(p.shards, 2u);
    EXPECT_EQ(p.shard_of_domain, (std::vector<std::uint32_t>{0, 0, 1, 1}));
    // 3 shards over 4 domains: 0, 0, 1, 2.
    in.spec.serving.router_shards = 3;
    EXPECT_EQ(place(in, 2).shard_of_domain, (std::vector<std::uint32_t>{0, 0, 1, 2}));
    // More shards than domains with replicas: 5 replicas fill 2 domains.
    in.spec.serving.replicas = 5;
    EXPECT_THROW(place(in, 2), InputError);
}

TEST(ServePlacement, AutoRouterShardsFollowTheFleetOnly) {
    // tp 16 = 4 chips: 4 replicas per instance. One router per 128 replicas, rounded down.
    ServeInput in = fleet(0, 256, 16, 1024);
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::poisson;
    ASSERT_EQ(in.spec.serving.router_shards, 0); // auto is the default
    Placement p = place(in, 2);
    EXPECT_EQ(p.shards, 8u);
    ASSERT_EQ(p.shard_of_domain.size(), 256u);
    EXPECT_EQ(p.shard_of_domain[31], 0u);
    EXPECT_EQ(p.shard_of_domain[32], 1u);
    in.spec.serving.replicas = 1023;
    EXPECT_EQ(place(in, 2).shards, 7u);
    in.spec.serving.replicas = 255;
    EXPECT_EQ(place(in, 2).shards, 1u);
    // At most one router per closed-loop client.
    in.spec.serving.replicas = 1024;
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    in.spec.requests.arrival.concurrency = 3;
    EXPECT_EQ(place(in, 2).shards, 3u);
    in.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::poisson;
    // Disaggregated with 4 prefill replicas (r = 255, 511, 767, 1023: domains 63, 127, 191,
    // 255): 8, 7, 6 and 5 routers leave some router without one (domain d goes to router
    // d K / 256: with 5, domains 63 .. 255 go to routers 1 .. 4, none to 0); 4 routers get one
    // each.
    in.spec.serving.disaggregated.prefill_replicas = 4;
    EXPECT_EQ(place(in, 2).shards, 4u);
    in.spec.serving.disaggregated.prefill_replicas = 0;
    // At most one router per domain: tp 1 puts 256 replicas in each UltraServer; 512 replicas
    // in 2 UltraServers get 2 routers, not 4.
    ServeInput dense = fleet(2, 0, 1, 0);
    dense.spec.requests.arrival.kind = serving::ArrivalSpec::Kind::poisson;
    EXPECT_EQ(place(dense, 2).shards, 2u);
}

TEST(ServePlacement, RejectsWhatDoesNotFit) {
    EXPECT_THROW(place(fleet(0, 1, 3, 0), 2), InputError);  // 3 does not divide 4 ranks
    EXPECT_THROW(place(fleet(0, 1, 12, 0), 2), InputError); // 3 chips do not divide 16
    EXPECT_THROW(place(fleet(0, 1, 8, 9), 2), InputError);  // an instance holds 8 of tp 8
    EXPECT_THROW(place(fleet(0, 0, 8, 0), 2), InputError);  // no instances
    EXPECT_EQ(place(fleet(0, 1, 8, 8), 2).replicas.size(), 8u);
}

TEST(ServePlacement, FleetShapeCountsTheUltraServersInstances) {
    const cluster::ClusterShape s = fleet_shape(fleet(3, 0, 16, 0));
    EXPECT_EQ(s.ultraservers, 3);
    EXPECT_EQ(s.instances, 12);
    EXPECT_EQ(s.chips, 192);
    const ServeInput in = fleet(0, 2, 16, 0);
    EXPECT_EQ(fleet_shape(in).instances_per_ultraserver, 1);
    EXPECT_EQ(fleet_hardware(in).efa_interfaces, in.chip.instance.efa_interfaces);
}

} // namespace
} // namespace trnsim::sim::detail
