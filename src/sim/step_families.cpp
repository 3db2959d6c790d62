#include "step_families.hpp"

#include "trnsim/core/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::sim::detail {

using workload::CommGroup;

StepFamilies::StepFamilies(const workload::Plan& plan, const StepLayout& layout,
                           const StepPrograms& programs, const Coster& coster,
                           const StepSimOptions& options)
    : plan_(plan), layout_(layout), programs_(programs), coster_(coster),
      closed_form_(options.collectives == FabricCollectives::closed_form),
      merge_repeats_(options.merge_repeats) {
    for (const CommGroup g : kFamilyGroups) {
        const bool expert = g == CommGroup::ep || g == CommGroup::expert_dp;
        if ((expert && !plan.training.model.is_moe()) || plan.group_size(g) <= 1) {
            continue;
        }
        build(g);
    }
}

void StepFamilies::build(CommGroup group) {
    // Every group once, found from its first TP group: groups come in increasing order, so a
    // family's first member is the lowest TP group not yet covered.
    std::vector<std::int32_t>& of_group = family_of_group_[index_of(group)];
    of_group.assign(static_cast<std::size_t>(layout_.tp_groups), -1);
    for (std::int64_t first = 0; first < layout_.tp_groups; ++first) {
        if (of_group[static_cast<std::size_t>(first)] >= 0) {
            continue;
        }
        const auto id = static_cast<std::int32_t>(families_.size());
        std::vector<std::int64_t> groups = plan_.group_members(group, first * layout_.tp);
        Family f;
        f.group = group;
        for (std::int64_t& g : groups) {
            g /= layout_.tp; // ranks of TP index 0 -> TP groups
            of_group[static_cast<std::size_t>(g)] = id;
            if (layout_.per_rank) {
                for (int t = 0; t < layout_.tp; ++t) {
                    f.members.push_back(static_cast<engine::EntityId>(g * layout_.tp + t));
                }
            } else {
                f.members.push_back(static_cast<engine::EntityId>(g));
            }
        }
        f.chip_groups = chip_groups(groups);
        families_.push_back(std::move(f));
    }
}

std::vector<ChipGroup> StepFamilies::chip_groups(const std::vector<std::int64_t>& tp_groups) const {
    std::vector<ChipGroup> out;
    for (int t = 0; t < layout_.tp; ++t) {
        std::vector<std::uint32_t> chips;
        int per_chip = 0, run = 0;
        for (const std::int64_t g : tp_groups) {
            const std::int64_t rank = t + std::int64_t{layout_.tp} * g;
            const auto chip = static_cast<std::uint32_t>(rank / layout_.ranks_per_chip);
            if (!chips.empty() && chips.back() == chip) {
                ++run;
            } else {
                chips.push_back(chip);
                run = 1;
            }
            per_chip = std::max(per_chip, run);
        }
        const auto same = std::find_if(out.begin(), out.end(),
                                       [&](const ChipGroup& cg) { return cg.chips == chips; });
        if (same != out.end()) {
            ++same->multiplier;
        } else {
            out.push_back({std::move(chips), per_chip, 1});
        }
    }
    return out;
}

void StepFamilies::handle(StepContext& ctx, const engine::Event& e, StepFabric& fabric) {
    Family& f = families_[ctx.self() - layout_.workers];
    switch (e.type) {
    case kMemberArrived: {
        Family::Arrivals& a = f.arrivals[e.payload >> 32];
        ++a.members;
        a.collective = static_cast<std::uint32_t>(e.payload & 0xffffffffu);
        try_start(ctx, f, fabric);
        return;
    }
    case kPhaseFlowsDone:
        on_flows_done(ctx, f, static_cast<std::uint32_t>(e.payload));
        return;
    case kPhaseLocalDone:
        on_local_done(ctx, f, static_cast<std::uint32_t>(e.payload), fabric);
        return;
    case kClosedFormDone:
        finish(ctx, f, fabric);
        return;
    case kFamilyLaunched:
        start_chip_groups(ctx, f, fabric);
        return;
    default:
        return;
    }
}

