// trnsim calibrate and trnsim kernel: the compute module's commands.
#include "commands.hpp"
#include "options.hpp"

#include "trnsim/compute/calibration.hpp"
#include "trnsim/compute/cost_model.hpp"
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/config/kernel_model_text.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/engine/window_driver.hpp"

#include <boost/program_options.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <sstream>

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace trnsim::cli {

namespace {

using compute::KernelClass;

std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
        throw UsageError("cannot read " + p.string());
    }
    return {std::istreambuf_iterator<char>(in), {}};
}

/// Writes `text` to `p` through a temporary file and a rename (no partial file on failure).
void write_text(const fs::path& p, const std::string& text) {
    const fs::path tmp = p.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) {
            throw UsageError("cannot write " + p.string());
        }
        out << text;
        if (!out.flush()) {
            fs::remove(tmp);
            throw UsageError("cannot write " + p.string());
        }
    }
    fs::rename(tmp, p);
}

int thread_count(const po::variables_map& vm) {
    if (vm.count("threads")) {
        const int t = vm["threads"].as<int>();
        if (t < 1 || t > 1024) {
            throw UsageError("--threads must be 1 to 1024");
        }
        return t;
    }
    return engine::default_thread_count(); // OMP_NUM_THREADS when set, as every other command
}

std::string milliseconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g ms", seconds * 1e3);
    return text;
}

// ---------------------------------------------------------------------------------------------
// trnsim kernel

constexpr const char* kKernelUsage =
    "trnsim kernel CLASS SHAPE [--chip trn2] [--dtype bf16|fp8|fp32] [--lnc N] [options]";

constexpr const char* kKernelClasses =
    "classes and shapes:\n"
    "  matmul MxKxN                 C[M,N] = A[M,K] B[K,N] (--batch N)\n"
    "  attention HxGxSxD            H query heads, G key/value heads, S tokens, head dim D\n"
    "                               (--batch, --kv-len, --v-dim, --causal yes|no);\n"
    "                               attention_backward HxGxSxD: its backward pass\n"
    "  softmax ROWSxWIDTH           row softmax\n"
    "  rms_norm ROWSxWIDTH          RMSNorm (layer_norm: LayerNorm)\n"
    "  gather TOKENSxWIDTH          embedding lookup (scatter_add: its backward)\n"
    "  softmax_backward, rms_norm_backward, layer_norm_backward, cross_entropy ROWSxWIDTH\n"
    "  elementwise ELEMENTS         --inputs, --outputs, --passes, --engine vector|scalar;\n"
    "                               silu / gelu / swiglu / add ELEMENTS are presets of it\n"
    "  reduce ELEMENTS              sum of --inputs buffers (a reduction step of a collective)\n"
    "  adamw PARAMETERS             AdamW update (--grad-bytes, --weight-bytes)\n"
    "Streaming kernels take their element type from --dtype (or --bytes).\n";

constexpr std::int64_t kMaxDimension = std::int64_t{1} << 40;

std::vector<std::int64_t> parse_shape(const std::string& text, std::size_t parts,
                                      const std::string& what) {
    std::vector<std::int64_t> v;
    std::size_t at = 0;
    while (true) {
        const std::size_t x = text.find('x', at);
        const std::string item = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
        std::int64_t n = 0;
        try {
            n = config::parse_count(item);
        } catch (const config::UnitError&) {
            n = 0;
        }
        if (n <= 0) {
            throw UsageError("shape '" + text + "': expected " + what +
                             " as positive whole numbers joined by 'x'");
        }
        if (n > kMaxDimension) {
            // Far past any program the detailed model simulates, and past what the shape
            // arithmetic (products, splits over cores) holds in 64 bits.
            throw UsageError("shape '" + text + "': " + item + " is above the limit of " +
                             std::to_string(kMaxDimension) + " (2^40) per dimension");
        }
        v.push_back(n);
        if (x == std::string::npos) {
            break;
        }
        at = x + 1;
    }
    if (v.size() != parts) {
        throw UsageError("shape '" + text + "': expected " + what);
    }
    return v;
}

compute::Precision parse_dtype(const std::string& t) {
    if (t == "bf16") {
        return compute::Precision::bf16;
    }
    if (t == "fp8") {
        return compute::Precision::fp8;
    }
    if (t == "fp32") {
        return compute::Precision::fp32;
    }
    throw UsageError("--dtype '" + t + "': expected bf16, fp8 or fp32");
}

