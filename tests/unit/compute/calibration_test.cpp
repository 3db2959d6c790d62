// Calibration on the quick grid: reproducible, independent of the thread count, held-out
// shapes apart from the training grid, and a chip file that round-trips its kernel_model.
#include "trnsim/compute/calibration.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/config/kernel_model_text.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace trnsim::compute {
namespace {

class CalibrationTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        chip_ = new ChipSpec(config::load_chip("trn2"));
        quick_ = new Calibration(calibrate(*chip_, CalibrationGrid::quick, 1));
    }
    static void TearDownTestSuite() {
        delete quick_;
        delete chip_;
    }
    static ChipSpec* chip_;
    static Calibration* quick_;
};

ChipSpec* CalibrationTest::chip_ = nullptr;
Calibration* CalibrationTest::quick_ = nullptr;

TEST_F(CalibrationTest, EveryClassIsFittedAndMeasured) {
    for (KernelClass k : all_kernel_classes()) {
        const KernelFit& f = quick_->model.fit(k);
        EXPECT_EQ(f.coefficients.size(), kernel_feature_count(k)) << to_string(k);
        EXPECT_GT(f.train_points, 0) << to_string(k);
        EXPECT_GT(f.held_out_points, 0) << to_string(k);
        EXPECT_GE(f.max_error, f.mape) << to_string(k);
        for (double x : f.coefficients) {
            EXPECT_GE(x, 0.0) << to_string(k);
            EXPECT_EQ(x, round_significant(x, 6)) << to_string(k);
        }
    }
    EXPECT_TRUE(quick_->model.calibrated());
}

TEST_F(CalibrationTest, TheErrorTableIsMeasuredOnTheHeldOutPoints) {
    for (KernelClass k : all_kernel_classes()) {
        double sum = 0.0;
        double worst = 0.0;
        int n = 0;
        for (const auto& p : quick_->points) {
            if (p.cls == k && p.held_out) {
                sum += std::abs(p.relative_error());
                worst = std::max(worst, std::abs(p.relative_error()));
                ++n;
            }
        }
        EXPECT_NEAR(quick_->model.fit(k).mape, sum / n, 1e-12) << to_string(k);
        EXPECT_DOUBLE_EQ(quick_->model.fit(k).max_error, worst) << to_string(k);
    }
    // "matmul: MAPE 2.31%, max 7.90%", one line per class in class order.
    std::string expected;
    for (KernelClass k : all_kernel_classes()) {
        const KernelFit& f = quick_->model.fit(k);
        char line[128];
        std::snprintf(line, sizeof line, "%s: MAPE %.2f%%, max %.2f%%\n", to_string(k),
                      100.0 * f.mape, 100.0 * f.max_error);
        expected += line;
    }
    EXPECT_EQ(error_table(quick_->model), expected);
}

TEST_F(CalibrationTest, ReproducibleAndIndependentOfThreads) {
    const Calibration again = calibrate(*chip_, CalibrationGrid::quick, 2);
    const std::string command = "trnsim calibrate --chip trn2 --grid quick";
    EXPECT_EQ(config::kernel_model_yaml(again.model, command),
              config::kernel_model_yaml(quick_->model, command));
    EXPECT_EQ(calibration_csv(again), calibration_csv(*quick_));
}

TEST_F(CalibrationTest, HeldOutShapesAreNotTrainingShapes) {
    for (KernelClass k : all_kernel_classes()) {
        for (CalibrationGrid g : {CalibrationGrid::quick, CalibrationGrid::full}) {
            std::set<std::string> train;
            for (const Kernel& s : calibration_shapes(k, g, false)) {
                train.insert(describe(s));
            }
            for (const Kernel& s : calibration_shapes(k, g, true)) {
                EXPECT_EQ(train.count(describe(s)), 0u) << describe(s);
            }
        }
    }
}

TEST_F(CalibrationTest, TheChipFileRoundTrips) {
    namespace fs = std::filesystem;
    const fs::path dir = test::scratch_path("trnsim-calibration-test");
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ifstream in(config::chip_file("trn2"));
    const std::string original{std::istreambuf_iterator<char>(in), {}};
    const std::string section = config::kernel_model_yaml(quick_->model, "test");
    const std::string text = config::replace_kernel_model(original, section);
    // Replacing again gives the same text: the section is found and swapped in place.
    EXPECT_EQ(config::replace_kernel_model(text, section), text);
    EXPECT_EQ(text.substr(0, text.find("# Calibrated analytic kernel model")),
              original.substr(0, original.find("# Calibrated analytic kernel model")));
    const fs::path file = dir / "chip.yaml";
    std::ofstream(file) << text;
    const ChipSpec loaded = config::load_chip(file.string());
    for (KernelClass k : all_kernel_classes()) {
        const KernelFit& want = quick_->model.fit(k);
        const KernelFit& got = loaded.kernel_model.fit(k);
        EXPECT_EQ(got.coefficients, want.coefficients) << to_string(k);
        EXPECT_NEAR(got.mape, want.mape, 5e-5) << to_string(k);
        EXPECT_NEAR(got.max_error, want.max_error, 5e-5) << to_string(k);
        EXPECT_EQ(got.held_out_points, want.held_out_points);
    }
    // The loaded model reproduces the calibration's analytic times.
    const CostModel model(loaded, 1);
    for (const auto& p : quick_->points) {
        EXPECT_DOUBLE_EQ(model.cost(p.kernel).seconds, p.analytic.seconds()) << describe(p.kernel);
    }
    fs::remove_all(dir);
}

TEST_F(CalibrationTest, MisplacedOrMalformedSectionsAreInputErrors) {
    const std::string section = config::kernel_model_yaml(quick_->model, "test");
    EXPECT_THROW(config::replace_kernel_model("name: x\nkernel_model:\n  a: 1\nother: 2\n", section),
                 InputError);
    namespace fs = std::filesystem;
    const fs::path file = test::scratch_path("trnsim-calibration-bad").replace_extension(".yaml");
    std::ifstream in(config::chip_file("trn2"));
    std::string text{std::istreambuf_iterator<char>(in), {}};
    text = config::replace_kernel_model(text, "kernel_model:\n  matmul:\n    coefficients: [1, 2]\n");
    std::ofstream(file) << text;
    try {
        config::load_chip(file.string());
        ADD_FAILURE() << "a wrong coefficient count loads";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "kernel_model.matmul.coefficients");
    }
    fs::remove(file);
}

} // namespace
} // namespace trnsim::compute
