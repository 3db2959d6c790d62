#include "trnsim/compute/calibration.hpp"

#include "trnsim/compute/cost_model.hpp"
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/parallel.hpp"

#include "features.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <tuple>

namespace trnsim::compute {

namespace {

/// splitmix64: a fixed, portable stream for the held-out shapes.
class Stream {
public:
    explicit Stream(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    /// An integer drawn log-uniformly from [lo, hi].
    std::int64_t log_uniform(std::int64_t lo, std::int64_t hi) {
        const double l = std::log(static_cast<double>(lo));
        const double h = std::log(static_cast<double>(hi) + 1.0);
        const auto v = static_cast<std::int64_t>(std::exp(l + (h - l) * uniform()));
        return std::clamp(v, lo, hi);
    }
    template <class T, std::size_t N>
    T pick(const T (&options)[N]) {
        return options[next() % N];
    }

private:
    std::uint64_t state_;
};

StreamShape stream_shape(StreamKind kind, std::int64_t elements, std::int64_t row, int eb) {
    StreamShape s;
    s.kind = kind;
    s.elements = elements;
    s.row = row;
    s.element_bytes = eb;
    return s;
}

/// Elementwise variants: SiLU/GELU, addition, SwiGLU product (and the GELU/SiLU backward, the
/// same mix), a two-pass op (RoPE-like), a three-input sum, an op with two outputs.
struct ElementwiseVariant {
    int inputs, outputs, passes;
    StreamEngine engine;
};
constexpr ElementwiseVariant kElementwise[] = {{1, 1, 1, StreamEngine::scalar},
                                               {2, 1, 1, StreamEngine::vector},
                                               {2, 1, 1, StreamEngine::scalar},
                                               {1, 1, 2, StreamEngine::vector},
                                               {3, 1, 2, StreamEngine::vector},
                                               {1, 2, 1, StreamEngine::scalar}};

StreamShape elementwise(std::int64_t elements, const ElementwiseVariant& v, int eb) {
    StreamShape s = stream_shape(StreamKind::elementwise, elements, 0, eb);
    s.inputs = v.inputs;
    s.outputs = v.outputs;
    s.passes = v.passes;
    s.engine = v.engine;
    return s;
}

/// The streaming kind of a row class.
StreamKind row_kind_of(KernelClass cls) {
    switch (cls) {
    case KernelClass::softmax:
        return StreamKind::softmax;
    case KernelClass::rms_norm:
        return StreamKind::rms_norm;
    case KernelClass::layer_norm:
        return StreamKind::layer_norm;
    case KernelClass::softmax_backward:
        return StreamKind::softmax_backward;
    case KernelClass::rms_norm_backward:
        return StreamKind::rms_norm_backward;
    case KernelClass::layer_norm_backward:
        return StreamKind::layer_norm_backward;
    case KernelClass::scatter_add:
        return StreamKind::scatter_add;
    case KernelClass::cross_entropy:
        return StreamKind::cross_entropy;
    default:
        return StreamKind::gather;
    }
}

/// Softmax-like kinds run over attention scores and vocabularies: wider rows than norms.
bool wide_rows(StreamKind k) {
    return k == StreamKind::softmax || k == StreamKind::softmax_backward ||
           k == StreamKind::cross_entropy;
}

std::vector<Kernel> training_shapes(KernelClass cls, bool quick) {
    std::vector<Kernel> k;
    switch (cls) {
    case KernelClass::matmul: {
        const std::vector<std::int64_t> m = quick ? std::vector<std::int64_t>{1, 128, 512}
                                                  : std::vector<std::int64_t>{1, 32, 128, 384, 1024, 4096};
        const std::vector<std::int64_t> kk = quick ? std::vector<std::int64_t>{128, 1024}
                                                   : std::vector<std::int64_t>{128, 1024, 8192};
        const std::vector<std::int64_t> n = quick ? std::vector<std::int64_t>{1, 512}
                                                  : std::vector<std::int64_t>{1, 64, 512, 2048, 8192};
        for (auto a : m) {
            for (auto b : kk) {
                for (auto c : n) {
                    k.push_back(MatmulShape{a, b, c, 1, Precision::bf16});
                }
            }
        }
        if (!quick) {
            for (Precision p : {Precision::fp8, Precision::fp32}) {
                for (std::int64_t a : {128, 1024, 4096}) {
                    for (std::int64_t b : {1024, 8192}) {
                        for (std::int64_t c : {128, 1024, 4096}) {
                            k.push_back(MatmulShape{a, b, c, 1, p});
                        }
                    }
                }
            }
            for (std::int64_t a : {64, 512, 2048}) {
                k.push_back(MatmulShape{a, 2048, 1024, 4, Precision::bf16});
                k.push_back(MatmulShape{a, 1024, 2048, 8, Precision::bf16});
            }
        }
        break;
    }
    case KernelClass::attention: {
        const std::vector<std::pair<std::int64_t, std::int64_t>> heads =
            quick ? std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 1}}
                  : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {4, 4}, {8, 1}, {8, 2}};
        const std::vector<std::int64_t> seq = quick ? std::vector<std::int64_t>{128, 512}
                                                    : std::vector<std::int64_t>{128, 512, 2048, 4096};
        const std::vector<std::int64_t> dims = quick ? std::vector<std::int64_t>{128}
                                                     : std::vector<std::int64_t>{64, 128};
        for (auto [h, kv] : heads) {
            for (auto s : seq) {
                for (auto dim : dims) {
                    for (bool causal : {true, false}) {
                        k.push_back(AttentionShape{1, h, kv, s, s, dim, dim, causal, Precision::bf16});
                    }
                }
            }
        }
        if (!quick) {
            for (std::int64_t s : {512, 2048}) {
                k.push_back(AttentionShape{2, 4, 1, s, s, 128, 128, true, Precision::fp8});
                k.push_back(AttentionShape{1, 4, 2, s, s, 128, 128, true, Precision::fp32});
                k.push_back(AttentionShape{1, 4, 4, s, s, 192, 128, true, Precision::bf16});
                k.push_back(AttentionShape{1, 8, 8, 128, 4 * s, 128, 128, true, Precision::bf16});
            }
        }
        break;
    }
    case KernelClass::attention_backward: {
        const std::vector<std::pair<std::int64_t, std::int64_t>> heads =
            quick ? std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 1}}
                  : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {4, 4}, {8, 1}, {8, 2}};
        const std::vector<std::int64_t> seq = quick ? std::vector<std::int64_t>{128, 512}
                                                    : std::vector<std::int64_t>{128, 512, 2048, 4096};
        const std::vector<std::int64_t> dims = quick ? std::vector<std::int64_t>{128}
                                                     : std::vector<std::int64_t>{64, 128};
        for (auto [h, kv] : heads) {
            for (auto s : seq) {
                for (auto dim : dims) {
                    for (bool causal : {true, false}) {
                        k.push_back(AttentionShape{1, h, kv, s, s, dim, dim, causal,
                                                   Precision::bf16, true});
                    }
                }
            }
        }
        if (!quick) {
            for (std::int64_t s : {512, 2048}) {
                k.push_back(AttentionShape{2, 4, 1, s, s, 128, 128, true, Precision::bf16, true});
                k.push_back(AttentionShape{1, 4, 2, s, s, 128, 128, true, Precision::fp32, true});
                k.push_back(AttentionShape{1, 4, 4, s, s, 192, 128, true, Precision::bf16, true});
                k.push_back(AttentionShape{1, 8, 8, 128, 4 * s, 128, 128, true, Precision::bf16, true});
            }
            // Ragged query tiles against longer key sequences (queries at the end of a
            // context).
            for (auto [q, kv, h, g] : {std::tuple{150, 450, 16, 8}, std::tuple{256, 768, 8, 2},
                                       std::tuple{1000, 3000, 2, 1}, std::tuple{300, 1200, 4, 4}}) {
                for (std::int64_t dim : {64, 128}) {
                    k.push_back(AttentionShape{1, h, g, q, kv, dim, dim, true, Precision::bf16,
                                               true});
                }
            }
            // Several key/value heads of a few query heads each (the blocks of one head
            // load while the previous head's compute).
            for (auto [h, g, q] : {std::tuple{6, 2, 768}, std::tuple{12, 4, 512},
                                   std::tuple{16, 4, 1024}}) {
                for (bool causal : {true, false}) {
                    k.push_back(AttentionShape{1, h, g, q, q, 64, 64, causal, Precision::bf16,
                                               true});
                }
            }
            // Long sequences whose queries do not all stay resident.
            k.push_back(AttentionShape{1, 8, 1, 8192, 8192, 128, 128, true, Precision::bf16, true});
            k.push_back(AttentionShape{1, 2, 2, 16384, 16384, 128, 128, true, Precision::bf16, true});
        }
        break;
    }
    case KernelClass::elementwise:
        for (std::int64_t n : quick ? std::vector<std::int64_t>{1000, 300000}
                                    : std::vector<std::int64_t>{1000, 8000, 60000, 300000, 1500000,
                                                                8000000, 40000000}) {
            for (const auto& v : kElementwise) {
                for (int eb : {2, 4}) {
                    if (quick && (eb == 4 || v.inputs == 3)) {
                        continue;
                    }
                    k.push_back(elementwise(n, v, eb));
                }
            }
        }
        break;
    case KernelClass::softmax:
    case KernelClass::rms_norm:
    case KernelClass::layer_norm:
    case KernelClass::gather:
    case KernelClass::softmax_backward:
    case KernelClass::rms_norm_backward:
    case KernelClass::layer_norm_backward:
    case KernelClass::scatter_add:
    case KernelClass::cross_entropy: {
        const StreamKind kind = row_kind_of(cls);
        const std::vector<std::int64_t> rows =
            quick ? std::vector<std::int64_t>{128, 1000}
                  : std::vector<std::int64_t>{1, 8, 64, 128, 300, 1000, 3000, 8192};
        const std::vector<std::int64_t> widths =
            quick ? std::vector<std::int64_t>{512, 4096}
            : wide_rows(kind)
                ? std::vector<std::int64_t>{64, 256, 1024, 4096, 8192, 12288, 16384, 32768, 65536}
                : std::vector<std::int64_t>{64, 256, 1024, 2048, 4096, 8192, 12288, 16384};
        for (auto r : rows) {
            for (auto w : widths) {
                for (int eb : {2, 4}) {
                    if (quick && eb == 4) {
                        continue;
                    }
                    k.push_back(stream_shape(kind, r * w, w, eb));
                }
            }
        }
        break;
    }
    case KernelClass::adamw:
        for (std::int64_t n : quick ? std::vector<std::int64_t>{10000, 1000000}
                                    : std::vector<std::int64_t>{1000, 10000, 65536, 300000, 1000000,
                                                                4000000, 16777216, 60000000}) {
            for (int g : {2, 4}) {
                k.push_back(OptimizerShape{n, g, 2});
            }
        }
        break;
    case KernelClass::reduce:
        for (std::int64_t n : quick ? std::vector<std::int64_t>{1000, 300000}
                                    : std::vector<std::int64_t>{1000, 8000, 60000, 300000, 1500000,
                                                                8000000, 40000000}) {
            for (int inputs : {2, 3, 4, 8}) {
                for (int eb : {2, 4}) {
                    if (quick && (eb == 4 || inputs > 3)) {
                        continue;
                    }
                    StreamShape s = stream_shape(StreamKind::reduce, n, 0, eb);
                    s.inputs = inputs;
                    k.push_back(s);
                }
            }
        }
        break;
    }
    return k;
}

