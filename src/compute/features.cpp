#include "features.hpp"

#include <algorithm>

namespace trnsim::compute::detail {

namespace {

constexpr double kMicrosecond = 1e-6;

enum class Form { matmul, attention, stream };

Form form_of(KernelClass c) {
    return c == KernelClass::matmul      ? Form::matmul
           : c == KernelClass::attention ? Form::attention
                                         : Form::stream;
}

} // namespace

std::size_t feature_count(KernelClass c) { return feature_names(c).size(); }

std::vector<const char*> feature_names(KernelClass c) {
    switch (form_of(c)) {
    case Form::matmul:
    case Form::attention:
        return {"pipeline", "pipelined_steps", "runner_up", "constant_us"};
    case Form::stream:
        break;
    }
    return {"pipeline", "pipelined_steps", "two_passes", "buffer_turns", "other_resources",
            "constant_us"};
}

std::vector<double> nominal_coefficients(KernelClass c) {
    switch (form_of(c)) {
    case Form::matmul:
        return {1.0, 0.0, 0.0, 0.0};
    case Form::attention:
        return {1.0, 0.0, 0.0, 0.0};
    case Form::stream:
        break;
    }
    return {1.0, 0.0, 0.0, 0.0, 0.0, 0.0};
}

FeatureRow feature_values(KernelClass c, const Nominal& n) {
    const Nominal::Ranked busy = n.ranked();
    // One step's path (fill and drain), then the other steps at the pace of the bottleneck.
    const double pipelined = n.path + busy.first * (n.steps - 1.0) / n.steps;
    FeatureRow x{};
    switch (form_of(c)) {
    case Form::matmul:
    case Form::attention:
        x = {n.pipeline, pipelined, busy.second, kMicrosecond};
        break;
    case Form::stream:
        x = {n.pipeline, pipelined, n.passes, n.buffers, busy.sum - busy.first, kMicrosecond};
        break;
    }
    return x;
}

double predict(KernelClass c, const Nominal& n, const FeatureRow& coefficients) {
    const FeatureRow x = feature_values(c, n);
    // Summed pairwise (unused features are 0): a short dependency chain.
    static_assert(kMaxFeatures == 8);
    std::array<double, 4> t{};
    for (std::size_t i = 0; i < 4; ++i) {
        t[i] = coefficients[2 * i] * x[2 * i] + coefficients[2 * i + 1] * x[2 * i + 1];
    }
    return (t[0] + t[1]) + (t[2] + t[3]);
}

} // namespace trnsim::compute::detail
