// TPOT of a one-token output is undefined, not zero (issue 28 SW7): it is NaN in the record,
// left out of the TPOT percentiles, and such a request is judged on TTFT alone.
#include "trnsim/serving/metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace trnsim::serving {
namespace {

RequestRecord record(std::int64_t first_ns, std::int64_t finish_ns, std::int32_t out) {
    RequestRecord r;
    r.arrival = SimTime::from_ns(0);
    r.first_token = SimTime::from_ns(first_ns);
    r.finish = SimTime::from_ns(finish_ns);
    r.input_tokens = 100;
    r.output_tokens = out;
    return r;
}

// Every output one token, TTFT 0.1 s against an objective of 1 s, TPOT objective 1 ns: the
// TPOT figures are undefined (they used to be 0, meeting the 1 ns objective), and each
// request meets the SLO on its TTFT alone.
TEST(TpotUndefined, OneTokenOutputsHaveNoTpot) {
    const RequestRecord r = record(100'000'000, 100'000'000, 1);
    EXPECT_TRUE(std::isnan(r.tpot_s()));
    SloSpec slo;
    slo.ttft = Duration::from_ns(1'000'000'000);
    slo.tpot = Duration::from_ns(1);
    const std::vector<RequestRecord> records = {r, r, r};
    const ServingSummary s = summarize(records, slo);
    EXPECT_EQ(s.requests, 3u);
    EXPECT_EQ(s.one_token, 3u);
    EXPECT_TRUE(std::isnan(s.tpot_p50.seconds()));
    EXPECT_TRUE(std::isnan(s.tpot_p99.seconds()));
    EXPECT_TRUE(std::isnan(s.tpot_mean.seconds()));
    EXPECT_EQ(s.met_slo, 3u);
    EXPECT_DOUBLE_EQ(s.ttft_p50.seconds(), 0.1);
}

// Mixed: two requests of 11 tokens finishing 1 s and 2 s after their first token have TPOT
// 0.1 s and 0.2 s; the one-token request is left out of the percentiles (p50 of {0.1, 0.2} is
// 0.15) and, with a TPOT objective of 0.15 s, the SLO is met by the one-token request (TTFT)
// and the 0.1 s one: 2 of 3.
TEST(TpotUndefined, OneTokenRequestsAreLeftOutOfTheTpotFigures) {
    SloSpec slo;
    slo.ttft = Duration::from_ns(1'000'000'000);
    slo.tpot = Duration::from_ns(150'000'000);
    const std::vector<RequestRecord> records = {record(100'000'000, 100'000'000, 1),
                                                record(100'000'000, 1'100'000'000, 11),
                                                record(100'000'000, 2'100'000'000, 11)};
    const ServingSummary s = summarize(records, slo);
    EXPECT_EQ(s.one_token, 1u);
    EXPECT_NEAR(s.tpot_p50.seconds(), 0.15, 1e-12);
    EXPECT_NEAR(s.tpot_mean.seconds(), 0.15, 1e-12);
    EXPECT_EQ(s.met_slo, 2u);
}

} // namespace
} // namespace trnsim::serving
