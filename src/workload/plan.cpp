#include "trnsim/workload/plan.hpp"

#include "trnsim/compute/cost_model.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::workload {


namespace {

constexpr const char* kPar = "workload.parallelism";

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw InputError(path, message);
}

std::string str(std::int64_t v) { return std::to_string(v); }

int weight_element_bytes(compute::Precision p) { return p == compute::Precision::fp32 ? 4 : 2; }

} // namespace

RecomputeSet RecomputeSet::of(Recompute r, const std::vector<RecomputePart>& parts) {
    RecomputeSet set;
    if (r == Recompute::full) {
        set.full = set.core_attention = set.norm = set.mlp_activation = set.mlp = true;
    } else if (r == Recompute::selective) {
        if (parts.empty()) {
            set.core_attention = true;
        }
        for (RecomputePart p : parts) {
            set.core_attention |= p == RecomputePart::core_attention;
            set.norm |= p == RecomputePart::norm;
            set.mlp_activation |= p == RecomputePart::mlp_activation;
            set.mlp |= p == RecomputePart::mlp;
        }
    }
    return set;
}

bool RecomputeSet::has(RecomputePart p) const {
    switch (p) {
    case RecomputePart::core_attention:
        return core_attention;
    case RecomputePart::norm:
        return norm;
    case RecomputePart::mlp_activation:
        return mlp_activation;
    case RecomputePart::mlp:
        return mlp;
    }
    return false;
}

double activation_bytes_per_layer(const ModelSpec& m, bool moe_layer, std::int64_t tokens,
                                  int tp, bool sequence_parallel, const RecomputeSet& recompute,
                                  int element_bytes, std::int64_t top_k, const GraphSpec& graph,
                                  std::int64_t sequence_length) {
    const double T = static_cast<double>(tokens);
    const double h = static_cast<double>(m.hidden);
    const double e = element_bytes;
    const double t = tp;
    // Tensors on the residual stream are split by t only under sequence parallelism.
    const double sp = sequence_parallel ? t : 1.0;
    if (recompute.full) {
        return T * h * e / sp; // only the layer input; the rest is recomputed
    }
    // Each norm keeps its input; its output (the next projection's input) unless recomputed.
    const double norm = (recompute.norm ? 1.0 : 2.0) * T * h * e / sp;
    // A dropout keeps its mask (a byte per element).
    const double hidden_dropout = graph.hidden_dropout > 0.0 ? T * h / sp : 0.0;
    double bytes = 0.0;
    // Attention block: norm input and output.
    bytes += norm + hidden_dropout;
    const double heads = static_cast<double>(m.heads);
    double attention_out = T * heads * static_cast<double>(m.v_dim()) * e / t // O-proj input
                           + T * heads / t * 4.0;                             // softmax stats
    if (m.attention == AttentionKind::mla) {
        const auto& a = m.mla;
        // Low-rank projections are replicated across TP ranks.
        bytes += T * static_cast<double>(a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) * e;
        bytes += T * heads * static_cast<double>(m.qk_dim() * 2 + m.v_dim()) * e / t; // q, k, v
    } else {
        const double kv = std::max(1.0, static_cast<double>(m.kv_heads) / t);
        bytes += T * (heads / t + 2.0 * kv) * static_cast<double>(m.head_dim) * e; // q, k, v
    }
    if (!recompute.core_attention) {
        bytes += attention_out; // recomputing the attention core rebuilds its output
        if (graph.attention == AttentionKernel::materialized) {
            // The S x S probabilities of the rank's heads (and the dropout mask).
            const double probs = T * heads / t * static_cast<double>(sequence_length);
            bytes += probs * e + (graph.attention_dropout > 0.0 ? probs : 0.0);
        }
    }
    // MLP block: norm input and output.
    bytes += norm + hidden_dropout;
    const auto mlp_act = [&](double tokens_here, double f) {
        // SwiGLU keeps gate and up outputs and their product; GELU its input and output. A
        // recomputed activation keeps only its inputs; a recomputed MLP nothing (its input is
        // the norm's output, counted above).
        if (recompute.mlp) {
            return 0.0;
        }
        const double per = (m.mlp == MlpKind::swiglu ? 3.0 : 2.0) - (recompute.mlp_activation ? 1.0 : 0.0);
        return tokens_here * per * f * e;
    };
    if (moe_layer) {
        const double f = static_cast<double>(m.moe.expert_ffn_hidden);
        const double k = static_cast<double>(top_k);
        bytes += T * static_cast<double>(m.moe.experts) * 4.0 / sp; // router probabilities
        bytes += T * k * h * e / sp;                                // dispatched tokens
        bytes += mlp_act(T * k, f / t);                             // routed experts
        if (m.moe.shared_experts > 0) {
            bytes += mlp_act(T, static_cast<double>(m.moe.shared_experts) * f / t);
        }
    } else {
        bytes += mlp_act(T, static_cast<double>(m.ffn_hidden) / t);
    }
    return bytes;
}

