#include "trnsim/network/collective_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace trnsim::network {
namespace {

GroupLevel level(LinkClass c, int members, double gbps_bytes, double latency_us) {
    return {c, members, Bandwidth::bytes_per_s(gbps_bytes * 1e9),
            Duration::from_ns(static_cast<std::int64_t>(latency_us * 1000.0))};
}

TEST(AlphaBeta, FlatRingAllReduceIsTheTextbookFormula) {
    // p = 16 members at 100 GB/s, 2 us per step, 1 GB: 2 (p-1)/p N/B + 2 (p-1) a.
    const GroupShape g{{level(LinkClass::neuronlink, 16, 100.0, 2.0)}};
    const double n = 1e9;
    const double expect = 2.0 * 15.0 / 16.0 * n / 100e9 + 2.0 * 15.0 * 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g), expect);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, n, g), expect / 2.0);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, g), expect / 2.0);
}

TEST(AlphaBeta, HierarchicalLevelsWorkOnShrinkingShards) {
    // 4 members per chip (HBM 500 GB/s, 1 us) x 8 chips over EFA (25 GB/s, 15 us).
    const GroupShape g{{level(LinkClass::on_chip, 4, 500.0, 1.0),
                        level(LinkClass::efa, 8, 25.0, 15.0)}};
    const double n = 64e6;
    // Level 0 reduce-scatters the whole buffer (64 MB = 61 MiB: a ring); level 1 the quarter
    // each member owns (16 MB = 15.3 MiB crosses EFA: RDH over 8 = 2^3 members, 3 steps).
    const double rs = 3.0 / 4.0 * n / 500e9 + 3.0 * 1e-6 + 7.0 / 8.0 * (n / 4.0) / 25e9 +
                      3.0 * 15e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, n, g), rs);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g), 2.0 * rs);
    EXPECT_EQ(g.size(), 32);
    EXPECT_EQ(g.describe(), "4 on_chip x 8 efa");
}

TEST(AlphaBeta, SmallMessagesTakeOneMeshStepPerLevel) {
    // A decode step's all-reduce on one trn1.32xlarge: 32 ranks = 2 per chip x 16 chips,
    // 16 KB (one token of hidden 8192 in BF16). Below 1 MiB every level is a mesh (CCI): one
    // step each, so a reduce-scatter is 2 steps and the all-reduce 4, against 2 x (1 + 15) = 32
    // ring steps.
    const GroupShape g{{level(LinkClass::on_chip, 2, 410.0, 2.0),
                        level(LinkClass::neuronlink, 16, 206.0, 2.0)}};
    const double n = 16384.0;
    const double rs = 1.0 / 2.0 * n / 410e9 + 2e-6 + 15.0 / 16.0 * (n / 2.0) / 206e9 + 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, n, g), rs);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g), 2.0 * rs);
    EXPECT_NEAR(collective_seconds(CollectiveOp::all_reduce, n, g), 8.0e-6, 0.2e-6);
}

TEST(AlphaBeta, MidSizeMessagesUseRecursiveHalvingDoubling) {
    // 4 MB over 12 members (1 to 56 MiB: RDH). q = 8: 3 halving steps over the 8, plus the
    // fold of the 4 extra members' whole buffers (one step at full size).
    const GroupShape g{{level(LinkClass::neuronlink, 12, 100.0, 2.0)}};
    const double n = 4e6;
    const double rs = 7.0 / 8.0 * n / 100e9 + 3.0 * 2e-6 + n / 100e9 + 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, n, g), rs);
    // A power of two has no fold: 16 members, log2 16 = 4 steps.
    const GroupShape p2{{level(LinkClass::neuronlink, 16, 100.0, 2.0)}};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, p2),
                     15.0 / 16.0 * n / 100e9 + 4.0 * 2e-6);
    // EFA pairs always ring (one step); above 56 MiB everything rings.
    const GroupShape pair{{level(LinkClass::efa, 2, 25.0, 15.0)}};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, 1e3, pair),
                     0.5 * 1e3 / 25e9 + 15e-6);
}

