#include "features.hpp"

#include <algorithm>

namespace trnsim::compute::detail {

namespace {

enum class Form { matmul, attention, attention_backward, stream, cross_entropy };

Form form_of(KernelClass c) {
    return c == KernelClass::matmul               ? Form::matmul
           : c == KernelClass::attention          ? Form::attention
           : c == KernelClass::attention_backward ? Form::attention_backward
           : c == KernelClass::cross_entropy      ? Form::cross_entropy
                                                  : Form::stream;
}

} // namespace

std::size_t feature_count(KernelClass c) { return feature_names(c).size(); }

std::vector<const char*> feature_names(KernelClass c) {
    switch (form_of(c)) {
    case Form::matmul:
    case Form::attention:
        return {"pipeline", "pipelined_steps", "runner_up", "constant_us"};
    case Form::attention_backward:
        return {"pipeline", "pipelined_steps", "runner_up", "other_resources", "tensor",
                "constant_us", "resident_wait"};
    case Form::cross_entropy:
        return {"pipeline", "pipelined_steps", "two_passes", "buffer_turns", "other_resources",
                "constant_us", "busiest_compute"};
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
    case Form::attention_backward:
        return {1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    case Form::cross_entropy:
        return {1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    case Form::stream:
        break;
    }
    return {1.0, 0.0, 0.0, 0.0, 0.0, 0.0};
}

} // namespace trnsim::compute::detail
