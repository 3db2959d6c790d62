#include "outputs.hpp"

#include "trnsim/config/study.hpp"

#include <algorithm>

namespace trnsim::cli {

std::vector<results::PlannedOutput> scenario_outputs(const config::ScenarioSpec& spec) {
    std::vector<results::PlannedOutput> out;
    out.push_back({spec.output.file, "output.file", spec.sources.find("output.file")});
    if (!spec.output.trace.empty()) {
        out.push_back({spec.output.trace, "output.trace", spec.sources.find("output.trace")});
    }
    return out;
}

void check_scenario_outputs(const config::ScenarioSpec& spec) {
    results::check_outputs(scenario_outputs(spec), spec.input_files);
}

void check_study_output(const std::string& output, const std::optional<std::string>& option,
                        const SourceLocation& file_origin, std::vector<std::string> inputs) {
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    const SourceLocation origin =
        option ? SourceLocation{"command line (-o " + *option + ")", 0, 0} : file_origin;
    results::check_outputs({{output, "output.file", origin}}, inputs);
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

} // namespace trnsim::cli
