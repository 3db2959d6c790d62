#include "trnsim/serving/iteration_cost.hpp"

#include "iteration_graph.hpp"
#include "replica_checks.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/workload/plan.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>
#include <string>

namespace trnsim::serving {

using detail::ceil_div;
using detail::Dims;
using detail::fail;
using detail::kServing;
using detail::RankParams;
using detail::rank_params;
using detail::scaled;
using detail::shard;
using detail::str;

namespace {

/// A draft graph compiled into the target's (fused speculation): its kernels and collectives
/// run, its costs per graph are the target graph's.
IterationBreakdown inside_target_graph(IterationBreakdown b) {
    b.graphs = 0.0;
    b.prefill_graphs = 0.0;
    return b;
}

} // namespace

double IterationBreakdown::seconds(const compute::ServingCosts& c) const {
    return decode_kernel.seconds() + prefill_kernel.seconds() + collective_time.seconds() +
           kernels * c.kernel_overhead.seconds() + graphs * c.iteration_overhead.seconds() +
           prefill_graphs * c.prefill_graph_overhead.seconds();
}

IterationBreakdown& IterationBreakdown::operator+=(const IterationBreakdown& o) {
    decode_kernel += o.decode_kernel;
    prefill_kernel += o.prefill_kernel;
    collective_time += o.collective_time;
    matmul += o.matmul;
    attention += o.attention;
    kernels += o.kernels;
    collectives += o.collectives;
    graphs += o.graphs;
    prefill_graphs += o.prefill_graphs;
    return *this;
}

std::vector<std::int64_t> default_buckets(std::int64_t max_context) {
    std::vector<std::int64_t> b;
    for (std::int64_t s = 128; s < max_context; s *= 2) {
        b.push_back(s);
    }
    b.push_back(max_context);
    return b;
}

ReplicaPlacement ReplicaPlacement::single(const compute::ChipSpec& chip, int lnc, int tp) {
    ReplicaPlacement p;
    p.cluster = cluster::Hierarchy::smallest_holding(chip, ceil_div(tp, chip.ranks_per_chip(lnc)));
    return p;
}

// ---------------------------------------------------------------------------------------------

IterationCostModel::~IterationCostModel() = default;

IterationCostModel::IterationCostModel(const workload::ModelSpec& model,
                                       const compute::ChipSpec& chip, int lnc,
                                       const ServingSpec& serving,
                                       const ReplicaPlacement& placement,
                                       Bytes hbm_reserve_per_chip)
    : chip_(chip), serving_(serving) {
    const ServingSpec& s = serving;
    check_replica(model, chip, lnc, s);
    const int rpc = chip.ranks_per_chip(lnc);
    const int e = compute::element_bytes(s.precision);
    buckets_ = s.buckets.empty() ? default_buckets(s.max_context) : s.buckets;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        if (buckets_[i] < 1 || (i > 0 && buckets_[i] <= buckets_[i - 1])) {
            fail(std::string(kServing) + ".buckets", "buckets must be positive and ascending");
        }
    }
    if (buckets_.back() != s.max_context) {
        fail(std::string(kServing) + ".buckets",
             "the last bucket (" + str(buckets_.back()) + ") must equal max_context = " +
                 str(s.max_context));
    }
    tnx_context_ = !s.prefill_buckets.empty();
    prefill_buckets_ = tnx_context_ ? s.prefill_buckets : buckets_;
    for (std::size_t i = 0; i < prefill_buckets_.size(); ++i) {
        if (prefill_buckets_[i] < 1 || prefill_buckets_[i] > s.max_context ||
            (i > 0 && prefill_buckets_[i] <= prefill_buckets_[i - 1])) {
            fail(std::string(kServing) + ".prefill_buckets",
                 "prefill buckets must be positive, ascending and at most max_context = " +
                     str(s.max_context));
        }
    }
    kv_buckets_ = buckets_;
    kv_buckets_.insert(kv_buckets_.end(), prefill_buckets_.begin(), prefill_buckets_.end());
    std::sort(kv_buckets_.begin(), kv_buckets_.end());
    kv_buckets_.erase(std::unique(kv_buckets_.begin(), kv_buckets_.end()), kv_buckets_.end());
    prefill_batch_ = s.prefill_batch == 0 ? s.max_batch : s.prefill_batch;
    max_k_ = s.speculative ? s.speculative->k : 0;
    if (max_k_ < 0) {
        fail(std::string(kServing) + ".speculative.k", "k must be non-negative");
    }