void StepFamilies::on_flows_done(StepContext& ctx, Family& f, std::uint32_t chip_group) {
    const std::int64_t at = phase_end_ns(f.progress[chip_group], ctx.now_ns(), merge_repeats_);
    ctx.schedule_at_ns(ctx.self(), at, kPhaseLocalDone, chip_group);
}

void StepFamilies::on_local_done(StepContext& ctx, Family& f, std::uint32_t chip_group,
                                 StepFabric& fabric) {
    ChipGroupProgress& p = f.progress[chip_group];
    const network::Phase& ph = p.plan->plan.phases[p.phase];
    if (merge_repeats_ || ++p.repeats_done >= ph.repeat) {
        ++p.phase;
        p.repeats_done = 0;
    }
    start_phase(ctx, f, chip_group, fabric);
}

void StepFamilies::try_start(StepContext& ctx, Family& f, StepFabric& fabric) {
    if (f.running) {
        return;
    }
    auto it = f.arrivals.find(f.next_sequence);
    if (it == f.arrivals.end() || it->second.members < f.members.size()) {
        return;
    }
    f.running = true;
    f.collective = it->second.collective;
    ++instances_;
    if (closed_form_) {
        const FamilyCollective& c = programs_.collective(f.collective);
        const double s = coster_.collective_seconds(c.op, c.bytes, c.group);
        ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + to_ns(s), kClosedFormDone);
        return;
    }
    const auto& plans = plans_for(f, f.collective, fabric);
    f.progress.assign(plans.size(), ChipGroupProgress{});
    f.chip_groups_left = static_cast<std::uint32_t>(plans.size());
    for (std::uint32_t i = 0; i < plans.size(); ++i) {
        f.progress[i].plan = &plans[i];
    }
    // The runtime's launch of the collective, then its phases.
    const double launch = plans.empty() ? 0.0 : plans.front().plan.launch_seconds;
    if (launch > 0.0) {
        ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + to_ns(launch), kFamilyLaunched);
        return;
    }
    start_chip_groups(ctx, f, fabric);
}

void StepFamilies::start_chip_groups(StepContext& ctx, Family& f, StepFabric& fabric) {
    // A plan without phases finishes at once (and may start the next collective).
    for (std::uint32_t i = 0; i < f.progress.size() && f.running; ++i) {
        start_phase(ctx, f, i, fabric);
    }
}

void StepFamilies::start_phase(StepContext& ctx, Family& f, std::uint32_t chip_group,
                               StepFabric& fabric) {
    ChipGroupProgress& p = f.progress[chip_group];
    const auto& phases = p.plan->plan.phases;
    if (p.phase >= phases.size()) {
        if (--f.chip_groups_left == 0) {
            finish(ctx, f, fabric);
        }
        return;
    }
    p.phase_start_ns = ctx.now_ns();
    fabric.start_phase(ctx.partition(), ctx.now_ns(), ctx.self(), chip_group,
                       phases[p.phase].flows);
}

void StepFamilies::finish(StepContext& ctx, Family& f, StepFabric& fabric) {
    const std::int64_t at = ctx.now_ns() + layout_.lookahead_ns;
    for (const engine::EntityId m : f.members) {
        ctx.schedule_at_ns(m, at, kCollectiveDone, index_of(f.group));
    }
    f.running = false;
    f.arrivals.erase(f.next_sequence);
    ++f.next_sequence;
    try_start(ctx, f, fabric);
}

