// Request sizes and arrivals: moments of every distribution against their closed forms,
// clamping, prefixes, and independence of each request's draws.
#include "trnsim/core/error.hpp"
#include "trnsim/serving/request.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace trnsim::serving {
namespace {

struct Moments {
    double mean = 0.0, sd = 0.0;
};

template <class F>
Moments moments(int n, F&& draw) {
    double s = 0.0, s2 = 0.0;
    for (int i = 0; i < n; ++i) {
        const double x = draw(i);
        s += x;
        s2 += x * x;
    }
    const double m = s / n;
    return {m, std::sqrt(std::max(0.0, s2 / n - m * m))};
}

std::int64_t draw(const TokenDistribution& d, int i, std::int64_t max_context = 0) {
    engine::RandomStream s = request_stream(42, ServingStream::input_tokens, i);
    return draw_tokens(d, max_context, s);
}

// Normal(500, 100), far from the clamps: mean and sd within 4 standard errors of 200,000
// draws (mean: 100 / sqrt(2e5) = 0.22; sd: 100 / sqrt(4e5) = 0.16; rounding adds 1/12 to the
// variance).
TEST(TokenDistribution, NormalMoments) {
    const TokenDistribution d{TokenDistribution::Kind::normal, 500, 100, 1, 0, {}};
    const Moments m = moments(200000, [&](int i) { return static_cast<double>(draw(d, i)); });
    EXPECT_NEAR(m.mean, 500.0, 0.9);
    EXPECT_NEAR(m.sd, 100.0, 0.7);
}

// Lognormal with the mean and sd of the tokens given (1000, 800): the underlying normal has
// sigma^2 = ln(1 + 0.64) and the draws keep mean 1000 and sd 800. The standard error of the
// mean is 800 / sqrt(4e5) = 1.3; the sd of a lognormal converges slowly (heavy tail): 3%.
TEST(TokenDistribution, LognormalMomentsOfTheTokens) {
    const TokenDistribution d{TokenDistribution::Kind::lognormal, 1000, 800, 1, 1'000'000, {}};
    const Moments m = moments(400000, [&](int i) { return static_cast<double>(draw(d, i)); });
    EXPECT_NEAR(m.mean, 1000.0, 6.0);
    EXPECT_NEAR(m.sd, 800.0, 24.0);
}

// Uniform integers 10..19: each value with frequency 1/10 (100,000 draws: sd of a count
// sqrt(1e5 x 0.1 x 0.9) = 95; 5 sd = 475), nothing outside.
TEST(TokenDistribution, UniformIntegersAreEquallyLikely) {
    const TokenDistribution d{TokenDistribution::Kind::uniform, 10, 19, 1, 0, {}};
    std::map<std::int64_t, int> count;
    for (int i = 0; i < 100000; ++i) {
        ++count[draw(d, i)];
    }
    ASSERT_EQ(count.size(), 10u);
    EXPECT_EQ(count.begin()->first, 10);
    EXPECT_EQ(count.rbegin()->first, 19);
    for (const auto& [v, c] : count) {
        EXPECT_NEAR(c, 10000, 475) << v;
    }
}

TEST(TokenDistribution, EmpiricalFixedAndClamps) {
    const TokenDistribution e{TokenDistribution::Kind::empirical, 0, 0, 1, 0, {7, 7, 100}};
    int sevens = 0;
    for (int i = 0; i < 30000; ++i) {
        const std::int64_t v = draw(e, i);
        ASSERT_TRUE(v == 7 || v == 100);
        sevens += v == 7;
    }
    EXPECT_NEAR(sevens, 20000, 400); // 2/3; sd sqrt(3e4 x 2/9) = 82
    const TokenDistribution f{TokenDistribution::Kind::fixed, 128, 0, 1, 0, {}};
    EXPECT_EQ(draw(f, 3), 128);
    EXPECT_EQ(draw(f, 3, 100), 100); // max 0: max_context
    const TokenDistribution g{TokenDistribution::Kind::normal, 0, 1000, 5, 60, {}};
    for (int i = 0; i < 1000; ++i) {
        const std::int64_t v = draw(g, i);
        ASSERT_GE(v, 5);
        ASSERT_LE(v, 60);
    }
}

// Gamma(shape k, scale s): mean k s, variance k s^2. Shapes 0.25 (the k < 1 branch), 1 and 5;
// 200,000 draws each; bounds of about 5 standard errors (the variance estimate of a gamma
// has relative sd sqrt((2 + 6 / k) / n)).
TEST(Gamma, MarsagliaTsangMoments) {
    for (double k : {0.25, 1.0, 5.0}) {
        const double scale = 3.0;
        const Moments m = moments(200000, [&](int i) {
            engine::RandomStream s = request_stream(7, ServingStream::arrival_gap, i);
            return draw_gamma(k, scale, s);
        });
        const double mean = k * scale, var = k * scale * scale;
        const double rel_var = std::sqrt((2.0 + 6.0 / k) / 200000.0);
        EXPECT_NEAR(m.mean, mean, 5.0 * std::sqrt(var / 200000.0)) << k;
        EXPECT_NEAR(m.sd * m.sd, var, 5.0 * rel_var * var) << k;
    }
}

RequestSpec open_spec(ArrivalSpec::Kind kind, double rate, double cv) {
    RequestSpec r;
    r.input = {TokenDistribution::Kind::fixed, 100, 0, 1, 0, {}};
    r.output = {TokenDistribution::Kind::fixed, 10, 0, 1, 0, {}};
    r.arrival.kind = kind;
    r.arrival.rate_per_s = rate;
    r.arrival.gamma_cv = cv;
    r.count = 100000;
    return r;
}

// Inter-arrival gaps: Poisson at 50/s has mean 20 ms and cv 1; gamma at cv 3 keeps the mean
// and has sd 3 x 20 ms. (Means within 5 standard errors; the gamma sd to 8%, heavy tail.)
TEST(Arrivals, PoissonAndGammaGaps) {
    for (auto [kind, cv] : {std::pair{ArrivalSpec::Kind::poisson, 1.0},
                            std::pair{ArrivalSpec::Kind::gamma, 3.0},
                            std::pair{ArrivalSpec::Kind::gamma, 0.5}}) {
        const RequestSource src(open_spec(kind, 50.0, cv), 4096, 3);
        SimTime t = src.next_arrival(0, SimTime::zero());
        EXPECT_EQ(t, SimTime::zero());
        const Moments m = moments(100000, [&](int i) {
            const SimTime next = src.next_arrival(static_cast<std::uint64_t>(i) + 1, t);
            const double gap = (next - t).seconds();
            t = next;
            return gap;
        });
        EXPECT_NEAR(m.mean, 0.02, 5.0 * 0.02 * cv / std::sqrt(1e5)) << cv;
        EXPECT_NEAR(m.sd / m.mean, cv, 0.08 * cv) << cv;
    }
}

// A request's sizes are a pure function of (seed, index): the same whatever else was drawn,
// and different seeds give different requests.
TEST(RequestSource, RequestsArePureFunctionsOfTheirIndex) {
    RequestSpec r = open_spec(ArrivalSpec::Kind::poisson, 10, 1);
    r.input = {TokenDistribution::Kind::lognormal, 800, 600, 1, 0, {}};
    r.output = {TokenDistribution::Kind::uniform, 1, 500, 1, 0, {}};
    const RequestSource a(r, 8192, 5), b(r, 8192, 5), c(r, 8192, 6);
    for (std::uint64_t i = 0; i < 50; ++i) {
        (void)b.request(1000 + i, SimTime::zero()); // other draws in between change nothing
    }
    int differ = 0;
    for (std::uint64_t i = 0; i < 200; ++i) {
        const Request x = a.request(i, SimTime::zero()), y = b.request(i, SimTime::zero());
        EXPECT_EQ(x.input_tokens, y.input_tokens);
        EXPECT_EQ(x.output_tokens, y.output_tokens);
        differ += c.request(i, SimTime::zero()).input_tokens != x.input_tokens;
    }
    EXPECT_GT(differ, 190);
}

// Prefixes go in front of the drawn input with the given fraction; max_context cuts the
// input to max_context - 1 and the output to what is left.
TEST(RequestSource, PrefixesAndTheCompiledMaximum) {
    RequestSpec r = open_spec(ArrivalSpec::Kind::poisson, 10, 1);
    r.prefix = {4, 50, 0.25};
    const RequestSource src(r, 4096, 2);
    int with = 0;
    std::map<std::uint32_t, int> groups;
    for (std::uint64_t i = 0; i < 40000; ++i) {
        const Request q = src.request(i, SimTime::zero());
        if (q.prefix_id != 0) {
            ++with;
            ++groups[q.prefix_id];
            EXPECT_EQ(q.input_tokens, 150);
            EXPECT_EQ(q.prefix_tokens, 50);
        } else {
            EXPECT_EQ(q.input_tokens, 100);
        }
    }
    EXPECT_NEAR(with, 10000, 450); // sd sqrt(4e4 x 0.25 x 0.75) = 87
    EXPECT_EQ(groups.size(), 4u);

    RequestSpec big = open_spec(ArrivalSpec::Kind::poisson, 10, 1);
    big.input = {TokenDistribution::Kind::fixed, 5000, 0, 1, 10000, {}};
    big.output = {TokenDistribution::Kind::fixed, 300, 0, 1, 0, {}};
    const Request q = RequestSource(big, 4096, 1).request(0, SimTime::zero());
    EXPECT_EQ(q.input_tokens, 4095);
    EXPECT_EQ(q.output_tokens, 1);
}

TEST(RequestSource, TraceArrivalsRepeatPastTheEnd) {
    auto t = std::make_shared<AzureTrace>(
        parse_azure_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                          "2023-11-16 00:00:00.0,10,2\n"
                          "2023-11-16 00:00:01.0,20,3\n"
                          "2023-11-16 00:00:03.0,30,0\n",
                          "t.csv", 2.0));
    RequestSpec r;
    r.input.kind = TokenDistribution::Kind::trace;
    r.output.kind = TokenDistribution::Kind::trace;
    r.arrival.kind = ArrivalSpec::Kind::trace;
    r.count = 7;
    const RequestSource src(r, 4096, 1, t);
    // Speed-up 2: 0, 0.5, 1.5 s; the period is span + mean gap = 1.5 + 0.75 = 2.25 s.
    const std::int64_t expect[] = {0, 500'000'000, 1'500'000'000, 2'250'000'000,
                                   2'750'000'000, 3'750'000'000, 4'500'000'000};
    SimTime prev;
    for (std::uint64_t i = 0; i < 7; ++i) {
        prev = src.next_arrival(i, prev);
        EXPECT_EQ(prev.ns(), expect[i]) << i;
        EXPECT_TRUE(src.issued(i, prev));
    }
    EXPECT_FALSE(src.issued(7, prev));
    EXPECT_EQ(src.request(4, prev).input_tokens, 20);
    EXPECT_EQ(src.request(2, prev).output_tokens, 1); // 0 generated tokens: raised to 1

    RequestSpec none = r;
    none.count = 0;
    EXPECT_EQ(RequestSource(none, 4096, 1, t).count(), 3u); // neither count nor duration
}

TEST(RequestSource, RejectsWhatCannotMakeRequests) {
    RequestSpec r = open_spec(ArrivalSpec::Kind::poisson, 0.0, 1);
    EXPECT_THROW(RequestSource(r, 4096, 1), InputError);
    r = open_spec(ArrivalSpec::Kind::gamma, 5.0, 0.0);
    EXPECT_THROW(RequestSource(r, 4096, 1), InputError);
    r = open_spec(ArrivalSpec::Kind::poisson, 5.0, 1);
    r.count = 0;
    EXPECT_THROW(RequestSource(r, 4096, 1), InputError);
    r = open_spec(ArrivalSpec::Kind::poisson, 5.0, 1);
    r.arrival.kind = ArrivalSpec::Kind::trace;
    EXPECT_THROW(RequestSource(r, 4096, 1), InputError);
    r = open_spec(ArrivalSpec::Kind::poisson, 5.0, 1);
    r.prefix = {2, 4095, 1.0};
    EXPECT_THROW(RequestSource(r, 4096, 1), InputError);
}

} // namespace
} // namespace trnsim::serving