std::vector<Kernel> held_out_shapes(KernelClass cls, bool quick) {
    Stream r(0x7472'6e73'696d'0000ULL + static_cast<std::uint64_t>(cls));
    const int count = quick ? 6 : 50;
    const std::int64_t big = quick ? 1024 : 8192;
    // A draw that happens to be a training shape is dropped and drawn again.
    std::set<std::string> training;
    for (const Kernel& t : training_shapes(cls, quick)) {
        training.insert(describe(t));
    }
    std::vector<Kernel> k;
    while (static_cast<int>(k.size()) < count) {
        switch (cls) {
        case KernelClass::matmul: {
            constexpr Precision kPrecisions[] = {Precision::bf16, Precision::bf16, Precision::bf16,
                                                 Precision::bf16, Precision::fp8, Precision::fp32};
            const Precision p = quick ? Precision::bf16 : r.pick(kPrecisions);
            const std::int64_t batch = r.uniform() < 0.15 ? r.log_uniform(2, 8) : 1;
            k.push_back(MatmulShape{r.log_uniform(1, big), r.log_uniform(64, big),
                                    r.log_uniform(1, big), batch, p});
            break;
        }
        case KernelClass::attention:
        case KernelClass::attention_backward: {
            constexpr std::int64_t kKv[] = {1, 2, 4, 8};
            const std::int64_t kv = quick ? 1 : r.pick(kKv);
            const std::int64_t heads = kv * (quick ? 2 : r.log_uniform(1, 4));
            const std::int64_t q = r.log_uniform(100, quick ? 600 : 4096);
            const std::int64_t kv_len = r.uniform() < 0.8 ? q : q * r.log_uniform(2, 4);
            constexpr std::int64_t kDims[] = {64, 80, 128, 128};
            const std::int64_t dim = quick ? 128 : r.pick(kDims);
            k.push_back(AttentionShape{1, heads, kv, q, kv_len, dim, dim, r.uniform() < 0.6,
                                       Precision::bf16, cls == KernelClass::attention_backward});
            break;
        }
        case KernelClass::elementwise: {
            const auto& v = kElementwise[quick ? 0 : r.next() % std::size(kElementwise)];
            k.push_back(elementwise(r.log_uniform(500, quick ? 400000 : 40000000), v,
                                    quick ? 2 : (r.uniform() < 0.7 ? 2 : 4)));
            break;
        }
        case KernelClass::softmax:
        case KernelClass::rms_norm:
        case KernelClass::layer_norm:
        case KernelClass::gather:
        case KernelClass::softmax_backward:
        case KernelClass::rms_norm_backward:
        case KernelClass::layer_norm_backward:
        case KernelClass::scatter_add:
        case KernelClass::cross_entropy: {
            const StreamKind kind = row_kind_of(cls);
            const std::int64_t w = r.log_uniform(64, quick ? 4096 : (wide_rows(kind) ? 65536 : 16384));
            const std::int64_t rows = r.log_uniform(1, quick ? 1000 : 8192);
            k.push_back(stream_shape(kind, rows * w, w, quick ? 2 : (r.uniform() < 0.7 ? 2 : 4)));
            break;
        }
        case KernelClass::adamw:
            k.push_back(OptimizerShape{r.log_uniform(1000, quick ? 2000000 : 60000000),
                                       r.uniform() < 0.5 ? 2 : 4, 2});
            break;
        case KernelClass::reduce: {
            StreamShape s = stream_shape(StreamKind::reduce,
                                         r.log_uniform(500, quick ? 400000 : 40000000), 0,
                                         quick ? 2 : (r.uniform() < 0.7 ? 2 : 4));
            s.inputs = static_cast<int>(r.log_uniform(2, quick ? 3 : 8));
            k.push_back(s);
            break;
        }
        }
        if (training.count(describe(k.back())) > 0) {
            k.pop_back();
        }
    }
    return k;
}

/// min ||A x - b|| subject to x >= 0 (Lawson and Hanson's active-set method).
Eigen::VectorXd nnls(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
    const Eigen::Index n = a.cols();
    // Unit columns for the conditioning; undone at the end.
    Eigen::VectorXd scale(n);
    Eigen::MatrixXd as = a;
    for (Eigen::Index j = 0; j < n; ++j) {
        const double norm = a.col(j).norm();
        scale(j) = norm > 0.0 ? norm : 1.0;
        as.col(j) /= scale(j);
    }
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
    std::vector<bool> passive(static_cast<std::size_t>(n), false);
    constexpr double kTolerance = 1e-12;
    const auto solve_passive = [&]() {
        std::vector<Eigen::Index> cols;
        for (Eigen::Index j = 0; j < n; ++j) {
            if (passive[static_cast<std::size_t>(j)]) {
                cols.push_back(j);
            }
        }
        Eigen::MatrixXd sub(as.rows(), static_cast<Eigen::Index>(cols.size()));
        for (std::size_t c = 0; c < cols.size(); ++c) {
            sub.col(static_cast<Eigen::Index>(c)) = as.col(cols[c]);
        }
        const Eigen::VectorXd zs = sub.colPivHouseholderQr().solve(b);
        Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
        for (std::size_t c = 0; c < cols.size(); ++c) {
            z(cols[c]) = zs(static_cast<Eigen::Index>(c));
        }
        return z;
    };
    for (int outer = 0; outer < 3 * static_cast<int>(n) + 10; ++outer) {
        const Eigen::VectorXd w = as.transpose() * (b - as * x);
        Eigen::Index best = -1;
        for (Eigen::Index j = 0; j < n; ++j) {
            if (!passive[static_cast<std::size_t>(j)] && w(j) > kTolerance &&
                (best < 0 || w(j) > w(best))) {
                best = j;
            }
        }
        if (best < 0) {
            break;
        }
        passive[static_cast<std::size_t>(best)] = true;
        for (int inner = 0; inner < 3 * static_cast<int>(n) + 10; ++inner) {
            const Eigen::VectorXd z = solve_passive();
            bool feasible = true;
            double alpha = 1.0;
            for (Eigen::Index j = 0; j < n; ++j) {
                if (passive[static_cast<std::size_t>(j)] && z(j) <= 0.0) {
                    feasible = false;
                    alpha = std::min(alpha, x(j) / (x(j) - z(j)));
                }
            }
            if (feasible) {
                x = z;
                break;
            }
            x += alpha * (z - x);
            for (Eigen::Index j = 0; j < n; ++j) {
                if (passive[static_cast<std::size_t>(j)] && x(j) <= kTolerance) {
                    passive[static_cast<std::size_t>(j)] = false;
                    x(j) = 0.0;
                }
            }
        }
    }
    for (Eigen::Index j = 0; j < n; ++j) {
        x(j) /= scale(j);
    }
    return x;
}

} // namespace

