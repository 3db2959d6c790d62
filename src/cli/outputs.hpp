// Where a command's files go, checked before anything runs (results/output_files.hpp holds
// the checks). Every subcommand that writes files calls one of these once its inputs are
// loaded and before it simulates.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/results/output_files.hpp"

#include <optional>
#include <string>
#include <vector>

namespace trnsim::cli {

/// The files a scenario run writes: output.file, and output.trace when it has one (located
/// where the scenario or the command line gave them).
std::vector<results::PlannedOutput> scenario_outputs(const config::ScenarioSpec& spec);

/// Checks the outputs of a scenario run against the files it read (InputError, exit 2).
void check_scenario_outputs(const config::ScenarioSpec& spec);

/// The results file of a sweep or plan: `-o` when given, else its output.file. `inputs` are
/// the study file and every file its scenarios read.
void check_study_output(const std::string& output, const std::optional<std::string>& option,
                        const SourceLocation& file_origin, std::vector<std::string> inputs);

/// The -o value as a scenario override (taken literally, errors pointing at the option).
/// Overrides of --set come first, so -o wins over --set output.file.
std::vector<config::Override> run_overrides(const std::vector<std::string>& sets,
                                            const std::optional<std::string>& output,
                                            const std::optional<std::string>& trace,
                                            const std::optional<std::string>& threads);

} // namespace trnsim::cli
