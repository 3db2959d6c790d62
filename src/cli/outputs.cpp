#include "outputs.hpp"

#include "trnsim/config/study.hpp"

#include <cstdint>
#include <cstdio>

namespace trnsim::cli {

SourceLocation study_output_origin(const std::optional<std::string>& option,
                                   const SourceLocation& file_origin) {
    return option ? SourceLocation{"command line (-o " + *option + ")", 0, 0} : file_origin;
}

std::vector<config::Override> run_overrides(const std::vector<std::string>& sets,
                                            const std::optional<std::string>& output,
                                            const std::optional<std::string>& trace,
                                            const std::optional<std::string>& threads) {
    std::vector<config::Override> all = config::set_overrides(sets);
    if (threads) {
        all.push_back(config::option_override("simulation.threads", *threads, "--threads"));
    }
    if (output) {
        // As an override, so the stored scenario records where its results went.
        all.push_back(config::option_override("output.file", *output, "-o"));
    }
    if (trace) {
        all.push_back(config::option_override("output.trace", *trace, "--trace"));
    }
    return all;
}

std::optional<std::string> output_for_overrides(const config::ScenarioSpec& spec,
                                                const std::vector<std::string>& sets,
                                                bool output_given) {
    if (sets.empty() || output_given) {
        return std::nullopt;
    }
    for (const std::string& s : sets) {
        if (s.rfind("output.file=", 0) == 0 || s.rfind("output=", 0) == 0) {
            return std::nullopt; // the --set names the file itself
        }
    }
    // FNV-1a over the --set texts in order (a later --set may override an earlier one).
    std::uint64_t h = 14695981039346656037ull;
    for (const std::string& s : sets) {
        for (const char c : s + '\n') {
            h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
        }
    }
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08llx", static_cast<unsigned long long>(h >> 32));
    const std::string file = spec.output.file;
    const std::string stem = file.size() > 3 && file.compare(file.size() - 3, 3, ".h5") == 0
                                 ? file.substr(0, file.size() - 3)
                                 : file;
    return stem + "-" + hex + ".h5";
}

} // namespace trnsim::cli
