#include "trnsim/report/outputs.hpp"

#include <algorithm>

namespace trnsim::report {

std::vector<results::PlannedOutput> scenario_outputs(const config::ScenarioSpec& spec,
                                                     bool trace) {
    std::vector<results::PlannedOutput> out;
    out.push_back({spec.output.file, "output.file", spec.sources.find("output.file")});
    if (trace && !spec.output.trace.empty()) {
        out.push_back({spec.output.trace, "output.trace", spec.sources.find("output.trace")});
    }
    return out;
}

void check_scenario_outputs(const config::ScenarioSpec& spec, bool trace) {
    results::check_outputs(scenario_outputs(spec, trace), spec.input_files);
}

std::vector<std::string> sweep_inputs(const std::string& sweep_file,
                                      const std::vector<config::ScenarioSpec>& points) {
    std::vector<std::string> inputs{sweep_file};
    for (const auto& point : points) {
        inputs.insert(inputs.end(), point.input_files.begin(), point.input_files.end());
    }
    return inputs;
}

std::vector<std::string> plan_inputs(const config::PlanSpec& plan,
                                     const config::ScenarioSpec& base) {
    std::vector<std::string> inputs{plan.file};
    inputs.insert(inputs.end(), base.input_files.begin(), base.input_files.end());
    const std::vector<std::string> chips = config::search_input_files(plan);
    inputs.insert(inputs.end(), chips.begin(), chips.end());
    return inputs;
}

void check_study_output(const std::string& output, const SourceLocation& origin,
                        std::vector<std::string> inputs) {
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    results::check_outputs({{output, "output.file", origin}}, inputs);
}

} // namespace trnsim::report
