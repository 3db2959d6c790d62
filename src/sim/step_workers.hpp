// The step simulation's workers (private to the sim module; step_layout.hpp lists the
// parts): the entities that walk their stage's pipeline schedule, task by task, through the
// programs of step_programs.hpp, then the stage's final program.
//
// A worker keeps its own clock, which runs ahead of the engine's time over runs of local ops;
// before anything another entity could see (a transfer, a barrier, waiting) it sleeps until
// the engine has caught up (sync), so every interaction happens at the engine's time. Its
// time divides into compute, exposed communication and bubble as it goes; idle is what is
// left until the last worker's end.
//
// TP collectives as flows (tp_collectives = flows): the worker that completes its group's
// barrier (the entity itself, or the group's last rank) runs the collective's planned phases
// on the fabric one after another, as a family runs a chip group's (step_families.hpp), and
// releases the group when the last phase is over. Plans are made once before the run for each
// position of a TP group inside its NeuronLink domain and collective; a group's flows are its
// position's plan moved to its own chips (the domains are alike, so the moved plan is the plan
// of the group's chips).
//
// Invariants: a worker's state, input slots and trace records are touched only by its own
// handler, and the ranks of one TP group share a partition, so its TP barrier and TP run are
// too;
// handlers of different partitions never write the same data. Collectives a worker issues
// on one group end in the order it issued them (its family runs them one at a time).
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "step_fabric.hpp"
#include "step_families.hpp"
#include "step_layout.hpp"
#include "step_programs.hpp"

namespace trnsim::sim::detail {

struct Worker {
    enum class Mode : std::uint8_t { before_task, in_task, final_program, finished };
    /// What a worker that returned to the engine waits for.
    enum class Waiting : std::uint8_t { nothing, own_clock, input, collective, tp_barrier };

    std::int32_t stage = 0;
    std::int32_t task = 0;    ///< index into the stage's schedule
    std::uint32_t action = 0; ///< index into the current program's actions
    Mode mode = Mode::before_task;
    Waiting waiting = Waiting::nothing;
    workload::CommGroup wait_group = workload::CommGroup::dp; ///< collective: its group
    /// input: the input slot; collective: the count of completed collectives to wait for.
    std::uint32_t wait_target = 0;
    std::uint32_t wait_name = 0; ///< tp_barrier: the collective's name (timeline)
    std::int64_t clock_ns = 0;   ///< own clock, never behind the engine's time
    std::int64_t wait_since_ns = 0;
    std::int64_t task_start_ns = 0;
    std::int64_t compute_ns = 0, comm_ns = 0, bubble_ns = 0;
    std::int64_t pipeline_end_ns = 0, end_ns = 0;
    /// Collectives issued and completed per group.
    std::array<std::uint32_t, workload::kCommGroups> issued{}, completed{};
    std::array<std::int32_t, workload::kCommGroups> family{}; ///< per group; -1: none
    double speed = 1.0;                                       ///< of its slowest chip
};

/// When the last worker ends, and which worker that is.
struct StepEnd {
    std::int64_t step_ns = 0;
    std::int64_t pipeline_ns = 0;     ///< the latest end of a pipeline schedule
    const Worker* critical = nullptr; ///< the first worker that ends last
};

class StepWorkers {
public:
    /// Throws std::invalid_argument for chip speeds that are not one positive factor per
    /// chip, and for traced ranks outside the plan.
    StepWorkers(const workload::Plan& plan, const StepLayout& layout, const StepPrograms& programs,
                const StepFamilies& families, const StepFabric& fabric,
                const StepSimOptions& options);

    /// tp_collectives = flows, after the families' plan_all(): finds the TP groups whose
    /// collectives cross only links that no other transfer of the step can use (no family's
    /// plan, no pipeline transfer, no other TP group), and each of their phases' transfer time
    /// alone on the fabric (network::simulate_collectives, the collective benchmark's model).
    /// Such a group's phases take that time without flows: nothing can share their links, so
    /// their max-min rates are those of the phase alone. `enable` false: every group keeps
    /// its flows (for tests).
    void find_lone_tp_groups(const StepFamilies& families, const StepFabric& fabric,
                             bool enable);
    /// TP groups whose collectives run without flows (find_lone_tp_groups).
    std::uint64_t lone_tp_groups() const { return lone_groups_; }

    /// An event for a worker entity.
    void handle(StepContext& ctx, const engine::Event& e, StepFabric& fabric);

