// A validated training plan: the parallelism resolved against the model and the cluster, the
// placement of ranks onto chips, the communication groups and the memory plan.
//
// Placement. Ranks are logical NeuronCores numbered so that tensor parallel is innermost, then
// context parallel, then data parallel (expert-parallel groups are consecutive data-parallel
// ranks), then pipeline stages outermost:
//     rank = tp_index + tp * (cp_index + cp * (dp_index + dp * pp_index)).
// Consecutive ranks fill a chip, chips fill an instance (in order), instances fill an
// UltraServer. So a TP group stays on one chip or one NeuronLink domain when it fits, a CP
// group (cp consecutive TP groups) next to it in the same domain when tp x cp fits, DP groups
// cross instances and UltraServers, and pipeline neighbours are the farthest apart.
//
// Groups (members of the group that holds rank 0):
//   tp         stride 1, tp ranks
//   cp         stride tp, cp ranks
//   dp         stride tp, cp x dp ranks: gradients are reduced over the data-parallel replicas
//              and over the context-parallel ranks (each saw its own part of every sequence)
//   ep         stride tp x cp, ep ranks (carved out of the data-parallel index)
//   expert_dp  the cp x dp / ep ranks that hold the same experts: stride tp over cp ranks, and
//              stride tp x cp x ep over dp / ep of those
//   pp         stride tp x cp x dp, pp ranks
//
// Context parallelism (Megatron-LM CP, ring attention; Liu et al. 2023). Each rank of a CP
// group holds S / cp tokens of every sequence: the sequence is cut into 2 cp chunks and rank i
// takes chunks i and 2 cp - 1 - i, so that each does the same share of the causal attention
// work. Every per-token tensor (activations, residual stream, MLP) is 1 / cp as large; the
// attention of its queries needs the keys and values of the whole sequence, which circulate
// around the group block by block and are not kept (workload/program.hpp).
//
// Memory (per rank, bytes). With P the parameters a rank holds (its stage's share after tensor
// and expert splitting), w the weight element size (2, or 4 for FP32 training), and data
// parallel degree d (d_e = d / ep for expert parameters):
//   weights    P w                       (ZeRO-3: / d)
//   gradients  P g                       (ZeRO-2 and 3: / d); g the accumulator's element size
//              (grad_accumulator_bytes: 2, or 4 for an FP32 accumulator or FP32 training)
//   optimizer  P (4 master + 8 moments)  (ZeRO-1, 2, 3: / d); FP32 training keeps no master copy,
//              nor does master_weights: none (BF16 weights updated with stochastic rounding);
//              moments: bf16 halves the moments' 8 to 4
//   activations  per layer and microbatch (Korthikanti et al. 2022, adapted to GQA, SwiGLU and
//              flash attention; see activation_bytes_per_layer): norm inputs and outputs (the
//              output not when norms are recomputed), q, k, v, the attention output and
//              softmax statistics (not when the attention core is recomputed; materialized
//              attention adds its S x S probabilities and dropout mask), the MLP's
//              activations (SwiGLU: gate, up and product; the product not when the activation
//              is recomputed, nothing when the MLP is), dropout masks; over the rank's
//              microbatch x sequence_length / cp tokens, x layers of the stage x microbatches
//              in flight (1F1B: min(m, pp - stage); interleaved: x (1 + (pp-1)/(pp v)))
//              + the FP32 logits of the rank's tokens of one microbatch on the last stage.
//              Keys and values of the rest of the sequence are not kept (with cp > 1 they
//              stream through the ring buffers below)
//   buffers    with tp > 1, two gathered activations of the rank's tokens (sequence parallel:
//              the current block's all-gathered input and the next one's) or one all-reduce
//              buffer (no sequence parallelism); with cp > 1, four key/value blocks of
//              S / cp tokens (the backward ring passes a key/value block and its gradient, each
//              in use and in transit); for ZeRO-3, two gathered layers of parameters
//   reserve    hardware.hbm_reserve per chip, split among its ranks (runtime, allocator slack)
// The plan fits when the largest stage's total is at most the HBM capacity per rank.
#pragma once

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/network/collective_cost.hpp"
#include "trnsim/workload/model.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::workload {

