// The Pareto frontier of two minimised figures (private to the study module).
#pragma once

#include "trnsim/study/planner.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace trnsim::study::detail {

/// Indices of `idx` on the Pareto frontier of (a, b), both minimised: no other point is at
/// least as good in both and better in one. Ties keep the lowest index. O(n log n).
std::vector<std::size_t> frontier_of(std::vector<std::size_t> idx, const std::vector<double>& a,
                                     const std::vector<double>& b);

} // namespace trnsim::study::detail

namespace trnsim::study {

/// The serving plan's steps (planner.hpp) on `threads` threads.
ServingPlanResult run_serving_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                                   int threads,
                                   const std::function<void(const std::string&)>& progress);

/// The fleet plan's steps (planner.hpp) on `threads` threads.
FleetPlanResult run_fleet_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                               int threads,
                               const std::function<void(const std::string&)>& progress);

} // namespace trnsim::study
