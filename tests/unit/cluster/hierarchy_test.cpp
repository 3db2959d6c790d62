// The hardware hierarchy: counts, link classes, the units a group of ranks spans and its
// decomposition over the levels, against hand-worked Trn2, Trn1 and Inferentia2 clusters.
#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/network/collective_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace trnsim::cluster {
namespace {

using network::LinkClass;

const compute::ChipSpec& trn2() {
    static const compute::ChipSpec c = config::load_chip("trn2");
    return c;
}
const compute::ChipSpec& trn1() {
    static const compute::ChipSpec c = config::load_chip("trn1");
    return c;
}

std::vector<LinkClass> classes(const Hierarchy& h) {
    std::vector<LinkClass> out;
    for (const LinkLevel& l : h.links()) {
        out.push_back(l.link);
    }
    return out;
}

std::vector<std::int64_t> progression(std::int64_t first, std::int64_t stride, std::int64_t n) {
    std::vector<std::int64_t> r;
    for (std::int64_t k = 0; k < n; ++k) {
        r.push_back(first + k * stride);
    }
    return r;
}

TEST(ClusterSpec, NamesItsDomains) {
    const ClusterSpec us{3, 0}, inst{0, 5};
    EXPECT_TRUE(us.counts_ultraservers());
    EXPECT_FALSE(inst.counts_ultraservers());
    EXPECT_EQ(us.domains(), 3);
    EXPECT_EQ(inst.domains(), 5);
    EXPECT_STREQ(us.domain_key(), "cluster.ultraservers");
    EXPECT_STREQ(inst.domain_key(), "cluster.instances");
    EXPECT_STREQ(inst.domain_name(), "instances");
    EXPECT_EQ(ClusterSpec::of_domains(true, 7).ultraservers, 7);
    EXPECT_EQ(ClusterSpec::of_domains(false, 7).instances, 7);
    EXPECT_EQ(ClusterSpec::of_domains(false, 7).ultraservers, 0);
}

TEST(Hierarchy, Trn2UltraServersAreTheirDomains) {
    const Hierarchy h = Hierarchy::of(trn2(), {2, 0});
    // 2 UltraServers x 4 trn2.48xlarge x 16 chips.
    EXPECT_TRUE(h.ultraserver_domains());
    EXPECT_EQ(h.domains(), 2);
    EXPECT_EQ(h.instances(), 8);
    EXPECT_EQ(h.chips(), 128);
    EXPECT_EQ(h.instances_per_domain(), 4);
    EXPECT_EQ(h.chips_per_domain(), 64);
    EXPECT_EQ(h.shape().ranks_per_domain(4), 256);
    const ClusterSpec bigger = h.shape().with_domains(6);
    EXPECT_EQ(bigger.ultraservers, 6);
    EXPECT_EQ(bigger.instances, 0);
    EXPECT_EQ(classes(h), (std::vector<LinkClass>{LinkClass::on_chip, LinkClass::neuronlink,
                                                  LinkClass::neuronlink_z, LinkClass::efa}));
    // Each class is the chip's link, once.
    EXPECT_EQ(h.link(LinkClass::neuronlink).per_chip, trn2().neuronlink_intra_instance);
    EXPECT_EQ(h.link(LinkClass::neuronlink_z).per_chip, trn2().neuronlink_inter_instance);
    EXPECT_EQ(h.link(LinkClass::efa).per_chip, trn2().instance.efa_bandwidth / 16);
    EXPECT_EQ(h.link(LinkClass::efa).latency, trn2().efa_latency);
}

TEST(Hierarchy, PlainInstancesAreTheirOwnDomainsEvenOfAnUltraServerChip) {
    const Hierarchy h = Hierarchy::of(trn2(), {0, 3});
    EXPECT_FALSE(h.ultraserver_domains());
    EXPECT_EQ(h.domains(), 3);
    EXPECT_EQ(h.ultraservers(), 0);
    EXPECT_EQ(h.chips_per_domain(), 16);
    EXPECT_EQ(h.shape().with_domains(4).instances, 4);
    EXPECT_EQ(classes(h), (std::vector<LinkClass>{LinkClass::on_chip, LinkClass::neuronlink,
                                                  LinkClass::efa}));
}

TEST(Hierarchy, RefusesWhatTheChipCannotForm) {
    try {
        (void)Hierarchy::of(trn1(), {1, 0});
        FAIL() << "trn1 has no UltraServers";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("cluster.ultraservers"), std::string::npos);
    }
    compute::ChipSpec no_efa = trn1();
    no_efa.instance.efa_bandwidth = Bandwidth{};
    EXPECT_THROW((void)Hierarchy::of(no_efa, {0, 2}), InputError);
    EXPECT_NO_THROW((void)Hierarchy::of(no_efa, {0, 1})); // one instance needs no EFA
}