/// The communication groups of the plan (see the placement above).
enum class CommGroup { tp, cp, dp, ep, expert_dp, pp };
inline constexpr int kCommGroups = 6;
inline constexpr CommGroup kAllCommGroups[kCommGroups] = {
    CommGroup::tp, CommGroup::cp, CommGroup::dp, CommGroup::ep, CommGroup::expert_dp,
    CommGroup::pp};

constexpr std::array<EnumName<CommGroup>, 6> enum_names(CommGroup) {
    return {{
        {CommGroup::tp, "tp"},
        {CommGroup::cp, "cp"},
        {CommGroup::dp, "dp"},
        {CommGroup::ep, "ep"},
        {CommGroup::expert_dp, "expert_dp"},
        {CommGroup::pp, "pp"},
    }};
}
inline const char* to_string(CommGroup v) { return enum_name(v); }

/// Where the members of a group sit in rank numbering: the group that holds rank r0 is
/// { r0 + i * inner_stride + j * outer_stride : i < inner_size, j < outer_size }, in
/// increasing rank order (j major). Every group but expert_dp with cp > 1 is one progression
/// (outer_size 1).
struct GroupLayout {
    std::int64_t inner_stride = 1;
    int inner_size = 1;
    std::int64_t outer_stride = 0;
    int outer_size = 1;
    int size() const { return inner_size * outer_size; }
};

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
    std::int64_t first_layer = 0; ///< index of the stage's first layer in the model
    std::int64_t dense_layers = 0;
    std::int64_t moe_layers = 0;
    std::int64_t layers() const { return dense_layers + moe_layers; }
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
    cluster::Hierarchy cluster; ///< chips, instances, domains and their links
    Bytes hbm_reserve_per_chip;

    int ranks_per_chip = 0;
    std::int64_t ranks = 0;
    int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1;
    int virtual_stages = 1;
    std::int64_t microbatches = 1;       ///< per data-parallel replica per step
    std::int64_t tokens_per_step = 0;
    std::int64_t steps = 0;              ///< steps to reach the token target (or as given)
    ModelStats stats;
    std::vector<StageLayout> stages;     ///< one per pipeline stage
    MemoryPlan memory;
    std::vector<std::string> warnings;   ///< valid but probably unintended choices

    /// Layout and size of a group in rank numbering.
    GroupLayout group_layout(CommGroup g) const;
    int group_size(CommGroup g) const;
    /// The members of the group of kind `g` that holds `rank`, in increasing rank order.
    std::vector<std::int64_t> group_members(CommGroup g, std::int64_t rank) const;
    /// Tokens of one microbatch a rank processes: microbatch x sequence_length / cp.
    std::int64_t tokens_per_rank() const;
    /// The group's hierarchy over chip, instance, UltraServer and fabric, with the bandwidth
    /// and step latency one member sees (every rank of a chip communicating at once).
    network::GroupShape group_shape(CommGroup g) const;

private:
    friend Plan build_plan(const TrainingSpec&, const compute::ChipSpec&, int,
                           const cluster::ClusterSpec&, Bytes);
    std::vector<network::GroupShape> shapes_; // indexed by CommGroup
};

/// The layers of each pipeline stage, first to last: `par.stage_layers` when given (checked:
/// pp entries, each >= 1, summing to `layers`), else by `par.balance`:
///   even    q = layers / pp each and the remainder r = layers mod pp one more each on stages
///           1 to r (r < pp, so stage 0, which holds the embedding and the most activations
///           in flight under 1F1B, never takes one, and the last stage, which holds the
///           output head, only when r = pp - 1). When pp divides the layers, layers / pp each.
///           126 layers over 16 stages: [7, 8 x 14, 7].
///   llama3  the first and the last stage k - 1 layers, the pp - 2 others k, with
///           k = (layers + 2) / pp (Llama 3 405B's 126 layers over 16 stages: [7, 8 x 14, 7];
///           Llama Team 2024, section 3.3.2); needs pp >= 3, layers + 2 a multiple of pp and
///           k >= 2.
/// Throws InputError naming workload.parallelism.stage_layers (or .stage_layers[i]), .balance
/// or .pp when the layout is impossible (a stage without layers).
std::vector<std::int64_t> stage_layer_counts(const ParallelismSpec& par, std::int64_t layers);

