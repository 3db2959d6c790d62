#include "trnsim/engine/rng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

namespace trnsim::engine {
namespace {

TEST(Philox, KnownAnswers) {
    // Philox4x32-10 known-answer vectors published with Random123 (kat_vectors): counter and
    // key of zeros, of all ones, and of the digits of pi. Our (seed, kind, entity, block)
    // mapping puts block in the low counter words, seed in the high ones, entity and kind in
    // the key.
    const auto zero = philox_block(0, 0, 0, 0);
    EXPECT_EQ(zero, (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    const auto ones = philox_block(~0ull, 0xffffffffu, 0xffffffffu, ~0ull);
    EXPECT_EQ(ones, (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    const auto pi = philox_block(0x0370734413198a2eull, 0x299f31d0, 0xa4093822,
                                 0x85a308d3243f6a88ull);
    EXPECT_EQ(pi, (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(RandomStream, ReproducibleAndPositionIndependent) {
    RandomStream a(42, 1, 7);
    std::vector<std::uint32_t> first;
    for (int i = 0; i < 100; ++i) {
        first.push_back(a.next_u32());
    }
    RandomStream b(42, 1, 7);
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(b.next_u32(), first[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(a.blocks_used(), 25u);
    // Restarting at block 10 gives words 40.. of the stream.
    RandomStream c(42, 1, 7, 10);
    EXPECT_EQ(c.next_u32(), first[40]);
}

TEST(RandomStream, StreamsDifferBySeedKindAndEntity) {
    const auto w = [](std::uint64_t seed, StreamKind kind, std::uint32_t entity) {
        return RandomStream(seed, kind, entity).next_u64();
    };
    const std::uint64_t base = w(1, 2, 3);
    EXPECT_NE(base, w(2, 2, 3));
    EXPECT_NE(base, w(1, 3, 3));
    EXPECT_NE(base, w(1, 2, 4));
}

/// Sample mean and variance of n draws.
std::pair<double, double> moments(int n, const std::function<double()>& draw) {
    double sum = 0.0, sum2 = 0.0;
    for (int i = 0; i < n; ++i) {
        const double x = draw();
        sum += x;
        sum2 += x * x;
    }
    const double mean = sum / n;
    return {mean, sum2 / n - mean * mean};
}

// Each check uses 400,000 draws: the standard error of the mean is sd / 632, and the tolerances
// below are at least 5 standard errors.
constexpr int kDraws = 400'000;

TEST(Distributions, Uniform) {
    RandomStream s(9, 0, 0);
    const auto [m, v] = moments(kDraws, [&] {
        const double u = s.uniform();
        EXPECT_GE(u, 0.0);
        EXPECT_LT(u, 1.0);
        return u;
    });
    EXPECT_NEAR(m, 0.5, 0.003);
    EXPECT_NEAR(v, 1.0 / 12.0, 0.001);
}

TEST(Distributions, Exponential) {
    RandomStream s(9, 1, 0);
    const auto [m, v] = moments(kDraws, [&] { return s.exponential(3.0); });
    EXPECT_NEAR(m, 3.0, 0.025);
    EXPECT_NEAR(v, 9.0, 0.25);
}

TEST(Distributions, Normal) {
    RandomStream s(9, 2, 0);
    const auto [m, v] = moments(kDraws, [&] { return s.normal(5.0, 2.0); });
    EXPECT_NEAR(m, 5.0, 0.016);
    EXPECT_NEAR(v, 4.0, 0.05);
}

TEST(Distributions, Lognormal) {
    RandomStream s(9, 3, 0);
    const double mu = 0.5, sigma = 0.4;
    const auto [m, v] = moments(kDraws, [&] { return s.lognormal(mu, sigma); });
    const double mean = std::exp(mu + sigma * sigma / 2);
    const double var = (std::exp(sigma * sigma) - 1) * std::exp(2 * mu + sigma * sigma);
    EXPECT_NEAR(m, mean, 0.006);
    EXPECT_NEAR(v, var, 0.01);
}

TEST(Distributions, Weibull) {
    RandomStream s(9, 4, 0);
    const double k = 0.8, lambda = 2.0;
    const auto [m, v] = moments(kDraws, [&] { return s.weibull(k, lambda); });
    const double g1 = std::tgamma(1 + 1 / k), g2 = std::tgamma(1 + 2 / k);
    EXPECT_NEAR(m, lambda * g1, 0.02);
    EXPECT_NEAR(v, lambda * lambda * (g2 - g1 * g1), 0.2);
}

TEST(Distributions, WeibullShapeOneIsExponential) {
    RandomStream a(5, 4, 1), b(5, 4, 1);
    for (int i = 0; i < 1000; ++i) {
        EXPECT_NEAR(a.weibull(1.0, 3.0), b.exponential(3.0), 1e-12);
    }
}

TEST(Distributions, PoissonSmallAndLargeMeans) {
    for (double mean : {0.5, 4.0, 11.9, 12.0, 30.0, 1000.0}) {
        RandomStream s(9, 5, static_cast<std::uint32_t>(mean * 10));
        const auto [m, v] =
            moments(kDraws, [&] { return static_cast<double>(s.poisson(mean)); });
        const double se = std::sqrt(mean / kDraws);
        EXPECT_NEAR(m, mean, 6 * se) << mean;
        EXPECT_NEAR(v / mean, 1.0, 0.02) << mean;
    }
}

TEST(Distributions, Geometric) {
    RandomStream s(9, 6, 0);
    const double p = 0.2;
    const auto [m, v] = moments(kDraws, [&] { return static_cast<double>(s.geometric(p)); });
    EXPECT_NEAR(m, (1 - p) / p, 0.04);
    EXPECT_NEAR(v, (1 - p) / (p * p), 0.6);
    EXPECT_EQ(s.geometric(1.0), 0u);
}

TEST(Distributions, NeighbouringEntitiesAreUncorrelated) {
    // Correlation of the first uniforms of entities e and e + 1 over 200,000 entities.
    const int n = 200'000;
    double sx = 0, sy = 0, sxy = 0, sxx = 0, syy = 0;
    for (int e = 0; e < n; ++e) {
        const double x = RandomStream(3, 0, static_cast<std::uint32_t>(e)).uniform();
        const double y = RandomStream(3, 0, static_cast<std::uint32_t>(e + 1)).uniform();
        sx += x;
        sy += y;
        sxy += x * y;
        sxx += x * x;
        syy += y * y;
    }
    const double cov = sxy / n - (sx / n) * (sy / n);
    const double corr = cov / std::sqrt((sxx / n - sx * sx / n / n) * (syy / n - sy * sy / n / n));
    EXPECT_LT(std::fabs(corr), 0.012); // 5 / sqrt(n)
}

} // namespace
} // namespace trnsim::engine
