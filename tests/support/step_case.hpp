// A step-simulation case for tests: a scenario (YAML text plus --set style overrides), its
// plan and the fabric that holds exactly its cluster.
#pragma once

#include "trnsim/config/load.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/topology/fabric.hpp"

#include <string>
#include <utility>
#include <vector>

namespace trnsim::test {

struct StepCase {
    config::ScenarioSpec spec;
    workload::Plan plan;
    topology::Fabric fabric;
};

inline StepCase make_step_case(const char* yaml, const char* name,
                               const std::vector<std::string>& overrides) {
    config::ScenarioSpec spec = config::load_scenario_text(yaml, name, overrides);
    workload::Plan plan = sim::make_plan(spec);
    topology::Fabric fabric = topology::Fabric::build(spec.fabric, plan.cluster.domains());
    return {std::move(spec), std::move(plan), std::move(fabric)};
}

} // namespace trnsim::test
