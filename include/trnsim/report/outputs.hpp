// The output contract of every front end (the command line and the Python module): which files
// a run, sweep or plan reads, which it writes, and the check of one against the other before
// anything runs (results::check_outputs: no output on an input or on another output, none
// where it cannot be written). Both front ends call these, so they refuse the same outputs
// with the same messages.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/results/output_files.hpp"

#include <string>
#include <vector>

namespace trnsim::report {

/// The files a scenario run writes: output.file, and output.trace when it has one and `trace`
/// (located where the scenario or the command line gave them).
std::vector<results::PlannedOutput> scenario_outputs(const config::ScenarioSpec& spec,
                                                     bool trace = true);

/// Checks the outputs of a scenario run (scenario_outputs) against every file it read: the
/// scenario, its presets (model, chip, fabric, reliability) and traces. InputError.
void check_scenario_outputs(const config::ScenarioSpec& spec, bool trace = true);

/// Every file a sweep reads: the sweep file and every file its points read.
std::vector<std::string> sweep_inputs(const std::string& sweep_file,
                                      const std::vector<config::ScenarioSpec>& points);

/// Every file a plan reads: the plan file, every file of its base scenario and the chip files
/// search.chip names (config::search_input_files).
std::vector<std::string> plan_inputs(const config::PlanSpec& plan,
                                     const config::ScenarioSpec& base);

/// Checks the results file of a sweep or plan, named at `origin` (the study file's
/// output.file, or the option or argument that gave it), against `inputs`. InputError.
void check_study_output(const std::string& output, const SourceLocation& origin,
                        std::vector<std::string> inputs);

} // namespace trnsim::report
