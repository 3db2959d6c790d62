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

Features features(const Kernel& piece, const ChipRates& rates) {
    Features f;
    const KernelClass cls = class_of(piece);
    switch (cls) {
    case KernelClass::matmul:
        f.nominal = matmul_terms(std::get<MatmulShape>(piece), rates);
        break;
    case KernelClass::attention:
        f.nominal = attention_terms(std::get<AttentionShape>(piece), rates);
        break;
    case KernelClass::adamw:
        f.nominal = stream_terms(plan_adamw(std::get<OptimizerShape>(piece), rates), rates);
        break;
    default:
        f.nominal = stream_terms(plan_stream(std::get<StreamShape>(piece), rates), rates);
        break;
    }
    const Nominal& n = f.nominal;
    // One step's path (fill and drain), then the other steps at the pace of the bottleneck.
    const double pipelined = n.path + n.bound() * (n.steps - 1.0) / n.steps;
    switch (form_of(cls)) {
    case Form::matmul:
    case Form::attention:
        f.x = {n.pipeline, pipelined, n.runner_up(), kMicrosecond};
        f.count = 4;
        break;
    case Form::stream:
        f.x = {n.pipeline, pipelined, n.passes, n.buffers, n.rest(), kMicrosecond};
        f.count = 6;
        break;
    }
    return f;
}

} // namespace trnsim::compute::detail
