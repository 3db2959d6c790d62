// Component counts and entity ids of the run simulation's layout, checked against the chip
// data and against issue 4's fabric model (topology::Fabric) built from the same description.
#include "trnsim/config/load.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/topology/fabric.hpp"

#include <gtest/gtest.h>

#include <set>

namespace trnsim::reliability {
namespace {

std::array<bool, kClassCount> all_present() {
    std::array<bool, kClassCount> p{};
    p.fill(true);
    return p;
}

HardwareFacts trn2() {
    HardwareFacts hw;
    hw.instance_torus = {4, 4};
    hw.efa_interfaces = 16;
    hw.efa_bandwidth_per_instance = Bandwidth::bits_per_s(3200e9);
    return hw;
}

TEST(Layout, Trn2UltraServerCountsByHand) {
    // One UltraServer: 64 chips and HBMs, 4 hosts and software stacks, 4 x 16 NICs; NeuronLink:
    // 4 instance tori of 4x4 (2 dimensions x 4 rings x 4 cables = 32) + 16 rings of 4 = 192.
    const Layout l(cluster::make_cluster_shape({1, 0}, 16, 4), trn2(), FabricSpec{}, 0,
                   all_present());
    EXPECT_TRUE(l.ultraserver_domains());
    EXPECT_EQ(l.per_domain(ComponentClass::chip), 64);
    EXPECT_EQ(l.per_domain(ComponentClass::hbm), 64);
    EXPECT_EQ(l.per_domain(ComponentClass::host), 4);
    EXPECT_EQ(l.per_domain(ComponentClass::software), 4);
    EXPECT_EQ(l.per_domain(ComponentClass::nic), 64);
    EXPECT_EQ(l.per_domain(ComponentClass::neuronlink), 192);
    // 16 rails, one leaf each (4 instances <= 64 per leaf); one pod of 64 spines; no cores.
    EXPECT_EQ(l.count(ComponentClass::leaf), 16);
    EXPECT_EQ(l.count(ComponentClass::spine), 64);
    EXPECT_EQ(l.count(ComponentClass::core), 0);
    // Power domains of 8 instances: 2 UltraServers each, so one for this cluster.
    EXPECT_EQ(l.domains_per_power(), 2);
    EXPECT_EQ(l.power_domains(), 1);
}

TEST(Layout, ATrn3Gen2UltraServersSwitchesAreComponentsOfItsDomain) {
    // From the chip file: 36 servers of 4 chips, a first-level NeuronSwitch-v1 in each and two
    // second-level ones (TRN3): 38 switches, 36 hosts, 144 x 11 PCIe links an UltraServer. A
    // failed switch takes its UltraServer out, as a chip or a cable does.
    const compute::ChipSpec gen2 = config::load_chip("trn3-gen2");
    HardwareFacts hw;
    hw.instance_torus = {};
    hw.switch_ports = gen2.neuronlink_ports;
    hw.instance_switches = gen2.instance.neuronswitches;
    hw.ultraserver_switches = gen2.ultraserver->neuronswitches;
    hw.efa_interfaces = gen2.instance.efa_interfaces;
    const Layout l(cluster::make_cluster_shape({2, 0}, 4, 36), hw, FabricSpec{}, 1,
                   all_present());
    EXPECT_EQ(l.per_domain(ComponentClass::neuronswitch), 38);
    EXPECT_EQ(l.count(ComponentClass::neuronswitch), 3 * 38);
    EXPECT_EQ(l.per_domain(ComponentClass::host), 36);
    EXPECT_EQ(l.per_domain(ComponentClass::neuronlink), 144 * 11);
    EXPECT_EQ(l.impact(ComponentClass::neuronswitch, Effect::automatic), Impact::replace_domain);
    // Servers on their own: each its own switch.
    const Layout plain(cluster::make_cluster_shape({0, 5}, 4, 36), hw, FabricSpec{}, 0,
                       all_present());
    EXPECT_EQ(plain.per_domain(ComponentClass::neuronswitch), 1);
    // A torus has none.
    const Layout torus(cluster::make_cluster_shape({1, 0}, 16, 4), trn2(), FabricSpec{}, 0,
                       all_present());
    EXPECT_EQ(torus.per_domain(ComponentClass::neuronswitch), 0);
}

TEST(Layout, PlainInstancesAreTheirOwnDomains) {
    HardwareFacts hw = trn2();
    hw.efa_interfaces = 8;
    const Layout l(cluster::make_cluster_shape({0, 10}, 16, 0), hw, FabricSpec{}, 2,
                   all_present());
    EXPECT_FALSE(l.ultraserver_domains());
    EXPECT_EQ(l.domains(), 12);
    EXPECT_EQ(l.per_domain(ComponentClass::neuronlink), 32);
    EXPECT_EQ(l.count(ComponentClass::chip), 12 * 16);
    EXPECT_EQ(l.power_domains(), 2); // 8 + 4 instances
}

TEST(Layout, FabricCountsEqualTheFabricModel) {
    // topologies/trn2-ultracluster.yaml: 128-port switches, 64 down and 64 up.
    const topology::FabricSpec spec = config::load_fabric("trn2-ultracluster");
    for (std::int64_t ultraservers : {1, 16, 64, 256, 1536}) {
        const topology::Fabric f = topology::Fabric::build(spec, ultraservers);
        const Layout l(cluster::make_cluster_shape({ultraservers, 0}, 16, 4), trn2(),
                       FabricSpec{}, 0, all_present());
        EXPECT_EQ(l.count(ComponentClass::nic), f.nics()) << ultraservers;
        EXPECT_EQ(l.count(ComponentClass::leaf), f.leaves()) << ultraservers;
        EXPECT_EQ(l.count(ComponentClass::spine), f.spines()) << ultraservers;
        EXPECT_EQ(l.count(ComponentClass::core), f.cores()) << ultraservers;
        EXPECT_EQ(l.count(ComponentClass::chip), f.chips()) << ultraservers;
        // Every NeuronLink cable is two directed torus links of the fabric.
        std::int64_t torus = 0;
        for (std::uint32_t link = 0; link < f.links(); ++link) {
            const auto k = f.kind()[link];
            torus += k == topology::LinkKind::neuronlink || k == topology::LinkKind::neuronlink_z;
        }
        EXPECT_EQ(2 * l.count(ComponentClass::neuronlink), torus) << ultraservers;
    }
}

TEST(Layout, EveryEntityLocatesBackAndPartitionsHoldWholePowerDomains) {
    const Layout l(cluster::make_cluster_shape({9, 0}, 16, 4), trn2(), FabricSpec{}, 3,
                   all_present());
    std::set<engine::EntityId> seen;
    for (ComponentClass c : kAllClasses) {
        for (std::int64_t i = 0; i < l.count(c); ++i) {
            const engine::EntityId e = l.component(c, i);
            ASSERT_TRUE(seen.insert(e).second) << to_string(c) << " " << i;
            const Layout::Located where = l.locate(e);
            EXPECT_EQ(where.cls, c);
            EXPECT_EQ(where.index, i);
            if (Layout::domain_class(c)) {
                EXPECT_EQ(where.domain, i / l.per_domain(c));
            }
        }
    }
    for (std::int64_t d = 0; d < l.domains(); ++d) {
        const engine::EntityId e = l.domain_entity(d);
        ASSERT_TRUE(seen.insert(e).second);
        EXPECT_EQ(l.locate(e).kind, EntityKind::domain);
        EXPECT_EQ(l.locate(e).domain, d);
    }
    seen.insert(l.controller());
    EXPECT_EQ(seen.size(), l.entities()); // dense: every id is used exactly once
    const auto starts = l.partition_starts();
    ASSERT_GE(starts.size(), 3u);
    for (std::size_t p = 1; p + 1 < starts.size(); ++p) {
        // Each power-domain partition starts at a power entity.
        EXPECT_EQ(l.locate(starts[p]).kind, EntityKind::power);
    }
}

TEST(Layout, BlastRadius) {
    const Layout l(cluster::make_cluster_shape({2, 0}, 16, 4), trn2(), FabricSpec{}, 0,
                   all_present());
    EXPECT_EQ(l.impact(ComponentClass::chip, Effect::automatic), Impact::replace_domain);
    EXPECT_EQ(l.impact(ComponentClass::software, Effect::automatic), Impact::restart_only);
    EXPECT_EQ(l.impact(ComponentClass::power, Effect::automatic), Impact::power);
    EXPECT_EQ(l.impact(ComponentClass::nic, Effect::automatic), Impact::replace_domain);
    EXPECT_EQ(l.impact(ComponentClass::nic, Effect::degrade), Impact::fabric_degrade);
    EXPECT_EQ(l.impact(ComponentClass::leaf, Effect::automatic), Impact::fabric_degrade); // 16 rails
    EXPECT_EQ(l.impact(ComponentClass::leaf, Effect::interrupt), Impact::fabric_interrupt);
    EXPECT_EQ(l.impact(ComponentClass::spine, Effect::automatic), Impact::fabric_degrade);
    EXPECT_FALSE(l.effect_problem(ComponentClass::chip, Effect::degrade).empty());
    EXPECT_TRUE(l.effect_problem(ComponentClass::leaf, Effect::degrade).empty());
    // One rail: a leaf failure cannot be routed around.
    HardwareFacts one = trn2();
    one.efa_interfaces = 1;
    const Layout single(cluster::make_cluster_shape({0, 4}, 16, 0), one, FabricSpec{}, 0,
                        all_present());
    EXPECT_EQ(single.impact(ComponentClass::leaf, Effect::automatic), Impact::fabric_interrupt);
    EXPECT_FALSE(single.effect_problem(ComponentClass::nic, Effect::degrade).empty());
}

TEST(Layout, SwitchesCarryingAJobExcludeThoseOfTheIdleSpares) {
    // Radix 8: 4 instances per leaf, 4 leaves and 4 spines per pod, 16 cores. 4 job instances
    // and 28 spares, one rail: 8 leaves in 2 pods, 8 spines. The job sits under leaf 0 only:
    // 1 leaf, the 4 spines of pod 0, no core (one pod).
    HardwareFacts one = trn2();
    one.efa_interfaces = 1;
    FabricSpec f;
    f.switch_radix = 8;
    const Layout l(cluster::make_cluster_shape({0, 4}, 16, 0), one, f, 28, all_present());
    EXPECT_EQ(l.count(ComponentClass::leaf), 8);
    EXPECT_EQ(l.count(ComponentClass::spine), 8);
    EXPECT_EQ(l.count(ComponentClass::core), 16);
    EXPECT_EQ(l.switches_carrying(ComponentClass::leaf, 4), 1);
    EXPECT_EQ(l.switches_carrying(ComponentClass::spine, 4), 4);
    EXPECT_EQ(l.switches_carrying(ComponentClass::core, 4), 0);
    EXPECT_EQ(l.domains_of_leaf(0), (std::pair<std::int64_t, std::int64_t>{0, 4}));
    EXPECT_EQ(l.domains_of_leaf(7), (std::pair<std::int64_t, std::int64_t>{28, 32}));
    // 20 job instances: leaves 0-4 in pods 0 and 1, every spine, the cores.
    EXPECT_EQ(l.switches_carrying(ComponentClass::leaf, 20), 5);
    EXPECT_EQ(l.switches_carrying(ComponentClass::spine, 20), 8);
    EXPECT_EQ(l.switches_carrying(ComponentClass::core, 20), 16);
    // Two rails: leaves 0-7 on rail 0 and 8-15 on rail 1 (pods 0-1 and 2-3). A job of 4
    // instances uses leaf 0 and leaf 8, pods 0 and 2: 2 leaves, 8 spines, and the cores.
    HardwareFacts two = one;
    two.efa_interfaces = 2;
    const Layout r2(cluster::make_cluster_shape({0, 4}, 16, 0), two, f, 28, all_present());
    EXPECT_EQ(r2.switches_carrying(ComponentClass::leaf, 4), 2);
    EXPECT_EQ(r2.switches_carrying(ComponentClass::spine, 4), 8);
    EXPECT_EQ(r2.switches_carrying(ComponentClass::core, 4), 16);
}

} // namespace
} // namespace trnsim::reliability