    auto impl = std::make_unique<Impl>(chip, lnc, s);
    impl->target = shard(model, s.tp, s.ep, s.gqa, "the model");
    if (s.speculative && max_k_ > 0) {
        impl->draft = shard(s.speculative->draft, s.tp, 1, s.gqa, "the draft model");
    }
    // Groups: the replica's tp consecutive ranks; an expert-parallel group takes one rank of
    // each of the ep blocks of tp / ep consecutive ranks.
    std::vector<std::int64_t> members;
    for (int i = 0; i < s.tp; ++i) {
        members.push_back(placement.first_rank + i);
    }
    const cluster::Hierarchy hierarchy(chip, placement.cluster);
    // Operations of a compiled graph: no launch of their own (workload::CollectiveIssue), at
    // the links' rates. Not the collective engine's per-rank and reduction rates: Trainium2's
    // one published 70B run, compiled without collective-compute tiling, cannot be reproduced
    // with the rates fitted on its nccom-test row (docs/network.md, "One collective cost").
    tp_group_ = workload::group_shape_of(hierarchy, rpc, members);
    for (const auto& level : tp_group_.levels) {
        if (level.link == network::LinkClass::efa && level.members > 1 &&
            chip.instance.efa_bandwidth.bytes_per_s() <= 0.0) {
            fail(std::string(kServing) + ".tp",
                 "tp = " + str(s.tp) + " spans " + str(level.members) + " " +
                     chip.instance.name + " instances, which have no EFA to join them (at most " +
                     str(std::int64_t{rpc} * chip.instance.chips) + " ranks per replica)");
        }
    }
    impl->tp = tp_group_;
    std::vector<std::int64_t> ep_members;
    for (int j = 0; j < s.ep; ++j) {
        ep_members.push_back(placement.first_rank + std::int64_t{j} * (s.tp / s.ep));
    }
    impl->ep = workload::group_shape_of(hierarchy, rpc, ep_members);
    impl_ = std::move(impl);

    // Memory per rank.
    const auto bytes_of = [&](const Dims& d) {
        const RankParams p = rank_params(d);
        return p.matmul * s.stored_weight_bytes() + p.other * e;
    };
    const auto kv_of = [&](const Dims& d) {
        return 2.0 * static_cast<double>(d.layers() * d.kv * d.head_dim) * e;
    };
    double weights = bytes_of(impl_->target);
    double kv_rank = kv_of(impl_->target);
    if (impl_->draft) {
        weights += bytes_of(*impl_->draft);
        kv_rank += kv_of(*impl_->draft);
    }
    // Workspace: the largest prefill graph's live activations (residual stream and its norm,
    // QKV, MLP inner), its materialised scores and probabilities, and the logits. A TNx
    // context graph attends only to its own bucket; otherwise up to max_context keys.
    const Dims& t = impl_->target;
    const std::int64_t largest_q = prefill_buckets_.back();
    const std::int64_t largest_kv = tnx_context_ ? largest_q : s.max_context;
    const double tokens = static_cast<double>(prefill_batch_ * largest_q);
    double workspace =
        tokens * static_cast<double>(2 * t.hidden + t.qkv_out() +
                                     2 * std::max(t.ffn, t.expert_ffn)) * e +
        static_cast<double>(s.max_batch * (1 + max_k_) * t.vocab_padded) * 4.0;
    if (s.materialized_attention) {
        workspace += 2.0 * static_cast<double>(prefill_batch_ * t.heads) *
                     static_cast<double>(largest_q) * static_cast<double>(largest_kv) * e;
    }
    memory_.capacity_per_rank = Bytes(chip.hbm_capacity.count() / rpc);
    memory_.reserve_per_rank = Bytes(hbm_reserve_per_chip.count() / rpc);
    memory_.weights_per_rank = Bytes(static_cast<std::int64_t>(std::ceil(weights)));
    memory_.workspace_per_rank = Bytes(static_cast<std::int64_t>(std::ceil(workspace)));
    memory_.kv_per_token =
        Bytes(2 * model.layers * model.kv_heads * model.head_dim * std::int64_t{e});
    memory_.kv_per_token_per_rank = Bytes(static_cast<std::int64_t>(kv_rank));
    const std::int64_t used = memory_.reserve_per_rank.count() +
                              memory_.weights_per_rank.count() +
                              memory_.workspace_per_rank.count();
    const std::int64_t free = memory_.capacity_per_rank.count() - used;
    memory_.kv_free_per_rank = Bytes(std::max<std::int64_t>(0, free));
    memory_.kv_capacity_tokens = memory_.kv_free_per_rank.count() /
                                 std::max<std::int64_t>(1, memory_.kv_per_token_per_rank.count());
    const std::int64_t needed = std::int64_t{s.max_batch} * s.max_context;
    if (memory_.kv_capacity_tokens < needed) {
        fail(kServing,
             "the replica does not fit in HBM: each of its " + str(s.tp) + " ranks has " +
                 fmt::bytes(memory_.capacity_per_rank) + " (" + chip.name + ", lnc = " +
                 str(lnc) + ") and needs " + fmt::bytes(memory_.weights_per_rank) +
                 " of weights, " + fmt::bytes(memory_.reserve_per_rank) + " of reserve, " +
                 fmt::bytes(memory_.workspace_per_rank) + " of workspace and " +
                 fmt::bytes(static_cast<double>(needed) *
                            memory_.kv_per_token_per_rank.as_double()) +
                 " of KV cache for max_batch x max_context = " + str(s.max_batch) + " x " +
                 str(s.max_context) + " tokens (room for " + str(memory_.kv_capacity_tokens) +
                 "); raise tp, lower max_batch or max_context, or store weights in 1 byte");
    }

