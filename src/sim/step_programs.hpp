// What the step simulation's workers run (private to the sim module; step_layout.hpp lists
// the parts). The workload's programs (workload/program.hpp) list each block's kernels and
// collectives; here every (stage, chunk, pass) becomes one Program: a list of actions in which
// consecutive local ops (kernels, closed-form TP collectives) merge into one run, so that a
// worker meets the engine only where it interacts with other entities (a few events per task,
// not one per op).
//
// Invariants: built once before the run and read-only during it (workers of all partitions
// read it at once). Names are interned in construction order, never in run order, so a name's
// index (which breaks ties in the trace's sort) does not depend on the thread count.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trnsim/network/collectives.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/workload/plan.hpp"
#include "trnsim/workload/program.hpp"
#include "trnsim/workload/schedule.hpp"

#include "coster.hpp"
#include "step_layout.hpp"

namespace trnsim::sim::detail {

/// A collective between entities, run by a family of `group`. Equal (op, bytes, group) share
/// one entry, so a family plans each distinct collective once.
struct FamilyCollective {
    network::CollectiveOp op = network::CollectiveOp::all_reduce;
    double bytes = 0.0; ///< per rank, repeats included
    workload::CommGroup group = workload::CommGroup::dp;
    std::uint32_t name = 0;
};

/// A TP collective run as flows (tp_collectives = flows). Equal (op, bytes) share one entry.
struct TpCollective {
    network::CollectiveOp op = network::CollectiveOp::all_reduce;
    double bytes = 0.0; ///< per rank, repeats included
    std::uint32_t name = 0;
};

/// One local op at nominal speed, in whole nanoseconds (the timeline's unit).
struct LocalOp {
    std::uint32_t name = 0;
    bool tp_collective = false; ///< a closed-form TP collective: not scaled by the chip's speed
    std::int64_t ns = 0;
};

/// One step of a program. Only run_local keeps the worker to itself; the others interact with
/// other entities.
struct Action {
    enum Kind : std::uint8_t {
        run_local,  ///< local_ops [ops_begin, ops_end) back to back on the worker's own clock
        /// A TP collective once the group is there (entities = rank: all its ranks; tp_group:
        /// the entity): barrier_ns in closed form, or with tp_flows the flows of TP
        /// collective `collective`
        tp_barrier,
        issue,      ///< start `collective` on the worker's family of `group`, go on
        blocking,   ///< start `collective` and wait for its end
        wait,       ///< wait until every collective issued on `group` has ended
    };
    Kind kind = run_local;
    workload::CommGroup group = workload::CommGroup::dp; ///< issue, blocking, wait
    /// issue, blocking: index into the collective table; tp_barrier with tp_flows: into the
    /// TP collective table
    std::uint32_t collective = 0;
    bool tp_flows = false; ///< tp_barrier: the collective runs as flows
    std::uint32_t ops_begin = 0, ops_end = 0;
    std::int64_t barrier_ns = 0;
    std::uint32_t barrier_name = 0;
};

struct Program {
    std::vector<Action> actions;
    std::vector<LocalOp> local_ops;
    /// Local ops run after the task's pipeline send, on the worker's own clock: the engine
    /// and HBM time of collectives issued after the program's last kernel (its gradient
    /// buckets), which the kernels after it lose. They do not hold the send back: the send is
    /// a DMA transfer of activations finished before those collectives went out, and holding
    /// it would let one rank's share delay another stage's ranks, which a TP group in lockstep
    /// cannot model (docs/architecture.md, step entities).
    std::vector<LocalOp> after_send;
    /// Bytes the program's closed-form TP collectives put on each link kind, per entity (they
    /// are not flows, but count in the link classes' traffic; TP flows count their own).
    std::array<double, topology::kLinkKinds> tp_link_bytes{};
};

/// Every program of the step, the collective table, the schedules and the names.
class StepPrograms {
public:
    /// `grad_bucket_bytes`: gradients go out in buckets of this size per rank; `tp_flows`:
    /// TP collectives run as flows (tp_barrier actions) rather than closed-form local ops.
    StepPrograms(const workload::Plan& plan, const StepLayout& layout, const Coster& coster,
                 double grad_bucket_bytes, bool tp_flows);