/// Checks the plan and derives everything above. Throws InputError naming the key path
/// (workload.parallelism.tp, workload.global_batch, cluster.ultraservers, ...) when a
/// constraint fails, including when the memory plan does not fit in HBM.
Plan build_plan(const TrainingSpec& training, const compute::ChipSpec& chip, int lnc,
                const cluster::ClusterSpec& cluster, Bytes hbm_reserve_per_chip);

/// The hierarchy of a group of ranks over chip, instance, UltraServer and fabric, shaped as a
/// plan's groups are (Plan::group_shape): ranks are numbered so that consecutive ranks fill a
/// chip, chips fill an instance and instances a scale-up domain (`cluster` says what they
/// are, cluster::Hierarchy::group_shape); `ranks` are the members in increasing order.
/// Each level's bandwidth is the chip's link bandwidth divided among its `ranks_per_chip`
/// ranks (every rank of a chip communicating at once), its step latency the link's. Used by
/// build_plan and by serving replicas (a replica's tensor-parallel group).
network::GroupShape group_shape_of(const cluster::Hierarchy& cluster, int ranks_per_chip,
                                   const std::vector<std::int64_t>& ranks);

/// How a collective reaches the runtime. `alone`: one collective a graph execution (nccom-test,
/// `trnsim collective`, a collective scenario), which pays the collective engine's launch.
/// `in_graph`: one operation of a compiled graph (a training step's, a serving iteration's):
/// the runtime launches the graph, not its collectives, so a collective costs its transfers and
/// its steps' latencies; the graph's own fixed cost is the chip's training and serving
/// coefficients' (docs/network.md, "One collective cost").
enum class CollectiveIssue { alone, in_graph };

/// The collective engine's launch as a collective issued so pays it.
Duration collective_launch(const compute::ChipSpec& chip, CollectiveIssue issue);

/// The same with the chip's collective engine (compute::CollectiveEngineSpec): the launch
/// (collective_launch), the per-rank collective rate, the EFA step overhead (added to the EFA
/// level's step latency) and the reduction rate of the calibrated reduce kernel
/// (collective_reduce_bandwidth). The training plan's groups use it `in_graph`; serving's
/// replicas use group_shape_of, the links' rates (docs/network.md, "One collective cost").
network::GroupShape group_shape_with_engine(const compute::ChipSpec& chip,
                                            const cluster::Hierarchy& cluster, int ranks_per_chip,
                                            const std::vector<std::int64_t>& ranks,
                                            CollectiveIssue issue);

/// The rate at which one rank sums received data in a collective's reduction: 32 MiB of BF16
/// (two inputs, one output) over the time of the chip's calibrated reduce kernel on a rank of
/// `lnc` cores (compute::CostModel, kernel class reduce).
Bandwidth collective_reduce_bandwidth(const compute::ChipSpec& chip, int lnc);

/// Bytes of the keys and values of `tokens` tokens on one rank (its kv heads after the TP split,
/// or every head's up-projected keys and values for MLA): the block a context-parallel rank
/// passes around the ring.
double kv_block_bytes(const ModelSpec& m, std::int64_t tokens, int tp, int element_bytes);

/// Activation bytes one rank keeps for the backward pass of one layer and one microbatch
/// (`sequence_length`: keys each query sees, for materialized attention's probabilities).
double activation_bytes_per_layer(const ModelSpec& m, bool moe_layer, std::int64_t tokens,
                                  int tp, bool sequence_parallel, const RecomputeSet& recompute,
                                  int element_bytes, std::int64_t top_k,
                                  const GraphSpec& graph = {}, std::int64_t sequence_length = 0);

} // namespace trnsim::workload
