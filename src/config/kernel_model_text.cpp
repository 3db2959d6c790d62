#include "trnsim/config/kernel_model_text.hpp"

#include "trnsim/core/error.hpp"

#include <cstdio>

namespace trnsim::config {

namespace {

constexpr const char* kHeader = "# Calibrated analytic kernel model";

std::string number(const char* format, double v) {
    char text[64];
    std::snprintf(text, sizeof text, format, v);
    return text;
}

/// Offset of the first line of `text` that starts with `prefix`, or npos.
std::size_t line_starting(const std::string& text, const std::string& prefix) {
    for (std::size_t at = 0; at < text.size();) {
        if (text.compare(at, prefix.size(), prefix) == 0) {
            return at;
        }
        const std::size_t next = text.find('\n', at);
        if (next == std::string::npos) {
            break;
        }
        at = next + 1;
    }
    return std::string::npos;
}

} // namespace

std::string kernel_model_yaml(const compute::KernelModelSpec& model, const std::string& command) {
    std::string t = std::string(kHeader) + ", written by `" + command + "`:\n";
    t += "# per kernel class, the coefficients of its closed form (docs/compute.md) and the\n"
         "# held-out error of the analytic model against the detailed core model. Generated; to\n"
         "# change it, change the models and recalibrate.\n";
    t += "kernel_model:\n";
    for (compute::KernelClass k : compute::all_kernel_classes()) {
        const compute::KernelFit& f = model.fit(k);
        t += std::string("  ") + compute::to_string(k) + ":\n";
        t += "    coefficients: [";
        for (std::size_t i = 0; i < f.coefficients.size(); ++i) {
            t += (i == 0 ? "" : ", ") + number("%.6g", f.coefficients[i]);
        }
        t += "]\n";
        t += "    mape: " + number("%.2f", 100.0 * f.mape) + "%\n";
        t += "    max_error: " + number("%.2f", 100.0 * f.max_error) + "%\n";
        t += "    train_points: " + std::to_string(f.train_points) + "\n";
        t += "    held_out_points: " + std::to_string(f.held_out_points) + "\n";
    }
    return t;
}

std::string replace_kernel_model(const std::string& chip_text, const std::string& section) {
    std::size_t cut = line_starting(chip_text, kHeader);
    if (cut == std::string::npos) {
        cut = line_starting(chip_text, "kernel_model:");
    }
    if (cut == std::string::npos) {
        std::string t = chip_text;
        if (!t.empty() && t.back() != '\n') {
            t += '\n';
        }
        return t + "\n" + section;
    }
    // Nothing but the section (indented lines, comments, blank lines) may follow.
    const std::size_t key = chip_text.find("kernel_model:", cut);
    for (std::size_t at = chip_text.find('\n', key); at != std::string::npos && at + 1 < chip_text.size();
         at = chip_text.find('\n', at + 1)) {
        const char c = chip_text[at + 1];
        if (c != ' ' && c != '#' && c != '\n') {
            throw InputError("kernel_model",
                             "must be the last section of the chip file (found '" +
                                 chip_text.substr(at + 1, chip_text.find('\n', at + 1) - at - 1) +
                                 "' after it)");
        }
    }
    return chip_text.substr(0, cut) + section;
}

} // namespace trnsim::config