    const std::vector<workload::PipelineTask>& schedule(int stage) const {
        return schedules_[static_cast<std::size_t>(stage)];
    }
    /// The program of one task: forward, backward, or the last microbatch's backward (which
    /// also sends the gradient buckets out).
    const Program& task_program(int stage, const workload::PipelineTask& task) const {
        const Pass pass = task.forward
                              ? Pass::forward
                              : (task.microbatch == layout_.microbatches - 1 ? Pass::last_backward
                                                                             : Pass::backward);
        return programs_[program_index(stage, task.chunk, pass)];
    }
    /// After the pipeline: wait for the gradients, run the optimizer, gather the parameters.
    const Program& final_program(int stage) const {
        return finals_[static_cast<std::size_t>(stage)];
    }
    const FamilyCollective& collective(std::uint32_t index) const { return collectives_[index]; }
    /// The collectives (indices into the table) that the programs of `stage` issue, in
    /// increasing order.
    std::vector<std::uint32_t> stage_collectives(int stage) const;
    const std::vector<TpCollective>& tp_collectives() const { return tp_collectives_; }
    /// Bytes per rank of one pipeline transfer.
    double pipeline_send_bytes() const { return send_bytes_; }

    /// Names of the trace, by index.
    const std::vector<std::string>& names() const { return names_; }
    std::uint32_t wait_input_name() const { return wait_input_name_; }
    std::uint32_t task_name(const workload::PipelineTask& task) const {
        return task_names_[static_cast<std::size_t>(
            (task.microbatch * layout_.virtual_stages + task.chunk) * 2 + (task.forward ? 0 : 1))];
    }

private:
    enum class Pass : int { forward = 0, backward = 1, last_backward = 2 };
    /// A block of a chunk and its shares of the stage's parameters, which split the stage's
    /// gradient reduction over its blocks.
    struct BlockRef {
        const workload::BlockProgram* block;
        double dense_weight;  ///< share of the stage's replicated (dense) parameters
        double expert_weight; ///< share of its expert parameters
    };
    /// The stage's gradient reduction per group (an op of the group: on, with its op, bytes
    /// and name).
    struct GradientSync {
        bool on = false;
        network::CollectiveOp op = network::CollectiveOp::reduce_scatter;
        double bytes = 0.0;
        std::string name;
        double hbm_share = 0.0; ///< of the stage's backward kernels (Coster::interference)
    };
    using GradientSyncs = std::array<GradientSync, workload::kCommGroups>;
    class Writer;

    std::size_t program_index(int stage, int chunk, Pass pass) const {
        return static_cast<std::size_t>((stage * layout_.virtual_stages + chunk) * 3 +
                                        static_cast<int>(pass));
    }
    std::uint32_t intern(const std::string& name);
    std::uint32_t collective_index(network::CollectiveOp op, double bytes,
                                   workload::CommGroup group, const std::string& name);
    /// A collective of the group runs between entities (its family) rather than inside one.
    bool between_entities(workload::CommGroup group) const;
    std::vector<BlockRef> chunk_blocks(int stage, int chunk) const;

    void build_stage(int stage);
    void build_backward(int stage, int chunk, Pass pass, const std::vector<BlockRef>& blocks,
                        const GradientSyncs& sync, double dense_total, double expert_total);
    void build_final(int stage, const workload::StageStepOps& step_ops);
    /// Appends a block pass's ops to a program; `last`: the program's last block (what it
    /// issues after its kernels goes to the program's tail, Program::after_send).
    void add_ops(Writer& w, const std::vector<workload::ProgramOp>& ops, bool last);
    /// The compute an overlapped collective takes from the kernels beside it, as a local op
    /// ("<name> on the engines"; nothing when it costs nothing).
    void add_interference(Writer& w, const workload::ProgramOp& op, double hbm_share);
    /// A collective inside the entity (TP): closed form, a rank-mode barrier, or TP flows.
    void add_closed_form(Writer& w, const workload::ProgramOp& op);
    std::uint32_t tp_collective_index(network::CollectiveOp op, double bytes, std::uint32_t name);
    void add_collective(Writer& w, Action::Kind kind, const workload::ProgramOp& op);

    const workload::Plan& plan_;
    const StepLayout& layout_;
    const Coster& coster_;
    double grad_bucket_bytes_;
    bool tp_flows_;

    std::vector<std::string> names_;
    std::unordered_map<std::string, std::uint32_t> name_index_;
    std::uint32_t wait_input_name_ = 0;
    std::vector<std::uint32_t> task_names_; ///< [microbatch][chunk][forward, backward]

    workload::StepProgram workload_program_;
    double send_bytes_ = 0.0;
    std::vector<FamilyCollective> collectives_;
    std::vector<TpCollective> tp_collectives_;
    std::vector<Program> programs_;                              ///< [stage][chunk][Pass]
    std::vector<Program> finals_;                                ///< per stage
    std::vector<std::vector<workload::PipelineTask>> schedules_; ///< per stage
};

} // namespace trnsim::sim::detail