int positive(const po::variables_map& vm, const char* key, int fallback, int hi) {
    if (!vm.count(key)) {
        return fallback;
    }
    const int v = vm[key].as<int>();
    if (v < 1 || v > hi) {
        throw UsageError(std::string("--") + key + " must be 1 to " + std::to_string(hi));
    }
    return v;
}

compute::Kernel make_kernel(const std::string& cls, const std::string& shape,
                            const po::variables_map& vm) {
    const compute::Precision p = parse_dtype(vm["dtype"].as<std::string>());
    const int eb = positive(vm, "bytes", compute::element_bytes(p), 8);
    const std::int64_t batch = positive(vm, "batch", 1, 1 << 20);
    if (cls == "matmul") {
        const auto v = parse_shape(shape, 3, "MxKxN");
        return compute::MatmulShape{v[0], v[1], v[2], batch, p};
    }
    if (cls == "attention" || cls == "attention_backward") {
        const auto v = parse_shape(shape, 4, "HEADSxKV_HEADSxSEQxHEAD_DIM");
        if (v[0] % v[1] != 0) {
            throw UsageError("attention: the query heads (" + std::to_string(v[0]) +
                             ") must be a multiple of the key/value heads (" +
                             std::to_string(v[1]) + ")");
        }
        const std::string causal = vm["causal"].as<std::string>();
        if (causal != "yes" && causal != "no") {
            throw UsageError("--causal '" + causal + "': expected yes or no");
        }
        const std::int64_t kv_len = vm.count("kv-len") ? positive(vm, "kv-len", 1, 1 << 24) : v[2];
        const std::int64_t v_dim = vm.count("v-dim") ? positive(vm, "v-dim", 1, 4096) : v[3];
        return compute::AttentionShape{batch, v[0], v[1], v[2], kv_len, v[3], v_dim,
                                       causal == "yes", p, cls == "attention_backward"};
    }
    if (cls == "adamw") {
        const auto v = parse_shape(shape, 1, "PARAMETERS");
        return compute::OptimizerShape{v[0], positive(vm, "grad-bytes", 4, 8),
                                       positive(vm, "weight-bytes", 2, 8)};
    }
    compute::StreamShape s;
    s.element_bytes = eb;
    const std::pair<const char*, compute::StreamKind> rows[] = {
        {"softmax", compute::StreamKind::softmax},
        {"rms_norm", compute::StreamKind::rms_norm},
        {"layer_norm", compute::StreamKind::layer_norm},
        {"gather", compute::StreamKind::gather},
        {"softmax_backward", compute::StreamKind::softmax_backward},
        {"rms_norm_backward", compute::StreamKind::rms_norm_backward},
        {"layer_norm_backward", compute::StreamKind::layer_norm_backward},
        {"scatter_add", compute::StreamKind::scatter_add},
        {"cross_entropy", compute::StreamKind::cross_entropy}};
    const auto row = std::find_if(std::begin(rows), std::end(rows),
                                  [&](const auto& r) { return cls == r.first; });
    if (row != std::end(rows)) {
        const auto v = parse_shape(shape, 2, "ROWSxWIDTH");
        s.kind = row->second;
        s.elements = v[0] * v[1];
        s.row = v[1];
        return s;
    }
    if (cls != "reduce" && cls != "silu" && cls != "gelu" && cls != "swiglu" && cls != "add" &&
        cls != "elementwise") {
        throw UsageError("unknown kernel class '" + cls + "'\n" + kKernelClasses);
    }
    s.elements = parse_shape(shape, 1, "ELEMENTS")[0];
    if (cls == "reduce") {
        s.kind = compute::StreamKind::reduce;
        s.inputs = positive(vm, "inputs", 2, 8);
        return s;
    }
    if (cls == "silu" || cls == "gelu") {
        s.engine = compute::StreamEngine::scalar;
    } else if (cls == "swiglu") {
        s.inputs = 2;
        s.engine = compute::StreamEngine::scalar;
    } else if (cls == "add") {
        s.inputs = 2;
    } else if (cls == "elementwise") {
        s.inputs = positive(vm, "inputs", 1, 8);
        s.outputs = positive(vm, "outputs", 1, 4);
        s.passes = positive(vm, "passes", 1, 8);
        const std::string engine = vm["engine"].as<std::string>();
        if (engine != "vector" && engine != "scalar") {
            throw UsageError("--engine '" + engine + "': expected vector or scalar");
        }
        s.engine = engine == "scalar" ? compute::StreamEngine::scalar : compute::StreamEngine::vector;
    }
    return s;
}

