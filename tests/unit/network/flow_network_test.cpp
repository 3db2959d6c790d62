#include "trnsim/config/load.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/topology/routing.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

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

/// The route of a flow from chip `a` to chip `b` (salt 0) and its latency.
struct Route {
    std::vector<std::uint32_t> links;
    std::int64_t latency = 0;
};
Route route_of(const topology::Fabric& f, std::uint32_t a, std::uint32_t b) {
    Route r;
    topology::route(f, a, b, 0, r.links);
    r.latency = topology::route_latency_ns(f, r.links.data(), r.links.size());
    return r;
}

/// Groups of flows that start at `start`.
struct Timed {
    std::int64_t start;
    std::vector<FlowSpec> flows;
};

/// Drives a FlowNetwork without the engine: resolves at each of `edges` and 1 ns after every
/// wake it asks for (the window edge that follows the wake event with 1 ns windows). The groups
/// of `traffic` (in start order) start at the first edge at or after their start, as a model's
/// handlers would start them during the window before; group i is owned by entity i. Returns
/// the time of each owner's completion event.
std::map<engine::EntityId, std::int64_t> drive(FlowNetwork& net, std::set<std::int64_t> edges,
                                               const std::vector<Timed>& traffic,
                                               const FlowNetwork::ParallelFor& parallel) {
    std::map<engine::EntityId, std::int64_t> done;
    std::size_t next = 0;
    int count = 0;
    while (!edges.empty()) {
        const std::int64_t now = *edges.begin();
        edges.erase(edges.begin());
        if (++count > 100000) {
            ADD_FAILURE() << "the network keeps asking for edges";
            break;
        }
        for (; next < traffic.size() && traffic[next].start <= now; ++next) {
            net.start_group_view(static_cast<std::uint32_t>(next % 2), traffic[next].start,
                                 static_cast<engine::EntityId>(next), kDone, 0,
                                 traffic[next].flows);
        }
        net.resolve(now, [&](engine::EntityId target, std::int64_t t, engine::EventType type,
                             std::uint64_t) {
            EXPECT_GE(t, now);
            if (type == kWake) {
                EXPECT_EQ(target, kWakeEntity);
                edges.insert(t + 1);
            } else {
                EXPECT_EQ(type, kDone);
                done[target] = t;
            }
        }, parallel);
    }
    EXPECT_EQ(next, traffic.size());
    EXPECT_TRUE(net.idle());
    return done;
}

/// The groups already started on `net`, from time 0.
std::map<engine::EntityId, std::int64_t> run(FlowNetwork& net,
                                             const FlowNetwork::ParallelFor& parallel = {}) {
    return drive(net, {0}, {}, parallel);
}

TEST(FlowNetwork, AWeightedFlowSharesLikeTheFlowsItStandsFor) {
    // Chip 0 of instance 0 to chip 0 of instance 1: the same rail, so one path through their
    // leaf, limited by the 200 Gbps NIC (25 GB/s). A flow of weight 3 carrying 3 N bytes beside
    // a competitor of N bytes must finish when three flows of N bytes would.
    const topology::Fabric f = two_leaf_instances();
    const std::uint32_t a = 0, b = f.chips_per_instance();
    const std::int64_t latency = route_of(f, a, b).latency;
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

/// Random traffic on 8 instances (128 chips): `groups` groups of up to 8 flows between random
/// chips, of 1 to 64 MB, some of weight 2, all started at 0.
void random_traffic(FlowNetwork& net, std::uint32_t chips, int groups, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int g = 0; g < groups; ++g) {
        std::vector<FlowSpec> flows;
        const int n = 1 + static_cast<int>(rng() % 8);
        for (int i = 0; i < n; ++i) {
            const auto src = static_cast<std::uint32_t>(rng() % chips);
            const auto dst = static_cast<std::uint32_t>(rng() % chips);
            flows.push_back({src, dst, 1e6 * static_cast<double>(1 + rng() % 64),
                             rng() % 5 == 0 ? 2.0 : 1.0});
        }
        net.start_group(static_cast<std::uint32_t>(g % 2), 0, static_cast<engine::EntityId>(g),
                        kDone, 0, std::move(flows));
    }
}

