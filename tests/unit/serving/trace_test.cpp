// The Azure trace reader: the shipped traces, the speed-up, and malformed files.
#include "trnsim/core/error.hpp"
#include "trnsim/serving/trace.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

namespace trnsim::serving {
namespace {

const std::string kDir = std::string(TRNSIM_SOURCE_DIR) + "/data/azure-llm-inference-2023/";

// Expected values read off the files (first, second and last rows; sums by awk):
//   conv: 2023-11-16 18:15:46.6805900,374,44 / 18:15:50.9951690,396,109 / ... /
//         19:14:08.4025270,197,183: 19,366 rows, span 58 min 21.7219370 s
//   code: 18:17:03.9799600,4808,10 / 18:17:04.0319600,3180,8 / ... / 19:14:19.9280160,549,173
TEST(AzureTrace, ReadsTheShippedTraces) {
    const auto start = std::chrono::steady_clock::now();
    const AzureTrace conv = read_azure_trace(kDir + "conv.csv");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_EQ(conv.size(), 19366u);
    EXPECT_EQ(conv.arrival[0].ns(), 0);
    EXPECT_EQ(conv.arrival[1].ns(), 4'314'579'000);
    EXPECT_EQ(conv.input_tokens[0], 374);
    EXPECT_EQ(conv.output_tokens[0], 44);
    EXPECT_EQ(conv.input_tokens.back(), 197);
    EXPECT_EQ(conv.output_tokens.back(), 183);
    EXPECT_EQ(conv.span_ns(), 3'501'721'937'000);
    std::int64_t in = 0, out = 0;
    for (std::size_t i = 0; i < conv.size(); ++i) {
        in += conv.input_tokens[i];
        out += conv.output_tokens[i];
    }
    EXPECT_EQ(in, 22'361'870);
    EXPECT_EQ(out, 4'088'665);
    EXPECT_LT(seconds, 0.5); // a few ms in Release; generous for sanitizer builds

    const AzureTrace code = read_azure_trace(kDir + "code.csv");
    ASSERT_EQ(code.size(), 8819u);
    EXPECT_EQ(code.arrival[1].ns(), 52'000'000);
    EXPECT_EQ(code.input_tokens[0], 4808);
    EXPECT_EQ(code.span_ns(), 3'435'948'056'000);
}

TEST(AzureTrace, SpeedUpDividesRelativeTimes) {
    const AzureTrace x1 = read_azure_trace(kDir + "conv.csv", 1.0);
    const AzureTrace x4 = read_azure_trace(kDir + "conv.csv", 4.0);
    ASSERT_EQ(x1.size(), x4.size());
    EXPECT_EQ(x4.arrival[1].ns(), 4'314'579'000 / 4);
    EXPECT_EQ(x4.span_ns(), 3'501'721'937'000 / 4 + 0); // divisible: 875,430,484,250
    for (std::size_t i = 0; i < x1.size(); i += 997) {
        EXPECT_NEAR(static_cast<double>(x4.arrival[i].ns()),
                    static_cast<double>(x1.arrival[i].ns()) / 4.0, 0.5);
        EXPECT_EQ(x4.input_tokens[i], x1.input_tokens[i]);
    }
    EXPECT_THROW(read_azure_trace(kDir + "conv.csv", 0.0), InputError);
    EXPECT_THROW(read_azure_trace(kDir + "conv.csv", -2.0), InputError);
}

TEST(AzureTrace, AcceptsLfEndsBomAndMissingFraction) {
    const AzureTrace t = parse_azure_trace(
        "\xEF\xBB\xBFTIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-02-28 23:59:59,10,2\n"
        "2024-02-29 00:00:00.5,0,7\n",
        "t.csv");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t.arrival[1].ns(), 1'500'000'000); // across a leap day: 1.5 s later
    EXPECT_EQ(t.input_tokens[1], 0);
}

/// The message of the InputError that parsing `text` raises ("" when none).
std::string error_of(const std::string& text) {
    try {
        parse_azure_trace(text, "bad.csv");
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "workload.requests.arrival.trace");
        return e.message();
    }
    return "";
}

TEST(AzureTrace, MalformedTracesNameFileAndLine) {
    const std::string h = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n";
    const std::string ok = "2023-11-16 18:15:46.6805900,374,44\r\n";
    struct Case {
        std::string text;
        std::string where; // expected start of the message
        std::string what;  // expected in the message
    };
    const Case cases[] = {
        {"", "bad.csv:1:", "empty"},
        {"time,in,out\n" + ok, "bad.csv:1:", "header"},
        {h, "bad.csv:1:", "no requests"},
        {h + ok + "2023-11-16 18:15:47.0,12\r\n", "bad.csv:3:", "3 columns"},
        {h + ok + "2023-11-16 18:15:47.0,12,3,4\r\n", "bad.csv:3:", "more than 3"},
        {h + ok + "2023-11-16 18:15:47.0,twelve,3\r\n", "bad.csv:3:", "ContextTokens"},
        {h + ok + "2023-11-16 18:15:47.0,12,3.5\r\n", "bad.csv:3:", "GeneratedTokens"},
        {h + ok + "2023-11-16 18:15:47.0,-12,3\r\n", "bad.csv:3:", "negative"},
        {h + ok + "2023-11-16 18:15:47.0,,3\r\n", "bad.csv:3:", "empty"},
        {h + ok + "2023-11-16 18:15:47.0,99999999999,3\r\n", "bad.csv:3:", "too large"},
        {h + ok + "2023-11-16 18:15:45.0,12,3\r\n", "bad.csv:3:", "earlier"},
        {h + ok + "2023-13-16 18:15:47.0,12,3\r\n", "bad.csv:3:", "malformed TIMESTAMP"},
        {h + ok + "2023-02-30 18:15:47.0,12,3\r\n", "bad.csv:3:", "malformed TIMESTAMP"},
        {h + ok + "2023-11-16T18:15:47.0,12,3\r\n", "bad.csv:3:", "malformed TIMESTAMP"},
        {h + ok + "2023-11-16 18:15:47.,12,3\r\n", "bad.csv:3:", "malformed TIMESTAMP"},
        {h + ok + "2023-11-16 24:00:00.0,12,3\r\n", "bad.csv:3:", "malformed TIMESTAMP"},
        {h + ok + "\r\n" + ok, "bad.csv:3:", "3 columns"},
    };
    for (const Case& c : cases) {
        const std::string m = error_of(c.text);
        EXPECT_EQ(m.rfind(c.where, 0), 0u) << "message: " << m;
        EXPECT_NE(m.find(c.what), std::string::npos) << "message: " << m;
    }
}

TEST(AzureTrace, MissingFileIsAnInputError) {
    try {
        read_azure_trace(kDir + "no-such-trace.csv");
        FAIL() << "no error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "workload.requests.arrival.trace");
        EXPECT_NE(e.message().find("no-such-trace.csv: cannot open"), std::string::npos);
    }
}

} // namespace
} // namespace trnsim::serving
