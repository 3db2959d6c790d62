// Where a command's files go. The checks before anything runs are the output contract the
// command line shares with the Python module (report/outputs.hpp); every subcommand that
// writes files calls them once its inputs are loaded and before it simulates.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace trnsim::cli {

/// Where the results file of a sweep or plan was named: `-o` when given, else the study
/// file's output.file (`file_origin`). The check itself is report::check_study_output, shared
/// with the Python module.
SourceLocation study_output_origin(const std::optional<std::string>& option,
                                   const SourceLocation& file_origin);

/// The -o value as a scenario override (taken literally, errors pointing at the option).
/// Overrides of --set come first, so -o wins over --set output.file.
std::vector<config::Override> run_overrides(const std::vector<std::string>& sets,
                                            const std::optional<std::string>& output,
                                            const std::optional<std::string>& trace,
                                            const std::optional<std::string>& threads);

/// The results file of a run with --set: the scenario's output.file (given or default) with a
/// short hash of the --set texts, `results/<name>-<8 hex digits>.h5`, so runs with different
/// overrides never overwrite each other or the plain run's file. Nothing when there is no
/// --set, or -o or a --set of output.file names the file.
std::optional<std::string> output_for_overrides(const config::ScenarioSpec& spec,
                                                const std::vector<std::string>& sets,
                                                bool output_given);

} // namespace trnsim::cli
