#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/topology/analysis.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/topology/routing.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace trnsim::topology {
namespace {

Fabric build(const char* preset, std::int64_t domains, bool plain_instances = false) {
    FabricSpec spec = config::load_fabric(preset);
    if (plain_instances) {
        spec.scale_up.ultraserver_instances = 0;
    }
    return Fabric::build(spec, domains);
}

/// Largest hop distance between chips, by BFS from every chip (exhaustive).
std::uint32_t exhaustive_diameter(const Fabric& f) {
    std::uint32_t d = 0;
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        const auto dist = hop_distances(f, c);
        for (std::uint32_t o = 0; o < f.chips(); ++o) {
            d = std::max(d, dist[o]);
        }
    }
    return d;
}

TEST(Fabric, ATrn3Gen2UltraServerHasTwoSwitchLevelsAndDirectLinksBetweenItsRacks) {
    // 144 chips: 36 servers of 4, 2 racks of 18 servers. Each chip has a link each way into
    // its server's switch and its rack's, and one to its position in the other rack.
    const Fabric f = build("trn3-gen2-ultracluster", 2);
    EXPECT_TRUE(f.switched());
    EXPECT_TRUE(f.two_switch_levels());
    EXPECT_EQ(f.chips(), 288u);
    EXPECT_EQ(f.racks_per_domain(), 2u);
    EXPECT_EQ(f.chips_per_rack(), 72u);
    EXPECT_EQ(f.switches(), 72u + 4u); // a switch a server, and one a rack
    const auto kind_of = [&](std::uint32_t link) { return f.kind()[link]; };
    EXPECT_EQ(kind_of(f.switch_up(150)), LinkKind::neuronlink);
    EXPECT_EQ(kind_of(f.rack_switch_up(150)), LinkKind::neuronlink_z);
    // Chip 150 is chip 6 of domain 1, rack 0; its peer in rack 1 is chip 144 + 72 + 6.
    EXPECT_EQ(f.rack_peer(150, 1), 222u);
    EXPECT_EQ(f.link_src()[f.rack_link(150, 1)], 150u);
    EXPECT_EQ(f.link_dst()[f.rack_link(150, 1)], 222u);
    EXPECT_EQ(kind_of(f.rack_link(150, 1)), LinkKind::neuronlink_rack);
    EXPECT_EQ(f.link_dst()[f.rack_link(222, 0)], 150u);
    // Servers' switches are distinct; a rack's switch is shared by its 72 chips.
    EXPECT_NE(f.link_dst()[f.switch_up(0)], f.link_dst()[f.switch_up(4)]);
    EXPECT_EQ(f.link_dst()[f.rack_switch_up(0)], f.link_dst()[f.rack_switch_up(71)]);
    EXPECT_NE(f.link_dst()[f.rack_switch_up(0)], f.link_dst()[f.rack_switch_up(72)]);
    // Routes: in a server through its switch; in a rack through the rack's; to the other rack
    // over the direct link first (to the same position), then inside that rack.
    std::vector<std::uint32_t> links;
    route(f, 1, 3, 0, links);
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.switch_up(1), f.switch_down(3)}));
    links.clear();
    route(f, 1, 70, 0, links);
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.rack_switch_up(1), f.rack_switch_down(70)}));
    links.clear();
    route(f, 1, 73, 0, links);
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.rack_link(1, 1)}));
    links.clear();
    route(f, 1, 74, 0, links); // 73 is 74's server mate
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.rack_link(1, 1), f.switch_up(73),
                                                 f.switch_down(74)}));
    links.clear();
    route(f, 1, 140, 0, links);
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.rack_link(1, 1), f.rack_switch_up(73),
                                                 f.rack_switch_down(140)}));
    EXPECT_EQ(route_latency_ns(f, links.data(), links.size()), 4000);
    // One UltraServer alone: 3 links at most between two chips; the halves of the chips are
    // the racks, joined by 72 direct links each way.
    const Fabric one = build("trn3-ultraserver-gen2", 1);
    const FabricReport r = analyse(one);
    EXPECT_TRUE(r.connected);
    EXPECT_EQ(r.diameter, 3u);
    EXPECT_EQ(exhaustive_diameter(one), 3u);
    EXPECT_NEAR(r.bisection, 72 * 465.5e9, 1.0);
    EXPECT_NEAR(max_flow_between_halves(one), r.bisection, 1e-6 * r.bisection);
    // Every directed link is counted once: 144 x (2 + 2 + 1).
    EXPECT_EQ(one.links(), 144u * 5u);
}

