// Arrivals that cannot fit in simulated time are refused up front (issue 28 IE1, SW1), a gap
// too long for an int64 of nanoseconds saturates instead of wrapping into the past, and trace
// dates outside what nanoseconds since 1970 hold are named as such (UM3).
#include "trnsim/core/error.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/trace.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace trnsim::serving {
namespace {

RequestSpec poisson(double rate_per_s, std::int64_t count) {
    RequestSpec r;
    r.input.a = 100;
    r.output.a = 10;
    r.arrival.kind = ArrivalSpec::Kind::poisson;
    r.arrival.rate_per_s = rate_per_s;
    r.count = count;
    return r;
}

std::string refusal(const RequestSpec& r, std::shared_ptr<const AzureTrace> trace = nullptr) {
    try {
        const RequestSource source(r, 4096, 1, std::move(trace));
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

// 50 Poisson arrivals: 49 gaps of mean 1 / r, standard deviation sqrt(49) / r = 7 / r, so the
// check reaches (49 + 6 x 7) / r = 91 / r and must stay within kArrivalHorizonNs (2^63 / 2 ns,
// 4.61e9 s): the slowest rate accepted is 91 / 4.61e9 s = 1.97e-8/s. 2% either side of it.
TEST(ArrivalSpan, PoissonCountMustFitInHalfTheRepresentableTime) {
    const double line = 91.0 / (static_cast<double>(kArrivalHorizonNs) * 1e-9);
    EXPECT_NEAR(line, 1.973e-8, 0.001e-8);
    EXPECT_EQ(refusal(poisson(line * 1.02, 50)), "");
    const std::string why = refusal(poisson(line * 0.98, 50));
    EXPECT_EQ(why.rfind("workload.requests.arrival.rate: 50 requests at 1.93378e-08/s arrive over "
                        "80.3 years on average (149 years six standard deviations out)",
                        0),
              0u)
        << why;
    // Issue 28's cases: 1e-9/s (IE1, an overflow) and 1e-11/s (SW1, 1 of 50 served).
    EXPECT_NE(refusal(poisson(1e-9, 50)), "");
    EXPECT_NE(refusal(poisson(1e-11, 50)), "");
    // One request arrives at time 0 whatever the rate; a duration bounds the arrivals itself.
    EXPECT_EQ(refusal(poisson(1e-11, 1)), "");
    RequestSpec by_duration = poisson(1e-11, 0);
    by_duration.duration = Duration::from_ns(3'600'000'000'000);
    EXPECT_EQ(refusal(by_duration), "");
}

// A trace of two rows 100 years apart: repeats shift by span + mean gap = 200 years, so the
// third request (pass 1, row 0) arrives at 200 years, past the 146 years allowed; two
// requests end at 100 years.
TEST(ArrivalSpan, TraceRepeatsMustFitToo) {
    auto trace = std::make_shared<AzureTrace>();
    const std::int64_t century = static_cast<std::int64_t>(100 * kSecondsPerYear) * 1'000'000'000;
    trace->arrival = {Duration::zero(), Duration::from_ns(century)};
    trace->input_tokens = {100, 100};
    trace->output_tokens = {10, 10};
    RequestSpec r;
    r.input.a = 100;
    r.output.a = 10;
    r.arrival.kind = ArrivalSpec::Kind::trace;
    r.count = 2;
    EXPECT_EQ(refusal(r, trace), "");
    r.count = 3;
    EXPECT_EQ(refusal(r, trace).rfind("workload.requests.count: 3 requests replay the trace's 2 "
                                      "rows over 300 years",
                                      0),
              0u)
        << refusal(r, trace);
}

// Duration-limited arrivals at a tiny rate: the second gap is beyond an int64 of ns; it
// saturates (not issued) instead of wrapping to a time in the past.
TEST(ArrivalSpan, AGapBeyondRepresentableTimeSaturates) {
    RequestSpec r = poisson(1e-11, 0);
    r.duration = Duration::from_ns(3'600'000'000'000);
    const RequestSource source(r, 4096, 1);
    const SimTime first = source.next_arrival(0, SimTime::zero());
    const SimTime second = source.next_arrival(1, first);
    EXPECT_EQ(second, SimTime::max());
    EXPECT_TRUE(source.issued(0, first));
    EXPECT_FALSE(source.issued(1, second));
}

std::string trace_refusal(const std::string& stamp) {
    try {
        (void)parse_azure_trace("TIMESTAMP,ContextTokens,GeneratedTokens\n" + stamp + ",374,44\n",
                                "t.csv");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

// Nanoseconds since 1970 in an int64 end at 2^63 - 1 ns = 2262-04-11 23:47:16.854775807: the
// last 100 ns step of a seven-digit fraction inside is .8547758; .8547759 is past it, as are
// 1900 and 2300 (valid dates that were called malformed). A malformed date stays malformed.
TEST(TraceDates, ValidDatesOutsideTheRangeAreNamedAsSuch) {
    EXPECT_EQ(trace_refusal("1970-01-01 00:00:00.0000000"), "");
    EXPECT_EQ(trace_refusal("2262-04-11 23:47:16.8547758"), "");
    for (const char* stamp : {"1900-01-01 00:00:00.0000000", "1969-12-31 23:59:59.9999999",
                              "2262-04-11 23:47:16.8547759", "2300-01-01 00:00:00.0000000"}) {
        const std::string why = trace_refusal(stamp);
        EXPECT_EQ(why.rfind("workload.requests.arrival.trace: t.csv:2: TIMESTAMP '" +
                                std::string(stamp) +
                                "' is a valid date outside the ones a trace can hold (1970-01-01 "
                                "to 2262-04-11",
                            0),
                  0u)
            << why;
    }
    EXPECT_NE(trace_refusal("2023-13-01 00:00:00.0000000").find("malformed TIMESTAMP"),
              std::string::npos);
}

} // namespace
} // namespace trnsim::serving
