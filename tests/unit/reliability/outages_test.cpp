// Unit outages of a fleet without checkpoints (reliability/outages.hpp): time order, the
// blast radius of a power domain, and availability against the renewal-reward closed forms.
#include "trnsim/reliability/outages.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace trnsim::reliability {
namespace {

constexpr double kHour = 3600.0;

HardwareFacts trn2() {
    HardwareFacts hw;
    hw.instance_torus = {4, 4};
    hw.efa_interfaces = 16;
    hw.efa_bandwidth_per_instance = Bandwidth::bits_per_s(3200e9);
    return hw;
}

std::array<bool, kClassCount> only(std::initializer_list<ComponentClass> classes) {
    std::array<bool, kClassCount> p{};
    for (ComponentClass c : classes) {
        p[static_cast<std::size_t>(c)] = true;
    }
    return p;
}

/// Hosts failing with exponential lifetimes of mean `mtbf_h`, a fixed repair of `repair_h`
/// (never manual), detection and restart as given.
ReliabilitySpec hosts(double mtbf_h, double repair_h, double detection_h, double restart_h) {
    ReliabilitySpec s;
    s.enabled = true;
    FailureSpec f;
    f.component = ComponentClass::host;
    f.cause = "host";
    f.mtbf = Seconds::of(mtbf_h * kHour);
    s.failures = {f};
    s.repair.automatic = Duration::from_seconds_ceil(repair_h * kHour);
    s.repair.manual_fraction = 0.0;
    s.recovery.detection = Duration::from_seconds_ceil(detection_h * kHour);
    s.recovery.restart = Duration::from_seconds_ceil(restart_h * kHour);
    return s;
}

/// Fraction of unit-time up to `horizon_ns` that the units were in service, checking on the
/// way that transitions come in time order and alternate down / up for every unit.
double availability(OutageSchedule& sched, std::int64_t units, std::int64_t horizon_ns,
                    std::int64_t* outages = nullptr) {
    std::vector<std::int64_t> down_since(static_cast<std::size_t>(units), -1);
    double down = 0.0;
    std::int64_t last = 0, count = 0;
    while (const auto t = sched.next()) {
        if (t->time.ns() >= horizon_ns) {
            break;
        }
        EXPECT_GE(t->time.ns(), last);
        last = t->time.ns();
        std::int64_t& since = down_since[t->unit];
        if (t->up) {
            EXPECT_GE(since, 0) << "unit " << t->unit << " came back without going down";
            down += static_cast<double>(t->time.ns() - since);
            since = -1;
        } else {
            EXPECT_EQ(since, -1) << "unit " << t->unit << " went down twice";
            since = t->time.ns();
            ++count;
        }
    }
    for (std::int64_t since : down_since) {
        if (since >= 0) {
            down += static_cast<double>(horizon_ns - since);
        }
    }
    if (outages != nullptr) {
        *outages = count;
    }
    return 1.0 - down / (static_cast<double>(units) * static_cast<double>(horizon_ns));
}

// Without spares a unit waits for its own domain. Renewal-reward: a cycle is an exponential up
// time (mean m) and a down time of the repair R (>= detection), then the restart r during which
// the repaired domain's processes already run: a failure in it (probability p = 1 - e^(-r/m))
// repairs again. The time from the repair's end to service, E, solves E = E[min(X, r)] +
// p (R + E) with E[min(X, r)] = m p, so E = (e^(r/m) - 1)(m + R), and the availability is
// m / (m + R + E). m = 10 h, R = 2 h, r = 0.5 h: E = 0.051271 x 12 h = 0.6152 h, A = 0.79269.
TEST(Outages, WithoutSparesAvailabilityIsTheRenewalRewardClosedForm) {
    const ReliabilitySpec spec = hosts(10.0, 2.0, 0.1, 0.5);
    const Layout layout(cluster::make_cluster_shape({0, 200}, 16, 0), trn2(), FabricSpec{}, 0,
                        only({ComponentClass::host}));
    OutageSchedule sched(spec, layout, 200, 7);
    std::int64_t outages = 0;
    const auto horizon = static_cast<std::int64_t>(5000.0 * kHour * 1e9);
    const double a = availability(sched, 200, horizon, &outages);
    const double e = (std::exp(0.05) - 1.0) * 12.0;
    const double expected = 10.0 / (10.0 + 2.0 + e);
    EXPECT_NEAR(expected, 0.79269, 5e-5); // the comment's arithmetic
    EXPECT_NEAR(a, expected, 0.01 * expected);
    // Outages per unit: the horizon over the mean cycle, 5000 / 12.615 = 396.3.
    EXPECT_NEAR(static_cast<double>(outages) / 200.0, 5000.0 / (12.0 + e), 0.02 * 396.3);
}

// With plenty of spares a unit comes back on a spare after detection + restart, w = 0.6 h; a
// spare failing in that window (it ages while idle) hands over to the next spare, starting the
// window again: E = E[min(X, w)] + p_w E = m (e^(w/m) - 1) = 0.6184 h, A = m / (m + E) = 0.94176.
TEST(Outages, WithSparesTheUnitReturnsAfterDetectionAndRestart) {
    const ReliabilitySpec spec = hosts(10.0, 2.0, 0.1, 0.5);
    const Layout layout(cluster::make_cluster_shape({0, 200}, 16, 0), trn2(), FabricSpec{}, 100,
                        only({ComponentClass::host}));
    OutageSchedule sched(spec, layout, 200, 11);
    const auto horizon = static_cast<std::int64_t>(5000.0 * kHour * 1e9);
    const double a = availability(sched, 200, horizon);
    const double e = 10.0 * (std::exp(0.06) - 1.0);
    EXPECT_NEAR(10.0 / (10.0 + e), 0.94176, 5e-5);
    EXPECT_NEAR(a, 10.0 / (10.0 + e), 0.005);
}

// A power failure takes every instance of its power domain (8 consecutive instances) down at
// the same instant; software failures restart one instance and repair nothing (a software
// failure during the restart would start the restart again, so it is made rare here).
TEST(Outages, PowerTakesItsWholeDomainSoftwareOnlyRestarts) {
    ReliabilitySpec spec = hosts(1e9, 2.0, 0.0, 0.25); // hosts practically never fail
    FailureSpec power;
    power.component = ComponentClass::power;
    power.mtbf = Seconds::of(50.0 * kHour);
    spec.failures.push_back(power);
    const Layout layout(cluster::make_cluster_shape({0, 16}, 16, 0), trn2(), FabricSpec{}, 0,
                        only({ComponentClass::host, ComponentClass::power}));
    ASSERT_EQ(layout.domains_per_power(), 8);
    OutageSchedule sched(spec, layout, 16, 5);
    std::map<std::int64_t, std::vector<std::uint32_t>> downs;
    for (int i = 0; i < 400; ++i) {
        const auto t = sched.next();
        ASSERT_TRUE(t);
        if (!t->up) {
            downs[t->time.ns()].push_back(t->unit);
        }
    }
    ASSERT_FALSE(downs.empty());
    for (const auto& [time, units] : downs) {
        ASSERT_EQ(units.size(), 8u) << "at " << time;
        EXPECT_TRUE(units.front() == 0 || units.front() == 8);
        for (std::size_t k = 0; k < 8; ++k) {
            EXPECT_EQ(units[k], units.front() + k);
        }
    }

    ReliabilitySpec sw = hosts(1e9, 2.0, 0.05, 0.25);
    FailureSpec bug;
    bug.component = ComponentClass::software;
    bug.mtbf = Seconds::of(500.0 * kHour); // a failure within a restart (p = 0.06%) would extend it
    sw.failures.push_back(bug);
    const Layout one(cluster::make_cluster_shape({0, 1}, 16, 0), trn2(), FabricSpec{}, 0,
                     only({ComponentClass::host, ComponentClass::software}));
    OutageSchedule s2(sw, one, 1, 5);
    for (int i = 0; i < 20; ++i) {
        const auto down = s2.next();
        const auto up = s2.next();
        ASSERT_TRUE(down && up);
        ASSERT_FALSE(down->up);
        ASSERT_TRUE(up->up);
        // Back after detection + restart = 0.05 h + 0.25 h = 1,080 s (no repair for software).
        EXPECT_EQ(up->time.ns() - down->time.ns(), 1080 * std::int64_t{1'000'000'000});
    }
}

// A failure trace replayed with no failure process: three trn2 instances hold units 0-2, a
// fourth is the spare (16 chips per instance, so chip 17 is instance 1's second). Repairs take
// 2 h (7,200 s, fixed), detection 60 s, restart 240 s. By hand:
//   100 s  chip 17 (domain 1): replaced. Unit 1 down; onto the spare, domain 3, back at
//          100 + 60 + 240 = 400 s. Domain 1 in repair until 7,300 s.
//   200 s  chip 20 (domain 1, in repair): nothing.
//   300 s  software 0 (domain 0): restart only. Unit 0 down, back at 600 s on domain 0.
//   500 s  host 3 (domain 3, serving unit 1): replaced. Unit 1 down with no free spare: it
//          waits for domain 1's repair (7,300 s) and restarts then: back at 7,540 s.
//  1000 s  leaf 0: a switch, no unit goes down.
// Then nothing can fail any more: the schedule ends.
TEST(Outages, ATraceReplaysItsFailuresWithTheirBlastRadius) {
    ReliabilitySpec spec;
    spec.enabled = true;
    spec.repair.automatic = Duration::from_seconds_ceil(7200.0);
    spec.repair.manual_fraction = 0.0;
    spec.recovery.detection = Duration::from_seconds_ceil(60.0);
    spec.recovery.restart = Duration::from_seconds_ceil(240.0);
    const auto at = [](double s, ComponentClass c, std::int64_t index, const char* cause) {
        return TraceFailure{Duration::from_seconds_ceil(s), c, index, cause, 1};
    };
    spec.trace.failures = {at(100, ComponentClass::chip, 17, "chip"),
                           at(200, ComponentClass::chip, 20, "chip"),
                           at(300, ComponentClass::software, 0, "bug"),
                           at(500, ComponentClass::host, 3, "host"),
                           at(1000, ComponentClass::leaf, 0, "leaf")};
    const FailureModel probe(spec.failures, spec.trace);
    const Layout layout(cluster::make_cluster_shape({0, 3}, 16, 0), trn2(), FabricSpec{}, 1,
                        probe.present_classes());
    OutageSchedule sched(spec, layout, 3, 1);
    struct Expected {
        std::int64_t s;
        std::uint32_t unit;
        bool up;
    };
    const std::vector<Expected> expected = {{100, 1, false}, {300, 0, false}, {400, 1, true},
                                            {500, 1, false}, {600, 0, true},  {7540, 1, true}};
    for (const Expected& e : expected) {
        const auto t = sched.next();
        ASSERT_TRUE(t) << "at " << e.s << " s";
        EXPECT_EQ(t->time.ns(), e.s * std::int64_t{1'000'000'000});
        EXPECT_EQ(t->unit, e.unit) << "at " << e.s << " s";
        EXPECT_EQ(t->up, e.up) << "at " << e.s << " s";
    }
    EXPECT_FALSE(sched.next());
}

TEST(Outages, SameSeedSameScheduleOtherSeedOther) {
    const ReliabilitySpec spec = hosts(10.0, 2.0, 0.1, 0.5);
    const Layout layout(cluster::make_cluster_shape({0, 20}, 16, 0), trn2(), FabricSpec{}, 2,
                        only({ComponentClass::host}));
    OutageSchedule a(spec, layout, 20, 9), b(spec, layout, 20, 9), c(spec, layout, 20, 10);
    bool differs = false;
    for (int i = 0; i < 200; ++i) {
        const auto x = a.next(), y = b.next(), z = c.next();
        ASSERT_TRUE(x && y && z);
        EXPECT_EQ(x->time.ns(), y->time.ns());
        EXPECT_EQ(x->unit, y->unit);
        EXPECT_EQ(x->up, y->up);
        differs = differs || x->time.ns() != z->time.ns();
    }
    EXPECT_TRUE(differs);
}

} // namespace
} // namespace trnsim::reliability
