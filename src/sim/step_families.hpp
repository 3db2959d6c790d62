// The step simulation's collectives between entities (private to the sim module;
// step_layout.hpp lists the parts). A family is one data-, context- or expert-parallel group of
// workers, an entity of its own: its members' collectives on that group run in the order the
// members issue them, one at a time (one collective stream per group, as on the chips).
//
// A collective starts when the last member has arrived (each arrival reaches the family one
// control latency after its member issued it) and its members learn of its end one control
// latency after it. With flows, each chip group (below) runs the collective's planned phases
// (network/collectives.hpp) through the fabric one after another; the collective ends when all
// chip groups are through. With closed_form it lasts its uncongested closed form.
//
// Invariants: every family lives in the last partition, so only one thread touches families
// (and the instance count). A family's plans live, unchanged, until the end of the run: the
// fabric reads their flows without a copy. Members may run several collectives ahead; their
// arrivals wait by sequence number.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "trnsim/network/collectives.hpp"

#include "coster.hpp"
#include "step_fabric.hpp"
#include "step_layout.hpp"
#include "step_programs.hpp"

namespace trnsim::sim::detail {

/// The chips of one TP index of a family's members, in rank order, with the most ranks of the
/// group any one chip holds. TP indices on the same chips run as one collective of
/// `multiplier` times the bytes (their collectives would run side by side on these chips).
struct ChipGroup {
    std::vector<std::uint32_t> chips;
    int ranks_per_chip = 1;
    int multiplier = 1;
};

/// A chip group's plan of one collective: flows carry the multiplier as their max-min weight
/// and, with merged repeats, all their repeats' bytes. Per phase, the fixed latency each
/// further repeat adds when repeats merge (0 otherwise).
struct ChipGroupPlan {
    network::CollectivePlan plan;
    std::vector<std::int64_t> repeat_latency_ns;
};

/// Where a chip group is in the running collective.
struct ChipGroupProgress {
    const ChipGroupPlan* plan = nullptr;
    std::size_t phase = 0;
    std::uint32_t repeats_done = 0; ///< repeats not merged: of the current phase
    std::int64_t phase_start_ns = 0;
};

/// Plans `op` of `bytes` per rank over a chip group (its multiplier scales the bytes and is
/// each flow's weight); with `merge_repeats`, repeated phases become one moving all their bytes.
/// The TP collectives that run as flows use the same plans (a chip group of one TP group).
ChipGroupPlan plan_chip_group(const ChipGroup& cg, network::CollectiveOp op, double bytes,
                              bool merge_repeats, const StepFabric& fabric);

/// When a phase whose flows arrived at `now_ns` is over: its step overhead after the flows, or
/// its on-chip work from its start when that is longer (each further repeat's too, and its
/// flows' latency, when repeats merge).
std::int64_t phase_end_ns(const ChipGroupProgress& p, std::int64_t now_ns, bool merge_repeats);

struct Family {
    workload::CommGroup group = workload::CommGroup::dp;
    std::vector<engine::EntityId> members; ///< workers, in increasing order
    std::vector<ChipGroup> chip_groups;

    struct Arrivals {
        std::uint32_t members = 0;
        std::uint32_t collective = 0; ///< index into the collective table
    };
    std::map<std::uint64_t, Arrivals> arrivals; ///< by sequence number
    std::uint64_t next_sequence = 0;            ///< the collective to run next
    bool running = false;
    std::uint32_t collective = 0;            ///< the running one
    std::vector<ChipGroupProgress> progress; ///< per chip group, while running
    std::uint32_t chip_groups_left = 0;      ///< chip groups still running
    /// Per collective, one plan per chip group; made when the collective first runs.
    std::unordered_map<std::uint32_t, std::vector<ChipGroupPlan>> plans;
};

class StepFamilies {
public:
    StepFamilies(const workload::Plan& plan, const StepLayout& layout, const StepPrograms& programs,
                 const Coster& coster, const StepSimOptions& options);

    std::size_t size() const { return families_.size(); }
    /// Every family, with the plans made so far (all of them after plan_all()).
    const std::vector<Family>& families() const { return families_; }
    /// The family of `group` that TP group `tp_group` belongs to; -1: none.
    std::int32_t family_of(workload::CommGroup group, std::int64_t tp_group) const {
        const auto& of_group = family_of_group_[index_of(group)];
        return of_group.empty() ? -1 : of_group[static_cast<std::size_t>(tp_group)];
    }
    /// Collectives run between entities so far.
    std::uint64_t instances() const { return instances_; }

    /// Plans, before the run, every collective each family's stage issues, on `threads`
    /// threads (the plans are pure functions of the fabric and the request: the same plans as
    /// made one by one when each collective first runs, so results do not change). The cost-
    /// based choice of algorithm estimates every candidate's phases, which at 524,288 chips
    /// took a third of the run on the one thread that runs the families.
    void plan_all(const StepFabric& fabric, int threads);

    /// An event for a family entity.
    void handle(StepContext& ctx, const engine::Event& e, StepFabric& fabric);

private:
    void build(workload::CommGroup group);
    std::vector<ChipGroup> chip_groups(const std::vector<std::int64_t>& tp_groups) const;

    void on_flows_done(StepContext& ctx, Family& f, std::uint32_t chip_group);
    void on_local_done(StepContext& ctx, Family& f, std::uint32_t chip_group, StepFabric& fabric);
    void try_start(StepContext& ctx, Family& f, StepFabric& fabric);
    /// The first phase of every chip group of the running collective.
    void start_chip_groups(StepContext& ctx, Family& f, StepFabric& fabric);
    void start_phase(StepContext& ctx, Family& f, std::uint32_t chip_group, StepFabric& fabric);
    void finish(StepContext& ctx, Family& f, StepFabric& fabric);
    const std::vector<ChipGroupPlan>& plans_for(Family& f, std::uint32_t collective,
                                                const StepFabric& fabric) const;

    const workload::Plan& plan_;
    const StepLayout& layout_;
    const StepPrograms& programs_;
    const Coster& coster_;
    bool closed_form_;   ///< FabricCollectives::closed_form
    bool merge_repeats_; ///< StepSimOptions::merge_repeats

    /// Per group, the family of each TP group (empty when the group has no families).
    std::array<std::vector<std::int32_t>, workload::kCommGroups> family_of_group_;
    std::vector<Family> families_;
    std::uint64_t instances_ = 0;
};

} // namespace trnsim::sim::detail
