#include "trnsim/config/units.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace trnsim::config {
namespace {

TEST(ParseDuration, AllUnits) {
    EXPECT_EQ(parse_duration("850ns").ns(), 850);
    EXPECT_EQ(parse_duration("15us").ns(), 15'000);
    EXPECT_EQ(parse_duration("2.5ms").ns(), 2'500'000);
    EXPECT_EQ(parse_duration("3s").ns(), 3'000'000'000);
    EXPECT_EQ(parse_duration("30min").ns(), 1'800'000'000'000);
    EXPECT_EQ(parse_duration("2.5h").ns(), 9'000'000'000'000);
    EXPECT_EQ(parse_duration("1d").ns(), 86'400'000'000'000);
    EXPECT_EQ(parse_duration("1w").ns(), 604'800'000'000'000);
    EXPECT_EQ(parse_duration("1y").ns(), 31'557'600'000'000'000); // 365.25 d
    EXPECT_EQ(parse_duration(" 2 h ").ns(), 7'200'000'000'000);
}

TEST(ParseDuration, Errors) {
    EXPECT_THROW(parse_duration("30"), UnitError);         // no unit
    EXPECT_THROW(parse_duration("30 minutes"), UnitError); // unknown unit
    EXPECT_THROW(parse_duration("min"), UnitError);        // no number
    EXPECT_THROW(parse_duration(""), UnitError);
    EXPECT_THROW(parse_duration("300y"), UnitError); // beyond 292 years
    try {
        parse_duration("5 hours");
        FAIL();
    } catch (const UnitError& e) {
        EXPECT_NE(std::string(e.what()).find("ns us ms s min h d w y"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("'hours'"), std::string::npos);
    }
}

TEST(ParseBytes, DecimalAndBinary) {
    EXPECT_EQ(parse_bytes("512B").count(), 512);
    EXPECT_EQ(parse_bytes("1.5KB").count(), 1500);
    EXPECT_EQ(parse_bytes("2MB").count(), 2'000'000);
    EXPECT_EQ(parse_bytes("1GB").count(), 1'000'000'000);
    EXPECT_EQ(parse_bytes("1TB").count(), 1'000'000'000'000);
    EXPECT_EQ(parse_bytes("1PB").count(), 1'000'000'000'000'000);
    EXPECT_EQ(parse_bytes("1KiB").count(), 1024);
    EXPECT_EQ(parse_bytes("1MiB").count(), 1'048'576);
    EXPECT_EQ(parse_bytes("96GiB").count(), 103'079'215'104);
    EXPECT_EQ(parse_bytes("2TiB").count(), 2'199'023'255'552);
    EXPECT_EQ(parse_bytes("1PiB").count(), 1'125'899'906'842'624);
}

TEST(ParseBytes, Errors) {
    EXPECT_THROW(parse_bytes("1.5B"), UnitError);   // not whole bytes
    EXPECT_THROW(parse_bytes("96gib"), UnitError);  // case-sensitive
    EXPECT_THROW(parse_bytes("96"), UnitError);     // unit required
    EXPECT_THROW(parse_bytes("1e30B"), UnitError);  // too large
    EXPECT_THROW(parse_bytes("GiB"), UnitError);
}

TEST(ParseBandwidth, BitsAndBytes) {
    EXPECT_DOUBLE_EQ(parse_bandwidth("200Gbps").bytes_per_s(), 25e9);
    EXPECT_DOUBLE_EQ(parse_bandwidth("3.2Tbps").bytes_per_s(), 400e9);
    EXPECT_DOUBLE_EQ(parse_bandwidth("800Gb/s").bytes_per_s(), 100e9);
    EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbps").bytes_per_s(), 12.5e6);
    EXPECT_DOUBLE_EQ(parse_bandwidth("2.9TB/s").bytes_per_s(), 2.9e12);
    EXPECT_DOUBLE_EQ(parse_bandwidth("1024GB/s").bytes_per_s(), 1.024e12);
    EXPECT_DOUBLE_EQ(parse_bandwidth("384GiB/s").bytes_per_s(), 384.0 * 1073741824.0);
    EXPECT_DOUBLE_EQ(parse_bandwidth("1PB/s").bytes_per_s(), 1e15);
    EXPECT_THROW(parse_bandwidth("200G"), UnitError);
    EXPECT_THROW(parse_bandwidth("200GBps"), UnitError);
}

TEST(ParseFlopRate, Prefixes) {
    EXPECT_DOUBLE_EQ(parse_flop_rate("667TFLOPS").per_s(), 667e12);
    EXPECT_DOUBLE_EQ(parse_flop_rate("1.3PFLOPS").per_s(), 1.3e15);
    EXPECT_DOUBLE_EQ(parse_flop_rate("79TFLOP/s").per_s(), 79e12);
    EXPECT_THROW(parse_flop_rate("667T"), UnitError);
}

TEST(ParseFrequencyAndMoney, Values) {
    EXPECT_DOUBLE_EQ(parse_frequency("2.4GHz").hz(), 2.4e9);
    EXPECT_DOUBLE_EQ(parse_frequency("960MHz").hz(), 960e6);
    EXPECT_DOUBLE_EQ(parse_money("35.76USD").usd(), 35.76);
    EXPECT_DOUBLE_EQ(parse_money("35.76 USD").usd(), 35.76);
    EXPECT_DOUBLE_EQ(parse_money("$21.50").usd(), 21.5);
    EXPECT_THROW(parse_money("35.76"), UnitError);
    EXPECT_THROW(parse_money("35.76EUR"), UnitError);
    EXPECT_THROW(parse_money("$"), UnitError);
}

TEST(ParseCount, Suffixes) {
    EXPECT_EQ(parse_count("8192"), 8192);
    EXPECT_EQ(parse_count("15T"), 15'000'000'000'000);
    EXPECT_EQ(parse_count("2.5M"), 2'500'000);
    EXPECT_EQ(parse_count("4K"), 4000);
    EXPECT_EQ(parse_count("1B"), 1'000'000'000);
    EXPECT_EQ(parse_count("1G"), 1'000'000'000);
    EXPECT_EQ(parse_count("1e6"), 1'000'000);
    EXPECT_EQ(parse_count("-3"), -3); // the range check is the caller's
    EXPECT_THROW(parse_count("2.5"), UnitError);
    EXPECT_THROW(parse_count("15X"), UnitError);
    EXPECT_THROW(parse_count("1e30"), UnitError);
    EXPECT_THROW(parse_count("abc"), UnitError);
    EXPECT_THROW(parse_count("nan"), UnitError);
    EXPECT_THROW(parse_count("inf"), UnitError);
}

TEST(ParseCount, PlainIntegersAreExactBeyondTwoToThe53) {
    // 2^53 + 1 has no double: read through one it became 2^53 (issue 15).
    EXPECT_EQ(parse_count("9007199254740993"), 9'007'199'254'740'993);
    EXPECT_EQ(parse_count("+9007199254740993"), 9'007'199'254'740'993);
    EXPECT_EQ(parse_count("-9007199254740993"), -9'007'199'254'740'993);
    EXPECT_EQ(parse_count("9223372036854775807"), INT64_MAX);
    EXPECT_THROW(parse_count("9223372036854775808"), UnitError);
    EXPECT_THROW(parse_count("+-5"), UnitError);
    // A fraction is not a whole number however large (it was rounded within 1e-6).
    EXPECT_THROW(parse_count("1000000.5"), UnitError);
    EXPECT_EQ(parse_count("1.1K"), 1100);
    EXPECT_EQ(parse_count("0.1K"), 100);
}

TEST(ParseSizeList, RangesAndLists) {
    EXPECT_EQ(parse_size_list("1KiB:8KiB"), (std::vector<double>{1024, 2048, 4096, 8192}));
    // The last size is included even when doubling skips it.
    EXPECT_EQ(parse_size_list("1KB:5KB"), (std::vector<double>{1000, 2000, 4000, 5000}));
    EXPECT_EQ(parse_size_list("1MB,16MB, 1GB"), (std::vector<double>{1e6, 16e6, 1e9}));
    EXPECT_THROW(parse_size_list("8KiB:1KiB"), UnitError);
    EXPECT_THROW(parse_size_list("1MB,,2MB"), UnitError);
    EXPECT_THROW(parse_size_list("0B:1KB"), UnitError);
}

TEST(ParseReal, NumbersAndPercent) {
    EXPECT_DOUBLE_EQ(parse_real("0.25"), 0.25);
    EXPECT_DOUBLE_EQ(parse_real("25%"), 0.25);
    EXPECT_DOUBLE_EQ(parse_real("1e-3"), 1e-3);
    EXPECT_THROW(parse_real("25 percent"), UnitError);
    EXPECT_TRUE(parse_bool("true"));
    EXPECT_FALSE(parse_bool("false"));
    EXPECT_THROW(parse_bool("yes"), UnitError);
}

} // namespace
} // namespace trnsim::config