std::vector<std::int64_t> stage_layer_counts(const ParallelismSpec& par, std::int64_t layers) {
    const std::int64_t pp = par.pp;
    const std::string key = std::string(kPar) + ".stage_layers";
    std::vector<std::int64_t> out;
    if (!par.stage_layers.empty()) {
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < par.stage_layers.size(); ++i) {
            if (par.stage_layers[i] < 1) {
                fail(key + "[" + str(static_cast<std::int64_t>(i)) + "]",
                     "stage " + str(static_cast<std::int64_t>(i)) + " has " +
                         str(par.stage_layers[i]) + " layers; every stage needs at least one");
            }
            sum += par.stage_layers[i];
            out.push_back(par.stage_layers[i]);
        }
        if (static_cast<std::int64_t>(out.size()) != pp) {
            fail(key, "lists " + str(static_cast<std::int64_t>(out.size())) +
                          " stages but pp = " + str(pp) + " (one entry per pipeline stage)");
        }
        if (sum != layers) {
            fail(key, "the stages hold " + str(sum) + " layers but the model has " +
                          str(layers));
        }
        return out;
    }
    if (par.balance == StageBalance::llama3) {
        const std::string bkey = std::string(kPar) + ".balance";
        if (pp < 3) {
            fail(bkey, "balance: llama3 (the first and the last stage one layer fewer than the "
                       "others) needs pp >= 3; pp = " + str(pp));
        }
        if ((layers + 2) % pp != 0 || (layers + 2) / pp < 2) {
            fail(bkey, "balance: llama3 gives the first and the last stage k - 1 layers and "
                       "the others k, k = (layers + 2) / pp >= 2: layers + 2 = " +
                           str(layers + 2) + " is not such a multiple of pp = " + str(pp) +
                           "; use balance: even or list stage_layers");
        }
        const std::int64_t k = (layers + 2) / pp;
        out.assign(static_cast<std::size_t>(pp), k);
        out.front() = k - 1;
        out.back() = k - 1;
        return out;
    }
    if (pp > layers) {
        fail(std::string(kPar) + ".pp", "pp = " + str(pp) + " exceeds the model's " +
                                            str(layers) +
                                            " layers: every stage needs at least one");
    }
    const std::int64_t q = layers / pp, r = layers % pp;
    for (std::int64_t i = 0; i < pp; ++i) {
        out.push_back(q + (i >= 1 && i <= r ? 1 : 0));
    }
    return out;
}

GroupLayout Plan::group_layout(CommGroup g) const {
    const std::int64_t t = tp;
    GroupLayout l;
    switch (g) {
    case CommGroup::tp:
        l.inner_size = tp;
        break;
    case CommGroup::cp:
        l.inner_stride = t;
        l.inner_size = cp;
        break;
    case CommGroup::dp:
        // The CP ranks of every replica: consecutive TP-group positions, so one progression.
        l.inner_stride = t;
        l.inner_size = cp * dp;
        break;
    case CommGroup::ep:
        l.inner_stride = t * cp;
        l.inner_size = ep;
        break;
    case CommGroup::expert_dp:
        l.inner_stride = t;
        l.inner_size = cp;
        l.outer_stride = t * cp * ep;
        l.outer_size = dp / ep;
        break;
    case CommGroup::pp:
        l.inner_stride = t * cp * dp;
        l.inner_size = pp;
        break;
    }
    if (l.inner_size == 1 && l.outer_size > 1) { // one progression after all (cp = 1)
        l.inner_stride = l.outer_stride;
        l.inner_size = l.outer_size;
        l.outer_stride = 0;
        l.outer_size = 1;
    }
    return l;
}