TEST(Fabric, ATrn3UltraServerIsSwitched) {
    // 64 chips, each with one link each way into the UltraServer's NeuronSwitch.
    const Fabric f = build("trn3-ultracluster", 2);
    EXPECT_TRUE(f.switched());
    EXPECT_EQ(f.switches(), 2u);
    EXPECT_EQ(f.chips(), 128u);
    EXPECT_EQ(f.torus_dims(), 0);
    EXPECT_EQ(f.node_kind(f.link_dst()[f.switch_up(70)]), NodeKind::neuronswitch);
    EXPECT_EQ(f.link_dst()[f.switch_down(70)], 70u);
    EXPECT_DOUBLE_EQ(f.capacity()[f.switch_up(70)], 2.56e12);
    // Two chips of a domain are two links apart, whichever they are; chips of two domains
    // go over EFA.
    std::vector<std::uint32_t> links;
    route(f, 3, 60, 0, links);
    EXPECT_EQ(links, (std::vector<std::uint32_t>{f.switch_up(3), f.switch_down(60)}));
    EXPECT_EQ(route_latency_ns(f, links.data(), links.size()), 2000);
    links.clear();
    route(f, 3, 67, 0, links);
    EXPECT_EQ(links.front(), f.host_up(3));
    // One domain alone: half its chips send through their links into the switch (and the
    // maximum flow between the halves adds their NICs' 32 x 25 GB/s over EFA, which the
    // bisection of one domain leaves out, as it does for a torus).
    const Fabric one = build("trn3-ultracluster", 1);
    const FabricReport r = analyse(one);
    EXPECT_TRUE(r.connected);
    EXPECT_EQ(r.diameter, 2u);
    EXPECT_EQ(exhaustive_diameter(one), 2u);
    EXPECT_DOUBLE_EQ(r.bisection, 32 * 2.56e12);
    EXPECT_NEAR(max_flow_between_halves(one), r.bisection + 32 * 25e9, 1e-6 * r.bisection);
}

TEST(Fabric, Trn2InstanceIsA4x4Torus) {
    const Fabric f = build("trn2-instance", 1);
    EXPECT_EQ(f.chips(), 16u);
    EXPECT_EQ(f.links(), 16u * 4u); // 4 neighbour links per chip, directed
    EXPECT_FALSE(f.has_scale_out());
    const FabricReport r = analyse(f);
    EXPECT_TRUE(r.connected);
    EXPECT_EQ(r.diameter, 4u); // 2 + 2 hops
    EXPECT_EQ(exhaustive_diameter(f), 4u);
    // Halving the torus across y cuts 2 x 4 links per direction at 256 GB/s.
    EXPECT_DOUBLE_EQ(r.bisection, 8 * 256e9);
    EXPECT_NEAR(max_flow_between_halves(f), r.bisection, 1e-6 * r.bisection);
}