std::string engines_line(const std::array<double, compute::kEngineKinds>& busy_fraction) {
    std::string t;
    for (std::size_t e = 0; e < compute::kEngineKinds; ++e) {
        t += (e == 0 ? "" : ", ") + std::string(compute::to_string(static_cast<compute::EngineKind>(e))) +
             " " + fmt::fixed(100.0 * busy_fraction[e], 0) + "%";
    }
    return t;
}

/// "compute-bound (TensorE 99% busy)", "bandwidth-bound (DMA 98% of the core's HBM share)", ...
std::string bound_text(const std::array<double, compute::kEngineKinds>& busy) {
    std::size_t top = 0;
    for (std::size_t e = 1; e < compute::kEngineKinds; ++e) {
        if (busy[e] > busy[top]) {
            top = e;
        }
    }
    const auto kind = static_cast<compute::EngineKind>(top);
    const std::string pct = fmt::fixed(100.0 * busy[top], 0) + "%";
    if (busy[top] < 0.5) {
        return "latency-bound (busiest: " + std::string(compute::to_string(kind)) + " " + pct + ")";
    }
    if (kind == compute::EngineKind::tensor) {
        return "compute-bound (TensorE " + pct + " busy)";
    }
    if (kind == compute::EngineKind::dma) {
        return "bandwidth-bound (DMA at " + pct + " of the HBM bandwidth share)";
    }
    return std::string(compute::to_string(kind)) + "-bound (" + pct + " busy)";
}

} // namespace

