#include "trnsim/config/load.hpp"
#include "trnsim/network/collective_sim.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/topology/routing.hpp"

#include <gtest/gtest.h>

namespace trnsim::network {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

topology::FabricSpec plain(const char* preset) {
    topology::FabricSpec s = config::load_fabric(preset);
    s.scale_up.ultraserver_instances = 0;
    return s;
}

const LocalCosts kLocal{Bandwidth::bytes_per_s(2.9e12), Duration::from_ns(2000)};

double simulate(const topology::Fabric& f, const CollectiveRequest& req,
                CollectiveSimOptions opt = {}) {
    auto out =
        simulate_collectives(f, {{plan_collective(f, req, kLocal), SimTime::zero()}}, kLocal, opt);
    return out[0].seconds();
}

/// One chip per instance, local index 0 (rail 0): `n` instances under one leaf.
std::vector<std::uint32_t> first_chips(const topology::Fabric& f, std::uint32_t n) {
    std::vector<std::uint32_t> chips;
    for (std::uint32_t i = 0; i < n; ++i) {
        chips.push_back(i * f.chips_per_instance());
    }
    return chips;
}

TEST(Collectives, UncongestedRingAllReduceIsTheClosedForm) {
    const topology::Fabric f = topology::Fabric::build(plain("trn2-ultracluster"), 8);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.algorithm = Algorithm::ring;
    req.chips = first_chips(f, 8);
    std::vector<std::uint32_t> links;
    topology::route(f, req.chips[0], req.chips[1], 0, links);
    const double alpha = static_cast<double>(topology::route_latency_ns(f, links.data(), links.size())) * 1e-9;
    const double b = 25e9; // the 200 Gbps NIC
    const double p = 8.0;
    for (double n : {1.0 * kMiB, 64.0 * kMiB, 1024.0 * kMiB}) {
        req.bytes = n;
        const double expect = 2 * (p - 1) / p * n / b + 2 * (p - 1) * alpha;
        EXPECT_NEAR(simulate(f, req), expect, 0.01 * expect) << n;
    }
}

TEST(Collectives, TwoCollectivesSharingABottleneckEachGetHalf) {
    const topology::Fabric f = topology::Fabric::build(plain("trn2-ultracluster"), 8);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.algorithm = Algorithm::ring;
    req.chips = first_chips(f, 8);
    req.bytes = 256.0 * kMiB;
    const double alone = simulate(f, req);
    const CollectivePlan plan = plan_collective(f, req, kLocal);
    const auto both =
        simulate_collectives(f, {{plan, SimTime::zero()}, {plan, SimTime::zero()}}, kLocal, {});
    std::vector<std::uint32_t> links;
    topology::route(f, req.chips[0], req.chips[1], 0, links);
    const double latency = 14 * static_cast<double>(topology::route_latency_ns(f, links.data(), links.size())) * 1e-9;
    for (const auto& o : both) {
        // Twice the bandwidth time, the same latency.
        EXPECT_NEAR(o.seconds(), 2 * (alone - latency) + latency, 0.01 * o.seconds());
    }
}

TEST(Collectives, AllToAllSlowsByTheOversubscriptionOnceBandwidthBound) {
    // Every instance on its own leaf (1 NIC per rail leaf), one spine: every flow crosses the
    // leaf up-links, which are as fast as the NICs (1:1) or half as fast (2:1).
    topology::FabricSpec spec = plain("trn2-ultracluster");
    spec.scale_out.leaf.down_ports = 1;
    spec.scale_out.leaf.up_ports = 1;
    spec.scale_out.spine.down_ports = 256;
    const topology::Fabric full = topology::Fabric::build(spec, 16);
    spec.scale_out.leaf.up_bandwidth = Bandwidth::bits_per_s(100e9);
    const topology::Fabric half = topology::Fabric::build(spec, 16);
    CollectiveRequest req;
    req.op = CollectiveOp::all_to_all;
    req.chips = first_chips(full, 16);
    req.bytes = 512.0 * kMiB;
    EXPECT_NEAR(simulate(half, req) / simulate(full, req), 2.0, 0.03);
    req.bytes = 1024.0; // latency-bound: the oversubscription hardly matters
    EXPECT_NEAR(simulate(half, req) / simulate(full, req), 1.0, 0.05);
}

TEST(Collectives, ReusingIdenticalPhasesEqualsSimulatingThemAll) {
    const topology::Fabric f = topology::Fabric::build(config::load_fabric("trn2-ultracluster"), 4);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.ranks_per_chip = 4;
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        req.chips.push_back(c);
    }
    CollectiveSimOptions all;
    all.reuse_identical_phases = false;
    for (double n : {64.0 * 1024, 8.0 * kMiB, 512.0 * kMiB}) {
        req.bytes = n;
        const auto plan = plan_collective(f, req, kLocal);
        const auto reused = simulate_collectives(f, {{plan, SimTime::zero()}}, kLocal, {});
        const auto full = simulate_collectives(f, {{plan, SimTime::zero()}}, kLocal, all);
        EXPECT_EQ(reused[0].end.ns(), full[0].end.ns()) << n;
        EXPECT_EQ(full[0].simulated_phases, plan.total_phases());
        EXPECT_LT(reused[0].simulated_phases, full[0].simulated_phases);
    }
}

