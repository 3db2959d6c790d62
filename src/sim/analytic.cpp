#include "trnsim/sim/analytic.hpp"

#include "coster.hpp"
#include "trnsim/workload/program.hpp"
#include "trnsim/workload/schedule.hpp"

#include <algorithm>
#include <map>

namespace trnsim::sim {

namespace {

using workload::ProgramOp;

using detail::Coster;
using detail::OpCost;

struct BlockTime {
    double seconds = 0.0;
    double hbm_bytes = 0.0;
};

/// max(compute + exposed collectives, overlapped collectives) of one op list; the overlapped
/// collectives' reduction and HBM traffic slow the compute beside them (Coster::interference).
BlockTime block_time(const std::vector<ProgramOp>& ops, const Coster& c, double comm_scale) {
    double serial = 0.0;
    double beside = 0.0;
    BlockTime t;
    bool overlapped = false;
    for (const auto& op : ops) {
        const OpCost oc = c.cost(op, comm_scale);
        (op.overlapped ? beside : serial) += oc.seconds;
        overlapped = overlapped || op.overlapped;
        t.hbm_bytes += oc.hbm_bytes;
    }
    if (overlapped) {
        const double share = c.hbm_share(ops);
        for (const auto& op : ops) {
            if (op.overlapped) {
                serial += c.interference(op, share, comm_scale);
            }
        }
    }
    t.seconds = std::max(serial, beside);
    return t;
}

struct StageTimes {
    double forward = 0.0;
    double backward = 0.0;
    double after = 0.0; ///< exposed part after the pipeline
    double grad_sync_exposed = 0.0;
    double grad_sync_interference = 0.0; ///< its reduction and HBM traffic beside the kernels
    double optimizer = 0.0;
    double param_gather = 0.0;
    double hbm_bytes_per_step = 0.0;
};

/// The forward and backward time of each block, the same on every stage (costed once per
/// evaluation, not once per stage).
struct BlockTimes {
    BlockTime forward[4];
    BlockTime backward[4];
    double send = 0.0; ///< pipeline transfers of one microbatch, all chunks, each way

