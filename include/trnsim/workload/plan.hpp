// A validated training plan: the parallelism resolved against the model and the cluster, the
// placement of ranks onto chips, the communication groups and the memory plan.
//
// Placement. Ranks are logical NeuronCores numbered so that tensor parallel is innermost, then
// data parallel (expert-parallel groups are consecutive data-parallel ranks), then pipeline
// stages outermost:  rank = tp_index + tp * (dp_index + dp * pp_index).
// Consecutive ranks fill a chip, chips fill an instance (in order), instances fill an
// UltraServer. So a TP group stays on one chip or one NeuronLink domain when it fits, DP groups
// cross instances and UltraServers, and pipeline neighbours are the farthest apart.
//
// Memory (per rank, bytes). With P the parameters a rank holds (its stage's share after tensor
// and expert splitting), w the weight element size (2, or 4 for FP32 training), and data
// parallel degree d (d_e = d / ep for expert parameters):
//   weights    P w                       (ZeRO-3: / d)
//   gradients  P w                       (ZeRO-2 and 3: / d)
//   optimizer  P (4 master + 8 moments)  (ZeRO-1, 2, 3: / d); FP32 training keeps no master copy
//   activations  per layer and microbatch (Korthikanti et al. 2022, adapted to GQA, SwiGLU and
//              flash attention; see activation_bytes_per_layer) x layers of the stage x
//              microbatches in flight (1F1B: min(m, pp - stage); interleaved: x (1 + (pp-1)/(pp v)))
//              + the FP32 logits of one microbatch on the last stage
//   buffers    with tp > 1, two gathered activations (sequence parallel: the current block's
//              all-gathered input and the next one's) or one all-reduce buffer (no sequence
//              parallelism); for ZeRO-3, two gathered layers of parameters
//   reserve    hardware.hbm_reserve per chip, split among its ranks (runtime, allocator slack)
// The plan fits when the largest stage's total is at most the HBM capacity per rank.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/topology/cluster.hpp"
#include "trnsim/workload/model.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::workload {

/// The communication groups of the plan.
enum class CommGroup { tp, dp, ep, expert_dp, pp };

const char* to_string(CommGroup g);

struct MemoryBreakdown {
    Bytes weights;
    Bytes gradients;
    Bytes optimizer;
    Bytes activations;
    Bytes buffers;
    Bytes reserve;
    Bytes total() const {
        return weights + gradients + optimizer + activations + buffers + reserve;
    }
};

struct MemoryPlan {
    /// Per pipeline stage (each rank of a stage needs the same).
    std::vector<MemoryBreakdown> stages;
    /// The stage with the largest total and its breakdown.
    int worst_stage = 0;
    MemoryBreakdown worst;
    Bytes capacity_per_rank;
    bool fits() const { return worst.total() <= capacity_per_rank; }
};

/// Which blocks a pipeline stage runs, and how many of each.
struct StageLayout {
    std::int64_t dense_layers = 0;
    std::int64_t moe_layers = 0;
    bool has_embedding = false;
    bool has_head = false;
    /// Parameters this stage holds per rank, split by how they are data-parallel replicated.
    std::int64_t dense_params_per_rank = 0;  ///< replicated over dp
    std::int64_t expert_params_per_rank = 0; ///< replicated over dp / ep
};

struct Plan {
    TrainingSpec training;
    compute::ChipSpec chip;
    int lnc = 2;
    topology::ClusterShape cluster;
    Bytes hbm_reserve_per_chip;

    int ranks_per_chip = 0;
    std::int64_t ranks = 0;
    int tp = 1, pp = 1, dp = 1, ep = 1;
    int virtual_stages = 1;
    std::int64_t microbatches = 1;       ///< per data-parallel replica per step
    std::int64_t tokens_per_step = 0;
    std::int64_t steps = 0;              ///< steps to reach the token target (or as given)
    ModelStats stats;
    std::vector<StageLayout> stages;     ///< one per pipeline stage
    MemoryPlan memory;
    std::vector<std::string> warnings;   ///< valid but probably unintended choices

    /// Stride and size of a group in rank numbering.
    std::int64_t group_stride(CommGroup g) const;
    int group_size(CommGroup g) const;
    /// The group's hierarchy over chip, instance, UltraServer and fabric, with the bandwidth
    /// and step latency one member sees (every rank of a chip communicating at once).
    network::GroupShape group_shape(CommGroup g) const;

private:
    friend Plan build_plan(const TrainingSpec&, const compute::ChipSpec&, int,
                           const topology::ClusterSpec&, Bytes);
    std::vector<network::GroupShape> shapes_; // indexed by CommGroup
};

/// Checks the plan and derives everything above. Throws InputError naming the key path
/// (workload.parallelism.tp, workload.global_batch, cluster.ultraservers, ...) when a
/// constraint fails, including when the memory plan does not fit in HBM.
Plan build_plan(const TrainingSpec& training, const compute::ChipSpec& chip, int lnc,
                const topology::ClusterSpec& cluster, Bytes hbm_reserve_per_chip);

/// Activation bytes one rank keeps for the backward pass of one layer and one microbatch.
double activation_bytes_per_layer(const ModelSpec& m, bool moe_layer, std::int64_t tokens,
                                  int tp, bool sequence_parallel, Recompute recompute,
                                  int element_bytes, std::int64_t top_k);

} // namespace trnsim::workload
