#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace trnsim::config {
namespace {

TEST(ChipPresets, Trn2MatchesTheReference) {
    const compute::ChipSpec c = load_chip("trn2");
    EXPECT_EQ(c.physical_cores, 8);
    EXPECT_EQ(c.ranks_per_chip(2), 4);
    EXPECT_EQ(c.ranks_per_chip(1), 8);
    EXPECT_EQ(c.hbm_capacity.count(), std::int64_t{96} << 30);
    EXPECT_DOUBLE_EQ(c.hbm_bandwidth.bytes_per_s(), 2.9e12);
    EXPECT_DOUBLE_EQ(c.peak_bf16.per_s(), 667e12);
    EXPECT_DOUBLE_EQ(c.peak_fp8.per_s(), 1299e12);
    // 128 x 128 x 2 FLOP x 2.4 GHz = 78.6 TFLOPS per core (trainium.md §1).
    EXPECT_NEAR(c.tensor_peak_per_core(compute::Precision::bf16).per_s(), 78.64e12, 0.01e12);
    EXPECT_DOUBLE_EQ(c.efa_bandwidth_per_chip().bits_per_s(), 200e9);
    ASSERT_TRUE(c.ultraserver.has_value());
    EXPECT_EQ(c.chips_per_ultraserver(), 64);
    EXPECT_DOUBLE_EQ(c.instance.price_per_hour.usd(), 35.76);
}

TEST(ChipPresets, Trn1MatchesTheReference) {
    const compute::ChipSpec c = load_chip("trn1");
    EXPECT_EQ(c.ranks_per_chip(1), 2);
    EXPECT_EQ(c.hbm_capacity.count(), std::int64_t{32} << 30);
    EXPECT_DOUBLE_EQ(c.peak_bf16.per_s(), 190e12);
    // 800 Gbps per instance over 16 chips.
    EXPECT_DOUBLE_EQ(c.efa_bandwidth_per_chip().bits_per_s(), 50e9);
    EXPECT_FALSE(c.ultraserver.has_value());
    EXPECT_NEAR(c.tensor_peak_per_core(compute::Precision::bf16).per_s(), 91.75e12, 0.01e12);
}

TEST(ChipPresets, EveryPresetLoads) {
    const auto names = chip_presets();
    EXPECT_GE(names.size(), 2u);
    for (const auto& n : names) {
        EXPECT_NO_THROW(load_chip(n)) << n;
    }
}

TEST(ModelPresets, EveryPresetLoads) {
    const auto names = model_presets();
    for (const char* required : {"llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
                                 "mixtral-8x7b", "deepseek-v3"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
    }
    for (const auto& n : names) {
        EXPECT_NO_THROW(load_model(n)) << n;
    }
}

TEST(ChipFiles, ErrorsPointIntoTheChipFile) {
    const auto dir = std::filesystem::temp_directory_path() / "trnsim-presets-test";
    std::filesystem::create_directories(dir);
    const auto file = dir / "bad-chip.yaml";
    {
        std::ifstream in(std::filesystem::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn2.yaml");
        std::stringstream text;
        text << in.rdbuf();
        std::string s = text.str();
        s.replace(s.find("bandwidth: 2.9TB/s"), 18, "bandwith: 2.9TB/s");
        std::ofstream(file) << s;
    }
    try {
        load_chip(file.string());
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "hbm.bandwith");
        EXPECT_EQ(e.location().file, file.string());
        EXPECT_NE(e.message().find("did you mean 'bandwidth'"), std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

TEST(ChipFiles, SemanticChecks) {
    const auto dir = std::filesystem::temp_directory_path() / "trnsim-presets-test2";
    std::filesystem::create_directories(dir);
    const auto file = dir / "torus.yaml";
    {
        std::ifstream in(std::filesystem::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn2.yaml");
        std::stringstream text;
        text << in.rdbuf();
        std::string s = text.str();
        s.replace(s.find("torus: [4, 4]"), 13, "torus: [4, 3]");
        std::ofstream(file) << s;
    }
    try {
        load_chip(file.string());
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "instance.torus");
        EXPECT_GT(e.location().line, 1);
    }
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace trnsim::config
