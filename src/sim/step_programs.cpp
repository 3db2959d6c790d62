#include "step_programs.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace trnsim::sim::detail {

std::vector<std::uint32_t> StepPrograms::stage_collectives(int stage) const {
    std::vector<std::uint32_t> out;
    const auto add = [&](const Program& p) {
        for (const Action& a : p.actions) {
            if (a.kind == Action::issue || a.kind == Action::blocking) {
                out.push_back(a.collective);
            }
        }
    };
    for (int chunk = 0; chunk < layout_.virtual_stages; ++chunk) {
        for (const Pass pass : {Pass::forward, Pass::backward, Pass::last_backward}) {
            add(programs_[program_index(stage, chunk, pass)]);
        }
    }
    add(finals_[static_cast<std::size_t>(stage)]);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

using network::CollectiveOp;
using workload::CommGroup;
using workload::ProgramOp;

namespace {

/// Bytes a closed-form collective puts on chip-to-chip links, per member, by link kind: the
/// hierarchical algorithm of network/collective_cost.hpp, level by level.
std::array<double, topology::kLinkKinds> closed_form_link_bytes(CollectiveOp op, double bytes,
                                                                const network::GroupShape& g) {
    std::array<double, topology::kLinkKinds> out{};
    double buffer = bytes;
    for (const auto& level : g.levels) {
        const int n = level.members;
        if (n <= 1) {
            continue;
        }
        double per_member = 0.0;
        switch (op) {
        case CollectiveOp::all_reduce:
            per_member = 2.0 * (n - 1) / n * buffer;
            break;
        case CollectiveOp::reduce_scatter:
        case CollectiveOp::all_gather:
            per_member = static_cast<double>(n - 1) / n * buffer;
            break;
        case CollectiveOp::all_to_all:
            per_member = static_cast<double>(n - 1) / n * bytes;
            break;
        case CollectiveOp::broadcast:
        case CollectiveOp::send_recv:
            per_member = buffer;
            break;
        }
        topology::LinkKind kind = topology::LinkKind::neuronlink;
        switch (level.link) {
        case network::LinkClass::on_chip:
            per_member = 0.0;
            break;
        case network::LinkClass::neuronlink:
            kind = topology::LinkKind::neuronlink;
            break;
        case network::LinkClass::neuronlink_z:
            kind = topology::LinkKind::neuronlink_z;
            break;
        case network::LinkClass::neuronlink_rack:
            kind = topology::LinkKind::neuronlink_rack;
            break;
        case network::LinkClass::efa:
            kind = topology::LinkKind::efa_nic;
            break;
        }
        out[static_cast<std::size_t>(kind)] += per_member;
        if (op != CollectiveOp::all_to_all) {
            buffer /= n;
        }
    }
    return out;
}

} // namespace

/// Appends to one program, merging consecutive local ops into one run_local action. After
/// tail(), local ops go to the program's after_send list and only issues may follow.
class StepPrograms::Writer {
public:
    explicit Writer(Program& p) : program(p) {}

    void local(std::uint32_t name, bool tp_collective, double seconds) {
        if (tail_) {
            program.after_send.push_back({name, tp_collective, to_ns(seconds)});
            return;
        }
        if (!run_open_) {
            Action a;
            a.kind = Action::run_local;
            a.ops_begin = a.ops_end = static_cast<std::uint32_t>(program.local_ops.size());
            program.actions.push_back(a);
            run_open_ = true;
        }
        program.local_ops.push_back({name, tp_collective, to_ns(seconds)});
        program.actions.back().ops_end = static_cast<std::uint32_t>(program.local_ops.size());
    }
    void interaction(const Action& a) {
        if (tail_ && a.kind != Action::issue) {
            throw std::logic_error("step programs: only issues may follow a program's kernels");
        }
        program.actions.push_back(a);
        run_open_ = false;
    }
    /// The program's kernels are all written.
    void tail() { tail_ = true; }

    Program& program;

private:
    bool run_open_ = false;
    bool tail_ = false;
};

StepPrograms::StepPrograms(const workload::Plan& plan, const StepLayout& layout,
                           const Coster& coster, double grad_bucket_bytes, bool tp_flows)
    : plan_(plan), layout_(layout), coster_(coster), grad_bucket_bytes_(grad_bucket_bytes),
      tp_flows_(tp_flows) {
    wait_input_name_ = intern("wait: pipeline input");
    const int chunks = layout.virtual_stages;
    for (std::int64_t mb = 0; mb < layout.microbatches; ++mb) {
        for (int c = 0; c < chunks; ++c) {
            const std::string suffix =
                std::to_string(mb) + (chunks > 1 ? "." + std::to_string(c) : std::string());
            task_names_.push_back(intern("F" + suffix));
            task_names_.push_back(intern("B" + suffix));
        }
    }
    workload_program_ = workload::build_program(plan);
    send_bytes_ = workload_program_.pipeline_send.bytes;
    programs_.resize(static_cast<std::size_t>(layout.pp * chunks * 3));
    finals_.resize(static_cast<std::size_t>(layout.pp));
    for (int s = 0; s < layout.pp; ++s) {
        build_stage(s);
    }
    schedules_.resize(static_cast<std::size_t>(layout.pp));
    for (int s = 0; s < layout.pp; ++s) {
        schedules_[static_cast<std::size_t>(s)] = workload::pipeline_schedule(
            plan.training.parallelism.schedule, layout.pp, s, layout.microbatches, chunks);
    }
}

std::uint32_t StepPrograms::intern(const std::string& name) {
    auto it = name_index_.find(name);
    if (it != name_index_.end()) {
        return it->second;
    }
    const auto id = static_cast<std::uint32_t>(names_.size());
    names_.push_back(name);
    name_index_.emplace(name, id);
    return id;
}

std::uint32_t StepPrograms::collective_index(CollectiveOp op, double bytes, CommGroup group,
                                             const std::string& name) {
    for (std::uint32_t i = 0; i < collectives_.size(); ++i) {
        const FamilyCollective& c = collectives_[i];
        if (c.op == op && c.bytes == bytes && c.group == group) {
            return i;
        }
    }
    collectives_.push_back({op, bytes, group, intern(name)});
    return static_cast<std::uint32_t>(collectives_.size() - 1);
}

bool StepPrograms::between_entities(CommGroup group) const {
    return is_family_group(group) && plan_.group_size(group) > 1;
}

std::vector<StepPrograms::BlockRef> StepPrograms::chunk_blocks(int stage, int chunk) const {
    const auto& st = plan_.stages[static_cast<std::size_t>(stage)];
    const int chunks = layout_.virtual_stages;
    // The stage's layers split over its chunks, the first chunks taking the remainder.
    const auto split = [&](std::int64_t n) {
        const std::int64_t base = n / chunks, extra = n % chunks;
        return base + (chunk < extra ? 1 : 0);
    };
    const auto& s = plan_.stats;
    const workload::StepProgram& p = workload_program_;
    std::vector<BlockRef> out;
    if (st.has_embedding && chunk == 0) {
        out.push_back({&p.embedding, static_cast<double>(s.embedding), 0.0});
    }
    for (std::int64_t i = 0; i < split(st.dense_layers); ++i) {
        out.push_back({&p.dense_layer, static_cast<double>(s.attention + s.dense_mlp), 0.0});
    }
    for (std::int64_t i = 0; i < split(st.moe_layers); ++i) {
        out.push_back({&p.moe_layer, static_cast<double>(s.attention + s.moe_shared), 1.0});
    }
    if (st.has_head && chunk == chunks - 1) {
        out.push_back({&p.head, static_cast<double>(s.lm_head + s.final_norm), 0.0});
    }
    return out;
}

void StepPrograms::build_stage(int stage) {
    const workload::StageStepOps step_ops = workload::build_stage_step_ops(plan_, stage);
    const auto& st = plan_.stages[static_cast<std::size_t>(stage)];
    // The stage's gradient reduction per group, split over its blocks by parameter share.
    GradientSyncs sync;
    for (const ProgramOp& op : step_ops.gradient_sync) {
        if (between_entities(op.group) && op.bytes > 0.0) {
            sync[index_of(op.group)] = {true, op.collective, op.bytes * op.repeat, op.name,
                                        coster_.stage_hbm_share(workload_program_, st)};
        }
    }
    double dense_total = 0.0, expert_total = 0.0;
    for (int c = 0; c < layout_.virtual_stages; ++c) {
        for (const BlockRef& b : chunk_blocks(stage, c)) {
            dense_total += b.dense_weight;
            expert_total += b.expert_weight;
        }
    }
    for (int c = 0; c < layout_.virtual_stages; ++c) {
        const auto blocks = chunk_blocks(stage, c);
        {
            Writer w(programs_[program_index(stage, c, Pass::forward)]);
            for (std::size_t i = 0; i < blocks.size(); ++i) {
                add_ops(w, blocks[i].block->forward, i + 1 == blocks.size());
            }
        }
        build_backward(stage, c, Pass::backward, blocks, sync, dense_total, expert_total);
        build_backward(stage, c, Pass::last_backward, blocks, sync, dense_total, expert_total);
    }
    build_final(stage, step_ops);
}

void StepPrograms::build_backward(int stage, int chunk, Pass pass,
                                  const std::vector<BlockRef>& blocks, const GradientSyncs& sync,
                                  double dense_total, double expert_total) {
    Writer w(programs_[program_index(stage, chunk, pass)]);
    std::array<double, workload::kCommGroups> pending{}; // bytes of the open bucket per group
    const auto flush = [&](CommGroup g) {
        double& bytes = pending[index_of(g)];
        if (bytes <= 0.0) {
            return;
        }
        const GradientSync& s = sync[index_of(g)];
        Action a;
        a.kind = Action::issue;
        a.group = g;
        a.collective = collective_index(s.op, bytes, g, s.name);
        w.interaction(a);
        ProgramOp op;
        op.kind = ProgramOp::Kind::collective;
        op.name = s.name;
        op.collective = s.op;
        op.group = g;
        op.bytes = bytes;
        add_interference(w, op, s.hbm_share);
        bytes = 0.0;
    };
    // Adds a block's share of the group's gradients to its bucket; a full bucket goes out.
    const auto add = [&](CommGroup g, double weight, double total) {
        const GradientSync& s = sync[index_of(g)];
        if (!s.on || total <= 0.0) {
            return;
        }
        pending[index_of(g)] += s.bytes * weight / total;
        if (pending[index_of(g)] >= grad_bucket_bytes_) {
            flush(g);
        }
    };
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
        const bool last = std::next(it) == blocks.rend();
        add_ops(w, it->block->backward, last);
        if (last) {
            w.tail(); // the buckets below go out after the program's last kernel
        }
        if (pass == Pass::last_backward) {
            // This block's gradients are final.
            add(CommGroup::dp, it->dense_weight, dense_total);
            add(CommGroup::expert_dp, it->expert_weight, expert_total);
        }
    }
    if (pass == Pass::last_backward) {
        flush(CommGroup::dp);
        flush(CommGroup::expert_dp);
    }
}