/// Runs the pieces on two threads of its own (a stand-in for the engine's team).
void two_threads(std::uint32_t n, const std::function<void(std::uint32_t)>& work) {
    std::atomic<std::uint32_t> next{0};
    const auto take = [&] {
        for (std::uint32_t i = next++; i < n; i = next++) {
            work(i);
        }
    };
    std::thread other(take);
    take();
    other.join();
}

TEST(FlowNetwork, ShardsGiveTheRatesOfOneSolver) {
    // The same traffic through 1 and 4 shards: completion times agree to the nanosecond of
    // rounding, and the shards had to gather components (flows between random chips bridge
    // the blocks of the fabric the shards start from).
    const topology::Fabric f = two_leaf_instances();
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);
    FlowNetwork one(f, 2, kWakeEntity, kWake, hbm, step, 1);
    FlowNetwork four(f, 2, kWakeEntity, kWake, hbm, step, 4);
    random_traffic(one, f.chips(), 300, 5);
    random_traffic(four, f.chips(), 300, 5);
    const auto a = run(one);
    const auto b = run(four);
    ASSERT_EQ(a.size(), 300u);
    ASSERT_EQ(b.size(), 300u);
    for (const auto& [owner, t] : a) {
        EXPECT_NEAR(static_cast<double>(b.at(owner)), static_cast<double>(t), 2.0)
            << "group " << owner;
    }
    EXPECT_EQ(one.migrations(), 0u);
    EXPECT_GT(four.migrations(), 0u);
    EXPECT_GT(four.migrated_flows(), 0u);
    EXPECT_EQ(one.flows_started(), four.flows_started());
    for (std::size_t k = 0; k < topology::kLinkKinds; ++k) {
        EXPECT_DOUBLE_EQ(one.link_bytes()[k], four.link_bytes()[k]);
    }
}

TEST(FlowNetwork, ABidirectionalRingOverEfaStartsInOneShard) {
    // Chip 0 of each of the 8 instances (one rail, one leaf), a ring both ways: member i sends
    // N bytes to i + 1 and N bytes to i - 1, the forward flows listed first. Both directions
    // leave each member through its one NIC, so the ring is one component that spans the
    // 4 shards' blocks of chips (2 instances each). It must start in one shard: homed by their
    // own sources, each reverse flow crossing into the next block moved a forward flow over.
    // By hand: every NIC sends two flows, 12.5 GB/s each of its 25 GB/s, so every flow ends
    // at N / 12.5 GB/s plus the route's latency, as on one solver.
    const topology::Fabric f = two_leaf_instances();
    const std::uint32_t n = 8, stride = f.chips_per_instance();
    const double bytes = 100e6;
    std::vector<FlowSpec> ring;
    for (int dir : {1, -1}) {
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::uint32_t j = (i + n + static_cast<std::uint32_t>(dir)) % n;
            ring.push_back({i * stride, j * stride, bytes});
        }
    }
    std::vector<std::uint32_t> route;
    topology::route(f, 0, stride, 0, route);
    const std::int64_t latency = topology::route_latency_ns(f, route.data(), route.size());
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);
    FlowNetwork one(f, 1, kWakeEntity, kWake, hbm, step, 1);
    FlowNetwork four(f, 1, kWakeEntity, kWake, hbm, step, 4);
    one.start_group(0, 0, 1, kDone, 0, ring);
    four.start_group(0, 0, 1, kDone, 0, ring);
    const auto a = run(one);
    const auto b = run(four);
    const auto expect = static_cast<std::int64_t>(bytes / 12.5e9 * 1e9) + latency;
    EXPECT_NEAR(static_cast<double>(a.at(1)), static_cast<double>(expect), 2.0);
    EXPECT_EQ(b.at(1), a.at(1));
    EXPECT_EQ(four.migrations(), 0u);
}