    // Tables.
    const std::size_t n = buckets_.size();
    const std::size_t nk = kv_buckets_.size();
    prefill_table_.assign(prefill_buckets_.size() * nk, 0.0);
    for (std::size_t i = 0; i < prefill_buckets_.size(); ++i) {
        for (std::size_t j = 0; j < nk; ++j) {
            if (kv_buckets_[j] >= prefill_buckets_[i] &&
                (!tnx_context_ || kv_buckets_[j] == prefill_buckets_[i])) {
                prefill_table_[i * nk + j] = prefill_graph(i, j).seconds(chip.serving);
            }
        }
    }
    const auto k_count = static_cast<std::size_t>(max_k_ + 1);
    decode_table_.assign(n * k_count, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < k_count; ++k) {
            decode_table_[i * k_count + k] =
                breakdown(IterationShape{0, 0, 0, 0, 1, buckets_[i], buckets_[i],
                                         static_cast<int>(k)})
                    .seconds(chip.serving);
        }
    }
}

IterationBreakdown IterationCostModel::prefill_graph(std::size_t qi, std::size_t ki) const {
    const std::int64_t q = prefill_buckets_[qi];
    const std::int64_t kv = kv_buckets_[ki];
    IterationBreakdown b = impl_->graph(impl_->target, prefill_batch_, q, kv, 1, true);
    if (impl_->draft) {
        const IterationBreakdown draft =
            impl_->graph(*impl_->draft, prefill_batch_, q, kv, 1, true);
        b += serving_.speculative->fused ? inside_target_graph(draft) : draft;
    }
    return b;
}

std::size_t IterationCostModel::bucket_index(std::int64_t context) const {
    TRNSIM_CHECK(context <= buckets_.back(),
                 "a context beyond max_context = " + str(buckets_.back()));
    return static_cast<std::size_t>(
        std::lower_bound(buckets_.begin(), buckets_.end(), context) - buckets_.begin());
}

std::int64_t IterationCostModel::bucket_end(std::int64_t context) const {
    return buckets_[bucket_index(context)];
}

