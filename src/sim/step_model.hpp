// The step simulation's engine model (private to the sim module; step_layout.hpp lists the
// parts): it owns the layout, the programs, the families, the workers and the fabric, sends
// each event to the part its entity belongs to, resolves the fabric at window edges, and puts
// the step's result together at the end.
//
// Invariants: the parts are built in a fixed order (programs, families, fabric, workers) and
// never rebuilt, so references between them stay valid; during the run only handlers (one
// entity's state each) and the window edge (all partitions stopped) change state.
#pragma once

#include "coster.hpp"
#include "step_fabric.hpp"
#include "step_families.hpp"
#include "step_layout.hpp"
#include "step_programs.hpp"
#include "step_workers.hpp"

namespace trnsim::sim::detail {

class StepModel {
public:
    /// Throws std::invalid_argument when the fabric does not match the plan or the options
    /// do not fit it (chip speeds, traced ranks).
    StepModel(const workload::Plan& plan, const topology::Fabric& fabric,
              const StepSimOptions& options);

    engine::PartitionMap partition_map() const {
        return engine::PartitionMap::from_starts(entities(), layout_.partition_starts);
    }
    std::uint32_t entities() const {
        return static_cast<std::uint32_t>(layout_.workers + families_.size() + 1);
    }
    std::int64_t lookahead_ns() const { return layout_.lookahead_ns; }
    std::uint64_t worker_count() const { return layout_.workers; }

    void handle(StepContext& ctx, const engine::Event& e);
    void window_edge(StepEdge& edge) { fabric_.window_edge(edge); }

    StepSimResult result(const engine::RunStats& run) const;

private:
    /// The entity after the families; its events only make a window edge happen.
    engine::EntityId wake_entity() const {
        return static_cast<engine::EntityId>(layout_.workers + families_.size());
    }
    /// The analytic estimate with the simulation's step, bubble and exposed communication.
    StepEstimate simulated_estimate(const StepEnd& end) const;

    const workload::Plan& plan_;
    StepLayout layout_;
    Coster coster_;
    StepPrograms programs_;
    StepFamilies families_;
    StepFabric fabric_; // before the workers, which plan their TP collectives on it
    StepWorkers workers_;
    double plans_s_ = 0.0; ///< wall seconds of the collective plans (benchmarks)
};

} // namespace trnsim::sim::detail
