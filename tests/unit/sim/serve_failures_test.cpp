// Failures of the serving fleet's domains (serve_failures.hpp) on the engine: one replica on
// one UltraServer whose hosts fail (no spare), a router that follows the outages, and the
// failure figures. The outage times come from a copy of the schedule the fleet draws.
#include <utility>
#include <vector>

#include "trnsim/reliability/failure_model.hpp"

#include <gtest/gtest.h>

#include "serve_failures.hpp"
#include "serve_placement.hpp"
#include "unit/sim/serve_parts.hpp"

namespace trnsim::sim::detail {
namespace {

using test::kMs;
using test::Seen;

/// Hosts that fail every 200 s on average, repaired in 60 s, noticed in 0.5 s, restarted in
/// 1 s.
ServeInput failing_fleet() {
    ServeInput in = test::fleet(1, 0, 16, 1);
    reliability::ReliabilitySpec& rs = in.reliability;
    rs.enabled = true;
    reliability::FailureSpec f;
    f.component = reliability::ComponentClass::host;
    f.cause = "host";
    f.mtbf = Seconds::of(200.0);
    rs.failures = {f};
    rs.repair.automatic = Duration::from_seconds_ceil(60.0);
    rs.repair.manual_fraction = 0.0;
    rs.recovery.detection = Duration::from_seconds_ceil(0.5);
    rs.recovery.restart = Duration::from_seconds_ceil(1.0);
    return in;
}

/// The fleet's outage schedule, drawn again: its first transitions.
std::vector<reliability::UnitTransition> first_transitions(const ServeInput& in, int n) {
    const reliability::ReliabilitySpec& rs = in.reliability;
    const reliability::Layout layout(
        fleet_shape(in), fleet_hardware(in), rs.fabric, 0,
        reliability::FailureModel(rs.failures, rs.trace).present_classes());
    reliability::OutageSchedule schedule(rs, layout, 1, in.seed);
    std::vector<reliability::UnitTransition> out;
    for (int i = 0; i < n; ++i) {
        out.push_back(*schedule.next());
    }
    return out;
}

/// A router that follows the outages and, when it notices a failure, holds requests 7 and 9
/// for the domain; the replica records its events.
struct FailureHarness {
    explicit FailureHarness(ServeInput input)
        : in(std::move(input)), pl(place(in, 2)), failures(in, pl) {}

    void handle(ServeContext& ctx, const engine::Event& e) {
        received.push_back(test::seen(ctx, e));
        if (ctx.self() != kRouter) {
            return;
        }
        const auto d = static_cast<std::uint32_t>(e.payload);
        switch (e.type) {
        case kStart:
            failures.start(ctx, 0);
            break;
        case kOutage:
            failures.on_outage(ctx, 0);
            break;
        case kDetect:
            unnoticed_at_detect = failures.unnoticed(d);
            failures.hold(d, 7);
            failures.hold(d, 9);
            held = failures.notice_down(d);
            unnoticed_after = failures.unnoticed(d);
            break;
        case kEnable:
            enabled = failures.enable(d);
            break;
        default:
            break;
        }
    }

    void run(std::int64_t until) {
        const auto entities = static_cast<std::uint32_t>(kFirstReplica + pl.replicas.size());
        engine::Simulator<FailureHarness, ServeQueue> sim(
            *this, engine::PartitionMap::from_starts(entities, {0}), Duration::from_ns(kMs));
        sim.schedule(kRouter, SimTime::zero(), kStart);
        sim.run(SimTime::from_ns(until), 1);
    }

    /// What reached entity `e` but kOutage (the router's own wake-ups).
    std::vector<Seen> of(engine::EntityId e) const {
        std::vector<Seen> out;
        for (const Seen& s : received) {
            if (std::get<1>(s) == e && std::get<2>(s) != kOutage && std::get<2>(s) != kStart) {
                out.push_back(s);
            }
        }
        return out;
    }