int Plan::group_size(CommGroup g) const { return group_layout(g).size(); }

std::vector<std::int64_t> Plan::group_members(CommGroup g, std::int64_t rank) const {
    // Coordinates of the rank, then every combination of the group's free coordinates.
    const std::int64_t t_i = rank % tp;
    const std::int64_t c_i = rank / tp % cp;
    const std::int64_t d_i = rank / (std::int64_t{tp} * cp) % dp;
    const std::int64_t p_i = rank / (std::int64_t{tp} * cp * dp);
    const auto at = [&](std::int64_t t, std::int64_t c, std::int64_t d, std::int64_t s) {
        return t + tp * (c + cp * (d + dp * s));
    };
    std::vector<std::int64_t> out;
    switch (g) {
    case CommGroup::tp:
        for (std::int64_t t = 0; t < tp; ++t) {
            out.push_back(at(t, c_i, d_i, p_i));
        }
        break;
    case CommGroup::cp:
        for (std::int64_t c = 0; c < cp; ++c) {
            out.push_back(at(t_i, c, d_i, p_i));
        }
        break;
    case CommGroup::dp:
        for (std::int64_t d = 0; d < dp; ++d) {
            for (std::int64_t c = 0; c < cp; ++c) {
                out.push_back(at(t_i, c, d, p_i));
            }
        }
        break;
    case CommGroup::ep: {
        const std::int64_t first = d_i / ep * ep;
        for (std::int64_t d = first; d < first + ep; ++d) {
            out.push_back(at(t_i, c_i, d, p_i));
        }
        break;
    }
    case CommGroup::expert_dp:
        for (std::int64_t d = d_i % ep; d < dp; d += ep) {
            for (std::int64_t c = 0; c < cp; ++c) {
                out.push_back(at(t_i, c, d, p_i));
            }
        }
        break;
    case CommGroup::pp:
        for (std::int64_t s = 0; s < pp; ++s) {
            out.push_back(at(t_i, c_i, d_i, s));
        }
        break;
    }
    return out;
}

double kv_block_bytes(const ModelSpec& m, std::int64_t tokens, int tp, int element_bytes) {
    // MLA exchanges the up-projected keys and values: every head has its own.
    const std::int64_t kv_heads = m.attention == AttentionKind::mla
                                      ? m.heads / tp
                                      : std::max<std::int64_t>(1, m.kv_heads / tp);
    return static_cast<double>(tokens) * static_cast<double>(kv_heads) *
           static_cast<double>(m.qk_dim() + m.v_dim()) * element_bytes;
}

std::int64_t Plan::tokens_per_rank() const {
    return training.parallelism.microbatch * training.sequence_length / cp;
}

namespace {

/// The chip's collective engine on a group's shape (group_shape_with_engine); `reduce`: the
/// calibrated reduce kernel's rate (collective_reduce_bandwidth).
void add_engine(network::GroupShape& s, const compute::ChipSpec& chip, Bandwidth reduce,
                CollectiveIssue issue) {
    s.launch = collective_launch(chip, issue);
    s.rank_bandwidth = chip.collectives.rank_bandwidth;
    s.reduce_bandwidth = reduce;
    for (auto& l : s.levels) {
        if (l.link == network::LinkClass::efa) {
            l.step_latency = l.step_latency + chip.collectives.efa_step_overhead;
        }
    }
}

Bandwidth engine_reduce_bandwidth(const compute::ChipSpec& chip, int ranks_per_chip) {
    return collective_reduce_bandwidth(chip, std::max(1, chip.physical_cores / ranks_per_chip));
}

} // namespace

Duration collective_launch(const compute::ChipSpec& chip, CollectiveIssue issue) {
    return issue == CollectiveIssue::alone ? chip.collectives.launch : Duration::zero();
}

network::GroupShape group_shape_of(const cluster::Hierarchy& cluster, int ranks_per_chip,
                                   const std::vector<std::int64_t>& ranks) {
    return cluster.group_shape(ranks_per_chip, cluster.count(ranks_per_chip, ranks));
}

