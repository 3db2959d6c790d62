#include "trnsim/config/load.hpp"
#include "support/scratch.hpp"

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

TEST(ChipPresets, Inf2MatchesTheReference) {
    // INF2, INF2I: 12 chips of 2 NeuronCore-v2, 32 GiB each, 192 GiB/s of NeuronLink per chip
    // in a ring, no EFA; the cores are Trainium1's.
    const compute::ChipSpec c = load_chip("inf2");
    const compute::ChipSpec t = load_chip("trn1");
    EXPECT_EQ(c.instance.name, "inf2.48xlarge");
    EXPECT_EQ(c.instance.chips, 12);
    EXPECT_EQ(c.instance.torus, std::vector<int>{12});
    EXPECT_EQ(c.ranks_per_chip(1), 2);
    EXPECT_EQ(c.hbm_capacity.count(), std::int64_t{32} << 30);
    EXPECT_DOUBLE_EQ(c.neuronlink_intra_instance.bytes_per_s(), 192.0 * (1 << 30));
    EXPECT_DOUBLE_EQ(c.instance.efa_bandwidth.bytes_per_s(), 0.0);
    EXPECT_FALSE(c.ultraserver.has_value());
    EXPECT_DOUBLE_EQ(c.instance.price_per_hour.usd(), 12.98);
    EXPECT_DOUBLE_EQ(c.tensor_peak_per_core(compute::Precision::bf16).per_s(),
                     t.tensor_peak_per_core(compute::Precision::bf16).per_s());
    EXPECT_EQ(c.kernel_model.fit(compute::KernelClass::matmul).coefficients,
              t.kernel_model.fit(compute::KernelClass::matmul).coefficients);
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
    for (const char* required :
         {"llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b", "mixtral-8x7b", "deepseek-v3",
          "llama3.3-70b", "llama3.2-1b", "qwen3-32b", "llama2-7b", "llama2-13b", "llama2-70b",
          "mistral-7b", "codellama-13b", "llama3.1-8b-eagle3"}) {
        EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
    }
    for (const auto& n : names) {
        EXPECT_NO_THROW(load_model(n)) << n;
    }
}

/// Writes a copy of the trn2 chip file with one edit into a fresh temporary directory.
std::filesystem::path edited_trn2(const char* dir_name, const std::string& from,
                                  const std::string& to) {
    const auto dir = test::scratch_path(dir_name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::ifstream in(std::filesystem::path(TRNSIM_SOURCE_DIR) / "topologies/chips/trn2.yaml");
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    s.replace(pos, from.size(), to);
    const auto file = dir / "chip.yaml";
    std::ofstream(file) << s;
    return file;
}

TEST(ChipFiles, ErrorsPointIntoTheChipFile) {
    const auto file = edited_trn2("trnsim-presets-test", "bandwidth: 2.9TB/s", "bandwith: 2.9TB/s");
    try {
        load_chip(file.string());
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "hbm.bandwith");
        EXPECT_EQ(e.location().file, file.string());
        EXPECT_NE(e.message().find("did you mean 'bandwidth'"), std::string::npos);
    }
    std::filesystem::remove_all(file.parent_path());
}

TEST(ChipFiles, SemanticChecks) {
    const auto file = edited_trn2("trnsim-presets-test2", "torus: [4, 4]", "torus: [4, 3]");
    try {
        load_chip(file.string());
        FAIL() << "expected an error";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "instance.torus");
        EXPECT_GT(e.location().line, 1);
    }
    std::filesystem::remove_all(file.parent_path());
}

} // namespace
} // namespace trnsim::config