int cmd_kernel(const std::vector<std::string>& args) {
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "chip", po::value<std::string>()->default_value("trn2"), "chip preset or file")(
        "dtype", po::value<std::string>()->default_value("bf16"), "bf16, fp8 or fp32")(
        "lnc", po::value<int>(), "physical cores per rank (default: the chip's)")(
        "batch", po::value<int>(), "independent instances (matmul, attention)")(
        "kv-len", po::value<int>(), "attention: keys per sequence (default: SEQ)")(
        "v-dim", po::value<int>(), "attention: value head dimension (default: HEAD_DIM)")(
        "causal", po::value<std::string>()->default_value("yes"), "attention: yes or no")(
        "inputs", po::value<int>(), "elementwise / reduce: input tensors")(
        "outputs", po::value<int>(), "elementwise: output tensors")(
        "passes", po::value<int>(), "elementwise: instructions over the data")(
        "engine", po::value<std::string>()->default_value("vector"), "elementwise: vector or scalar")(
        "bytes", po::value<int>(), "streaming kernels: bytes per element (default: --dtype's)")(
        "grad-bytes", po::value<int>(), "adamw: bytes per gradient element (default 4)")(
        "weight-bytes", po::value<int>(), "adamw: bytes per working weight (default 2)");
    po::options_description hidden;
    hidden.add_options()("class", po::value<std::string>(), "kernel class")(
        "shape", po::value<std::string>(), "shape");
    po::positional_options_description pos;
    pos.add("class", 1).add("shape", 1);
    const po::variables_map vm = parse_options(args, opts, pos, hidden, kKernelUsage);
    if (vm.count("help")) {
        std::cout << "usage: " << kKernelUsage << "\n\n"
                  << "Costs one kernel on one rank with the detailed core model (simulated) and "
                     "with the\nanalytic model (calibrated closed form), side by side.\n\n"
                  << kKernelClasses << "\n"
                  << opts;
        return 0;
    }
    if (!vm.count("class") || !vm.count("shape")) {
        throw UsageError("trnsim kernel needs a kernel class and a shape\nusage: " +
                         std::string(kKernelUsage) + "\n" + kKernelClasses);
    }
    // Printed once both models ran: a shape refused on the way prints nothing but the error.
    std::ostringstream out;
    const compute::ChipSpec chip = config::load_chip(vm["chip"].as<std::string>());
    const int lnc = positive(vm, "lnc", chip.lnc_default, 64);
    if (std::find(chip.lnc_allowed.begin(), chip.lnc_allowed.end(), lnc) == chip.lnc_allowed.end()) {
        throw UsageError("--lnc " + std::to_string(lnc) + " is not allowed on " + chip.name);
    }
    const compute::Kernel k =
        make_kernel(vm["class"].as<std::string>(), vm["shape"].as<std::string>(), vm);
    compute::check_detailed_size(k, lnc); // before anything is printed
    const compute::Kernel piece = compute::split_across_cores(k, lnc);
    out << chip.name << " " << compute::to_string(compute::class_of(k)) << " "
              << compute::describe(k) << ": one rank of " << lnc << " NeuronCore"
              << (lnc > 1 ? "s" : "") << " (LNC=" << lnc << ")"
              << (lnc > 1 ? ", " + compute::describe(piece) + " per core" : std::string()) << "\n";

    const bool tensor = std::holds_alternative<compute::MatmulShape>(k) ||
                        std::holds_alternative<compute::AttentionShape>(k);
    const compute::Precision precision =
        std::holds_alternative<compute::MatmulShape>(k) ? std::get<compute::MatmulShape>(k).precision
        : std::holds_alternative<compute::AttentionShape>(k)
            ? std::get<compute::AttentionShape>(k).precision
            : compute::Precision::bf16;
    const compute::CostModel analytic(chip, lnc);
    const double peak = analytic.tensor_peak_per_rank(precision).per_s();
    const double published = chip.peak(precision).per_s() * lnc / chip.physical_cores;
    const auto rates = [&](double seconds, double flops, double bytes) {
        std::string t = fmt::flop_rate(FlopRate::per_s(flops / seconds));
        if (tensor) {
            t += " = " + fmt::fixed(100.0 * flops / seconds / peak, 1) + "% of TensorE peak (" +
                 fmt::fixed(100.0 * flops / seconds / published, 1) +
                 "% of the chip's published peak)";
        }
        return t + ", HBM " + fmt::bandwidth(Bandwidth::bytes_per_s(bytes / seconds));
    };

    const auto t0 = std::chrono::steady_clock::now();
    const compute::DetailedResult d = compute::DetailedModel(chip, lnc).run(k);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::array<double, compute::kEngineKinds> busy{};
    for (std::size_t e = 0; e < compute::kEngineKinds; ++e) {
        busy[e] = d.core.busy_fraction(static_cast<compute::EngineKind>(e));
    }
    out << "detailed: " << milliseconds(d.seconds()) << ", "
              << rates(d.seconds(), d.flops(), d.hbm_bytes()) << "; " << bound_text(busy)
              << "\n          busy: " << engines_line(busy) << "\n          " << d.tiling
              << "; " << d.simulated << " program" << (d.simulated == 1 ? "" : "s")
              << " simulated in " << fmt::seconds(wall) << ", "
              << fmt::count(static_cast<double>(d.core.events)) << " events\n";

    const compute::KernelCost a = analytic.cost(k);
    const auto nominal = analytic.engine_seconds(k);
    std::array<double, compute::kEngineKinds> share{};
    for (std::size_t e = 0; e < compute::kEngineKinds; ++e) {
        share[e] = a.seconds > 0.0 ? std::min(1.0, nominal[e] / a.seconds) : 0.0;
    }
    out << "analytic: " << milliseconds(a.seconds) << ", "
              << rates(a.seconds, a.flops, a.hbm_bytes) << "; " << bound_text(share)
              << "\n          busy (nominal): " << engines_line(share) << "; "
              << (a.seconds >= d.seconds() ? "+" : "")
              << fmt::fixed(100.0 * (a.seconds / d.seconds() - 1.0), 1) << "% vs detailed"
              << (analytic.calibrated() ? "" : " (chip file not calibrated: nominal coefficients)")
              << "\n";
    std::cout << out.str();
    return 0;
}

// ---------------------------------------------------------------------------------------------
// trnsim calibrate