TEST(Hierarchy, CountsTheUnitsOfAGroupByHand) {
    // Trn2 UltraServers, 4 ranks a chip: 64 ranks an instance, 256 an UltraServer.
    const Hierarchy h = Hierarchy::of(trn2(), {2, 0});
    const auto check = [&](std::int64_t first, std::int64_t stride, std::int64_t size,
                           UnitCounts want) {
        for (const UnitCounts n :
             {h.count(4, first, stride, size), h.count(4, progression(first, stride, size))}) {
            EXPECT_EQ(n.size, want.size);
            EXPECT_EQ(n.chips, want.chips) << first << "+" << stride << "x" << size;
            EXPECT_EQ(n.instances, want.instances) << first << "+" << stride << "x" << size;
            EXPECT_EQ(n.domains, want.domains) << first << "+" << stride << "x" << size;
        }
    };
    check(0, 1, 4, {4, 1, 1, 1});      // one chip
    check(0, 4, 16, {16, 16, 1, 1});   // a rank on each chip of an instance
    check(0, 64, 4, {4, 4, 4, 1});     // one rank per instance of an UltraServer
    check(0, 256, 2, {2, 2, 2, 2});    // one rank per UltraServer
    check(62, 1, 4, {4, 2, 2, 1});     // across an instance boundary
    check(254, 1, 4, {4, 2, 2, 2});    // across an UltraServer boundary
}

TEST(Hierarchy, ClosedFormCountsEqualTheEnumeratedOnes) {
    for (const ClusterSpec spec : {ClusterSpec{3, 0}, ClusterSpec{0, 12}}) {
        const Hierarchy h = Hierarchy::of(trn2(), spec);
        for (int rpc : {1, 2, 4, 8}) {
            const std::int64_t ranks = h.chips() * rpc;
            for (std::int64_t stride : {1, 2, 3, 7, 16, 64, 100, 257}) {
                for (std::int64_t first : {0, 5, 63}) {
                    const std::int64_t size =
                        std::min<std::int64_t>(40, (ranks - 1 - first) / stride + 1);
                    const UnitCounts a = h.count(rpc, first, stride, size);
                    const UnitCounts b = h.count(rpc, progression(first, stride, size));
                    EXPECT_EQ(a.chips, b.chips);
                    EXPECT_EQ(a.instances, b.instances);
                    EXPECT_EQ(a.domains, b.domains);
                }
            }
        }
    }
}

TEST(Hierarchy, DecomposesAGroupOverItsLevels) {
    const Hierarchy h = Hierarchy::of(trn2(), {2, 0});
    // Rank 0 of each of the 4 instances of UltraServer 0, and of UltraServer 1: 8 members.
    std::vector<std::int64_t> ranks = progression(0, 64, 4);
    for (std::int64_t r : progression(256, 64, 4)) {
        ranks.push_back(r);
    }
    const network::GroupShape g = h.group_shape(4, h.count(4, ranks));
    ASSERT_EQ(g.levels.size(), 4u);
    const int members[] = {1, 1, 4, 2};
    for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(g.levels[i].link, h.links()[i].link);
        EXPECT_EQ(g.levels[i].members, members[i]);
        // A member drives its chip's links shared by the chip's 4 ranks.
        EXPECT_EQ(g.levels[i].bandwidth, h.links()[i].per_chip / 4.0);
        EXPECT_EQ(g.levels[i].step_latency, h.links()[i].latency);
    }
    EXPECT_EQ(g.size(), 8);
}