Bandwidth collective_reduce_bandwidth(const compute::ChipSpec& chip, int lnc) {
    const compute::CostModel model(chip, lnc);
    compute::StreamShape s;
    s.kind = compute::StreamKind::reduce;
    s.inputs = 2;
    s.element_bytes = 2;
    s.elements = std::int64_t{16} << 20;
    const double seconds = model.stream(s).seconds;
    return Bandwidth::bytes_per_s(static_cast<double>(s.elements) * s.element_bytes /
                                       seconds);
}

network::GroupShape group_shape_with_engine(const compute::ChipSpec& chip,
                                            const cluster::Hierarchy& cluster, int ranks_per_chip,
                                            const std::vector<std::int64_t>& ranks,
                                            CollectiveIssue issue) {
    network::GroupShape s = group_shape_of(cluster, ranks_per_chip, ranks);
    add_engine(s, chip, engine_reduce_bandwidth(chip, ranks_per_chip), issue);
    return s;
}

network::GroupShape Plan::group_shape(CommGroup g) const {
    return shapes_.at(static_cast<std::size_t>(g));
}

namespace {

/// Decomposes the group of rank 0 over the levels of the cluster, with the chip's collective
/// engine (`reduce`: its reduction rate): in closed form when the group is one progression,
/// else from its members (expert_dp with cp > 1). The same shape either way
/// (PlanTest.GroupShapesOfProgressionsMatchTheirMembers); a data-parallel group of 16,384
/// members cost a third of an analytic evaluation at 524,288 chips when enumerated.
network::GroupShape decompose(const Plan& p, CommGroup g, Bandwidth reduce) {
    const GroupLayout l = p.group_layout(g);
    const cluster::UnitCounts n =
        l.outer_size == 1 ? p.cluster.count(p.ranks_per_chip, 0, l.inner_stride, l.inner_size)
                          : p.cluster.count(p.ranks_per_chip, p.group_members(g, 0));
    network::GroupShape s = p.cluster.group_shape(p.ranks_per_chip, n);
    add_engine(s, p.chip, reduce, CollectiveIssue::in_graph);
    return s;
}

/// Pipeline neighbours: one level, the link class that separates a rank from the same rank of
/// the next stage.
network::GroupShape neighbour_shape(const Plan& p) {
    const GroupLayout layout = p.group_layout(CommGroup::pp);
    std::vector<std::int64_t> pair{0};
    if (layout.size() > 1) {
        pair.push_back(layout.inner_stride);
    }
    network::GroupShape full = group_shape_with_engine(p.chip, p.cluster, p.ranks_per_chip, pair,
                                                       CollectiveIssue::in_graph);
    network::GroupShape s;
    for (const auto& l : full.levels) {
        if (l.members > 1) {
            s.levels.push_back(l);
        }
    }
    if (s.levels.empty()) {
        s.levels.push_back(full.levels.front());
    }
    return s;
}

void check_parallelism(const TrainingSpec& t, const cluster::ClusterShape& cluster, int rpc,
                       Plan& p) {
    const auto& par = t.parallelism;
    const auto& m = t.model;
    p.ranks = cluster.chips * rpc;
    const std::string ranks_text = str(p.ranks) + " ranks (" + str(cluster.chips) + " chips x " +
                                   str(rpc) + " ranks per chip)";

    if (m.heads % par.tp != 0) {
        fail(std::string(kPar) + ".tp", "tp = " + str(par.tp) + " must divide the model's " +
                                            str(m.heads) + " attention heads");
    }
    if (m.attention == AttentionKind::gqa && m.kv_heads % par.tp != 0 &&
        par.tp % m.kv_heads != 0) {
        fail(std::string(kPar) + ".tp",
             "tp = " + str(par.tp) + " and the model's " + str(m.kv_heads) +
                 " key/value heads must divide one another (kv heads are split or replicated)");
    }
    if (par.tp % rpc != 0 && rpc % par.tp != 0) {
        fail(std::string(kPar) + ".tp",
             "tp = " + str(par.tp) + " must divide the " + str(rpc) +
                 " ranks of a chip or be a multiple of them (a TP group shares one chip or "
                 "takes whole chips)");
    }
    // A switched domain's ranks need not be a power of two (a Gen2 UltraServer's 144 chips):
    // a TP group straddling two domains would run its collectives over EFA.
    const std::int64_t rpd = cluster.ranks_per_domain(rpc);
    if (p.cluster.scale_up() == ScaleUpKind::switched && par.tp % rpd != 0 &&
        rpd % par.tp != 0) {
        fail(std::string(kPar) + ".tp",
             "tp = " + str(par.tp) + " must divide the " + str(rpd) +
                 " ranks of a scale-up domain (" + str(cluster.chips_per_domain()) +
                 " chips x " + str(rpc) + ") or be a multiple of them: its groups would "
                 "straddle two domains and meet over EFA");
    }
    const std::vector<std::int64_t> counts = stage_layer_counts(par, m.layers);
    if (par.virtual_stages > 1) {
        // The interleaved schedule's chunks are equal: each stage's layers split v ways.
        for (std::size_t i = 0; i < counts.size(); ++i) {
            if (counts[i] % par.virtual_stages == 0) {
                continue;
            }
            if (!par.stage_layers.empty()) {
                fail(std::string(kPar) + ".stage_layers",
                     "stage " + str(static_cast<std::int64_t>(i)) + " holds " + str(counts[i]) +
                         " layers, not a multiple of virtual_stages = " +
                         str(par.virtual_stages) + " (the interleaved chunks of a stage are "
                         "equal)");
            }
            fail(std::string(kPar) + ".pp",
                 "pp = " + str(par.pp) + " x virtual_stages = " + str(par.virtual_stages) +
                     " must divide the model's " + str(m.layers) +
                     " layers (the interleaved chunks of a stage are equal; or list "
                     "workload.parallelism.stage_layers in multiples of " +
                     str(par.virtual_stages) + ")");
        }
    }
    if (par.cp > 1 && t.sequence_length % (2 * std::int64_t{par.cp}) != 0) {
        fail(std::string(kPar) + ".cp",
             "cp = " + str(par.cp) + " must split the sequence length " +
                 str(t.sequence_length) + " into 2 x cp = " + str(2 * std::int64_t{par.cp}) +
                 " chunks of whole tokens (each rank takes two chunks so that the causal "
                 "attention work is balanced)");
    }
    // The product names only the dimensions in use, so that messages stay as before for cp 1.
    const std::int64_t model_ranks = std::int64_t{par.tp} * par.cp * par.pp;
    const std::string model_dims = par.cp > 1 ? "tp x cp x pp" : "tp x pp";
    if (p.ranks % model_ranks != 0) {
        fail(kPar, model_dims + " = " + str(model_ranks) + " does not divide the " + ranks_text);
    }
    const std::int64_t dp = p.ranks / model_ranks;
    if (par.dp != 0 && par.dp != dp) {
        fail(std::string(kPar) + ".dp",
             model_dims + " x dp = " + str(model_ranks * par.dp) + " but the cluster has " +
                 ranks_text + "; use dp: " + str(dp) + " or dp: auto");
    }
    p.tp = par.tp;
    p.cp = par.cp;
    p.pp = par.pp;
    p.dp = static_cast<int>(dp);
    p.ep = par.ep;
    if (!par.recompute_parts.empty() && par.recompute != Recompute::selective) {
        fail(std::string(kPar) + ".recompute_parts",
             "recompute_parts lists what selective recomputation recomputes; recompute is " +
                 std::string(to_string(par.recompute)) +
                 " (use recompute: selective, or drop recompute_parts)");
    }
    if (t.graph.attention == AttentionKernel::materialized && par.cp > 1) {
        fail("workload.graph.attention",
             "materialized attention with context parallelism (cp = " + str(par.cp) +
                 ") is not modelled: ring attention runs a fused kernel per key/value block");
    }
    if (t.moe_imbalance != 1.0 && !m.is_moe()) {
        fail("workload.moe_imbalance", "routing imbalance needs a mixture-of-experts model; " +
                                           m.name + " is dense");
    }
    if (par.ep > 1) {
        if (!m.is_moe()) {
            fail(std::string(kPar) + ".ep", "ep = " + str(par.ep) +
                                                " needs a mixture-of-experts model; " + m.name +
                                                " is dense (use ep: 1)");
        }
        if (dp % par.ep != 0) {
            fail(std::string(kPar) + ".ep", "ep = " + str(par.ep) +
                                                " must divide the data-parallel degree dp = " +
                                                str(dp));
        }
        if (m.moe.experts % par.ep != 0) {
            fail(std::string(kPar) + ".ep", "ep = " + str(par.ep) + " must divide the model's " +
                                                str(m.moe.experts) + " experts");
        }
    }
    if (par.schedule == Schedule::interleaved && par.virtual_stages < 2) {
        fail(std::string(kPar) + ".virtual_stages",
             "the interleaved schedule needs virtual_stages >= 2 (model chunks per rank)");
    }
    if (par.schedule == Schedule::one_f_one_b && par.virtual_stages != 1) {
        fail(std::string(kPar) + ".virtual_stages",
             "virtual_stages = " + str(par.virtual_stages) +
                 " needs schedule: interleaved (1f1b runs one chunk per rank)");
    }
    if (par.pp == 1 && par.schedule == Schedule::interleaved) {
        fail(std::string(kPar) + ".schedule", "the interleaved schedule needs pp > 1");
    }
    const std::int64_t per_step = dp * par.microbatch;
    if (t.global_batch % per_step != 0) {
        fail("workload.global_batch", str(t.global_batch) +
                                          " sequences is not a multiple of dp x microbatch = " +
                                          str(dp) + " x " + str(par.microbatch) + " = " +
                                          str(per_step));
    }
    p.microbatches = t.global_batch / per_step;
    p.virtual_stages = par.virtual_stages;
    if (par.schedule == Schedule::interleaved && p.microbatches % par.pp != 0) {
        fail("workload.global_batch",
             "the interleaved schedule needs the microbatches per step (" + str(p.microbatches) +
                 " = global_batch / (dp x microbatch)) to be a multiple of pp = " + str(par.pp));
    }
    if (par.pp > 1 && p.microbatches < par.pp) {
        p.warnings.push_back("only " + str(p.microbatches) + " microbatches for " + str(par.pp) +
                             " pipeline stages: most of the step is pipeline bubble");
    }
    if (m.position == PositionKind::learned && t.sequence_length > m.max_positions) {
        fail("workload.sequence_length", str(t.sequence_length) + " exceeds the model's " +
                                             str(m.max_positions) +
                                             " learned positions (model.max_positions)");
    }
    if (par.tp > 1 && par.tp * 1LL > std::int64_t{rpc} * cluster.chips_per_domain()) {
        p.warnings.push_back("tp = " + str(par.tp) +
                             " spans more than one NeuronLink domain: tensor-parallel traffic "
                             "crosses the EFA fabric");
    }
    if (par.cp > 1 &&
        std::int64_t{par.tp} * par.cp > std::int64_t{rpc} * cluster.chips_per_domain()) {
        p.warnings.push_back("tp x cp = " + str(std::int64_t{par.tp} * par.cp) +
                             " spans more than one NeuronLink domain: the context-parallel "
                             "key/value exchange crosses the EFA fabric");
    }
}

void layout_stages(const TrainingSpec& t, Plan& p) {
    const auto& m = t.model;
    const ModelStats& s = p.stats;
    const std::vector<std::int64_t> counts = stage_layer_counts(t.parallelism, m.layers);
    const std::int64_t first_moe = m.is_moe() ? m.moe.first_dense_layers : m.layers;
    std::int64_t begin = 0;
    for (int i = 0; i < p.pp; ++i) {
        StageLayout st;
        const std::int64_t per_stage = counts[static_cast<std::size_t>(i)];
        const std::int64_t end = begin + per_stage;
        st.first_layer = begin;
        st.moe_layers = std::max<std::int64_t>(0, end - std::max(begin, first_moe));
        st.dense_layers = per_stage - st.moe_layers;
        begin = end;
        st.has_embedding = i == 0;
        st.has_head = i == p.pp - 1;
        std::int64_t dense = per_stage * s.attention + st.dense_layers * s.dense_mlp +
                             st.moe_layers * s.moe_shared;
        if (st.has_embedding) {
            dense += s.embedding;
        }
        if (st.has_head) {
            dense += s.final_norm + (m.tied_embeddings && p.pp > 1 ? s.embedding : s.lm_head);
        }
        st.dense_params_per_rank = ceil_div(dense, p.tp);
        st.expert_params_per_rank =
            ceil_div(st.moe_layers * m.moe.experts * s.expert, std::int64_t{p.tp} * p.ep);
        p.stages.push_back(st);
    }
}

MemoryBreakdown stage_memory(const Plan& p, int stage_index) {
    const auto& t = p.training;
    const auto& m = t.model;
    const auto& par = t.parallelism;
    const StageLayout& st = p.stages[static_cast<std::size_t>(stage_index)];
    const double w = weight_element_bytes(t.precision);
    const double e = w; // activations are kept at the weight precision (FP8 training keeps BF16)
    // ZeRO shards over the gradient-reduction groups: dp x cp ranks (dp x cp / ep for experts).
    const double d = p.group_size(CommGroup::dp);
    const double de = p.group_size(CommGroup::expert_dp);
    const double dense = static_cast<double>(st.dense_params_per_rank);
    const double expert = static_cast<double>(st.expert_params_per_rank);
    const double state = master_weight_bytes(t) + 2.0 * moment_bytes(t);

    MemoryBreakdown b;
    const auto shard = [&](double params_dense, double params_expert, bool sharded) {
        return sharded ? params_dense / d + params_expert / de : params_dense + params_expert;
    };
    b.weights = Bytes(static_cast<std::int64_t>(w * shard(dense, expert, par.zero >= 3)));
    // The gradients live in the accumulator (workload.graph.grad_accumulator).
    const double g = grad_accumulator_bytes(t);
    b.gradients = Bytes(static_cast<std::int64_t>(g * shard(dense, expert, par.zero >= 2)));
    b.optimizer =
        Bytes(static_cast<std::int64_t>(state * shard(dense, expert, par.zero >= 1)));

    // The rank's tokens of a microbatch: S / cp of each sequence.
    const std::int64_t tokens = p.tokens_per_rank();
    const RecomputeSet recompute = RecomputeSet::of(par.recompute, par.recompute_parts);
    const double dense_layer =
        activation_bytes_per_layer(m, false, tokens, p.tp, par.sequence_parallel, recompute,
                                   static_cast<int>(e), 0, t.graph, t.sequence_length / p.cp);
    const double moe_layer =
        m.is_moe() ? activation_bytes_per_layer(m, true, tokens, p.tp, par.sequence_parallel,
                                                recompute, static_cast<int>(e), m.moe.top_k,
                                                t.graph, t.sequence_length / p.cp)
                   : 0.0;
    const double per_microbatch = static_cast<double>(st.dense_layers) * dense_layer +
                                  static_cast<double>(st.moe_layers) * moe_layer;
    // 1F1B: stage i holds the activations of min(m, pp - i) microbatches at its peak.
    double in_flight =
        static_cast<double>(std::min<std::int64_t>(p.microbatches, p.pp - stage_index));
    if (par.schedule == Schedule::interleaved) {
        in_flight *= 1.0 + static_cast<double>(p.pp - 1) / (p.pp * par.virtual_stages);
    }
    double act = per_microbatch * in_flight;
    if (st.has_head) {
        act += static_cast<double>(tokens) *
               static_cast<double>(ceil_div(m.vocab, p.tp)) * 4.0; // FP32 logits
    }
    b.activations = Bytes(static_cast<std::int64_t>(act));

    double buffers = 0.0;
    if (p.tp > 1) {
        // Sequence parallel: the gathered input of the current block and the prefetch of the
        // next; without it, one all-reduce buffer.
        buffers += (par.sequence_parallel ? 2.0 : 1.0) * static_cast<double>(tokens) *
                   static_cast<double>(m.hidden) * e;
    }
    if (p.cp > 1) {
        // Ring attention streams the keys and values of the other ranks' tokens: in the
        // backward pass a key/value block and its gradient block, each in use and in transit.
        buffers += 4.0 * kv_block_bytes(m, tokens, p.tp, static_cast<int>(e));
    }
    if (par.zero >= 3) {
        const double layer = static_cast<double>(p.stats.attention +
                                                 std::max(p.stats.dense_mlp, p.stats.moe_shared));
        buffers += 2.0 * layer / p.tp * w;
    }
    b.buffers = Bytes(static_cast<std::int64_t>(buffers));
    b.reserve = Bytes(p.hbm_reserve_per_chip.count() / p.ranks_per_chip);
    return b;
}

std::string memory_advice(const Plan& p) {
    const auto& par = p.training.parallelism;
    // Context parallelism divides the activations (long sequences).
    std::string advice = "raise tp, cp or pp";
    if (par.zero < 3) {
        advice += ", use a higher zero stage (now " + str(par.zero) + ")";
    }
    if (par.recompute != Recompute::full) {
        advice += ", use recompute: full";
    }
    if (par.microbatch > 1) {
        advice += ", lower microbatch";
    }
    // More chips only help through a larger dp, which shards what ZeRO shards (the optimizer
    // state at zero 1, also the gradients at 2, also the weights at 3): suggest them only when
    // sharding that part without limit could close the gap.
    const MemoryBreakdown& m = p.memory.worst;
    double sharded = par.zero >= 1 ? static_cast<double>(m.optimizer.count()) : 0.0;
    sharded += par.zero >= 2 ? static_cast<double>(m.gradients.count()) : 0.0;
    sharded += par.zero >= 3 ? static_cast<double>(m.weights.count()) : 0.0;
    const double gap = static_cast<double>(m.total().count() - p.memory.capacity_per_rank.count());
    if (sharded > gap) {
        return advice + ", or use more chips (a larger dp shards the " +
               (par.zero >= 3 ? "weights, gradients and optimizer state"
                : par.zero == 2 ? "gradients and optimizer state"
                                : "optimizer state") +
               ")";
    }
    const std::string shards =
        par.zero == 0 ? "shards nothing"
                      : "shards only " + fmt::bytes(Bytes(static_cast<std::int64_t>(sharded))) +
                            " of this stage's memory";
    return advice + " (more chips would not help: at zero " + str(par.zero) + " a larger dp " +
           shards + ")";
}

} // namespace

