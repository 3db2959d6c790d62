// The step simulation's entities, events and rank arithmetic (private to the sim module;
// include/trnsim/sim/step_sim.hpp describes the model). Every other part of the simulation
// numbers entities, ranks and chips through this one layout:
//
//   step_programs  what each worker runs (built once, read-only during the run)
//   step_workers   the entities that walk their pipeline schedules
//   step_families  the collectives between entities (data-, context-, expert-parallel groups)
//   step_fabric    the flow network the transfers and collective phases run on
//   step_model     owns the four and dispatches the engine's events to them
//
// Entities, in this order (their ids break ties between simultaneous events, so the order is
// part of the results): the workers [0, workers), then the families, then one wake entity
// whose events only make a window edge happen. Partitions: blocks of workers by NeuronLink
// domain (at most 64), then one for the families and the wake entity.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "trnsim/engine/simulator.hpp"
#include "trnsim/sim/step_sim.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/workload/plan.hpp"

namespace trnsim::sim::detail {

/// The handlers are ordinary functions on this one queue type, so the simulation's logic
/// lives in .cpp files and the engine still calls the model without a virtual call.
using StepQueue = engine::CalendarQueue;
using StepContext = engine::Context<StepQueue>;
using StepEdge = engine::WindowEdge<StepQueue>;

enum StepEvent : engine::EventType {
    kWorkerStart = 0,    ///< worker: begin the step
    kWorkerResume = 1,   ///< worker: the engine has reached the worker's own clock
    kPipelineInput = 2,  ///< worker: part of a pipeline transfer arrived (payload: input slot)
    kCollectiveDone = 3, ///< worker: a collective of its families ended (payload: CommGroup)
    kTpBarrierDone = 4,  ///< worker (entities = rank): its TP group's collective ended
    kMemberArrived = 5,  ///< family: a member reached a collective (payload: sequence << 32 |
                         ///< collective)
    kPhaseFlowsDone = 6, ///< family: a phase's flows arrived (payload: chip group)
    kPhaseLocalDone = 7, ///< family: the phase's on-chip work is done too (payload: chip group)
    kClosedFormDone = 8, ///< family: a closed-form collective ended
    kFabricWake = 9,     ///< the wake entity: the fabric's next rate change or arrival
    kFamilyLaunched = 10, ///< family: the running collective's launch cost is over
    /// worker running its TP group's collective as flows (tp_collectives = flows): the
    /// launch cost is over, a phase's flows arrived, the phase's on-chip work is done too
    kTpLaunched = 11,
    kTpFlowsDone = 12,
    kTpLocalDone = 13,
};

/// The groups whose collectives run between entities, in the order their families are built
/// (the expert groups only for MoE models). TP collectives stay inside an entity (closed form,
/// or flows the entity starts itself) and pipeline transfers are point to point, so tp and pp
/// never have families.
inline constexpr std::array<workload::CommGroup, 4> kFamilyGroups = {
    workload::CommGroup::dp, workload::CommGroup::cp, workload::CommGroup::ep,
    workload::CommGroup::expert_dp};

/// True for the groups of kFamilyGroups.
bool is_family_group(workload::CommGroup group);

inline std::size_t index_of(workload::CommGroup group) {
    return static_cast<std::size_t>(group);
}

/// Seconds to the model's unit, whole nanoseconds, by the project's one rounding rule (up:
/// Duration::from_seconds_ceil).
inline std::int64_t to_ns(double seconds) { return Duration::from_seconds_ceil(seconds).ns(); }

/// The plan's shape as the simulation uses it. Fixed at construction.
///
/// Ranks are numbered TP innermost, then CP, then DP, then stage; a "TP group" is one TP
/// group of ranks, so TP group g holds ranks [g tp, (g + 1) tp) and sits on stage
/// g / groups_per_stage. A worker is a TP group (entities = tp_group) or one rank.
class StepLayout {
public:
    /// Throws std::invalid_argument when the fabric does not hold the plan's chips.
    StepLayout(const workload::Plan& plan, const topology::Fabric& fabric,
               const StepSimOptions& options);

    bool per_rank;                 ///< entities = rank
    int tp;                        ///< ranks per TP group
    int cp;                        ///< TP groups per context-parallel group
    std::int64_t groups_per_stage; ///< TP groups per stage: cp x dp
    int pp;                        ///< pipeline stages
    int virtual_stages;            ///< model chunks per stage
    std::int64_t microbatches;
    int ranks_per_chip;     ///< tp is a multiple or a divisor of it (the plan ensures)
    std::int64_t tp_groups; ///< ranks / tp
    std::uint64_t workers;  ///< entities that run programs
    int chips_per_group;    ///< chips a TP group spans (1 when it shares a chip)
    /// Control latency: how long a collective's start and end notifications take, and the
    /// engine's lookahead (step_sim.hpp). At least 1 ns.
    std::int64_t lookahead_ns;
    /// Input slots per worker: one per (direction, microbatch, chunk).
    std::size_t input_slots;
    /// First entity of each partition; the last one starts at `workers` (families, wake).
    std::vector<std::uint32_t> partition_starts;

    std::uint32_t partitions() const { return static_cast<std::uint32_t>(partition_starts.size()); }
    std::int64_t tp_group_of(std::uint64_t worker) const {
        return per_rank ? static_cast<std::int64_t>(worker) / tp
                        : static_cast<std::int64_t>(worker);
    }
    std::uint32_t first_chip_of(std::int64_t tp_group) const {
        return static_cast<std::uint32_t>(tp_group * tp / ranks_per_chip);
    }
    /// Ranks of a TP group on each of its chips.
    int group_ranks_per_chip() const { return std::min(tp, ranks_per_chip); }
    /// Flows that make one pipeline input: one per chip of a TP group, one in rank mode.
    int input_parts() const { return per_rank ? 1 : chips_per_group; }
    std::size_t input_slot(bool forward, std::int64_t microbatch, int chunk) const {
        return static_cast<std::size_t>(
            ((forward ? 0 : 1) * microbatches + microbatch) * virtual_stages + chunk);
    }
    engine::EntityId family_entity(std::size_t family) const {
        return static_cast<engine::EntityId>(workers + family);
    }
};

} // namespace trnsim::sim::detail