TEST(Hierarchy, ASwitchedDomainIsOneLevel) {
    // trn2's packaging with one switch level for its UltraServer (no second level).
    compute::ChipSpec one_level = trn2();
    one_level.neuronlink_inter_instance = {};
    const Hierarchy h(one_level, Hierarchy::shape_of(one_level, {2, 0}), ScaleUpKind::switched);
    EXPECT_EQ(h.scale_up(), ScaleUpKind::switched);
    EXPECT_EQ(classes(h), (std::vector<LinkClass>{LinkClass::on_chip, LinkClass::neuronlink,
                                                  LinkClass::efa}));
    // One rank on each of 8 chips of 4 instances of one domain, and 2 more domains' first chip:
    // 64 chips a domain are all one switch level away.
    std::vector<std::int64_t> ranks = progression(0, 32, 8);
    ranks.push_back(256);
    const network::GroupShape g = h.group_shape(4, h.count(4, ranks));
    ASSERT_EQ(g.levels.size(), 3u);
    EXPECT_EQ(g.levels[1].link, LinkClass::neuronlink);
    EXPECT_EQ(g.levels[1].members, 5); // ceil(9 chips / 2 domains)
    EXPECT_EQ(g.levels[2].members, 2);
}

TEST(Hierarchy, Trn3UltraServersAreSwitchedFromTheChipFile) {
    const compute::ChipSpec trn3 = config::load_chip("trn3");
    const Hierarchy h = Hierarchy::of(trn3, {4, 0});
    EXPECT_EQ(h.scale_up(), ScaleUpKind::switched);
    EXPECT_EQ(h.chips_per_domain(), 64);
    EXPECT_EQ(classes(h), (std::vector<LinkClass>{LinkClass::on_chip, LinkClass::neuronlink,
                                                  LinkClass::efa}));
    EXPECT_DOUBLE_EQ(h.link(LinkClass::neuronlink).per_chip.bytes_per_s(), 2.56e12);
    EXPECT_FALSE(h.has_link(LinkClass::neuronlink_z));
    EXPECT_TRUE(Hierarchy::of(trn2(), {4, 0}).has_link(LinkClass::neuronlink_z));
    EXPECT_FALSE(Hierarchy::of(trn2(), {0, 4}).has_link(LinkClass::neuronlink_z));
    // tp 64 at LNC 2: 4 ranks on each of 16 chips, all a switch apart; 2 domains over EFA.
    const network::GroupShape g = h.group_shape(4, h.count(4, 0, 1, 64));
    ASSERT_EQ(g.levels.size(), 3u);
    EXPECT_FALSE(g.levels[0].switched);
    EXPECT_TRUE(g.levels[1].switched);
    EXPECT_EQ(g.levels[1].members, 16);
    EXPECT_DOUBLE_EQ(g.levels[1].bandwidth.bytes_per_s(), 2.56e12 / 4.0);
    EXPECT_FALSE(g.levels[2].switched);
    // Each chip's 4 NeuronLink-v4 ports into the switches: 64 x 4 cables an UltraServer.
    EXPECT_EQ(h.shape().neuronlink_cables_per_domain(trn3.instance.torus, trn3.neuronlink_ports),
              256);
    // A Trn2 UltraServer's torus levels are not switched.
    const Hierarchy t = Hierarchy::of(trn2(), {4, 0});
    for (const network::GroupLevel& l : t.group_shape(4, t.count(4, 0, 1, 256)).levels) {
        EXPECT_FALSE(l.switched);
    }
}