    ServeInput in;
    Placement pl;
    ServeFailures failures;
    std::vector<Seen> received;
    bool unnoticed_at_detect = false, unnoticed_after = true, enabled = false;
    std::vector<std::uint64_t> held;
};

TEST(ServeFailures, ADomainGoesDownIsNoticedAndComesBack) {
    // Down at t1: the replica hears it 1 ms later (the router latency), the router notices
    // at t1 + 0.5 s and gets back what it held; up at tb (repair 60 s + restart 1 s): the
    // replica is up at tb + 1 ms (after a failure of that instant: priority 2), the router
    // sends to it again from tb + 1 ns.
    FailureHarness h(failing_fleet());
    const auto t = first_transitions(h.in, 3);
    ASSERT_FALSE(t[0].up);
    ASSERT_TRUE(t[1].up);
    const std::int64_t t1 = t[0].time.ns(), tb = t[1].time.ns();
    ASSERT_EQ(tb - t1, 61'000 * kMs);
    ASSERT_GT(t[2].time.ns(), tb + 2'000 * kMs) << "a second failure would end the test early";
    h.run(tb + 2'000 * kMs);

    const std::vector<Seen> replica = {{t1 + kMs, replica_entity(0), kDown, 0, 0},
                                       {tb + kMs, replica_entity(0), kUp, 0, 0}};
    EXPECT_EQ(h.of(replica_entity(0)), replica);
    const std::vector<Seen> router = {{t1 + 500 * kMs, kRouter, kDetect, 0, 0},
                                      {tb + 1, kRouter, kEnable, 0, 0}};
    EXPECT_EQ(h.of(kRouter), router);
    EXPECT_TRUE(h.unnoticed_at_detect);
    EXPECT_FALSE(h.unnoticed_after);
    EXPECT_EQ(h.held, (std::vector<std::uint64_t>{7, 9}));
    EXPECT_TRUE(h.enabled);
    EXPECT_EQ(h.failures.replicas_of(0), (std::vector<std::uint32_t>{0}));

    // The figures up to end = tb + 1 s: one outage, 61 s down of the replica's tb + 1 s.
    h.failures.count_retry(0);
    h.failures.count_retry(0);
    const std::int64_t end = tb + 1'000 * kMs;
    ServingRunStats st;
    h.failures.add_stats(end, 1, st);
    EXPECT_EQ(st.outages, 1u);
    EXPECT_EQ(st.retries, 2u);
    EXPECT_DOUBLE_EQ(st.replica_down.seconds(), 61.0);
    EXPECT_DOUBLE_EQ(st.availability,
                     1.0 - static_cast<double>(tb - t1) / static_cast<double>(end));
    EXPECT_EQ(st.spare_domains, 0u);
}

TEST(ServeFailures, ADomainStillDownAtTheEndCountsUntilTheEnd) {
    // The run ends 10 s into the outage: 10 s down out of t1 + 10 s.
    FailureHarness h(failing_fleet());
    const auto t = first_transitions(h.in, 1);
    const std::int64_t t1 = t[0].time.ns();
    h.run(t1 + 2 * kMs);
    const std::int64_t end = t1 + 10'000 * kMs;
    ServingRunStats st;
    h.failures.add_stats(end, 1, st);
    EXPECT_EQ(st.outages, 1u);
    EXPECT_DOUBLE_EQ(st.replica_down.seconds(), 10.0);
    EXPECT_DOUBLE_EQ(st.availability, 1.0 - 10'000.0 * kMs / static_cast<double>(end));
}

TEST(ServeFailures, ARouterThatStoppedFollowingCatchesUpToTheLatestDoneTime) {
    // The router stopped just after the failure at t1 (its requests were done); another
    // shard was busy until tb + 5 ns: the return at tb counts, so the domain was down for
    // tb - t1 and is up at the end.
    FailureHarness h(failing_fleet());
    const auto t = first_transitions(h.in, 3);
    const std::int64_t t1 = t[0].time.ns(), tb = t[1].time.ns();
    ASSERT_GT(t[2].time.ns(), tb + 5);
    h.run(t1 + 2 * kMs);
    h.failures.catch_up(tb + 5);
    ServingRunStats st;
    const std::int64_t end = tb + 10;
    h.failures.add_stats(end, 1, st);
    EXPECT_EQ(st.outages, 1u);
    EXPECT_DOUBLE_EQ(st.replica_down.seconds(), static_cast<double>(tb - t1) * 1e-9);
    // Catching up to before the return leaves the domain down until the end.
    FailureHarness early(failing_fleet());
    early.run(t1 + 2 * kMs);
    early.failures.catch_up(tb - 5);
    ServingRunStats st2;
    early.failures.add_stats(end, 1, st2);
    EXPECT_DOUBLE_EQ(st2.replica_down.seconds(), static_cast<double>(end - t1) * 1e-9);
}

TEST(ServeFailures, WithoutReliabilityThereAreNoFigures) {
    const ServeInput in = test::fleet(1, 0, 16, 4);
    const Placement pl = place(in, 2);
    const ServeFailures f(in, pl);
    EXPECT_FALSE(f.enabled());
    ServingRunStats st;
    f.add_stats(1'000 * kMs, 4, st);
    EXPECT_EQ(st.outages, 0u);
    EXPECT_EQ(st.replica_down.seconds(), 0.0);
    EXPECT_EQ(st.availability, 1.0);
}

} // namespace
} // namespace trnsim::sim::detail
