// Percentiles and the summary figures, by hand.
#include "trnsim/serving/metrics.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace trnsim::serving {
namespace {

// Type 7: values 1, 2, 3, 4 (n = 4): p50 h = 1.5 -> 2.5; p90 h = 2.7 -> 3.7; p99 h = 2.97 ->
// 3.97; p0 -> 1, p100 -> 4.
TEST(Percentile, LinearBetweenClosestRanks) {
    const std::vector<double> v = {1, 2, 3, 4};
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.9), 3.7);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.99), 3.97);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 0.0), 1.0);
    EXPECT_DOUBLE_EQ(percentile_sorted(v, 1.0), 4.0);
    EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{7}, 0.99), 7.0);
    EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{}, 0.5), 0.0);
}

RequestRecord rec(std::int64_t arrival_ms, std::int64_t first_ms, std::int64_t finish_ms,
                  int out) {
    RequestRecord r;
    r.arrival = SimTime::from_ns(arrival_ms * 1'000'000);
    r.first_token = SimTime::from_ns(first_ms * 1'000'000);
    r.finish = SimTime::from_ns(finish_ms * 1'000'000);
    r.output_tokens = out;
    return r;
}

// Three requests (times in ms): A 0 -> 100 -> 1100, 11 tokens: TTFT 0.1 s, TPOT 0.1 s;
// B 500 -> 900 -> 2900, 21 tokens: TTFT 0.4, TPOT 0.1; C 1000 -> 1050 -> 1050, 1 token:
// TTFT 0.05, no TPOT. SLO TTFT 0.3 s, TPOT 0.1 s: A and C meet it, B does not.
// Span 0 -> 2.9 s: 33 tokens / 2.9 s, goodput 2 / 2.9 per s; TPOT p50 over {0.1, 0.1} = 0.1.
TEST(Summary, HandCase) {
    const std::vector<RequestRecord> rs = {rec(0, 100, 1100, 11), rec(500, 900, 2900, 21),
                                           rec(1000, 1050, 1050, 1), RequestRecord{}};
    SloSpec slo;
    slo.ttft = Duration::from_ns(300'000'000);
    slo.tpot = Duration::from_ns(100'000'000);
    const ServingSummary s = summarize(rs, slo);
    EXPECT_EQ(s.requests, 3u);
    EXPECT_EQ(s.unfinished, 1u);
    EXPECT_EQ(s.output_tokens, 33u);
    EXPECT_EQ(s.met_slo, 2u);
    EXPECT_NEAR(s.ttft_p50.seconds(), 0.1, 1e-12);
    EXPECT_NEAR(s.ttft_p99.seconds(), 0.1 + 0.98 * 0.3, 1e-12); // h = 1.98 over {0.05, 0.1, 0.4}
    EXPECT_NEAR(s.tpot_p50.seconds(), 0.1, 1e-12);
    EXPECT_NEAR(s.e2e_p50.seconds(), 1.1, 1e-12); // E2E {1.1, 2.4, 0.05} sorted: 0.05, 1.1, 2.4
    EXPECT_NEAR(s.span.seconds(), 2.9, 1e-12);
    EXPECT_NEAR(s.output_tokens_per_s, 33 / 2.9, 1e-9);
    EXPECT_NEAR(s.goodput_requests_per_s, 2 / 2.9, 1e-12);
    EXPECT_NEAR(s.slo_attainment, 2.0 / 3.0, 1e-12);
}

// The summary selects order statistics without sorting: the same values as percentile_sorted
// over the sorted latencies (random TTFTs with many ties).
TEST(Summary, SelectionEqualsSorting) {
    std::vector<RequestRecord> rs;
    std::vector<double> ttft;
    std::uint64_t x = 12345;
    for (int i = 0; i < 5001; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const auto ms = static_cast<std::int64_t>((x >> 33) % 700);
        rs.push_back(rec(0, ms, ms + 10, 2));
        ttft.push_back(rs.back().ttft_s());
    }
    std::sort(ttft.begin(), ttft.end());
    const ServingSummary s = summarize(rs, SloSpec{});
    EXPECT_EQ(s.ttft_p50.seconds(), percentile_sorted(ttft, 0.50));
    EXPECT_EQ(s.ttft_p90.seconds(), percentile_sorted(ttft, 0.90));
    EXPECT_EQ(s.ttft_p99.seconds(), percentile_sorted(ttft, 0.99));
    EXPECT_EQ(s.met_slo, 5001u); // zero bounds: no bound
}

// Four replicas (times in ms, E2E = finish - arrival):
//   replica 0: 0 -> 100 -> 1100 (11 tokens, TPOT 0.1), 0 -> 100 -> 900 (9 tokens, TPOT 0.1):
//              E2E 1.1 and 0.9, mean 1.0 s, TPOT p50 0.1 s
//   replica 1: 0 -> 200 -> 3200 (11 tokens, TPOT 0.3): mean 3.2 s, TPOT p50 0.3 s
//   replica 2: 0 -> 100 -> 1300 (7 tokens, TPOT 0.2): mean 1.3 s, TPOT p50 0.2 s
//   replica 3: 0 -> 50 -> 50 (1 token: no TPOT), unfinished: mean 0.05 s, TPOT p50 0
// Means sorted {0.05, 1.0, 1.3, 3.2}: median (1.0 + 1.3) / 2 = 1.15 s; replica 1 is the
// slowest, 3.2 / 1.15 = 2.7826...; TPOT p50s sorted {0, 0.1, 0.2, 0.3}: median 0.15 s.
TEST(SlowestReplica, HandCase) {
    std::vector<RequestRecord> rs = {rec(0, 100, 1100, 11), rec(0, 100, 900, 9),
                                     rec(0, 200, 3200, 11), rec(0, 100, 1300, 7),
                                     rec(0, 50, 50, 1), RequestRecord{}};
    rs[0].replica = 0;
    rs[1].replica = 0;
    rs[2].replica = 1;
    rs[3].replica = 2;
    rs[4].replica = 3;
    rs[5].replica = 1; // unfinished: left out
    rs[5].finish = SimTime::from_ns(-1);
    const std::optional<SlowestReplica> s = slowest_replica(rs);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->replica, 1u);
    EXPECT_EQ(s->requests, 1u);
    EXPECT_EQ(s->replicas, 4u);
    EXPECT_NEAR(s->mean_e2e.seconds(), 3.2, 1e-12);
    EXPECT_NEAR(s->median_e2e.seconds(), 1.15, 1e-12);
    EXPECT_NEAR(s->slowdown, 3.2 / 1.15, 1e-12);
    EXPECT_NEAR(s->tpot_p50.seconds(), 0.3, 1e-12);
    EXPECT_NEAR(s->fleet_tpot_p50.seconds(), 0.15, 1e-12);
    // Ties go to the lowest index; no finished request gives nothing.
    const std::vector<RequestRecord> tie = {rec(0, 100, 1100, 11), rec(0, 100, 1100, 11)};
    std::vector<RequestRecord> t = tie;
    t[0].replica = 5;
    t[1].replica = 2;
    EXPECT_EQ(slowest_replica(t)->replica, 2u);
    EXPECT_DOUBLE_EQ(slowest_replica(t)->slowdown, 1.0);
    EXPECT_FALSE(slowest_replica(std::vector<RequestRecord>{RequestRecord{}}));
}

} // namespace
} // namespace trnsim::serving