    BlockTimes(const workload::Plan& plan, const workload::StepProgram& prog, const Coster& c,
               double comm_scale) {
        const workload::BlockProgram* blocks[4] = {&prog.dense_layer, &prog.moe_layer,
                                                   &prog.embedding, &prog.head};
        for (int i = 0; i < 4; ++i) {
            forward[i] = block_time(blocks[i]->forward, c, comm_scale);
            backward[i] = block_time(blocks[i]->backward, c, comm_scale);
        }
        if (plan.pp > 1) {
            // Each model chunk sends its activations on and its gradients back once per
            // microbatch.
            send = c.cost(prog.pipeline_send, comm_scale).seconds * plan.virtual_stages;
        }
    }
};

StageTimes stage_times(const workload::Plan& plan, const workload::StepProgram& prog,
                       const BlockTimes& blocks, int stage, const Coster& c, double comm_scale) {
    const auto& st = plan.stages[static_cast<std::size_t>(stage)];
    StageTimes s;
    double hbm_microbatch = 0.0;
    const auto add_block = [&](int block, double count) {
        if (count <= 0.0) {
            return;
        }
        const BlockTime& f = blocks.forward[block];
        const BlockTime& w = blocks.backward[block];
        s.forward += count * f.seconds;
        s.backward += count * w.seconds;
        hbm_microbatch += count * (f.hbm_bytes + w.hbm_bytes);
    };
    add_block(0, static_cast<double>(st.dense_layers));
    add_block(1, static_cast<double>(st.moe_layers));
    add_block(2, st.has_embedding ? 1.0 : 0.0);
    add_block(3, st.has_head ? 1.0 : 0.0);
    if (plan.pp > 1) {
        s.forward += blocks.send;
        s.backward += blocks.send;
    }
    const workload::StageStepOps step_ops = workload::build_stage_step_ops(plan, stage);
    const BlockTime sync = block_time(step_ops.gradient_sync, c, comm_scale);
    const BlockTime opt = block_time({step_ops.optimizer}, c, comm_scale);
    const BlockTime gather = block_time(step_ops.parameter_gather, c, comm_scale);
    // The gradient reduction overlaps the last microbatch's backward pass and slows it by its
    // interference with the kernels (the stage's backward kernels' HBM share).
    double interference = 0.0;
    if (!step_ops.gradient_sync.empty()) {
        const double share = c.stage_hbm_share(prog, st);
        for (const auto& op : step_ops.gradient_sync) {
            interference += c.interference(op, share, comm_scale);
        }
    }
    // Its exposed part: what the reduction adds to the step, its engine and HBM time beside the
    // kernels included (so that the parts of the step add up).
    s.grad_sync_exposed = interference + std::max(0.0, sync.seconds - s.backward - interference);
    s.grad_sync_interference = interference;
    s.optimizer = opt.seconds;
    s.param_gather = gather.seconds;
    s.after = s.grad_sync_exposed + s.optimizer + s.param_gather;
    s.hbm_bytes_per_step =
        hbm_microbatch * static_cast<double>(plan.microbatches) + opt.hbm_bytes;
    return s;
}

struct Totals {
    double step = 0.0;
    double pipeline = 0.0;
    double bubble = 0.0;
    int slowest = 0;
    std::vector<StageTimes> stages;
};

/// Whether the stages hold different numbers of layers (stage_layers, balance, or pp not
/// dividing the layers).
bool layers_differ(const workload::Plan& plan) {
    return std::any_of(plan.stages.begin(), plan.stages.end(), [&](const auto& st) {
        return st.layers() != plan.stages.front().layers();
    });
}

Totals evaluate(const workload::Plan& plan, const workload::StepProgram& prog, const Coster& c,
                double comm_scale) {
    Totals t;
    double per_microbatch = -1.0;
    double all_stages = 0.0;
    double after = 0.0;
    const BlockTimes blocks(plan, prog, c, comm_scale);
    for (int i = 0; i < plan.pp; ++i) {
        StageTimes s = stage_times(plan, prog, blocks, i, c, comm_scale);
        if (s.forward + s.backward > per_microbatch) {
            per_microbatch = s.forward + s.backward;
            t.slowest = i;
        }
        all_stages += s.forward + s.backward;
        after = std::max(after, s.after);
        t.stages.push_back(s);
    }
    const double v = plan.virtual_stages;
    const double m = static_cast<double>(plan.microbatches);
    if (layers_differ(plan)) {
        // Stages of unequal layers: a slow stage hides part of the fill and drain behind its
        // own warm-up and cool-down, which the closed form below does not see; run the
        // schedule's dependencies with each stage's task times (1/v of the stage per chunk).
        std::vector<double> forward, backward;
        for (const StageTimes& s : t.stages) {
            forward.push_back(s.forward / v);
            backward.push_back(s.backward / v);
        }
        t.pipeline = workload::pipeline_makespan(plan.training.parallelism.schedule,
                                                 plan.microbatches, plan.virtual_stages,
                                                 forward, backward);
        t.bubble = t.pipeline - m * per_microbatch;
    } else {
        // The slowest stage paces the m microbatches; filling and draining the pipeline
        // crosses every other stage once, in chunks of 1/v of its work.
        t.bubble = (all_stages - per_microbatch) / v;
        t.pipeline = m * per_microbatch + t.bubble;
    }
    t.step = t.pipeline + after;
    return t;
}

/// Time per step of each named op on the slowest stage's critical path.
std::vector<OpTime> breakdown(const workload::Plan& plan, const workload::StepProgram& prog,
                              int stage, const Coster& c) {
    const auto& st = plan.stages[static_cast<std::size_t>(stage)];
    std::map<std::string, OpTime> acc;
    const double m = static_cast<double>(plan.microbatches);
    const auto add_ops = [&](const std::vector<ProgramOp>& ops, double times) {
        for (const auto& op : ops) {
            auto& e = acc[op.name];
            e.name = op.name;
            e.collective = op.is_collective();
            e.seconds += times * c.cost(op, 1.0).seconds;
        }
    };
    const auto add_block = [&](const workload::BlockProgram& b, double count) {
        add_ops(b.forward, count * m);
        add_ops(b.backward, count * m);
    };
    add_block(prog.dense_layer, static_cast<double>(st.dense_layers));
    add_block(prog.moe_layer, static_cast<double>(st.moe_layers));
    add_block(prog.embedding, st.has_embedding ? 1.0 : 0.0);
    add_block(prog.head, st.has_head ? 1.0 : 0.0);
    if (plan.pp > 1) {
        add_ops({prog.pipeline_send}, 2.0 * m * plan.virtual_stages);
    }
    const auto step_ops = workload::build_stage_step_ops(plan, stage);
    add_ops(step_ops.gradient_sync, 1.0);
    add_ops({step_ops.optimizer}, 1.0);
    add_ops(step_ops.parameter_gather, 1.0);
    std::vector<OpTime> out;
    for (auto& [name, e] : acc) {
        out.push_back(e);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
    return out;
}

/// Recomputation FLOPs per step over the cluster (ops flagged `recompute`).
double recompute_flops(const workload::Plan& plan, const workload::StepProgram& prog,
                       const Coster& c) {
    double per_microbatch_all_stages = 0.0;
    for (const auto& st : plan.stages) {
        const auto add = [&](const workload::BlockProgram& b, double count) {
            for (const auto& op : b.backward) {
                if (op.recompute && !op.is_collective()) {
                    per_microbatch_all_stages += count * c.cost(op, 1.0).flops;
                }
            }
        };
        add(prog.dense_layer, static_cast<double>(st.dense_layers));
        add(prog.moe_layer, static_cast<double>(st.moe_layers));
    }
    // Each stage's ops are per rank of a TP group; every CP rank and DP replica repeats them.
    return per_microbatch_all_stages * static_cast<double>(plan.microbatches) * plan.tp *
           plan.cp * plan.dp;
}

} // namespace

StepEstimate estimate_step(const workload::Plan& plan) {
    const Coster coster(plan);
    const workload::StepProgram prog = workload::build_program(plan);
    const Totals full = evaluate(plan, prog, coster, 1.0);
    const Totals free_comm = evaluate(plan, prog, coster, 0.0);
    const StageTimes& slow = full.stages[static_cast<std::size_t>(full.slowest)];

    StepEstimate e;
    e.step_time = Seconds::of(full.step);
    e.forward = Seconds::of(slow.forward);
    e.backward = Seconds::of(slow.backward);
    e.pipeline = Seconds::of(full.pipeline);
    e.bubble = Seconds::of(full.bubble);
    e.slowest_stage = full.slowest;
    for (const auto& s : full.stages) {
        e.stage_forward.push_back(Seconds::of(s.forward));
        e.stage_backward.push_back(Seconds::of(s.backward));
        e.grad_sync_exposed =
            Seconds::of(std::max(e.grad_sync_exposed.seconds(), s.grad_sync_exposed));
        e.optimizer = Seconds::of(std::max(e.optimizer.seconds(), s.optimizer));
        e.param_gather = Seconds::of(std::max(e.param_gather.seconds(), s.param_gather));
        e.hbm_bytes_per_rank = std::max(e.hbm_bytes_per_rank, s.hbm_bytes_per_step);
    }
    e.exposed_comm = Seconds::of(std::max(0.0, full.step - free_comm.step));

    const auto& t = plan.training;
    const double tokens = static_cast<double>(plan.tokens_per_step);
    e.model_flops = plan.stats.model_flops_per_token(t.model, t.sequence_length) * tokens;
    e.hardware_flops = e.model_flops + recompute_flops(plan, prog, coster);
    const double peak =
        plan.chip.peak(t.precision).per_s() * static_cast<double>(plan.cluster.chips());
    e.tokens_per_s = tokens / e.step_time.seconds();
    e.mfu = e.model_flops / (e.step_time.seconds() * peak);
    e.hfu = e.hardware_flops / (e.step_time.seconds() * peak);
    const double hbm_per_rank =
        plan.chip.hbm_bandwidth.bytes_per_s() / static_cast<double>(plan.ranks_per_chip);
    e.mbu = e.hbm_bytes_per_rank / (e.step_time.seconds() * hbm_per_rank);
    e.bubble_fraction = e.bubble.seconds() / e.step_time.seconds();
    e.breakdown = breakdown(plan, prog, full.slowest, coster);
    return e;
}

} // namespace trnsim::sim
