// The fleet's pool: gang placement over leaf groups and pods, and the account of domain time.
#include "trnsim/fleet/pool.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace trnsim::fleet {
namespace {

using D = std::vector<std::int64_t>;

SimTime minutes(std::int64_t m) { return SimTime::from_ns(m * 60'000'000'000); }

/// 16 domains: leaf groups of 4, two groups a pod (pods {0..7}, {8..15}).
Pool small_pool(std::int64_t spares = 0) {
    cluster::DomainGroups g;
    g.domains_per_leaf_group = 4;
    g.leaf_groups_per_pod = 2;
    return Pool(16, 64, g, spares);
}

TEST(FleetPool, PlacesAGangInTheBestFittingLeafGroupThenPodThenPool) {
    Pool p = small_pool();
    // Idle per group after these grants: g0 1, g1 3, g2 4, g3 2.
    p.grant(minutes(0), {0, 1, 2}, 0);
    p.grant(minutes(0), {5}, 1);
    p.grant(minutes(0), {12, 14}, 2);
    ASSERT_EQ(p.count(DomainUse::idle), 10);
    // Fits in a leaf group: the one with the fewest idle that holds it (g3 for 2, g1 for 3).
    EXPECT_EQ(*p.place(2), (D{13, 15}));
    EXPECT_EQ(*p.place(3), (D{4, 6, 7}));
    EXPECT_EQ(*p.place(4), (D{8, 9, 10, 11}));
    EXPECT_EQ(p.span(*p.place(4)), Span::leaf_group);
    // 5 fits in no group; pod 1 (6 idle) holds it, pod 0 (4) does not: its fuller group first.
    EXPECT_EQ(*p.place(5), (D{8, 9, 10, 11, 13}));
    EXPECT_EQ(p.span(*p.place(5)), Span::pod);
    // 10: the whole pool.
    EXPECT_EQ(*p.place(10), (D{3, 4, 6, 7, 8, 9, 10, 11, 13, 15}));
    EXPECT_EQ(p.span(*p.place(10)), Span::pool);
    EXPECT_FALSE(p.place(11).has_value());
    EXPECT_FALSE(p.place(0).has_value());
}

TEST(FleetPool, TiesGoToTheLowestIndex) {
    Pool p = small_pool();
    EXPECT_EQ(*p.place(1), (D{0}));
    EXPECT_EQ(*p.place(4), (D{0, 1, 2, 3}));
    EXPECT_EQ(*p.place(8), (D{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(FleetPool, SparesAreNotPlacedAndRefillOnRepair) {
    Pool p = small_pool(2); // domains 14 and 15 are spares
    EXPECT_EQ(p.count(DomainUse::spare), 2);
    EXPECT_EQ(p.count(DomainUse::idle), 14);
    EXPECT_FALSE(p.place(15).has_value());
    EXPECT_EQ(p.first_spare(), 14);
    p.grant(minutes(1), {14}, 7); // a spare replacing a failed domain
    EXPECT_EQ(p.holder(14), 7);
    p.fail(minutes(1), 3);
    EXPECT_EQ(p.repair(minutes(2), 3), DomainUse::spare); // the spare pool is one short
    p.fail(minutes(3), 4);
    EXPECT_EQ(p.repair(minutes(4), 4), DomainUse::idle); // full again
}

TEST(FleetPool, AccountsDomainTimeByUseAndKeepsTheSumEqualToThePool) {
    Pool p = small_pool(1);
    p.grant(minutes(10), {0, 1}, 0);  // 0-10: 15 idle, 1 spare
    p.fail(minutes(20), 5);           // 10-20: 2 busy, 13 idle, 1 spare
    p.release(minutes(30), {0, 1});   // 20-30: 2 busy, 12 idle, 1 spare, 1 down
    (void)p.repair(minutes(40), 5);   // 30-40: 14 idle, 1 spare, 1 down
    const PoolAccount a = p.close(minutes(60)); // 40-60: 15 idle, 1 spare
    const auto domain_minutes = [&](DomainUse u) {
        return a.domain_time[static_cast<std::size_t>(u)].seconds() / 60.0;
    };
    EXPECT_DOUBLE_EQ(domain_minutes(DomainUse::busy), 2 * 10 + 2 * 10);
    EXPECT_DOUBLE_EQ(domain_minutes(DomainUse::idle),
                     15 * 10 + 13 * 10 + 12 * 10 + 14 * 10 + 15 * 20);
    EXPECT_DOUBLE_EQ(domain_minutes(DomainUse::spare), 1 * 60);
    EXPECT_DOUBLE_EQ(domain_minutes(DomainUse::down), 10 + 10);
    for (const auto& point : a.timeline) {
        std::int64_t sum = 0;
        for (const std::int64_t n : point.domains) {
            sum += n;
        }
        EXPECT_EQ(sum, 16);
    }
    ASSERT_EQ(a.timeline.size(), 6u); // the start, four changes, the close
    EXPECT_EQ(a.timeline[2].domains[3], 1);
}

TEST(FleetPool, RefusesAnImpossiblePool) {
    cluster::DomainGroups g;
    EXPECT_THROW(Pool(0, 64, g, 0), std::invalid_argument);
    EXPECT_THROW(Pool(4, 64, g, 5), std::invalid_argument);
    g.leaf_groups_per_pod = 0;
    EXPECT_THROW(Pool(4, 64, g, 0), std::invalid_argument);
}

} // namespace
} // namespace trnsim::fleet