int cmd_calibrate(const std::vector<std::string>& args) {
    const std::string usage =
        "trnsim calibrate --chip trn2|trn1|FILE [-o FILE] [--grid full|quick] [--threads N]";
    po::options_description opts("options");
    opts.add_options()("help,h", "show this help")(
        "chip", po::value<std::string>(), "chip preset or file to calibrate (required)")(
        "output,o", po::value<std::string>(),
        "chip file to write (default: the chip's own file, updated in place)")(
        "data", po::value<std::string>(),
        "calibration data CSV (default: beside the chip file, NAME.calibration.csv)")(
        "grid", po::value<std::string>()->default_value("full"),
        "full (the checked-in calibration) or quick (a few shapes per class)")(
        "threads", po::value<int>(), "simulation threads (default: every hardware thread)");
    const po::variables_map vm = parse_options(args, opts, {}, {}, usage);
    if (vm.count("help")) {
        std::cout << "usage: " << usage << "\n\n"
                  << "Fits the analytic kernel model to the detailed core model: simulates a "
                     "training grid of\nshapes per kernel class, fits each class's coefficients "
                     "(non-negative least squares),\nmeasures the error on held-out shapes, and "
                     "writes the coefficients and the error table\ninto the chip file (its "
                     "kernel_model section) and every point into a CSV for\nanalysis/"
                     "calibration_plot.py. The same chip data give the same bytes.\n\n"
                  << opts;
        return 0;
    }
    if (!vm.count("chip")) {
        throw UsageError("trnsim calibrate needs --chip\nusage: " + usage);
    }
    const std::string grid_name = vm["grid"].as<std::string>();
    if (grid_name != "full" && grid_name != "quick") {
        throw UsageError("--grid '" + grid_name + "': expected full or quick");
    }
    const compute::CalibrationGrid grid =
        grid_name == "quick" ? compute::CalibrationGrid::quick : compute::CalibrationGrid::full;
    const int threads = thread_count(vm);
    const std::string chip_ref = vm["chip"].as<std::string>();
    const fs::path source = config::chip_file(chip_ref);
    const compute::ChipSpec chip = config::load_chip(chip_ref);
    const fs::path output = vm.count("output") ? fs::path(vm["output"].as<std::string>()) : source;
    fs::path data = vm.count("data") ? fs::path(vm["data"].as<std::string>()) : output;
    if (!vm.count("data")) {
        data.replace_extension(".calibration.csv");
    }
    for (const auto& [option, path] : {std::pair{"-o", output}, {"--data", data}}) {
        const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        if (!fs::is_directory(dir)) {
            throw UsageError(std::string(option) + " '" + path.string() + "': no directory " +
                             dir.string());
        }
    }

    // Progress on stderr: a rewritten line on a terminal, one line per class otherwise.
    const bool terminal = ::isatty(2) == 1;
    std::mutex mutex;
    const auto progress = [&](KernelClass cls, int done, int total) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (terminal) {
            std::cerr << "\rcalibrate " << chip.name << ": " << compute::to_string(cls) << " "
                      << done << "/" << total << " shapes   " << std::flush;
        } else if (done == total) {
            std::cerr << "calibrate " << chip.name << ": " << compute::to_string(cls) << " "
                      << total << " shapes simulated\n";
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    const compute::Calibration c = compute::calibrate(chip, grid, threads, progress);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (terminal) {
        std::cerr << "\n";
    }

    std::string command = "trnsim calibrate --chip " + chip.name;
    if (grid == compute::CalibrationGrid::quick) {
        command += " --grid quick";
    }
    const std::string text = config::replace_kernel_model(
        read_text(source), config::kernel_model_yaml(c.model, command));
    // The result must load as a chip before it replaces anything.
    const fs::path check = output.string() + ".check-" + std::to_string(::getpid()) + ".yaml";
    write_text(check, text);
    try {
        config::load_chip(check.string());
    } catch (...) {
        fs::remove(check);
        throw;
    }
    fs::remove(check);
    write_text(output, text);
    write_text(data, compute::calibration_csv(c));

    std::cout << "calibrated " << chip.name << " (" << grid_name << " grid): "
              << c.points.size() << " shapes simulated in " << fmt::seconds(wall) << " on "
              << threads << " thread" << (threads == 1 ? "" : "s") << "\n"
              << "held-out error of the analytic model against the detailed model:\n"
              << compute::error_table(c.model) << "wrote " << output.string() << "\n"
              << "wrote " << data.string() << "\n";
    return 0;
}

} // namespace trnsim::cli