TEST(AlphaBeta, ASwitchedLevelTakesTheCheapestAlgorithm) {
    // 16 members through a switch at 640 GB/s, 2 us a step. At 4 MiB a torus level would take
    // RDH (4 steps); a switch takes mesh by cost: the ring's bytes in one step.
    GroupLevel sw = level(LinkClass::neuronlink, 16, 640.0, 2.0);
    sw.switched = true;
    const GroupShape g{{sw}};
    const double n = 4.0 * 1024 * 1024;
    const double mesh = 15.0 / 16.0 * n / 640e9 + 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, g), mesh);
    GroupLevel torus = sw;
    torus.switched = false;
    const double rdh = 15.0 / 16.0 * n / 640e9 + 4.0 * 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, GroupShape{{torus}}), rdh);
    // An all-reduce of 1 GB: mesh reduce-scatter and all-gather, 2 (g-1)/g n/bw + 2 a.
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, 1e9, g),
                     2.0 * 15.0 / 16.0 * 1e9 / 640e9 + 2.0 * 2e-6);
    // Of 16 KB (a decode step's token): one-shot, (g-1) n/bw + a, is cheaper than the pair.
    const double small = 16e3;
    const double one_shot = 15.0 * small / 640e9 + 2e-6;
    ASSERT_LT(one_shot, 2.0 * 15.0 / 16.0 * small / 640e9 + 2.0 * 2e-6);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, small, g), one_shot);
}

TEST(AlphaBeta, OneShotRunsAtTheOutermostSwitchedLevelOnTheInnerShard) {
    // 4 ranks of a chip (HBM 1 TB/s, 1 us) x 16 chips through a switch, 64 KB: the chip's
    // mesh reduce-scatter leaves a quarter, which goes one-shot through the switch, and the
    // chip's all-gather brings the whole back. The reduction (at 1 TB/s) overlaps the transfers.
    GroupLevel sw = level(LinkClass::neuronlink, 16, 640.0, 2.0);
    sw.switched = true;
    GroupShape g{{level(LinkClass::on_chip, 4, 1000.0, 1.0), sw}};
    g.reduce_bandwidth = Bandwidth::bytes_per_s(1000e9);
    const double n = 64e3;
    const double chip_rs = 3.0 / 4.0 * n / 1000e9 + 1e-6;
    const double chip_ag = 3.0 / 4.0 * n / 1000e9 + 1e-6;
    const double shard = n / 4.0;
    const double one_shot = std::max(15.0 * shard / 640e9, 15.0 * shard / 1000e9) + 2e-6;
    const double mesh_pair = 2.0 * 15.0 / 16.0 * shard / 640e9 + 2.0 * 2e-6;
    ASSERT_LT(one_shot, mesh_pair);
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g),
                     chip_rs + one_shot + chip_ag);
    // A slow reduction (100 GB/s) makes one-shot's 15 shards to sum the dearer: the pair.
    g.reduce_bandwidth = Bandwidth::bytes_per_s(100e9);
    const double slow_rs = 3.0 / 4.0 * n / 100e9 + 1e-6 + 15.0 / 16.0 * shard / 100e9 + 2e-6;
    const double ag = chip_ag + 15.0 / 16.0 * shard / 640e9 + 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g), slow_rs + ag);
}

TEST(AlphaBeta, SingleMemberLevelsCostNothing) {
    const GroupShape one{{level(LinkClass::on_chip, 1, 500.0, 1.0),
                          level(LinkClass::efa, 1, 25.0, 15.0)}};
    for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter,
                    CollectiveOp::all_gather, CollectiveOp::all_to_all, CollectiveOp::broadcast}) {
        EXPECT_EQ(collective_seconds(op, 1e9, one), 0.0) << to_string(op);
    }
    EXPECT_EQ(one.describe(), "1 (no communication)");
}