TEST(Fabric, Trn2UltraServerIsA4x4x4Torus) {
    const Fabric f = build("trn2-ultraserver", 1);
    EXPECT_EQ(f.chips(), 64u);
    EXPECT_EQ(f.ultraservers(), 1u);
    EXPECT_EQ(f.links(), 64u * 6u);
    const FabricReport r = analyse(f);
    EXPECT_EQ(r.links[static_cast<std::size_t>(LinkKind::neuronlink)], 256u);
    EXPECT_EQ(r.links[static_cast<std::size_t>(LinkKind::neuronlink_z)], 128u);
    EXPECT_EQ(r.diameter, 6u);
    EXPECT_EQ(exhaustive_diameter(f), 6u);
    // The halves are the instance pairs {0, 1} and {2, 3}: 2 x 16 Z links at 128 GB/s.
    EXPECT_DOUBLE_EQ(r.bisection, 32 * 128e9);
    EXPECT_NEAR(max_flow_between_halves(f), r.bisection, 1e-6 * r.bisection);
    // Every chip has exactly six neighbours, each one step along one dimension.
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        std::set<std::uint32_t> n;
        for (int d = 0; d < 3; ++d) {
            for (int dir : {+1, -1}) {
                const std::uint32_t o = f.torus_neighbour(c, d, dir);
                EXPECT_EQ(f.link_src()[f.torus_link(c, d, dir)], c);
                EXPECT_EQ(f.link_dst()[f.torus_link(c, d, dir)], o);
                n.insert(o);
            }
        }
        EXPECT_EQ(n.size(), 6u);
    }
}

TEST(Fabric, Trn1InstanceBandwidthComesFromTheChip) {
    const Fabric f = build("trn1-instance", 1);
    EXPECT_EQ(f.chips(), 16u);
    EXPECT_DOUBLE_EQ(f.capacity()[0], 96.0 * 1024 * 1024 * 1024);
}