IterationCostModel::PrefillShape
IterationCostModel::prefill_shape(const IterationShape& shape) const {
    const std::int64_t n = shape.prefill_sequences;
    // One sequence per graph: each prompt pads to its own bucket; the shape gives only the
    // total, so every graph is costed at the bucket of the mean prompt (exact when the
    // prompts of the iteration share a bucket). Batched graphs pad to the longest prompt.
    const std::int64_t q = prefill_batch_ == 1 && n > 1
                               ? ceil_div(shape.prefill_tokens, n)
                               : shape.prefill_max_tokens;
    PrefillShape p;
    const auto in = [](const std::vector<std::int64_t>& v, std::int64_t x) {
        return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
    };
    p.graphs = ceil_div(n, prefill_batch_);
    if (tnx_context_) {
        // TNx (base.py, context): the context graph takes at most the largest bucket; the
        // prompt's remaining tokens go through the decode graph one at a time.
        const std::int64_t largest = prefill_buckets_.back();
        p.q = in(prefill_buckets_, std::min(largest, std::max<std::int64_t>(1, q)));
        p.kv = in(kv_buckets_, prefill_buckets_[p.q]);
        p.leftover = std::max<std::int64_t>(0, shape.prefill_max_tokens - largest);
        if (p.leftover > 0) {
            p.leftover_bucket = bucket_index(shape.prefill_max_tokens);
        }
        return p;
    }
    p.q = bucket_index(std::max<std::int64_t>(1, q));
    p.kv = in(kv_buckets_, std::max({std::int64_t{1}, buckets_[p.q], shape.prefill_max_context,
                                     shape.prefill_max_tokens}));
    return p;
}

double IterationCostModel::seconds(const IterationShape& shape) const {
    TRNSIM_DCHECK(!shape.empty(), "an empty iteration");
    double s = 0.0;
    if (shape.prefill_sequences > 0) {
        const PrefillShape p = prefill_shape(shape);
        s += static_cast<double>(p.graphs) * prefill_table_[p.q * kv_buckets_.size() + p.kv];
        if (p.leftover > 0) {
            s += static_cast<double>(p.graphs * p.leftover) *
                 decode_table_[p.leftover_bucket * static_cast<std::size_t>(max_k_ + 1)];
        }
    }
    if (shape.decode_sequences > 0) {
        TRNSIM_DCHECK(shape.speculative_k >= 0 && shape.speculative_k <= max_k_,
                      "speculative_k beyond the draft length");
        s += decode_table_[bucket_index(shape.decode_max_context) *
                               static_cast<std::size_t>(max_k_ + 1) +
                           static_cast<std::size_t>(shape.speculative_k)];
    }
    return s;
}

Duration IterationCostModel::time(const IterationShape& shape) const {
    return Duration::from_seconds_ceil(seconds(shape));
}

IterationBreakdown IterationCostModel::breakdown(const IterationShape& shape) const {
    IterationBreakdown b;
    if (shape.prefill_sequences > 0) {
        const PrefillShape p = prefill_shape(shape);
        b += scaled(prefill_graph(p.q, p.kv), static_cast<double>(p.graphs));
        if (p.leftover > 0) {
            b += scaled(impl_->graph(impl_->target, serving_.max_batch, 1,
                                     buckets_[p.leftover_bucket], 1, false),
                        static_cast<double>(p.graphs * p.leftover));
        }
    }
    if (shape.decode_sequences > 0) {
        TRNSIM_CHECK(shape.speculative_k >= 0 && shape.speculative_k <= max_k_,
                     "speculative_k beyond the draft length");
        const std::int64_t kv = bucket_end(std::max<std::int64_t>(1, shape.decode_max_context));
        const std::int64_t B = serving_.max_batch;
        const int k = shape.speculative_k;
        if (k == 0) {
            b += impl_->graph(impl_->target, B, 1, kv, 1, false);
        } else {
            const IterationBreakdown draft =
                scaled(impl_->graph(*impl_->draft, B, 1, kv, 1, false), k);
            b += serving_.speculative->fused ? inside_target_graph(draft) : draft;
            b += impl_->graph(impl_->target, B, 1 + k, kv, 1 + k, false);
        }
    }
    return b;
}

std::int64_t IterationCostModel::heads_per_rank() const { return impl_->target.heads; }
std::int64_t IterationCostModel::kv_heads_per_rank() const { return impl_->target.kv; }

} // namespace trnsim::serving