TEST(FlowNetwork, ThreadsDoNotChangeTheResult) {
    // Shards resolved on two threads give exactly what they give on one.
    const topology::Fabric f = two_leaf_instances();
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);
    for (const std::uint32_t shards : {3u, 8u}) {
        FlowNetwork serial(f, 2, kWakeEntity, kWake, hbm, step, shards);
        FlowNetwork threaded(f, 2, kWakeEntity, kWake, hbm, step, shards);
        // Enough flows in one edge that the routing runs in chunks too.
        random_traffic(serial, f.chips(), 300, 9);
        random_traffic(threaded, f.chips(), 300, 9);
        const auto a = run(serial);
        const auto b = run(threaded, two_threads);
        EXPECT_EQ(a, b) << shards << " shards";
        EXPECT_EQ(serial.solves(), threaded.solves());
        EXPECT_EQ(serial.migrations(), threaded.migrations());
    }
}

/// Groups of random flows between random chips, starting over the first 20 ms, in start
/// order.
std::vector<Timed> staggered_traffic(std::uint32_t chips, int groups, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Timed> out;
    for (int g = 0; g < groups; ++g) {
        Timed t{static_cast<std::int64_t>(rng() % 20'000'000), {}};
        const int n = 1 + static_cast<int>(rng() % 8);
        for (int i = 0; i < n; ++i) {
            const auto src = static_cast<std::uint32_t>(rng() % chips);
            const auto dst = static_cast<std::uint32_t>(rng() % chips);
            t.flows.push_back({src, dst, 1e5 * static_cast<double>(1 + rng() % 64), 1.0});
        }
        out.push_back(std::move(t));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Timed& a, const Timed& b) { return a.start < b.start; });
    return out;
}

/// `traffic` from its groups' start times, with edges every 50 us as well as after wakes.
std::map<engine::EntityId, std::int64_t> run_staggered(FlowNetwork& net,
                                                       const std::vector<Timed>& traffic,
                                                       const FlowNetwork::ParallelFor& parallel = {}) {
    std::set<std::int64_t> edges;
    for (std::int64_t t = 0; t <= 20'000'000; t += 50'000) {
        edges.insert(t);
    }
    return drive(net, std::move(edges), traffic, parallel);
}

TEST(FlowNetwork, FlowsStartingWhileOthersRunKeepTheirRatesOnShardsAndThreads) {
    // New flows at most edges while earlier ones finish: placement then runs beside the
    // shards it cannot touch, and components move with flows queued at the same edge. One
    // solver, shards on one thread and the same shards on two agree.
    const topology::Fabric f = two_leaf_instances();
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);
    for (const auto& [shards, groups, seed] :
         {std::tuple{8u, 600, 17u}, std::tuple{16u, 1500, 5u}, std::tuple{32u, 1500, 23u}}) {
        const auto traffic = staggered_traffic(f.chips(), groups, seed);
        FlowNetwork one(f, 2, kWakeEntity, kWake, hbm, step, 1);
        FlowNetwork serial(f, 2, kWakeEntity, kWake, hbm, step, shards);
        FlowNetwork threaded(f, 2, kWakeEntity, kWake, hbm, step, shards);
        const auto a = run_staggered(one, traffic);
        const auto b = run_staggered(serial, traffic);
        const auto c = run_staggered(threaded, traffic, two_threads);
        ASSERT_EQ(a.size(), traffic.size());
        ASSERT_EQ(b.size(), traffic.size()) << shards << " shards";
        // A rate change reaches a flow's finish time rounded to the nanosecond, and a moved
        // flow's bytes are counted at the edge: a few ns apart after a chain of changes.
        for (const auto& [owner, t] : a) {
            EXPECT_NEAR(static_cast<double>(b.at(owner)), static_cast<double>(t), 20.0)
                << "group " << owner << ", " << shards << " shards";
            EXPECT_GE(t, traffic[owner].start); // nothing arrives before it starts
        }
        EXPECT_EQ(b, c) << shards << " shards";
        EXPECT_GT(serial.migrations(), 0u);
        EXPECT_EQ(serial.migrations(), threaded.migrations());
        EXPECT_EQ(serial.solves(), threaded.solves());
    }
}

constexpr engine::EventType kCancelled = 2;

/// Resolves `net` at `now` and then 1 ns after every wake it asks for until `until`
/// (exclusive; -1: until it is idle), recording each completion (kDone) and cancellation
/// (kCancelled) by owner (at most one of each per owner).
struct Events {
    std::map<engine::EntityId, std::int64_t> done, cancelled;
};

