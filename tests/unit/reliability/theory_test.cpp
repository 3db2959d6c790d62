// Closed forms of reliability.md §5 and §8, and the Student t quantiles behind the confidence
// intervals, against published or hand-computed values.
#include "trnsim/reliability/statistics.hpp"
#include "trnsim/reliability/theory.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trnsim::reliability {
namespace {

constexpr double kMin = 60.0;
constexpr double kHour = 3600.0;

TEST(Theory, LambertW0KnownValues) {
    EXPECT_NEAR(theory::lambert_w0(0.0), 0.0, 1e-15);
    EXPECT_NEAR(theory::lambert_w0(1.0), 0.5671432904097838, 1e-13); // the omega constant
    EXPECT_NEAR(theory::lambert_w0(std::exp(1.0)), 1.0, 1e-13);
    EXPECT_NEAR(theory::lambert_w0(-std::exp(-1.0)), -1.0, 1e-6);
    // W(x) e^W(x) = x near the branch point, where the iteration is hardest.
    for (double x : {-0.3678, -0.35, -0.2, -0.05}) {
        const double w = theory::lambert_w0(x);
        EXPECT_NEAR(w * std::exp(w), x, 1e-12) << x;
    }
}

// reliability.md §5 and §8: T_s = 500 h, delta = 5 min, R = 10 min.
TEST(Theory, DalyWorkedCheck) {
    const double delta = 5 * kMin;
    struct Row {
        double mtbf, exact_min, daly_min, young_min, wall_over_ts;
    };
    // Exact minimiser 116.69 / 56.71 / 9.17 min; Daly's series as printed in his paper
    // 117 / 57 / 9.1 (our evaluation of the same formula: 116.69 / 56.71 / 9.14); Young
    // 120 / 60 / 12.2; expected wall time at the optimum 1.0958 / 1.2204 / 5.008 x T_s.
    for (const Row& r : {Row{24 * kHour, 116.69, 116.69, 120.0, 1.0958},
                         Row{6 * kHour, 56.71, 56.71, 60.0, 1.2204},
                         Row{15 * kMin, 9.17, 9.14, 12.25, 5.008}}) {
        EXPECT_NEAR(theory::optimal_interval(delta, r.mtbf) / kMin, r.exact_min, 0.005);
        EXPECT_NEAR(theory::daly_interval(delta, r.mtbf) / kMin, r.daly_min, 0.005);
        EXPECT_NEAR(theory::young_interval(delta, r.mtbf) / kMin, r.young_min, 0.005);
        const double tau = theory::optimal_interval(delta, r.mtbf);
        const double ts = 500 * kHour;
        EXPECT_NEAR(theory::expected_wall_time(ts, tau, delta, 10 * kMin, r.mtbf) / ts,
                    r.wall_over_ts, 0.0005);
    }
    // 610.2 h at M = 6 h (reliability.md §8).
    const double tau = theory::optimal_interval(delta, 6 * kHour);
    EXPECT_NEAR(theory::expected_wall_time(500 * kHour, tau, delta, 10 * kMin, 6 * kHour) / kHour,
                610.2, 0.05);
}

TEST(Theory, TheExactMinimiserMinimises) {
    const double delta = 5 * kMin;
    for (double mtbf : {15 * kMin, 6 * kHour, 24 * kHour}) {
        const double tau = theory::optimal_interval(delta, mtbf);
        const double best = theory::expected_wall_time(1.0, tau, delta, 0.0, mtbf);
        EXPECT_LT(best, theory::expected_wall_time(1.0, tau * 0.99, delta, 0.0, mtbf));
        EXPECT_LT(best, theory::expected_wall_time(1.0, tau * 1.01, delta, 0.0, mtbf));
    }
}

TEST(Theory, DalyIntervalCapsAtTheMtbf) {
    EXPECT_DOUBLE_EQ(theory::daly_interval(3.0, 1.0), 1.0);
}

TEST(Theory, EttrAgreesWithMetasApproximationWhenFailuresAreRare) {
    // First order in 1/M the two models agree: for M = 1 week, tau = 1 h, w = 1 min,
    // u = 10 min they differ by well under 0.1%.
    const double m = 7 * 24 * kHour;
    const double exact = theory::expected_ettr(kHour, kMin, 10 * kMin, m);
    const double meta = theory::meta_ettr(kHour, kMin, 10 * kMin, m);
    EXPECT_NEAR(exact, meta, 1e-3);
    EXPECT_LT(exact, 1.0);
}

TEST(Statistics, StudentQuantiles) {
    // Tables: t_{0.975} for 1, 2, 3, 10, 30, 100 degrees of freedom.
    EXPECT_NEAR(student_t_975(1), 12.7062, 1e-4);
    EXPECT_NEAR(student_t_975(2), 4.3027, 1e-4);
    EXPECT_NEAR(student_t_975(3), 3.1824, 1e-4);
    EXPECT_NEAR(student_t_975(10), 2.2281, 1e-4);
    EXPECT_NEAR(student_t_975(30), 2.0423, 1e-4);
    EXPECT_NEAR(student_t_975(100), 1.9840, 1e-4);
    EXPECT_NEAR(student_t_975(100000), 1.95998, 1e-4);
}

TEST(Statistics, EstimateOfKnownSample) {
    // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample sd sqrt(32 / 7).
    const Estimate e = estimate({2, 4, 4, 4, 5, 5, 7, 9});
    EXPECT_DOUBLE_EQ(e.mean, 5.0);
    EXPECT_NEAR(e.sd, std::sqrt(32.0 / 7.0), 1e-12);
    EXPECT_NEAR(e.half_width, 2.3646 * std::sqrt(32.0 / 7.0) / std::sqrt(8.0), 1e-4);
    EXPECT_EQ(estimate({3.0}).half_width, 0.0);
}

} // namespace
} // namespace trnsim::reliability