Plan build_plan(const TrainingSpec& training, const compute::ChipSpec& chip, int lnc,
                const cluster::ClusterSpec& cluster_spec, Bytes hbm_reserve_per_chip) {
    Plan p;
    p.training = training;
    p.chip = chip;
    p.lnc = lnc;
    p.hbm_reserve_per_chip = hbm_reserve_per_chip;

    if (std::find(chip.lnc_allowed.begin(), chip.lnc_allowed.end(), lnc) ==
        chip.lnc_allowed.end()) {
        std::string allowed;
        for (int v : chip.lnc_allowed) {
            allowed += (allowed.empty() ? "" : ", ") + str(v);
        }
        fail("hardware.lnc", "lnc = " + str(lnc) + " is not supported by " + chip.name +
                                 " (allowed: " + allowed + ")");
    }
    p.cluster = cluster::Hierarchy::of(chip, cluster_spec);
    p.ranks_per_chip = chip.ranks_per_chip(lnc);

    check_parallelism(training, p.cluster.shape(), p.ranks_per_chip, p);
    p.stats = compute_stats(training.model);
    p.tokens_per_step = training.global_batch * training.sequence_length;
    p.steps = training.steps > 0 ? training.steps : ceil_div(training.tokens, p.tokens_per_step);
    layout_stages(training, p);

    const Bandwidth reduce = engine_reduce_bandwidth(p.chip, p.ranks_per_chip);
    for (CommGroup g : kAllCommGroups) {
        p.shapes_.push_back(g == CommGroup::pp ? neighbour_shape(p) : decompose(p, g, reduce));
    }

    p.memory.capacity_per_rank = Bytes(chip.hbm_capacity.count() / p.ranks_per_chip);
    for (int i = 0; i < p.pp; ++i) {
        MemoryBreakdown b = stage_memory(p, i);
        p.memory.stages.push_back(b);
        if (i == 0 || b.total() > p.memory.worst.total()) {
            p.memory.worst = b;
            p.memory.worst_stage = i;
        }
    }
    if (!p.memory.fits()) {
        const auto& b = p.memory.worst;
        fail(kPar, "the plan does not fit in HBM: pipeline stage " + str(p.memory.worst_stage) +
                       " needs " + fmt::bytes(b.total()) + " per rank (weights " +
                       fmt::bytes(b.weights) + ", gradients " + fmt::bytes(b.gradients) +
                       ", optimizer " + fmt::bytes(b.optimizer) + ", activations " +
                       fmt::bytes(b.activations) + ", buffers " + fmt::bytes(b.buffers) +
                       ", reserve " + fmt::bytes(b.reserve) + ") but " + chip.name +
                       " with lnc = " + str(lnc) + " has " +
                       fmt::bytes(p.memory.capacity_per_rank) + " per rank; " + memory_advice(p));
    }
    return p;
}

} // namespace trnsim::workload