TEST(AlphaBeta, AllToAllSplitsTrafficByDistance) {
    // 4 per chip x 4 chips: of each member's N bytes, 3/16 stay on chip, 12/16 cross NeuronLink.
    const GroupShape g{{level(LinkClass::on_chip, 4, 400.0, 1.0),
                        level(LinkClass::neuronlink, 4, 100.0, 2.0)}};
    const double n = 16e6;
    const double on_chip = n * 3.0 / 16.0 / 400e9;
    const double link = n * 12.0 / 16.0 / 100e9;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_to_all, n, g),
                     std::max(on_chip, link) + 2e-6);
}

TEST(AlphaBeta, PointToPointAndBroadcast) {
    const GroupShape p2p{{level(LinkClass::efa, 2, 25.0, 15.0)}};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::send_recv, 25e6, p2p), 1e-3 + 15e-6);
    const GroupShape g{{level(LinkClass::neuronlink, 16, 100.0, 2.0)}};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::broadcast, 1e9, g), 1e9 / 100e9 + 15 * 2e-6);
}

TEST(AlphaBeta, MoreBytesNeverCostLess) {
    const GroupShape g{{level(LinkClass::on_chip, 4, 500.0, 1.0),
                        level(LinkClass::neuronlink, 4, 250.0, 2.0),
                        level(LinkClass::efa, 16, 25.0, 15.0)}};
    for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter,
                    CollectiveOp::all_gather, CollectiveOp::all_to_all, CollectiveOp::broadcast}) {
        double prev = 0.0;
        for (double n = 1e3; n < 1e11; n *= 3.7) {
            const double t = collective_seconds(op, n, g);
            EXPECT_GE(t, prev) << to_string(op) << " at " << n;
            prev = t;
        }
    }
}

} // namespace
} // namespace trnsim::network

namespace trnsim::network {
namespace {

TEST(CollectiveEngine, LaunchRateCapAndReductionsByHand) {
    // 16 members over NeuronLink at 100 GB/s, 2 us a step, 1 GB: a ring (above 56 MiB). The
    // collective engine: a 50 us launch, members move at most 40 GB/s, they sum what they
    // receive at 25 GB/s.
    GroupShape g{{level(LinkClass::neuronlink, 16, 100.0, 2.0)}};
    g.launch = Duration::from_ns(50'000);
    g.rank_bandwidth = Bandwidth::bytes_per_s(40e9);
    g.reduce_bandwidth = Bandwidth::bytes_per_s(25e9);
    const double n = 1e9;
    // All-gather: the launch, 15/16 of the buffer at the 40 GB/s cap, 15 steps.
    const double ag = 50e-6 + 15.0 / 16.0 * n / 40e9 + 15.0 * 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, g), ag);
    // Reduce-scatter: the 15/16 of the buffer a member receives is summed at 25 GB/s, longer
    // than the transfer at 40 GB/s: the reduction sets the pace.
    const double rs = 50e-6 + 15.0 / 16.0 * n / 25e9 + 15.0 * 2e-6;
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::reduce_scatter, n, g), rs);
    // All-reduce: one launch, the reduce-scatter half, then the all-gather half.
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, g), rs + ag - 50e-6);
    // A cap above the links' bandwidth changes nothing; a group of one costs nothing.
    g.rank_bandwidth = Bandwidth::bytes_per_s(1e12);
    g.reduce_bandwidth = Bandwidth{};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_gather, n, g),
                     50e-6 + 15.0 / 16.0 * n / 100e9 + 15.0 * 2e-6);
    const GroupShape alone{{level(LinkClass::neuronlink, 1, 100.0, 2.0)}, g.launch};
    EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::all_reduce, n, alone), 0.0);
}

} // namespace
} // namespace trnsim::network
