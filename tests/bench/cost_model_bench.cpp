// Throughput of the analytic kernel cost model (compute::CostModel::cost).
//
//   cost_model_bench [--chip trn2|trn1] [--lnc N] [--evaluations E] [--repeat K]
//
// The kernels are the calibration shapes of every class (training and held-out grids of
// calibration.hpp, about 1,300 distinct shapes from tiny to large), costed on a rank of the
// chip's default LNC. Each class is timed on its own, then all classes interleaved (the mix a
// training-step estimate sees, minus its repetitions); each measurement evaluates about E
// kernels (default 500,000: tens of milliseconds), runs K times (default 20) and keeps the
// fastest, which filters out interference from other work on a shared machine. The checksum of the costs keeps the
// compiler from dropping the work. The last line is for scripts:
//   analytic evaluations/s: <evaluations per second of the interleaved mix>
#include "trnsim/compute/calibration.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace trnsim;
using namespace trnsim::compute;

struct Options {
    std::string chip = "trn2";
    int lnc = 0; // 0: the chip's default
    std::int64_t evaluations = 500'000;
    int repeat = 20;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "cost_model_bench: %s\nusage: cost_model_bench [--chip trn2|trn1] [--lnc N] "
                 "[--evaluations E] [--repeat K]\n",
                 why.c_str());
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage("missing value for " + a);
            }
            return argv[++i];
        };
        try {
            if (a == "--chip") {
                o.chip = value();
            } else if (a == "--lnc") {
                o.lnc = std::stoi(value());
            } else if (a == "--evaluations") {
                o.evaluations = std::stoll(value());
            } else if (a == "--repeat") {
                o.repeat = std::stoi(value());
            } else {
                usage("unknown option " + a);
            }
        } catch (const std::logic_error&) {
            usage("bad value for " + a);
        }
    }
    if (o.lnc < 0 || o.evaluations < 1 || o.repeat < 1) {
        usage("out-of-range option");
    }
    return o;
}

/// Seconds per evaluation over `kernels`, the fastest of `repeat` runs of about `evaluations`.
double seconds_per_evaluation(const CostModel& model, const std::vector<Kernel>& kernels,
                              std::int64_t evaluations, int repeat, double& checksum) {
    const std::int64_t rounds =
        std::max<std::int64_t>(1, evaluations / static_cast<std::int64_t>(kernels.size()));
    double best = 0.0;
    for (int r = 0; r < repeat; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t i = 0; i < rounds; ++i) {
            for (const Kernel& k : kernels) {
                checksum += model.cost(k).seconds;
            }
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double per = s / static_cast<double>(rounds * static_cast<std::int64_t>(kernels.size()));
        best = r == 0 ? per : std::min(best, per);
    }
    return best;
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        const ChipSpec chip = config::load_chip(o.chip);
        const int lnc = o.lnc > 0 ? o.lnc : chip.lnc_default;
        const CostModel model(chip, lnc);
        std::printf("analytic kernel model, %s, LNC=%d (%s): best of %d runs of about %s "
                    "evaluations each\n",
                    chip.name.c_str(), lnc, model.calibrated() ? "calibrated" : "uncalibrated",
                    o.repeat, fmt::integer(o.evaluations).c_str());
        std::printf("  %-19s %8s %12s %14s\n", "class", "shapes", "ns/eval", "evaluations/s");
        // Interleave the classes: shape i of every class, then shape i + 1, ...
        std::vector<std::vector<Kernel>> by_class;
        double checksum = 0.0;
        for (KernelClass cls : all_kernel_classes()) {
            std::vector<Kernel> shapes = calibration_shapes(cls, CalibrationGrid::full, false);
            const std::vector<Kernel> held_out = calibration_shapes(cls, CalibrationGrid::full, true);
            shapes.insert(shapes.end(), held_out.begin(), held_out.end());
            const double per = seconds_per_evaluation(model, shapes, o.evaluations, o.repeat, checksum);
            std::printf("  %-19s %8zu %12.1f %14s\n", to_string(cls), shapes.size(),
                        per * 1e9, fmt::count(1.0 / per).c_str());
            by_class.push_back(std::move(shapes));
        }
        std::vector<Kernel> mix;
        for (std::size_t i = 0;; ++i) {
            bool any = false;
            for (const auto& shapes : by_class) {
                if (i < shapes.size()) {
                    mix.push_back(shapes[i]);
                    any = true;
                }
            }
            if (!any) {
                break;
            }
        }
        const double per = seconds_per_evaluation(model, mix, o.evaluations, o.repeat, checksum);
        std::printf("  %-19s %8zu %12.1f %14s\n", "all classes", mix.size(), per * 1e9,
                    fmt::count(1.0 / per).c_str());
        std::printf("checksum: %.6g\n", checksum);
        std::printf("analytic evaluations/s: %.0f\n", 1.0 / per);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cost_model_bench: %s\n", e.what());
        return 2;
    }
    return 0;
}