/// The schedule callback of a resolve at `now`: wakes become edges 1 ns later, completions and
/// cancellations go to `ev`, each at most once per owner (`exclusive`: at most one of the two).
FlowNetwork::Schedule recorder(Events& ev, std::set<std::int64_t>& edges, const std::int64_t& now,
                               bool exclusive) {
    return [&ev, &edges, &now, exclusive](engine::EntityId target, std::int64_t t,
                                          engine::EventType type, std::uint64_t) {
        EXPECT_GE(t, now);
        if (type == kWake) {
            edges.insert(t + 1);
            return;
        }
        EXPECT_TRUE(type == kDone || type == kCancelled) << type;
        auto& mine = type == kDone ? ev.done : ev.cancelled;
        const std::size_t before =
            exclusive ? ev.done.count(target) + ev.cancelled.count(target) : mine.count(target);
        EXPECT_EQ(before, 0U) << target;
        mine[target] = t;
    };
}

std::int64_t advance(FlowNetwork& net, std::int64_t now, std::int64_t until, Events& ev,
                     const FlowNetwork::ParallelFor& parallel = {}) {
    std::set<std::int64_t> edges{now};
    while (!edges.empty() && (until < 0 || *edges.begin() < until)) {
        now = *edges.begin();
        edges.erase(edges.begin());
        net.resolve(now, recorder(ev, edges, now, false), parallel);
    }
    return now;
}

double total_link_bytes(const FlowNetwork& net) {
    double sum = 0.0;
    for (const double b : net.link_bytes()) {
        sum += b;
    }
    return sum;
}

TEST(FlowNetwork, ACancelledGroupStopsAndGivesItsBandwidthBack) {
    // Two flows of N = 250 MB from chip 0 of instance 0 to chip 0 of instance 1 share the
    // 200 Gbps NIC (25 GB/s): 12.5 GB/s each. By hand: cancelled at 5 ms, flow 1 has sent
    // 62.5 MB and stops; flow 2, with 187.5 MB left, has the NIC alone from the edge at 5 ms:
    // 187.5 MB / 25 GB/s = 7.5 ms more, so it ends at 12.5 ms + the route's latency (20 ms
    // without the cancel). Owner 1 gets its cancellation at the edge, never a completion.
    const topology::Fabric f = two_leaf_instances();
    const std::uint32_t a = 0, b = f.chips_per_instance();
    const Route route = route_of(f, a, b);
    const double n = 250e6;
    for (const std::uint32_t shards : {1U, 4U}) {
        FlowNetwork net(f, 2, kWakeEntity, kWake, Bandwidth::bytes_per_s(2.9e12),
                        Duration::from_ns(2000), shards);
        net.start_group(0, 0, 1, kDone, 7, {FlowSpec{a, b, n}});
        net.start_group(1, 0, 2, kDone, 7, {FlowSpec{a, b, n}});
        Events ev;
        advance(net, 0, 5'000'000, ev);
        net.cancel(1, 5'000'000, 1, 7, kCancelled); // owner 1 from partition 1
        advance(net, 5'000'000, -1, ev);
        EXPECT_EQ(ev.cancelled.at(1), 5'000'000) << shards;
        EXPECT_EQ(ev.done.count(1), 0U) << shards;
        EXPECT_NEAR(static_cast<double>(ev.done.at(2)),
                    12.5e6 + static_cast<double>(route.latency), 2.0)
            << shards;
        // Bytes conserved: 250 + 62.5 MB crossed each link of the route.
        EXPECT_NEAR(total_link_bytes(net),
                    (n + 62.5e6) * static_cast<double>(route.links.size()), 1e3)
            << shards;
        EXPECT_EQ(net.groups_cancelled(), 1U);
        EXPECT_TRUE(net.idle());
    }
}

