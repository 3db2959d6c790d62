// Costs of program ops for one plan (private to the sim module): kernels through the calibrated
// analytic kernel model plus what a compiled training graph loses against it (the chip's
// `training` section, docs/validation.md), collectives through the closed-form network cost of
// their group, and the share of the engines and HBM an overlapped collective takes from the
// kernels running beside it.
#pragma once

#include "trnsim/compute/cost_model.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/workload/plan.hpp"
#include "trnsim/workload/program.hpp"

#include <algorithm>
#include <vector>

namespace trnsim::sim::detail {

struct OpCost {
    double seconds = 0.0;
    double flops = 0.0;
    double hbm_bytes = 0.0;
};

class Coster {
public:
    explicit Coster(const workload::Plan& plan)
        : model_(plan.chip, plan.lnc), engine_sync_(plan.chip.training.engine_sync),
          kernel_overhead_(plan.chip.serving.kernel_overhead.seconds()),
          seconds_per_hbm_byte_(1.0 / model_.hbm_bandwidth_per_rank().bytes_per_s()) {
        for (auto g : workload::kAllCommGroups) {
            shapes_.push_back(plan.group_shape(g));
            sizes_.push_back(plan.group_size(g));
        }
    }

    /// `comm_scale` 0 makes every collective free (for the exposed-communication figure).
    ///
    /// A kernel of a compiled graph costs the calibrated kernel's time, plus the fraction
    /// `engine_sync` of its non-bottleneck engine time that the graph's semaphores expose, plus
    /// the fixed cost per kernel (the chip's serving.kernel_overhead: the same wait and issue
    /// between one kernel and the next).
    OpCost cost(const workload::ProgramOp& op, double comm_scale) const {
        using Kind = workload::ProgramOp::Kind;
        OpCost c;
        compute::KernelCost k;
        switch (op.kind) {
        case Kind::matmul:
            k = model_.matmul(op.matmul);
            break;
        case Kind::attention:
            k = model_.attention(op.attention);
            break;
        case Kind::stream:
            k = model_.stream(op.stream);
            break;
        case Kind::optimizer:
            k = model_.optimizer(op.optimizer);
            break;
        case Kind::collective:
            c.seconds = comm_scale * op.repeat * collective_seconds(op.collective, op.bytes, op.group);
            return c;
        }
        const double compiled = k.seconds > 0.0
                                    ? k.seconds + engine_sync_ * k.beside_seconds + kernel_overhead_
                                    : 0.0;
        c.seconds = compiled * op.repeat;
        c.flops = k.flops * op.repeat;
        c.hbm_bytes = k.hbm_bytes * op.repeat;
        return c;
    }

    /// Seconds of compute an overlapped collective (op: its kind, bytes per rank and group)
    /// adds to the kernels running beside it on each rank: its reduction runs on the engines
    /// (the calibrated `reduce` kernel's rate, GroupShape::reduce_bandwidth) and its transfers
    /// read and write HBM while the kernels need it for the fraction `hbm_share` of their time
    /// (their HBM time over their total, 0 to 1). Scaled by `comm_scale` like the collective.
    double interference(const workload::ProgramOp& op, double hbm_share, double comm_scale) const {
        const double n = static_cast<double>(sizes_[static_cast<std::size_t>(op.group)]);
        if (!op.is_collective() || n <= 1.0 || comm_scale == 0.0) {
            return 0.0;
        }
        const double bytes = op.bytes * op.repeat;
        double reduced = 0.0;
        if (op.collective == network::CollectiveOp::all_reduce ||
            op.collective == network::CollectiveOp::reduce_scatter) {
            reduced = (n - 1.0) / n * bytes;
        }
        const double rate = shape(op.group).reduce_bandwidth.bytes_per_s();
        const double reduce_s = rate > 0.0 ? reduced / rate : 0.0;
        // Each byte on the bus is read from HBM at its sender and written at its receiver.
        const double moved = 2.0 * network::bus_bandwidth_factor(op.collective,
                                                                 static_cast<std::size_t>(n)) *
                             bytes;
        return comm_scale * (reduce_s + hbm_share * moved * seconds_per_hbm_byte_);
    }

    /// The kernels' HBM time over their total time (0 when there is no kernel).
    double hbm_share(const std::vector<workload::ProgramOp>& ops) const {
        double seconds = 0.0, hbm = 0.0;
        for (const auto& op : ops) {
            if (!op.is_collective()) {
                const OpCost c = cost(op, 1.0);
                seconds += c.seconds;
                hbm += c.hbm_bytes * seconds_per_hbm_byte_;
            }
        }
        return seconds > 0.0 ? std::min(1.0, hbm / seconds) : 0.0;
    }

    /// The HBM share of a stage's backward kernels, each block weighted by its count on the
    /// stage (what the gradient reduction overlapping the last backward pass meets).
    double stage_hbm_share(const workload::StepProgram& prog, const workload::StageLayout& st) const {
        double seconds = 0.0, hbm = 0.0;
        const auto add = [&](const workload::BlockProgram& b, double count) {
            if (count <= 0.0) {
                return;
            }
            for (const auto& op : b.backward) {
                if (!op.is_collective()) {
                    const OpCost c = cost(op, 1.0);
                    seconds += count * c.seconds;
                    hbm += count * c.hbm_bytes * seconds_per_hbm_byte_;
                }
            }
        };
        add(prog.dense_layer, static_cast<double>(st.dense_layers));
        add(prog.moe_layer, static_cast<double>(st.moe_layers));
        add(prog.embedding, st.has_embedding ? 1.0 : 0.0);
        add(prog.head, st.has_head ? 1.0 : 0.0);
        return seconds > 0.0 ? std::min(1.0, hbm / seconds) : 0.0;
    }

    double collective_seconds(network::CollectiveOp op, double bytes, workload::CommGroup g) const {
        return network::collective_seconds(op, bytes, shape(g));
    }
    const network::GroupShape& shape(workload::CommGroup g) const {
        return shapes_[static_cast<std::size_t>(g)];
    }

private:
    compute::CostModel model_;
    double engine_sync_;     // chip training.engine_sync
    double kernel_overhead_; // chip serving.kernel_overhead, seconds
    double seconds_per_hbm_byte_;
    std::vector<network::GroupShape> shapes_; // indexed by CommGroup
    std::vector<int> sizes_;                  // group sizes, indexed by CommGroup
};

} // namespace trnsim::sim::detail
