// Costs of program ops for one plan (private to the sim module): kernels through the calibrated
// analytic kernel model divided by the chip's training kernel efficiency, collectives through
// the closed-form network cost of their group.
#pragma once

#include "trnsim/compute/cost_model.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/workload/plan.hpp"
#include "trnsim/workload/program.hpp"

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
        : model_(plan.chip, plan.lnc), slowdown_(1.0 / plan.chip.training_kernel_efficiency) {
        for (auto g : workload::kAllCommGroups) {
            shapes_.push_back(plan.group_shape(g));
        }
    }

    /// `comm_scale` 0 makes every collective free (for the exposed-communication figure).
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
        c.seconds = k.seconds * op.repeat * slowdown_;
        c.flops = k.flops * op.repeat;
        c.hbm_bytes = k.hbm_bytes * op.repeat;
        return c;
    }

    double collective_seconds(network::CollectiveOp op, double bytes, workload::CommGroup g) const {
        return network::collective_seconds(op, bytes, shape(g));
    }
    const network::GroupShape& shape(workload::CommGroup g) const {
        return shapes_[static_cast<std::size_t>(g)];
    }

private:
    compute::CostModel model_;
    double slowdown_; // 1 / the chip's training kernel efficiency
    std::vector<network::GroupShape> shapes_; // indexed by CommGroup
};

} // namespace trnsim::sim::detail