void StepPrograms::build_final(int stage, const workload::StageStepOps& step_ops) {
    Writer w(finals_[static_cast<std::size_t>(stage)]);
    for (const CommGroup g : kFamilyGroups) {
        Action a;
        a.kind = Action::wait;
        a.group = g;
        w.interaction(a);
    }
    w.local(intern(step_ops.optimizer.name), false, coster_.cost(step_ops.optimizer, 1.0).seconds);
    for (const ProgramOp& op : step_ops.parameter_gather) {
        if (between_entities(op.group)) {
            add_collective(w, Action::blocking, op);
        }
    }
}

void StepPrograms::add_collective(Writer& w, Action::Kind kind, const ProgramOp& op) {
    Action a;
    a.kind = kind;
    a.group = op.group;
    a.collective = collective_index(op.collective, op.bytes * op.repeat, op.group, op.name);
    w.interaction(a);
}

void StepPrograms::add_ops(Writer& w, const std::vector<ProgramOp>& ops, bool last) {
    // Overlapped collectives (ZeRO-3): the parameter gathers go out at the block's start and
    // the block waits for them at its end; the gradient reduce-scatters go out at its end.
    std::vector<const ProgramOp*> late;
    bool gathered = false;
    CommGroup gather_group = CommGroup::dp;
    double share = -1.0; // the block's HBM share, computed when an overlapped collective needs it
    for (const ProgramOp& op : ops) {
        if (!op.is_collective() || !op.overlapped || !between_entities(op.group)) {
            continue;
        }
        if (share < 0.0) {
            share = coster_.hbm_share(ops);
        }
        if (op.collective == CollectiveOp::all_gather) {
            add_collective(w, Action::issue, op);
            add_interference(w, op, share);
            gathered = true;
            gather_group = op.group;
        } else {
            late.push_back(&op);
        }
    }
    for (const ProgramOp& op : ops) {
        if (!op.is_collective()) {
            w.local(intern(op.name), false, coster_.cost(op, 1.0).seconds);
        } else if (op.overlapped) {
            continue;
        } else if (is_family_group(op.group)) {
            if (plan_.group_size(op.group) > 1) { // a group of one has nothing to exchange
                add_collective(w, Action::blocking, op);
            }
        } else {
            add_closed_form(w, op); // TP (and anything else inside the entity)
        }
    }
    if (gathered) {
        Action a;
        a.kind = Action::wait;
        a.group = gather_group;
        w.interaction(a);
    }
    if (last) {
        w.tail(); // the late reduce-scatters go out after the program's last kernel
    }
    for (const ProgramOp* op : late) {
        add_collective(w, Action::issue, *op);
        add_interference(w, *op, share);
    }
}