TEST(Fabric, UltraClusterCountsByHand) {
    // 16 UltraServers: 64 instances, 1,024 chips and NICs; rail leaves hold 64 instances, so
    // one leaf per rail (16), all in one pod with its 64 spines, and no core tier.
    const Fabric small = build("trn2-ultracluster", 16);
    EXPECT_EQ(small.chips(), 1024u);
    EXPECT_EQ(small.nics(), 1024u);
    EXPECT_EQ(small.leaves(), 16u);
    EXPECT_EQ(small.pods(), 1u);
    EXPECT_EQ(small.spines(), 64u);
    EXPECT_EQ(small.cores(), 0u);
    // 1,536 UltraServers = 6,144 instances: 96 leaves per rail, 1,536 leaves in 24 pods of 64,
    // 24 x 64 spines, 64 planes x 64 cores.
    const Fabric big = build("trn2-ultracluster", 1536);
    EXPECT_EQ(big.chips(), 98'304u);
    EXPECT_EQ(big.leaves(), 1536u);
    EXPECT_EQ(big.pods(), 24u);
    EXPECT_EQ(big.spines(), 1536u);
    EXPECT_EQ(big.cores(), 4096u);
    const FabricReport r = analyse(big);
    EXPECT_TRUE(r.connected);
    // chip-host-NIC-leaf-spine-core-spine-leaf-NIC-host-chip: 8 links.
    EXPECT_EQ(r.diameter, 8u);
    // Non-blocking: the halves are limited by the NICs of one half, 49,152 x 25 GB/s.
    EXPECT_DOUBLE_EQ(r.bisection, 49'152 * 25e9);
}

TEST(Fabric, BisectionEstimateMatchesMaxFlow) {
    for (std::int64_t us : {2, 4}) {
        const Fabric f = build("trn2-ultracluster", us);
        const double exact = max_flow_between_halves(f);
        EXPECT_NEAR(analyse(f).bisection, exact, 1e-6 * exact) << us << " UltraServers";
    }
    // Plain trn1 instances: two chips per NIC.
    const Fabric t = build("trn1-ultracluster", 8);
    EXPECT_EQ(t.nics(), 64u);
    const double exact = max_flow_between_halves(t);
    EXPECT_NEAR(analyse(t).bisection, exact, 1e-6 * exact);
}

TEST(Fabric, SizeLimitsAreInputErrors) {
    EXPECT_THROW(build("trn2-ultraserver", 2), InputError); // no scale-out network
    EXPECT_THROW(build("trn2-ultracluster", 8193), InputError);
    EXPECT_THROW(build("trn2-ultracluster", 0), InputError);
    EXPECT_NO_THROW(build("trn2-ultracluster", 8192));
}

TEST(Routing, TorusRoutesAreShortestAndDimensionOrdered) {
    const Fabric f = build("trn2-ultraserver", 1);
    std::vector<std::uint32_t> links;
    for (std::uint32_t a = 0; a < f.chips(); ++a) {
        for (std::uint32_t b = 0; b < f.chips(); ++b) {
            links.clear();
            route(f, a, b, a * 7 + b, links);
            std::size_t expect = 0;
            for (int d = 0; d < 3; ++d) {
                const int s = f.torus_size(d);
                const int delta = (f.coordinate(b, d) - f.coordinate(a, d) + s) % s;
                expect += static_cast<std::size_t>(std::min(delta, s - delta));
            }
            ASSERT_EQ(links.size(), expect);
            // A connected path from a to b, dimension 0 first, then 1, then 2.
            std::uint32_t at = a;
            int last_dim = 0;
            for (std::uint32_t l : links) {
                ASSERT_EQ(f.link_src()[l], at);
                at = f.link_dst()[l];
                const int dim = static_cast<int>((l % 6) / 2);
                ASSERT_GE(dim, last_dim);
                last_dim = dim;
            }
            ASSERT_EQ(at, b);
        }
    }
}

TEST(Routing, ClosRoutesClimbOnlyAsHighAsNeeded) {
    const Fabric f = build("trn2-ultracluster", 1536);
    std::vector<std::uint32_t> links;
    const auto hops = [&](std::uint32_t a, std::uint32_t b) {
        links.clear();
        route(f, a, b, 0, links);
        std::uint32_t at = a;
        for (std::uint32_t l : links) {
            EXPECT_EQ(f.link_src()[l], at);
            at = f.link_dst()[l];
        }
        EXPECT_EQ(at, b);
        return links.size();
    };
    // Same position (rail) in UltraServers 0 and 1: same leaf (64 instances per leaf).
    EXPECT_EQ(hops(0, 64), 4u);
    // Different rails in the same pod: leaf, spine, leaf.
    EXPECT_EQ(hops(0, 64 + 1), 6u);
    // Another pod (UltraServer 100 is in pod 1): up to a core and back down.
    EXPECT_EQ(hops(0, 100 * 64), 8u);
    // Inside an UltraServer: NeuronLink only.
    EXPECT_EQ(hops(0, 63), 3u);
}

TEST(Routing, EcmpSpreadsOverSpinesDeterministically) {
    const Fabric f = build("trn2-ultracluster", 64);
    std::set<std::uint32_t> spines_used;
    std::vector<std::uint32_t> a, b;
    for (std::uint32_t i = 0; i < 400; ++i) {
        a.clear();
        b.clear();
        const std::uint32_t dst = 1 + 64 * (1 + i % 60); // UltraServers 1 to 60
        route(f, 0, dst, i, a);
        route(f, 0, dst, i, b);
        ASSERT_EQ(a, b); // deterministic
        ASSERT_GT(a.size(), 2u) << "not through a leaf: " << dst;
        spines_used.insert(f.link_dst()[a[2]]);
    }
    // 400 flows hashed over the 64 spines of the pod reach almost all of them.
    EXPECT_GT(spines_used.size(), 55u);
}

TEST(FabricFiles, MustAgreeWithTheirChip) {
    const auto dir = test::scratch_path("trnsim-fabric-test");
    std::filesystem::create_directories(dir);
    std::ifstream in(std::filesystem::path(TRNSIM_SOURCE_DIR) / "topologies/trn2-ultraserver.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    s.replace(s.find("bandwidth: 128GB/s"), 18, "bandwidth: 100GB/s");
    std::ofstream(dir / "bad.yaml") << s;
    try {
        config::load_fabric((dir / "bad.yaml").string());
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "scale_up.ultraserver_link.bandwidth");
        EXPECT_NE(e.message().find("neuronlink_inter_instance"), std::string::npos) << e.what();
        EXPECT_GT(e.location().line, 1);
    }
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace trnsim::topology