void StepFamilies::plan_all(const StepFabric& fabric, int threads) {
    if (closed_form_) {
        return; // no plans: closed-form collectives
    }
    // One task per (family, collective, chip group), in a fixed order; results land in
    // their own slots, so the threads' interleaving changes nothing.
    struct Task {
        std::uint32_t family, collective, chip_group;
    };
    std::vector<Task> tasks;
    std::vector<std::vector<std::uint32_t>> by_stage(static_cast<std::size_t>(layout_.pp));
    for (int s = 0; s < layout_.pp; ++s) {
        by_stage[static_cast<std::size_t>(s)] = programs_.stage_collectives(s);
    }
    for (std::uint32_t fi = 0; fi < families_.size(); ++fi) {
        Family& f = families_[fi];
        const std::int64_t stage = layout_.tp_group_of(f.members.front()) / layout_.groups_per_stage;
        for (const std::uint32_t c : by_stage[static_cast<std::size_t>(stage)]) {
            if (programs_.collective(c).group != f.group || f.plans.count(c) != 0) {
                continue;
            }
            std::vector<ChipGroupPlan>& plans = f.plans[c];
            plans.resize(f.chip_groups.size());
            for (std::uint32_t g = 0; g < f.chip_groups.size(); ++g) {
                tasks.push_back({fi, c, g});
            }
        }
    }
    // A task that throws (an impossible request) stops the handing out of tasks; the error of
    // the first failing task is rethrown, as when the plans were made one by one.
    parallel_for(tasks.size(), threads, [&](std::size_t i, int) {
        const Task& t = tasks[i];
        Family& f = families_[t.family];
        const FamilyCollective& c = programs_.collective(t.collective);
        // Each task writes its own slot of a vector sized above: no two share one.
        f.plans.find(t.collective)->second[t.chip_group] =
            plan_chip_group(f.chip_groups[t.chip_group], c.op, c.bytes, merge_repeats_, fabric);
    });
}

const std::vector<ChipGroupPlan>& StepFamilies::plans_for(Family& f, std::uint32_t collective,
                                                          const StepFabric& fabric) const {
    auto it = f.plans.find(collective);
    if (it != f.plans.end()) {
        return it->second;
    }
    std::vector<ChipGroupPlan> plans;
    for (const ChipGroup& cg : f.chip_groups) {
        const FamilyCollective& c = programs_.collective(collective);
        plans.push_back(plan_chip_group(cg, c.op, c.bytes, merge_repeats_, fabric));
    }
    return f.plans.emplace(collective, std::move(plans)).first->second;
}

ChipGroupPlan plan_chip_group(const ChipGroup& cg, network::CollectiveOp op, double bytes,
                              bool merge_repeats, const StepFabric& fabric) {
    network::CollectiveRequest req;
    req.op = op;
    req.bytes = bytes * cg.multiplier;
    req.chips = cg.chips;
    req.ranks_per_chip = cg.ranks_per_chip;
    // The `multiplier` TP indices' ranks move their own bytes.
    req.moving_ranks = cg.ranks_per_chip * cg.multiplier;
    ChipGroupPlan p;
    p.plan = network::plan_collective(fabric.topology(), req, fabric.local_costs());
    for (const network::Phase& ph : p.plan.phases) {
        p.repeat_latency_ns.push_back(
            merge_repeats && ph.repeat > 1 ? fabric.longest_latency_ns(ph.flows) : 0);
    }
    for (network::Phase& ph : p.plan.phases) {
        // Each flow stands for the same flow of `multiplier` TP indices: that many shares.
        for (network::FlowSpec& fl : ph.flows) {
            fl.weight = static_cast<double>(cg.multiplier);
        }
        if (merge_repeats && ph.repeat > 1) {
            // A repeated phase becomes one phase moving all its repeats' bytes.
            for (network::FlowSpec& fl : ph.flows) {
                fl.bytes *= ph.repeat;
            }
        }
    }
    return p;
}

std::int64_t phase_end_ns(const ChipGroupProgress& p, std::int64_t now_ns, bool merge_repeats) {
    const network::Phase& ph = p.plan->plan.phases[p.phase];
    // The phase's on-chip work (reductions) overlaps its transfers.
    const std::int64_t local = Duration::from_seconds_ceil(ph.local_seconds).ns();
    const std::int64_t overhead = Duration::from_seconds_ceil(ph.overhead_seconds).ns();
    if (merge_repeats && ph.repeat > 1) {
        // The repeats ran as one transfer of all their bytes; each further repeat adds its
        // flows' latency and its step overhead, or its on-chip work when that is longer.
        const std::int64_t k = ph.repeat;
        return std::max(now_ns + (k - 1) * p.plan->repeat_latency_ns[p.phase] + k * overhead,
                        p.phase_start_ns + k * local);
    }
    return std::max(now_ns + overhead, p.phase_start_ns + local);
}

} // namespace trnsim::sim::detail