void StepPrograms::add_interference(Writer& w, const ProgramOp& op, double hbm_share) {
    const double s = coster_.interference(op, hbm_share, 1.0);
    if (s > 0.0) {
        w.local(intern(op.name + " on the engines"), false, s);
    }
}

void StepPrograms::add_closed_form(Writer& w, const ProgramOp& op) {
    const double s = coster_.cost(op, 1.0).seconds;
    const bool tp = op.group == CommGroup::tp && layout_.tp > 1;
    const bool flows = tp && tp_flows_;
    if (!flows) {
        const auto bytes =
            closed_form_link_bytes(op.collective, op.bytes * op.repeat, coster_.shape(op.group));
        // Per entity: a TP group's entity carries all its members' bytes.
        const double members = layout_.per_rank ? 1.0 : static_cast<double>(layout_.tp);
        for (std::size_t k = 0; k < bytes.size(); ++k) {
            w.program.tp_link_bytes[k] += bytes[k] * members;
        }
    }
    if (flows || (layout_.per_rank && tp)) {
        Action a;
        a.kind = Action::tp_barrier;
        a.barrier_ns = to_ns(s);
        a.barrier_name = intern(op.name);
        if (flows) {
            a.tp_flows = true;
            a.collective = tp_collective_index(op.collective, op.bytes * op.repeat, a.barrier_name);
        }
        w.interaction(a);
    } else {
        w.local(intern(op.name), true, s);
    }
}

std::uint32_t StepPrograms::tp_collective_index(CollectiveOp op, double bytes,
                                                std::uint32_t name) {
    for (std::uint32_t i = 0; i < tp_collectives_.size(); ++i) {
        if (tp_collectives_[i].op == op && tp_collectives_[i].bytes == bytes) {
            return i;
        }
    }
    tp_collectives_.push_back({op, bytes, name});
    return static_cast<std::uint32_t>(tp_collectives_.size() - 1);
}

} // namespace trnsim::sim::detail