TEST(Hierarchy, Trn3Gen2UltraServersHaveTwoSwitchLevelsAndTwoRacks) {
    const compute::ChipSpec gen2 = config::load_chip("trn3-gen2");
    const Hierarchy h = Hierarchy::of(gen2, {2, 0});
    EXPECT_EQ(h.scale_up(), ScaleUpKind::switched);
    EXPECT_EQ(h.chips_per_domain(), 144);
    EXPECT_EQ(h.shape().racks_per_ultraserver, 2);
    EXPECT_EQ(h.shape().instances_per_rack(), 18);
    EXPECT_EQ(classes(h),
              (std::vector<LinkClass>{LinkClass::on_chip, LinkClass::neuronlink,
                                      LinkClass::neuronlink_z, LinkClass::neuronlink_rack,
                                      LinkClass::efa}));
    // The chip file's shares of 2.56 TB/s in the PCIe section's proportions 256 : 320 : 128.
    EXPECT_NEAR(h.link(LinkClass::neuronlink).per_chip.bytes_per_s(), 2.56e12 * 256 / 704, 1e8);
    EXPECT_NEAR(h.link(LinkClass::neuronlink_z).per_chip.bytes_per_s(), 2.56e12 * 320 / 704, 1e8);
    EXPECT_NEAR(h.link(LinkClass::neuronlink_rack).per_chip.bytes_per_s(), 2.56e12 * 128 / 704,
                1e8);
    // 16 ranks at LNC 2 (4 a chip): one server, its switch only.
    network::GroupShape g = h.group_shape(4, h.count(4, 0, 1, 16));
    ASSERT_EQ(g.levels.size(), 5u);
    EXPECT_EQ(g.describe(), "4 on_chip x 4 neuronlink");
    EXPECT_TRUE(g.levels[1].switched);
    // One rank on every chip of both UltraServers: 4 chips a server, 18 servers a rack, 2
    // racks, 2 domains. The switch levels are switched, the direct links between racks not.
    const std::vector<std::int64_t> ranks = progression(0, 4, 288);
    EXPECT_EQ(h.count(4, ranks).racks, 4);
    g = h.group_shape(4, h.count(4, ranks));
    EXPECT_EQ(g.describe(), "4 neuronlink x 18 neuronlink_z x 2 neuronlink_rack x 2 efa");
    EXPECT_TRUE(g.levels[2].switched);
    EXPECT_FALSE(g.levels[3].switched);
    EXPECT_EQ(h.count(4, 0, 4, 288).racks, 4);
    EXPECT_EQ(h.count(4, 0, 1, 288).racks, 1); // ranks 0..287: chips 0..71, one rack
    EXPECT_EQ(h.count(4, 0, 1, 289).racks, 2); // and chip 72, the first of the second
    // Reliability: 11 PCIe Gen6 x8 links a chip (4 + 5 + 2), 144 x 11 an UltraServer.
    EXPECT_EQ(h.shape().neuronlink_cables_per_domain(gen2.instance.torus, gen2.neuronlink_ports),
              144 * 11);
}

TEST(Hierarchy, ASwitchedAllReduceOnAGen2UltraServerByHand) {
    // One rank on each of the 144 chips, the links alone (no collective engine), 64 MiB each:
    // mesh through the server switches (3 / 4 of B at bw1), then through the rack switches
    // (17 / 18 of B / 4 at bw2), then a ring of 2 over the direct links (1 / 2 of B / 72 at
    // bw3, one step), each step 2 us; the all-gather mirrors the reduce-scatter.
    const compute::ChipSpec gen2 = config::load_chip("trn3-gen2");
    const Hierarchy h = Hierarchy::of(gen2, {1, 0});
    const double bw1 = 930.9e9, bw2 = 1163.6e9, bw3 = 465.5e9, a = 2e-6;
    const double b = 64.0 * 1024 * 1024;
    const network::GroupShape g = h.group_shape(1, h.count(1, 0, 1, 144));
    const double scatter = 0.75 * b / bw1 + a + 17.0 / 18.0 * (b / 4) / bw2 + a +
                           0.5 * (b / 72) / bw3 + a;
    EXPECT_NEAR(network::collective_seconds(network::CollectiveOp::all_reduce, b, g),
                2.0 * scatter, 1e-12);
    // One rack (72 chips): its switches are the outermost level, where a small all-reduce
    // runs one-shot: 16 KiB reduce-scattered over the server (3 / 4 at bw1, a), then the
    // 4 KiB shard written to the 17 other servers' chips (17 x 4 KiB at bw2, a), then
    // gathered back over the server (3 / 4 at bw1, a).
    const double small = 16.0 * 1024;
    const network::GroupShape rack = h.group_shape(1, h.count(1, 0, 1, 72));
    const double one_shot = 2.0 * (0.75 * small / bw1 + a) + 17.0 * (small / 4) / bw2 + a;
    EXPECT_NEAR(network::collective_seconds(network::CollectiveOp::all_reduce, small, rack),
                one_shot, 1e-12);
}

TEST(Hierarchy, CountsTheNeuronLinkCablesOfADomain) {
    // A 4 x 4 torus: 4 rings of 4 in each dimension, 32 cables an instance. A Trn2 UltraServer
    // adds a ring of its 4 instances for each of the 16 chip positions: 4 x 32 + 16 x 4 = 192.
    EXPECT_EQ(Hierarchy::shape_of(trn2(), {0, 1}).neuronlink_cables_per_domain({4, 4}), 32);
    EXPECT_EQ(Hierarchy::shape_of(trn2(), {1, 0}).neuronlink_cables_per_domain({4, 4}), 192);
    // A ring of 2 is one cable; of 1, none: a 2 x 1 "torus" of 2 chips has one.
    ClusterShape two = make_cluster_shape({0, 1}, 2, 0);
    EXPECT_EQ(two.neuronlink_cables_per_domain({2, 1}), 1);
    // Two instances of 2 chips joined in UltraServers: 2 x 1 + 2 positions x 1 cable.
    ClusterShape pair = make_cluster_shape({1, 0}, 2, 2);
    EXPECT_EQ(pair.neuronlink_cables_per_domain({2}), 4);
}