TEST(Collectives, ThreadCountDoesNotChangeResults) {
    const topology::Fabric f = topology::Fabric::build(plain("trn2-ultracluster"), 8);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.algorithm = Algorithm::ring;
    req.chips = first_chips(f, 8);
    req.bytes = 32.0 * kMiB;
    const CollectivePlan plan = plan_collective(f, req, kLocal);
    std::vector<CollectiveJob> jobs;
    for (int j = 0; j < 4; ++j) {
        jobs.push_back({plan, SimTime::from_ns(j * 50'000)});
    }
    CollectiveSimOptions one, two;
    two.threads = 2;
    const auto a = simulate_collectives(f, jobs, kLocal, one);
    const auto b = simulate_collectives(f, jobs, kLocal, two);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        EXPECT_EQ(a[j].end.ns(), b[j].end.ns());
    }
}

TEST(FlowModel, ALateFlowSharesTheLinkFromItsStart) {
    // trn1: chips 0 and 1 share NIC 0 (100 Gbps = 12.5 GB/s). A sends 100 MB from t = 0;
    // B sends 100 MB from t = 2 ms over the same NICs. Exactly: A alone for 2 ms (25 MB),
    // then both at 6.25 GB/s until A ends (75 MB more: 12 ms, at 14 ms, B then has 75 MB sent),
    // then B alone at 12.5 GB/s for its last 25 MB: 2 ms, at 16 ms. Plus latency.
    const topology::Fabric f = topology::Fabric::build(config::load_fabric("trn1-ultracluster"), 2);
    CollectiveRequest a, b;
    a.op = b.op = CollectiveOp::send_recv;
    a.bytes = b.bytes = 100e6;
    a.chips = {0, 16};
    b.chips = {1, 17};
    std::vector<std::uint32_t> links;
    topology::route(f, 0, 16, 0, links);
    const auto latency = topology::route_latency_ns(f, links.data(), links.size());
    CollectiveSimOptions exact;
    exact.exact = true;
    const auto out =
        simulate_collectives(f,
                             {{plan_collective(f, a, kLocal), SimTime::zero()},
                              {plan_collective(f, b, kLocal), SimTime::from_ns(2'000'000)}},
                             kLocal, exact);
    EXPECT_NEAR(static_cast<double>(out[0].end.ns()), 14e6 + static_cast<double>(latency), 2.0);
    EXPECT_NEAR(static_cast<double>(out[1].end.ns()), 16e6 + static_cast<double>(latency), 2.0);
    // With lookahead-long windows the rate change reaches A at most one window late.
    const auto windowed =
        simulate_collectives(f,
                             {{plan_collective(f, a, kLocal), SimTime::zero()},
                              {plan_collective(f, b, kLocal), SimTime::from_ns(2'000'000)}},
                             kLocal, {});
    EXPECT_NEAR(static_cast<double>(windowed[0].end.ns()), static_cast<double>(out[0].end.ns()),
                2000.0);
    EXPECT_NEAR(static_cast<double>(windowed[1].end.ns()), static_cast<double>(out[1].end.ns()),
                2000.0);
}

TEST(Plans, PhaseCountsAndBytes) {
    const topology::Fabric f = topology::Fabric::build(plain("trn2-ultracluster"), 8);
    CollectiveRequest req;
    req.op = CollectiveOp::reduce_scatter;
    req.chips = first_chips(f, 8);
    req.bytes = 8e6;
    // Ring: p - 1 identical steps of V / p per chip.
    req.algorithm = Algorithm::ring;
    CollectivePlan ring = plan_collective(f, req, kLocal);
    ASSERT_EQ(ring.phases.size(), 1u);
    EXPECT_EQ(ring.phases[0].repeat, 7u);
    EXPECT_DOUBLE_EQ(ring.phases[0].flows[0].bytes, 1e6);
    // RDH on 8: halves 4 MB, 2 MB, 1 MB: each chip sends V (p - 1) / p in all.
    req.algorithm = Algorithm::rdh;
    CollectivePlan rdh = plan_collective(f, req, kLocal);
    ASSERT_EQ(rdh.phases.size(), 3u);
    double sent = 0.0;
    for (const auto& p : rdh.phases) {
        sent += p.flows[0].bytes;
    }
    EXPECT_DOUBLE_EQ(sent, 7e6);
    // RDH on 6 = 4 + 2 extras: fold, 2 halving steps, hand the extras their share.
    req.chips.resize(6);
    CollectivePlan odd = plan_collective(f, req, kLocal);
    ASSERT_EQ(odd.phases.size(), 4u);
    EXPECT_EQ(odd.phases.front().flows.size(), 2u);
    // Halving and doubling at the same distance are the same flows (same signature).
    req.op = CollectiveOp::all_reduce;
    req.chips = first_chips(f, 8);
    CollectivePlan ar = plan_collective(f, req, kLocal);
    ASSERT_EQ(ar.phases.size(), 6u);
    EXPECT_EQ(ar.phases[0].signature, ar.phases[5].signature);
    EXPECT_EQ(ar.phases[2].signature, ar.phases[3].signature);
    EXPECT_NE(ar.phases[0].signature, ar.phases[1].signature);
}

TEST(Plans, HierarchicalOnAnUltraClusterAndSelectionByCost) {
    // Without the collective engine (kLocal) the links decide: small buffers go to the
    // one-phase meshes (fewest latency steps), from a few MiB the torus rings inside each
    // UltraServer (neighbour links only) with a mesh over the 16 same-position chips (one EFA
    // step each way; each chip's NIC carries 15/16 of its shard whatever the algorithm). A
    // mesh is a candidate only below 1 MB per rank (8 MiB over 64 chips is a 128 KiB shard in
    // the EFA stage; 1 GiB a 16 MiB one): above, RDH's four steps over the 16 domains win.
    const topology::Fabric f = topology::Fabric::build(config::load_fabric("trn2-ultracluster"), 16);
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.ranks_per_chip = 4;
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        req.chips.push_back(c);
    }
    req.bytes = 64e3;
    EXPECT_EQ(plan_collective(f, req, kLocal).algorithm, "hierarchical: mesh + mesh");
    req.bytes = 8 * kMiB;
    EXPECT_EQ(plan_collective(f, req, kLocal).algorithm, "hierarchical: torus_rings + mesh");
    req.bytes = 1024 * kMiB;
    EXPECT_EQ(plan_collective(f, req, kLocal).algorithm, "hierarchical: torus_rings + rdh");
}

TEST(Plans, BusBandwidthFactors) {
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_reduce, 8), 2.0 * 7 / 8);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::all_gather, 8), 7.0 / 8);
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::send_recv, 2), 1.0);
}

} // namespace
} // namespace trnsim::network

