// The closed-form expectation (expectation.hpp) against hand-derived values and against the
// simulation: Daly's case exactly as theory.hpp gives it, the spare wait in its limits, and
// the simulated mean within a few percent where the closed form's assumptions hold.
#include "support/reliability_cases.hpp"

#include "trnsim/reliability/expectation.hpp"
#include "trnsim/reliability/theory.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace trnsim::reliability {
namespace {

using namespace test;

RunSummary run(const RunInput& in, int replications, std::uint64_t seed = 5) {
    RunControl c;
    c.replications = replications;
    c.seed = seed;
    c.record = false;
    c.threads = 2;
    return simulate(in, c);
}

TEST(Expectation, DalysCaseIsDalysFormula) {
    // delta = 5 min, R = 10 min, M = 6 h, a spare that repairs instantly: no wait.
    const double tau = 56.71 * kMin;
    const Expectation x = expect(daly_input(6 * kHour, tau));
    EXPECT_NEAR(1.0 / x.facts.job_failure_rate, 6 * kHour, 1e-6);
    EXPECT_DOUBLE_EQ(x.spare_wait.seconds(), 0.0);
    EXPECT_DOUBLE_EQ(x.restart.seconds(), 10 * kMin);
    const double expected =
        theory::expected_wall_time(500 * kHour, x.facts.checkpoint_interval.seconds(), 5 * kMin,
                                   10 * kMin, 6 * kHour);
    EXPECT_NEAR(x.time_to_train.seconds(), expected, 1e-6 * expected);
    EXPECT_NEAR(x.ettr, 500 * kHour / expected, 1e-12);
    // Cost: 5 instances (4 + 1 spare) over the wall time at 10 USD an hour.
    EXPECT_NEAR(x.cost_usd, 5 * 10.0 * expected / kHour, 1e-6 * x.cost_usd);
    EXPECT_NEAR(x.goodput, x.ettr * 1000.0, 1e-9);
}

TEST(Expectation, NoFailuresCostOnlyCheckpoints) {
    RunInput in = instances_input(8, 0, 100 * kHour);
    in.spec.checkpoint.size = Bytes(std::int64_t{600'000'000'000}); // 600 s at 1 GB/s
    in.job.checkpoint_size = *in.spec.checkpoint.size;
    in.spec.checkpoint.interval = seconds(3 * kHour);
    const Expectation x = expect(in);
    EXPECT_DOUBLE_EQ(x.ettr, 3 * kHour / (3 * kHour + 600.0));
}

TEST(Expectation, SpareWaitLimits) {
    // 16 instances, chips failing with an MTBF of 1,000 h each (256 chips: a failure every
    // 3.9 h), every repair takes 24 h: about 6 instances in repair at any time.
    const auto input = [](std::int64_t spares) {
        RunInput in = instances_input(16, spares, 200 * kHour);
        in.spec.failures.push_back(failure(ComponentClass::chip, 1000 * kHour));
        in.spec.repair.automatic = seconds(24 * kHour);
        return in;
    };
    const Expectation none = expect(input(0));
    const double rate = 16.0 * 16.0 / (1000 * kHour);
    EXPECT_NEAR(none.domains_in_repair, rate * 24 * kHour, 1e-9);
    // Without spares every failure waits for its own repair.
    EXPECT_NEAR(none.spare_wait.seconds(), 24 * kHour, 1e-6);
    EXPECT_DOUBLE_EQ(none.replace_share, 1.0);
    // Many spares: no wait.
    EXPECT_LT(expect(input(80)).spare_wait.seconds(), 1e-3);
    // In between the wait falls as spares are added.
    double previous = none.spare_wait.seconds();
    for (std::int64_t s : {2, 4, 6, 8, 12}) {
        const double w = expect(input(s)).spare_wait.seconds();
        EXPECT_LT(w, previous) << s;
        previous = w;
    }
}

TEST(Expectation, AgreesWithTheSimulation) {
    // Trn2-like UltraServers with chip, host and software failures, sync checkpoints of
    // 4 min at Daly's interval, 2 h automatic repairs: the simulated mean ETTR within 1.5 points.
    for (std::int64_t spares : {0, 1, 4}) {
        RunInput in = ultraservers_input(32, spares, 20 * kDay);
        in.spec.failures = {failure(ComponentClass::chip, 5 * 365.25 * kDay),
                            failure(ComponentClass::host, 3 * 365.25 * kDay),
                            failure(ComponentClass::software, 1 * 365.25 * kDay)};
        in.spec.recovery.detection = seconds(2 * kMin);
        in.spec.recovery.restart = seconds(8 * kMin);
        in.spec.repair.automatic = seconds(2 * kHour);
        in.spec.checkpoint.size = Bytes(std::int64_t{240'000'000'000}); // 240 s at 1 GB/s
        in.job.checkpoint_size = *in.spec.checkpoint.size;
        in.spec.checkpoint.interval = Duration::zero(); // Daly
        const Expectation x = expect(in);
        const RunSummary s = run(in, 40);
        const Estimate& ettr = s.estimate("ettr");
        std::printf("%lld spares: closed form %.4f, simulated %.4f +- %.4f\n",
                    static_cast<long long>(spares), x.ettr, ettr.mean, ettr.half_width);
        EXPECT_NEAR(x.ettr, ettr.mean, 0.015) << spares << " spares: closed form " << x.ettr
                                             << ", simulated " << ettr.mean << " +- "
                                             << ettr.half_width;
        EXPECT_DOUBLE_EQ(x.facts.checkpoint_interval.seconds(),
                         s.facts.checkpoint_interval.seconds());
        EXPECT_DOUBLE_EQ(x.facts.job_failure_rate, s.facts.job_failure_rate);
    }
}

} // namespace
} // namespace trnsim::reliability