TEST(FlowNetwork, CancelSparesWhatHadFinishedAndWhatStartsAfter) {
    // Owner 10's group (25 MB) finishes before the cancel; owner 11's (250 MB, sharing the NIC
    // with it) is still sending; owner 12's is cancelled with kAnyTag; owner 13's has another
    // tag than the cancel's. A group of owner 11 started after the cancel, in the same window
    // and partition, runs.
    const topology::Fabric f = two_leaf_instances();
    const std::uint32_t a = 0, b = f.chips_per_instance();
    FlowNetwork net(f, 2, kWakeEntity, kWake, Bandwidth::bytes_per_s(2.9e12),
                    Duration::from_ns(2000));
    net.start_group(0, 0, 10, kDone, 1, {FlowSpec{a, b, 25e6}});
    net.start_group(0, 0, 11, kDone, 2, {FlowSpec{a, b, 250e6}});
    net.start_group(0, 0, 12, kDone, 5, {FlowSpec{a, b + 1, 100e6}});
    net.start_group(0, 0, 13, kDone, 6, {FlowSpec{a + 1, b + 1, 100e6}});
    Events ev;
    // 10 and 11 share 25 GB/s: 10 sends its 25 MB at 12.5 GB/s by 2 ms.
    advance(net, 0, 4'000'000, ev);
    ASSERT_EQ(ev.done.count(10), 1U);
    net.cancel(0, 4'000'000, 10, 1, kCancelled);
    net.cancel(0, 4'000'000, 11, 2, kCancelled);
    net.cancel(1, 4'000'000, 12, FlowNetwork::kAnyTag, kCancelled);
    net.cancel(0, 4'000'000, 13, 99, kCancelled); // no group of 13 has tag 99
    net.start_group(0, 4'000'000, 11, kDone, 2, {FlowSpec{a, b, 1e6}});
    Events after;
    advance(net, 4'000'000, -1, after);
    EXPECT_EQ(after.cancelled.count(10), 0U);
    EXPECT_EQ(after.done.count(10), 0U);
    EXPECT_EQ(after.cancelled.at(11), 4'000'000);
    EXPECT_EQ(after.cancelled.at(12), 4'000'000);
    EXPECT_EQ(after.done.count(13), 1U);
    // 11's new 1 MB group, alone on the NIC from 4 ms: 40 us plus the latency.
    ASSERT_EQ(after.done.count(11), 1U);
    EXPECT_GT(after.done.at(11), 4'040'000);
    EXPECT_LT(after.done.at(11), 4'060'000);
    EXPECT_EQ(net.groups_cancelled(), 2U);
}

TEST(FlowNetwork, AGroupCancelledBeforeItsEdgeNeverStarts) {
    // Started and cancelled in the same window: no byte is sent, the owner hears of it at the
    // edge, and a group of the same owner started in another partition later in the window
    // (by time) runs.
    const topology::Fabric f = two_leaf_instances();
    FlowNetwork net(f, 2, kWakeEntity, kWake, Bandwidth::bytes_per_s(2.9e12),
                    Duration::from_ns(2000));
    net.start_group(0, 100, 1, kDone, 4, {FlowSpec{0, f.chips_per_instance(), 50e6}});
    net.cancel(1, 200, 1, 4, kCancelled);
    net.start_group(1, 300, 2, kDone, 4, {FlowSpec{0, f.chips_per_instance(), 50e6}});
    Events ev;
    advance(net, 1000, -1, ev);
    EXPECT_EQ(ev.cancelled.at(1), 1000);
    EXPECT_EQ(ev.done.count(1), 0U);
    EXPECT_EQ(ev.done.count(2), 1U);
    EXPECT_NEAR(total_link_bytes(net) / 50e6,
                static_cast<double>(route_of(f, 0, f.chips_per_instance()).links.size()), 1e-9);
}