TEST(ClosCounts, ByHandForARailOptimisedClosOfRadix128) {
    // 16 Trn2 UltraServers: 64 instances of 16 rails; a leaf serves 64 instances of a rail.
    const ClosCounts small = clos_counts(64, 16, 128);
    EXPECT_EQ(small.leaves_per_rail, 1);
    EXPECT_EQ(small.leaves, 16);
    EXPECT_EQ(small.pods, 1);
    EXPECT_EQ(small.spines, 64); // one pod of 64 spines
    EXPECT_EQ(small.cores, 0);   // no second pod to reach
    // 98,304 chips: 6,144 instances, 96 leaves a rail, 1,536 leaves in 24 pods of 64.
    const ClosCounts big = clos_counts(6144, 16, 128);
    EXPECT_EQ(big.leaves, 1536);
    EXPECT_EQ(big.pods, 24);
    EXPECT_EQ(big.spines, 24 * 64);
    EXPECT_EQ(big.cores, 64 * 64);
    // One instance with one NIC: one leaf, nothing above it.
    const ClosCounts one = clos_counts(1, 1, 128);
    EXPECT_EQ(one.leaves, 1);
    EXPECT_EQ(one.spines, 0);
    EXPECT_EQ(one.cores, 0);
    EXPECT_EQ(clos_counts(10, 0, 0).rails, 1); // degenerate inputs count as 1 rail, radix 2
}

TEST(DomainGroups, ByHandForTheClosOfRadix128) {
    // Trn2 UltraServers (4 instances) on 16 rails: a leaf serves 64 instances = 16
    // UltraServers; a pod's 64 leaves are 4 leaf groups of 16 rails, so 64 UltraServers a pod
    // (1,536 UltraServers: the 24 pods of clos_counts(6144, 16, 128)).
    ClusterShape us;
    us.chips_per_instance = 16;
    us.instances_per_ultraserver = 4;
    us.ultraservers = 1536;
    us.instances = 6144;
    const DomainGroups g = domain_groups(us, 16, 128);
    EXPECT_EQ(g.domains_per_leaf_group, 16);
    EXPECT_EQ(g.leaf_groups_per_pod, 4);
    EXPECT_EQ(g.domains_per_pod(), 64);
    EXPECT_EQ(us.ultraservers / g.domains_per_pod(), clos_counts(6144, 16, 128).pods);
    // Plain trn1 instances on 8 rails: 64 instances a leaf group, 8 groups a pod.
    ClusterShape inst;
    inst.chips_per_instance = 16;
    inst.instances = 100;
    const DomainGroups p = domain_groups(inst, 8, 128);
    EXPECT_EQ(p.domains_per_leaf_group, 64);
    EXPECT_EQ(p.leaf_groups_per_pod, 8);
    // A domain wider than a leaf's share is a group of its own; degenerate inputs count as 1.
    EXPECT_EQ(domain_groups(us, 16, 4).domains_per_leaf_group, 1);
    EXPECT_EQ(domain_groups(us, 0, 0).leaf_groups_per_pod, 1);
}

TEST(Hierarchy, SmallestClusterHoldingAReplica) {
    EXPECT_EQ(Hierarchy::smallest_holding(trn2(), 8).instances, 1);
    const ClusterShape us = Hierarchy::smallest_holding(trn2(), 32);
    EXPECT_EQ(us.ultraservers, 1);
    EXPECT_EQ(us.chips, 64);
    const ClusterShape wide = Hierarchy::smallest_holding(trn2(), 128); // past an UltraServer
    EXPECT_EQ(wide.ultraservers, 0);
    EXPECT_EQ(wide.instances, 8);
    EXPECT_EQ(Hierarchy::smallest_holding(trn1(), 32).instances, 2);
    EXPECT_EQ(Hierarchy::chips_per_ultraserver(trn2()), 64);
    EXPECT_EQ(Hierarchy::chips_per_ultraserver(trn1()), 16);
    EXPECT_EQ(Hierarchy::instances_per_ultraserver(trn1()), 0);
}

} // namespace
} // namespace trnsim::cluster