double round_significant(double v, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    return std::strtod(text, nullptr);
}

std::vector<Kernel> calibration_shapes(KernelClass cls, CalibrationGrid grid, bool held_out) {
    const bool quick = grid == CalibrationGrid::quick;
    return held_out ? held_out_shapes(cls, quick) : training_shapes(cls, quick);
}

Calibration calibrate(const ChipSpec& chip, CalibrationGrid grid, int threads,
                      const CalibrationProgress& progress) {
    TRNSIM_CHECK(threads >= 1, "at least one thread");
    Calibration c;
    c.chip = chip.name;
    c.grid = grid;
    std::array<int, kKernelClassCount> totals{};
    for (KernelClass cls : all_kernel_classes()) {
        for (bool held_out : {false, true}) {
            for (Kernel& k : calibration_shapes(cls, grid, held_out)) {
                CalibrationPoint p;
                p.cls = cls;
                p.held_out = held_out;
                p.kernel = std::move(k);
                c.points.push_back(std::move(p));
                ++totals[static_cast<std::size_t>(cls)];
            }
        }
    }
    // Simulate every point; each result goes to its own slot.
    const DetailedModel detailed(chip, 1);
    std::array<int, kKernelClassCount> done{};
    std::mutex mutex; // guards done and the progress calls
    parallel_for(c.points.size(), threads, [&](std::size_t i, int) {
        c.points[i].detailed = Seconds::of(detailed.run(c.points[i].kernel).seconds());
        const std::lock_guard<std::mutex> lock(mutex);
        const auto cls = static_cast<std::size_t>(c.points[i].cls);
        ++done[cls];
        if (progress) {
            progress(c.points[i].cls, done[cls], totals[cls]);
        }
    });
    // Fit each class on its training points; measure the rounded model on the held-out ones.
    const detail::ChipRates rates(chip);
    for (KernelClass cls : all_kernel_classes()) {
        std::vector<const CalibrationPoint*> train;
        for (const auto& p : c.points) {
            if (p.cls == cls && !p.held_out) {
                train.push_back(&p);
            }
        }
        const auto features = static_cast<Eigen::Index>(detail::feature_count(cls));
        Eigen::MatrixXd a(static_cast<Eigen::Index>(train.size()), features);
        Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(train.size()));
        for (std::size_t i = 0; i < train.size(); ++i) {
            const detail::FeatureRow x =
                detail::feature_values(cls, detail::terms(train[i]->kernel, rates));
            for (Eigen::Index j = 0; j < features; ++j) {
                a(static_cast<Eigen::Index>(i), j) =
                    x[static_cast<std::size_t>(j)] / train[i]->detailed.seconds();
            }
        }
        const Eigen::VectorXd x = nnls(a, b);
        KernelFit& fit = c.model.fit(cls);
        for (Eigen::Index j = 0; j < features; ++j) {
            fit.coefficients.push_back(round_significant(x(j), 6));
        }
        fit.train_points = static_cast<int>(train.size());
    }
    ChipSpec fitted = chip;
    fitted.kernel_model = c.model;
    const CostModel model(fitted, 1);
    for (auto& p : c.points) {
        p.analytic = Seconds::of(model.cost(p.kernel).seconds);
    }
    for (KernelClass cls : all_kernel_classes()) {
        KernelFit& fit = c.model.fit(cls);
        double sum = 0.0;
        double worst = 0.0;
        int n = 0;
        for (const auto& p : c.points) {
            if (p.cls == cls && p.held_out) {
                const double e = std::abs(p.relative_error());
                sum += e;
                worst = std::max(worst, e);
                ++n;
            }
        }
        fit.mape = n > 0 ? sum / n : 0.0;
        fit.max_error = worst;
        fit.held_out_points = n;
    }
    return c;
}

std::string error_table(const KernelModelSpec& model) {
    std::string t;
    char line[128];
    for (KernelClass cls : all_kernel_classes()) {
        const KernelFit& f = model.fit(cls);
        std::snprintf(line, sizeof line, "%s: MAPE %.2f%%, max %.2f%%\n", to_string(cls),
                      100.0 * f.mape, 100.0 * f.max_error);
        t += line;
    }
    return t;
}

std::string calibration_csv(const Calibration& c) {
    std::string csv = "class,set,shape,detailed_s,analytic_s,relative_error\n";
    char line[512];
    for (const auto& p : c.points) {
        std::snprintf(line, sizeof line, "%s,%s,\"%s\",%.9g,%.9g,%.6f\n", to_string(p.cls),
                      p.held_out ? "held_out" : "train", describe(p.kernel).c_str(),
                      p.detailed.seconds(), p.analytic.seconds(), p.relative_error());
        csv += line;
    }
    return csv;
}

} // namespace trnsim::compute