TEST(FlowNetwork, CancelsGiveTheSameResultsOnShardsAndThreads) {
    // Staggered random traffic with a cancel for a third of the groups, up to 400 us after
    // their start (some groups have ended by then, or end in the same window): every group gets
    // exactly one event, a completion or a cancellation; one solver, shards on one thread and
    // the same shards on two agree on which; and the links carry no more than was routed.
    const topology::Fabric f = two_leaf_instances();
    const Bandwidth hbm = Bandwidth::bytes_per_s(2.9e12);
    const Duration step = Duration::from_ns(2000);
    const auto traffic = staggered_traffic(f.chips(), 900, 31);
    std::mt19937_64 rng(7);
    std::vector<std::pair<std::int64_t, engine::EntityId>> cancels;
    for (std::size_t g = 0; g < traffic.size(); g += 3) {
        cancels.emplace_back(traffic[g].start + static_cast<std::int64_t>(rng() % 400'000),
                             static_cast<engine::EntityId>(g));
    }
    std::sort(cancels.begin(), cancels.end());
    const auto run_with_cancels = [&](FlowNetwork& net, const FlowNetwork::ParallelFor& par) {
        Events ev;
        std::set<std::int64_t> edges;
        for (std::int64_t t = 0; t <= 22'000'000; t += 50'000) {
            edges.insert(t);
        }
        std::size_t next = 0, next_cancel = 0;
        while (!edges.empty()) {
            const std::int64_t now = *edges.begin();
            edges.erase(edges.begin());
            // The window before this edge: starts and cancels in time order.
            while (true) {
                const bool start = next < traffic.size() && traffic[next].start <= now;
                const bool cancel = next_cancel < cancels.size() &&
                                    cancels[next_cancel].first <= now;
                if (!start && !cancel) {
                    break;
                }
                if (start && (!cancel || traffic[next].start <= cancels[next_cancel].first)) {
                    net.start_group_view(static_cast<std::uint32_t>(next % 2), traffic[next].start,
                                         static_cast<engine::EntityId>(next), kDone, 0,
                                         traffic[next].flows);
                    ++next;
                } else {
                    const auto [at, owner] = cancels[next_cancel++];
                    net.cancel(static_cast<std::uint32_t>(owner % 2), at, owner,
                               FlowNetwork::kAnyTag, kCancelled);
                }
            }
            net.resolve(now, recorder(ev, edges, now, true), par);
        }
        EXPECT_TRUE(net.idle());
        return ev;
    };
    double routed = 0.0; // bytes x links of every flow, had none been cancelled
    {
        FlowNetwork all(f, 2, kWakeEntity, kWake, hbm, step, 1);
        run_staggered(all, traffic);
        routed = total_link_bytes(all);
    }
    FlowNetwork one(f, 2, kWakeEntity, kWake, hbm, step, 1);
    FlowNetwork serial(f, 2, kWakeEntity, kWake, hbm, step, 8);
    FlowNetwork threaded(f, 2, kWakeEntity, kWake, hbm, step, 8);
    const Events a = run_with_cancels(one, {});
    const Events b = run_with_cancels(serial, {});
    const Events c = run_with_cancels(threaded, two_threads);
    EXPECT_EQ(a.done.size() + a.cancelled.size(), traffic.size());
    EXPECT_GT(a.cancelled.size(), 100U);
    EXPECT_GT(a.done.size(), traffic.size() / 2);
    EXPECT_EQ(b.done, c.done);
    EXPECT_EQ(b.cancelled, c.cancelled);
    EXPECT_EQ(serial.groups_cancelled(), threaded.groups_cancelled());
    // One solver and shards: the same groups cancelled (no flow ends within a few ns of its
    // cancel here), the completions within the rounding of the test above.
    // (The cancellation comes at the first edge after the cancel, and edges follow the wakes,
    // which one solver and the shards round differently by a few ns.)
    for (const auto& [owner, t] : a.cancelled) {
        ASSERT_EQ(b.cancelled.count(owner), 1U) << owner << " cancelled at " << t;
        EXPECT_NEAR(static_cast<double>(b.cancelled.at(owner)), static_cast<double>(t), 20.0)
            << owner;
    }
    for (const auto& [owner, t] : b.cancelled) {
        EXPECT_EQ(a.cancelled.count(owner), 1U) << owner << " cancelled at " << t;
    }
    for (const auto& [owner, t] : a.done) {
        ASSERT_EQ(b.done.count(owner), 1U) << owner;
        EXPECT_NEAR(static_cast<double>(b.done.at(owner)), static_cast<double>(t), 20.0) << owner;
    }
    EXPECT_EQ(one.groups_cancelled(), a.cancelled.size());
    EXPECT_LT(total_link_bytes(one), routed);
    EXPECT_NEAR(total_link_bytes(serial), total_link_bytes(one), 1e-9 * routed);
    EXPECT_EQ(total_link_bytes(serial), total_link_bytes(threaded));
}

} // namespace
} // namespace trnsim::network
