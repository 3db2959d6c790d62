#include "trnsim/core/format.hpp"

#include <gtest/gtest.h>

namespace trnsim {
namespace {

TEST(Format, Counts) {
    EXPECT_EQ(fmt::count(512), "512");
    EXPECT_EQ(fmt::count(8.03e9), "8.03B");
    EXPECT_EQ(fmt::count(70.55e9), "70.5B");
    EXPECT_EQ(fmt::count(15e12), "15.0T");
    EXPECT_EQ(fmt::count(1234567), "1.23M");
}

TEST(Format, Integers) {
    EXPECT_EQ(fmt::integer(0), "0");
    EXPECT_EQ(fmt::integer(999), "999");
    EXPECT_EQ(fmt::integer(1024), "1,024");
    EXPECT_EQ(fmt::integer(238419), "238,419");
    EXPECT_EQ(fmt::integer(-1234567), "-1,234,567");
}

TEST(Format, Bytes) {
    EXPECT_EQ(fmt::bytes(Bytes(512)), "512 B");
    EXPECT_EQ(fmt::bytes(Bytes(std::int64_t{24} * units::kGiB)), "24.0 GiB");
    EXPECT_EQ(fmt::bytes(Bytes(std::int64_t{3} * units::kTiB / 2)), "1.50 TiB");
}

TEST(Format, Rates) {
    EXPECT_EQ(fmt::bandwidth(Bandwidth::bytes_per_s(2.9e12)), "2.90 TB/s");
    EXPECT_EQ(fmt::bandwidth(Bandwidth::bits_per_s(200e9)), "25.0 GB/s");
    EXPECT_EQ(fmt::flop_rate(FlopRate::per_s(667e12)), "667 TFLOP/s");
}

TEST(Format, Durations) {
    EXPECT_EQ(fmt::seconds(850e-9), "850 ns");
    EXPECT_EQ(fmt::seconds(12.3e-6), "12.3 us");
    EXPECT_EQ(fmt::seconds(4.56e-3), "4.56 ms");
    EXPECT_EQ(fmt::seconds(9.1), "9.10 s");
    EXPECT_EQ(fmt::seconds(750.0), "12.5 min");
    EXPECT_EQ(fmt::seconds(3.4 * 3600.0), "3.40 h");
    EXPECT_EQ(fmt::seconds(25.1 * 86400.0), "25.1 d");
}

TEST(Format, MoneyAndPercent) {
    EXPECT_EQ(fmt::money(Money::usd(35.76)), "$35.76");
    EXPECT_EQ(fmt::money(Money::usd(1379595.4)), "$1,379,595");
    EXPECT_EQ(fmt::percent(0.658), "65.8%");
}

} // namespace
} // namespace trnsim