namespace trnsim::network {
namespace {

TEST(CollectiveEngine, TheFlowModelPaysTheLaunchAndTheRankRate) {
    // Two ranks of one Trainium1 chip, all-reduce of 64 MiB: an on-chip reduce-scatter then
    // all-gather, each rank moving half of its buffer per pass. With a 50 us launch and a
    // 40 GB/s collective rate per rank, each pass takes 32 MiB / 40 GB/s (longer than the HBM
    // path, 64 MiB / 820 GB/s) plus the on-chip step (2 us).
    const topology::Fabric f =
        topology::Fabric::build(plain("trn1-ultracluster"), 1);
    LocalCosts local{Bandwidth::bytes_per_s(820e9), Duration::from_ns(2000),
                     Duration::from_ns(50'000), Bandwidth::bytes_per_s(40e9)};
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.chips = {0};
    req.ranks_per_chip = 2;
    req.bytes = 64.0 * kMiB;
    const CollectivePlan plan = plan_collective(f, req, local);
    EXPECT_DOUBLE_EQ(plan.launch_seconds, 50e-6);
    const auto out = simulate_collectives(f, {{plan, SimTime::zero()}}, local, {});
    const double pass = 32.0 * kMiB / 40e9 + 2e-6;
    EXPECT_NEAR(out[0].seconds(), 50e-6 + 2.0 * pass, 3e-9);
    // Without the engine: the HBM path, 64 MiB per pass over the chip's bandwidth.
    const LocalCosts bare{local.hbm, local.step_latency};
    const auto plain_out =
        simulate_collectives(f, {{plan_collective(f, req, bare), SimTime::zero()}}, bare, {});
    EXPECT_NEAR(plain_out[0].seconds(), 2.0 * (64.0 * kMiB / 820e9 + 2e-6), 3e-9);
}

TEST(CollectiveEngine, StepsAcrossEfaPayTheirOverhead) {
    // Two trn1.32xlarge, one chip each, send/recv is not a collective (no launch); a ring
    // all-reduce over the two chips has 2 phases across EFA, each paying 100 us more.
    const topology::Fabric f = topology::Fabric::build(plain("trn1-ultracluster"), 2);
    LocalCosts with{kLocal.hbm, kLocal.step_latency, Duration{}, Bandwidth{},
                    Duration::from_ns(100'000)};
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.algorithm = Algorithm::ring;
    req.chips = {0, f.chips_per_instance()};
    req.bytes = 1.0 * kMiB;
    const double base =
        simulate_collectives(f, {{plan_collective(f, req, kLocal), SimTime::zero()}}, kLocal, {})[0]
            .seconds();
    const double more =
        simulate_collectives(f, {{plan_collective(f, req, with), SimTime::zero()}}, with, {})[0]
            .seconds();
    EXPECT_NEAR(more - base, 2.0 * 100e-6, 2e-9);
}

} // namespace
} // namespace trnsim::network

namespace trnsim::network {
namespace {

/// Every chip of the fabric, four ranks each (trn2 at LNC=2, trn1 at LNC=1 has two but the
/// choice only needs a fixed count).
CollectiveRequest whole_fabric(const topology::Fabric& f, double bytes, Algorithm a) {
    CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    req.ranks_per_chip = 4;
    req.bytes = bytes;
    req.algorithm = a;
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        req.chips.push_back(c);
    }
    return req;
}

TEST(AutoAlgorithm, MeshWinsBelowOneMiBInOneUltraServer) {
    // One trn2 UltraServer: 64 chips on a 4 x 4 x 4 torus, 256 GB/s links inside an instance
    // (dimensions 0, 1), 128 GB/s between its 4 instances (dimension 2), 2 us a hop; no
    // collective engine (kLocal), so the estimates are the links' and the on-chip stages
    // (the same for every algorithm) add 2 x (3 x 2 us + 3 MiB / 2.9 TB/s) = 14.17 us.
    // All-reduce of V = 1 MiB per chip:
    //  mesh: 2 phases, every chip sends V/64 = 16 KiB to each of the 63 others. Dimension-
    //    order routes are at most 2 hops per dimension: 6 hops, 12 us. A Z link carries the
    //    pairs whose route crosses it: 64 x 16 x (1 + 2/2) / 64 = 32 flows (the 2-hop ones
    //    split both ways round) = 0.5 MiB, 4.1 us at 128 GB/s. About 2 x 16.1 = 32 us.
    //  torus_rings: 2 x 3 dimensions x 3 steps of one hop (2 us) plus V / s / 2 each way:
    //    128 KiB / 256 GB/s = 0.51 us, then 32 KiB / 256 GB/s = 0.13 us, then
    //    8 KiB / 128 GB/s = 0.06 us: 2 x 3 x (6 + 0.71) = 40.2 us.
    //  rdh: 2 x 6 steps at distances 32 .. 1 (XOR partners, a ring of 4 per dimension: one
    //    hop at distances 1, 4, 16 and two at 2, 8, 32; 9 hops, 18 us) moving V d / 64:
    //    0.5 MiB and 0.25 MiB over Z links (4.1 + 2.0 us), 128, 64, 32, 16 KiB over
    //    instance links (0.98 us). The two-hop partners at distances 8 and 32 are half-way
    //    round a ring of 4; the route's salt (the flow's index, bit d of it for dimension d)
    //    is the same for the 4 chips of such a ring, so they all go the same way and each
    //    link carries two flows: + 4.1 us and + 0.5 us. 2 x (18 + 7.1 + 4.6) = 59.4 us.
    //  flat rings: 126 steps of at least 2 us each.
    // So mesh < torus rings < RDH, by the ~8 us the flow model also shows (148 us against
    // 156 us with the trn2 collective engine). But inside a NeuronLink domain the runtime
    // runs mesh only below 1 MB (CCI), so at 1 MiB automatic runs torus rings (the size
    // thresholds picked RDH, 175 us); at 1 MiB - 64 KiB (every bandwidth term 15/16 of the
    // above, the latencies the same) mesh is a candidate again and wins.
    const topology::Fabric f =
        topology::Fabric::build(config::load_fabric("trn2-ultracluster"), 1);
    const double v = 1.0 * kMiB;
    const auto estimate = [&](Algorithm a) {
        return estimate_plan_seconds(f, plan_collective(f, whole_fabric(f, v, a), kLocal));
    };
    const double on_chip = 2 * (3 * 2e-6 + 3 * kMiB / 2.9e12);
    EXPECT_NEAR(estimate(Algorithm::mesh) - on_chip, 32.2e-6, 0.1e-6);
    EXPECT_NEAR(estimate(Algorithm::torus_rings) - on_chip, 40.2e-6, 0.1e-6);
    EXPECT_NEAR(estimate(Algorithm::rdh) - on_chip, 59.4e-6, 0.2e-6);
    EXPECT_GT(estimate(Algorithm::ring) - on_chip, 126 * 2e-6);
    EXPECT_EQ(plan_collective(f, whole_fabric(f, v, Algorithm::automatic), kLocal).algorithm,
              "torus_rings");
    const double below = v - 64.0 * 1024;
    EXPECT_EQ(
        plan_collective(f, whole_fabric(f, below, Algorithm::automatic), kLocal).algorithm,
        "mesh");
    // And the flow model agrees: no allowed algorithm simulates faster (mesh is not allowed
    // at 1 MiB).
    for (double size : {v, below}) {
        const double automatic = simulate(f, whole_fabric(f, size, Algorithm::automatic));
        for (Algorithm a : {Algorithm::ring, Algorithm::bidirectional_ring, Algorithm::mesh,
                            Algorithm::rdh, Algorithm::torus_rings}) {
            if (a == Algorithm::mesh && size >= v) {
                continue;
            }
            EXPECT_LE(automatic, simulate(f, whole_fabric(f, size, a)) * (1.0 + 1e-9))
                << to_string(a) << " " << size;
        }
    }
}

struct SweepCase {
    const char* fabric;
    bool plain_instances;
    std::int64_t domains;
    double step; ///< size factor of the sweep
};

TEST(AutoAlgorithm, TheChoiceIsTheCheapestEstimateAndGrowsWithTheSize) {
    // From 1 KiB to 4 GiB: the automatic plan's estimate is the least of every algorithm the
    // group allows (each forced), and never falls as the size grows (each candidate's
    // estimate is linear in the bytes, so their minimum is non-decreasing). 16 UltraServers
    // in steps of 16x to keep the test short (trnsim collective --ultraservers 16 shows 2x).
    const SweepCase cases[] = {{"trn1-ultracluster", true, 1, 2.0},
                               {"trn1-ultracluster", true, 2, 2.0},
                               {"trn2-ultracluster", true, 1, 2.0},
                               {"trn2-ultracluster", false, 1, 2.0},
                               {"trn2-ultracluster", false, 16, 16.0}};
    for (const SweepCase& c : cases) {
        topology::FabricSpec spec = config::load_fabric(c.fabric);
        if (c.plain_instances) {
            spec.scale_up.ultraserver_instances = 0;
        }
        const topology::Fabric f = topology::Fabric::build(spec, c.domains);
        double previous = 0.0;
        for (double v = 1024.0; v <= 4.0 * 1024 * kMiB; v *= c.step) {
            const CollectivePlan chosen =
                plan_collective(f, whole_fabric(f, v, Algorithm::automatic), kLocal);
            const double best = estimate_plan_seconds(f, chosen);
            EXPECT_GE(best, previous) << c.fabric << " x" << c.domains << " at " << v;
            previous = best;
            for (Algorithm a : {Algorithm::ring, Algorithm::bidirectional_ring, Algorithm::rdh,
                                Algorithm::hierarchical}) {
                const double forced =
                    estimate_plan_seconds(f, plan_collective(f, whole_fabric(f, v, a), kLocal));
                EXPECT_LE(best, forced * (1.0 + 1e-12))
                    << c.fabric << " x" << c.domains << " at " << v << ": " << to_string(a)
                    << " beats " << chosen.algorithm;
            }
        }
    }
}

TEST(AutoAlgorithm, SimulatedTimeGrowsWithTheSizeInOneUltraServer) {
    // The flow model's time of the automatic choice, 1 KiB to 4 GiB in one trn2 UltraServer.
    const topology::Fabric f =
        topology::Fabric::build(config::load_fabric("trn2-ultracluster"), 1);
    double previous = 0.0;
    for (double v = 1024.0; v <= 4.0 * 1024 * kMiB; v *= 2) {
        const double t = simulate(f, whole_fabric(f, v, Algorithm::automatic));
        EXPECT_GE(t, previous) << v;
        previous = t;
    }
}

TEST(AutoAlgorithm, ForcedAlgorithmsStayForced) {
    const topology::Fabric f =
        topology::Fabric::build(config::load_fabric("trn2-ultracluster"), 2);
    for (Algorithm a : {Algorithm::ring, Algorithm::bidirectional_ring, Algorithm::mesh,
                        Algorithm::rdh}) {
        EXPECT_EQ(plan_collective(f, whole_fabric(f, kMiB, a), kLocal).algorithm, to_string(a));
    }
    EXPECT_EQ(plan_collective(f, whole_fabric(f, kMiB, Algorithm::hierarchical), kLocal)
                  .algorithm.rfind("hierarchical: ", 0),
              0u);
    // Torus rings need exactly one full NeuronLink domain.
    EXPECT_THROW(plan_collective(f, whole_fabric(f, kMiB, Algorithm::torus_rings), kLocal),
                 std::invalid_argument);
}

} // namespace
} // namespace trnsim::network
