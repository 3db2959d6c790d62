// Subcommands of the trnsim executable (the composition root). Each takes the arguments after
// the subcommand name and returns the process exit code; input errors propagate as InputError or
// UsageError (exit 2), anything else as an internal error (exit 1).
#pragma once

#include <string>
#include <vector>

namespace trnsim::cli {

int cmd_run(const std::vector<std::string>& args);
int cmd_validate(const std::vector<std::string>& args);
int cmd_describe(const std::vector<std::string>& args);
int cmd_calibrate(const std::vector<std::string>& args);
int cmd_kernel(const std::vector<std::string>& args);
int cmd_collective(const std::vector<std::string>& args);
int cmd_batch(const std::vector<std::string>& args);
int cmd_plan(const std::vector<std::string>& args);
int cmd_compare(const std::vector<std::string>& args);

/// trnsim validate of a sweep or plan file: every point (or the search space) checked.
int validate_study(const std::string& file);

/// "trnsim 0.1.0"
std::string version_line();

} // namespace trnsim::cli