    /// Throws std::logic_error when a worker did not finish (a dependency was never met).
    StepEnd step_end() const;
    std::vector<EntityTimes> entity_times(std::int64_t step_ns) const;
    /// The timeline slices of every traced rank, ordered by rank, lane, start.
    std::vector<TraceSpan> trace_spans() const;

private:
    struct TpBarrier {
        int arrived = 0;
        std::int64_t latest_ns = 0;
    };
    /// A worker whose ranks are traced: the issue (time, collective) of its collectives per
    /// group, matched to their ends in order.
    struct TracedWorker {
        std::vector<std::int64_t> ranks;
        std::array<std::vector<std::pair<std::int64_t, std::uint32_t>>, workload::kCommGroups>
            issued;
        std::array<std::size_t, workload::kCommGroups> next_end{};
    };

    double speed_of(std::uint64_t worker, const StepSimOptions& options) const;
    /// The TP collectives' plans for each position of a TP group in its domain.
    void plan_tp_collectives(const StepFabric& fabric, bool merge_repeats);
    /// Starts TP collective `collective` of TP group `g` as flows, or its next phase, or
    /// releases the group when it is done.
    void start_tp_run(StepContext& ctx, std::int64_t g, std::uint32_t collective,
                      StepFabric& fabric);
    void start_tp_phase(StepContext& ctx, std::int64_t g, StepFabric& fabric);
    void add_traced(const StepSimOptions& options);

    void on_input(StepContext& ctx, Worker& w, std::size_t slot, StepFabric& fabric);
    void on_collective_done(StepContext& ctx, Worker& w, workload::CommGroup group,
                            StepFabric& fabric);
    /// The worker stops waiting at the engine's time and goes on.
    void resume(StepContext& ctx, Worker& w, StepFabric& fabric);

    /// Runs the worker until it has to wait or has finished.
    void run(StepContext& ctx, Worker& w, StepFabric& fabric);
    // The steps of run(): each returns false when the worker has to return to the engine.
    bool begin_task(StepContext& ctx, Worker& w);
    bool end_program(StepContext& ctx, Worker& w, const Program& p,
                     const workload::PipelineTask* task, StepFabric& fabric);
    bool perform(StepContext& ctx, Worker& w, const Program& p, const Action& a,
                 StepFabric& fabric);
    void run_local(StepContext& ctx, Worker& w, const Program& p, const Action& a);
    /// Runs local ops back to back on the worker's clock, each at the worker's speed (a
    /// closed-form TP collective at its own).
    void run_ops(StepContext& ctx, Worker& w, const LocalOp* begin, const LocalOp* end);
    void enter_tp_barrier(StepContext& ctx, Worker& w, const Action& a, StepFabric& fabric);
    void wait_for_collectives(Worker& w, workload::CommGroup group);
    /// Sends a task's output to the neighbouring virtual stage (false: must sleep first).
    bool send(StepContext& ctx, Worker& w, const workload::PipelineTask& t, StepFabric& fabric);
    /// False when the worker has to sleep until its own clock first.
    bool sync(StepContext& ctx, Worker& w);
    void issue(StepContext& ctx, Worker& w, workload::CommGroup group, std::uint32_t collective);
    void trace(StepContext& ctx, std::uint64_t worker, int lane, std::int64_t start,
               std::int64_t end, std::uint32_t name);

    const workload::Plan& plan_;
    const StepLayout& layout_;
    const StepPrograms& programs_;

    std::vector<Worker> workers_;
    /// Flows arrived per (worker, input slot); the input is there at layout_.input_parts().
    std::vector<std::uint16_t> input_parts_;
    std::vector<TpBarrier> tp_barriers_; ///< per TP group (entities = rank, or TP flows)
    // TP flows: per TP group its running collective; per position in a domain (first chip
    // modulo the domain's chips) its index, and per index the first chip of the group planned
    // and its plans ([index][TP collective]).
    bool merge_repeats_ = true;
    std::vector<ChipGroupProgress> tp_runs_;
    std::vector<std::int32_t> tp_position_;
    std::vector<std::uint32_t> tp_planned_first_;
    std::vector<std::vector<ChipGroupPlan>> tp_plans_;
    /// Per TP group: 1 when its collectives' links are its own (find_lone_tp_groups).
    std::vector<std::uint8_t> tp_alone_;
    std::uint64_t lone_groups_ = 0;
    /// A phase of a lone TP group: its transfer time alone and its bytes per link kind.
    struct AlonePhase {
        std::int64_t transfer_ns = 0;
        std::array<double, topology::kLinkKinds> link_bytes{};
    };
    std::vector<std::vector<std::vector<AlonePhase>>> alone_phases_; ///< [position][TP coll.][phase]
    /// Looked up only, never iterated, so its order cannot reach the results.
    std::unordered_map<std::uint64_t, TracedWorker> traced_;
    std::vector<std::vector<TraceSpan>> spans_; ///< per partition
};

} // namespace trnsim::sim::detail
