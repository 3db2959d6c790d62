// A scenario's checks across keys that depend on its workload type, and its warnings (private
// to the config module).
#pragma once

#include "trnsim/config/scenario.hpp"

#include "schema.hpp"

namespace trnsim::config::detail {

/// Checks that depend on workload.type: the training keys are required for training and
/// meaningless for a collective; a collective needs a fabric (default: <chip>-ultracluster).
void check_workload(ScenarioSpec& spec, const Context& ctx);

/// Settings without effect here, requests the scenario cannot fulfil (issue 18: a warning
/// for each, `--strict` refuses them), and a layout chosen for the user (pipeline stages of
/// unequal layers when pp does not divide them and no layout key is given).
void collect_warnings(ScenarioSpec& spec);

} // namespace trnsim::config::detail
