#include "trnsim/sim/step_sim.hpp"

#include "coster.hpp"
#include "trnsim/engine/simulator.hpp"
#include "trnsim/network/collectives.hpp"
#include "trnsim/network/flow_network.hpp"
#include "trnsim/topology/routing.hpp"
#include "trnsim/workload/program.hpp"
#include "trnsim/workload/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>

namespace trnsim::sim {

const char* to_string(StepEntities e) { return e == StepEntities::tp_group ? "tp_group" : "rank"; }
const char* to_string(FabricCollectives c) {
    return c == FabricCollectives::flows ? "flows" : "closed_form";
}

namespace {

using network::CollectiveOp;
using workload::CommGroup;
using workload::ProgramOp;

enum Ev : engine::EventType {
    kStart = 0,      // worker: begin the step
    kResume = 1,     // worker: its local clock is reached
    kInput = 2,      // worker: part of a pipeline transfer arrived (payload: input slot)
    kCollDone = 3,   // worker: a collective of one of its families ended (payload: family kind)
    kTpDone = 4,     // worker (entities = rank): its TP group's collective ended
    kArrive = 5,     // family: a member reached a collective (payload: sequence << 32 | coll)
    kFlowsDone = 6,  // family: a phase's flows arrived (payload: sub-collective)
    kLocalDone = 7,  // family: the phase's on-chip work is done too (payload: sub-collective)
    kClosedDone = 8, // family: a closed-form collective ended
    kWake = 9,       // the fabric's wake-up
};

/// Kinds of collectives between entities.
enum Fam : std::uint8_t { kDp = 0, kEp = 1, kEdp = 2, kCp = 3 };
constexpr int kFams = 4;

CommGroup comm_group(Fam f) {
    switch (f) {
    case kDp:
        return CommGroup::dp;
    case kEp:
        return CommGroup::ep;
    case kEdp:
        return CommGroup::expert_dp;
    case kCp:
        return CommGroup::cp;
    }
    return CommGroup::dp;
}

/// A collective between entities: the op, the bytes per rank, which family runs it.
struct CollDef {
    CollectiveOp op;
    double bytes;
    Fam fam = kDp;
    std::uint32_t name;
};

/// One op of a program for the timeline: integer nanoseconds at nominal speed.
struct Span {
    std::uint32_t name;
    bool collective; // a TP collective (not scaled by the chip's speed)
    std::int64_t ns;
};

/// A step of a program. `local` runs spans [span_begin, span_end) back to back; the others
/// interact with other entities.
struct Item {
    enum Kind : std::uint8_t { local, tp_barrier, issue, blocking, wait };
    Kind kind = local;
    Fam fam = kDp;
    std::uint32_t coll = 0;    // issue, blocking: index into the collective table
    std::uint32_t span_begin = 0, span_end = 0;
    std::int64_t barrier_ns = 0; // tp_barrier: the collective's duration
    std::uint32_t barrier_name = 0;
};

struct Program {
    std::vector<Item> items;
    std::vector<Span> spans;
    /// Bytes the program's closed-form TP collectives put on each link kind (per entity).
    std::array<double, topology::kLinkKinds> tp_bytes{};
};

std::int64_t to_ns(double seconds) { return std::llround(seconds * 1e9); }

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

/// A family: the members of one data-, expert- or context-parallel group of entities, which run
/// their collectives in order, one at a time (one collective stream).
struct Family {
    Fam fam = kDp;
    std::vector<engine::EntityId> members;
    /// Chip-level groups: ranks of one TP index that sit on the same chips run as one
    /// collective (bytes x multiplier).
    struct ChipGroup {
        std::vector<std::uint32_t> chips;
        int ranks_per_chip = 1;
        int multiplier = 1;
    };
    std::vector<ChipGroup> chip_groups;

    struct Arrivals {
        std::uint32_t count = 0;
        std::uint32_t coll = 0;
    };
    std::map<std::uint64_t, Arrivals> arrivals; // by sequence number
    std::uint64_t next = 0;
    bool running = false;
    std::uint32_t coll = 0;
    /// A planned collective and, per phase, the largest route latency of its flows.
    struct Planned {
        network::CollectivePlan plan;
        std::vector<std::int64_t> latency;
    };
    struct Sub {
        const Planned* planned = nullptr;
        std::size_t phase = 0;
        std::uint32_t repeat_done = 0;
        std::int64_t phase_start = 0;
    };
    std::vector<Sub> subs;
    std::uint32_t subs_left = 0;
    /// Plans per collective (index into the table), one per chip group; built when first run.
    std::unordered_map<std::uint32_t, std::vector<Planned>> plans;
};

struct Worker {
    std::int32_t stage = 0;
    std::int32_t task = 0;
    std::uint32_t item = 0;
    enum Mode : std::uint8_t { before_task, in_task, final_ops, finished };
    Mode mode = before_task;
    enum Wait : std::uint8_t { none, sleep, input, coll, tp };
    Wait wait = none;
    Fam wait_fam = kDp;
    std::uint32_t wait_target = 0; // input slot, or collectives completed to wait for
    std::uint32_t wait_name = 0;   // tp: the collective's name (timeline)
    std::int64_t clock = 0;
    std::int64_t wait_since = 0;
    std::int64_t task_start = 0;
    std::int64_t compute_ns = 0, comm_ns = 0, bubble_ns = 0;
    std::int64_t pipeline_end = 0, end = 0;
    std::array<std::uint32_t, kFams> issued{}, completed{};
    std::array<std::int32_t, kFams> family{}; ///< index into the families, -1: none
    double speed = 1.0;
};

struct InputSlot {
    std::uint16_t count = 0;
};

class StepModel {
public:
    StepModel(const workload::Plan& plan, const topology::Fabric& fabric,
              const StepSimOptions& opt)
        : plan_(plan), fabric_(fabric), opt_(opt), coster_(plan),
          per_rank_(opt.entities == StepEntities::rank), merge_repeats_(opt.merge_repeats),
          tp_(plan.tp), cp_(plan.cp), cols_(std::int64_t{plan.cp} * plan.dp),
          pp_(plan.pp), v_(plan.virtual_stages), m_(plan.microbatches),
          rpc_(plan.ranks_per_chip) {
        if (static_cast<std::int64_t>(fabric.chips()) != plan.cluster.chips) {
            throw std::invalid_argument("step simulation: the fabric has " +
                                        std::to_string(fabric.chips()) +
                                        " chips, the plan " + std::to_string(plan.cluster.chips));
        }
        groups_ = plan.ranks / tp_;
        workers_count_ = per_rank_ ? static_cast<std::uint64_t>(plan.ranks)
                                   : static_cast<std::uint64_t>(groups_);
        // The plan makes tp a multiple or a divisor of the ranks per chip.
        chips_per_group_ = tp_ >= rpc_ ? tp_ / rpc_ : 1;
        const bool several_domains = fabric.domains() > 1;
        lookahead_ = several_domains ? plan.chip.efa_latency.ns()
                                     : plan.chip.neuronlink_hop_latency.ns();
        lookahead_ = std::max<std::int64_t>(lookahead_, 1);
        slots_ = static_cast<std::size_t>(2 * m_ * v_);
        build_names();
        build_programs();
        build_families();
        build_workers();
        const network::LocalCosts local{plan.chip.hbm_bandwidth, plan.chip.on_chip_latency};
        local_ = local;
        fabric_net_ = std::make_unique<network::FlowNetwork>(
            fabric, partitions_, wake_entity(), kWake, local.hbm, local.step_latency,
            opt.fabric_shards);
        spans_.resize(partitions_);
        link_bytes_.resize(partitions_);
    }

    engine::PartitionMap partition_map() const {
        return engine::PartitionMap::from_starts(entities(), starts_);
    }
    std::uint32_t entities() const {
        return static_cast<std::uint32_t>(workers_count_ + families_.size() + 1);
    }
    std::uint32_t partitions() const { return partitions_; }
    std::int64_t lookahead_ns() const { return lookahead_; }
    engine::EntityId wake_entity() const {
        return static_cast<engine::EntityId>(workers_count_ + families_.size());
    }
    std::uint64_t worker_count() const { return workers_count_; }

    template <class Q>
    void handle(engine::Context<Q>& ctx, const engine::Event& e) {
        const engine::EntityId self = ctx.self();
        if (self < workers_count_) {
            on_worker(ctx, workers_[self], e);
        } else if (self < workers_count_ + families_.size()) {
            on_family(ctx, families_[self - workers_count_], e);
        }
    }

    template <class Q>
    void window_edge(engine::WindowEdge<Q>& edge) {
        fabric_net_->resolve_at(edge, wake_entity());
    }

    StepSimResult result(const engine::RunStats& run) const;

private:
    // ---------------------------------------------------------------- construction
    std::uint32_t intern(const std::string& s) {
        auto it = name_index_.find(s);
        if (it != name_index_.end()) {
            return it->second;
        }
        const auto id = static_cast<std::uint32_t>(names_.size());
        names_.push_back(s);
        name_index_.emplace(s, id);
        return id;
    }

    void build_names() {
        wait_input_name_ = intern("wait: pipeline input");
        for (std::int64_t mb = 0; mb < m_; ++mb) {
            for (int c = 0; c < v_; ++c) {
                const std::string suffix =
                    std::to_string(mb) + (v_ > 1 ? "." + std::to_string(c) : std::string());
                task_names_.push_back(intern("F" + suffix));
                task_names_.push_back(intern("B" + suffix));
            }
        }
    }

    std::uint32_t coll_index(CollectiveOp op, double bytes, Fam fam, const std::string& name) {
        for (std::uint32_t i = 0; i < colls_.size(); ++i) {
            if (colls_[i].op == op && colls_[i].bytes == bytes && colls_[i].fam == fam) {
                return i;
            }
        }
        colls_.push_back({op, bytes, fam, intern(name)});
        return static_cast<std::uint32_t>(colls_.size() - 1);
    }

    static bool fam_of(CommGroup g, Fam& f) {
        switch (g) {
        case CommGroup::dp:
            f = kDp;
            return true;
        case CommGroup::ep:
            f = kEp;
            return true;
        case CommGroup::expert_dp:
            f = kEdp;
            return true;
        case CommGroup::cp:
            f = kCp;
            return true;
        default:
            return false;
        }
    }

    /// Program builder: appends ops to a program, merging local work.
    struct Builder {
        StepModel& m;
        Program& p;
        bool open = false;
        void local(std::uint32_t name, bool collective, double seconds) {
            if (!open) {
                Item it;
                it.kind = Item::local;
                it.span_begin = it.span_end = static_cast<std::uint32_t>(p.spans.size());
                p.items.push_back(it);
                open = true;
            }
            p.spans.push_back({name, collective, to_ns(seconds)});
            p.items.back().span_end = static_cast<std::uint32_t>(p.spans.size());
        }
        void interaction(Item it) {
            p.items.push_back(it);
            open = false;
        }
    };

    void add_ops(Builder& b, const std::vector<ProgramOp>& ops) {
        // Overlapped collectives (ZeRO-3): gathers go out at the block's start and the block
        // waits for them at its end; gradient reduce-scatters go out at the end.
        std::vector<const ProgramOp*> late;
        bool gathered = false;
        Fam gather_fam = kDp;
        for (const ProgramOp& op : ops) {
            if (!op.is_collective() || !op.overlapped) {
                continue;
            }
            Fam f = kDp;
            if (!fam_of(op.group, f) || plan_.group_size(op.group) <= 1) {
                continue;
            }
            if (op.collective == CollectiveOp::all_gather) {
                Item it;
                it.kind = Item::issue;
                it.fam = f;
                it.coll = coll_index(op.collective, op.bytes * op.repeat, f, op.name);
                b.interaction(it);
                gathered = true;
                gather_fam = f;
            } else {
                late.push_back(&op);
            }
        }
        for (const ProgramOp& op : ops) {
            if (!op.is_collective()) {
                b.local(intern(op.name), false, coster_.cost(op, 1.0).seconds);
                continue;
            }
            if (op.overlapped) {
                continue;
            }
            Fam f = kDp;
            if (fam_of(op.group, f)) {
                if (plan_.group_size(op.group) <= 1) {
                    continue;
                }
                Item it;
                it.kind = Item::blocking;
                it.fam = f;
                it.coll = coll_index(op.collective, op.bytes * op.repeat, f, op.name);
                b.interaction(it);
                continue;
            }
            // TP (and anything else inside the group): closed form.
            const double s = coster_.cost(op, 1.0).seconds;
            const auto bytes = closed_form_link_bytes(op.collective, op.bytes * op.repeat,
                                                      coster_.shape(op.group));
            const double members = per_rank_ ? 1.0 : static_cast<double>(tp_);
            for (std::size_t k = 0; k < bytes.size(); ++k) {
                b.p.tp_bytes[k] += bytes[k] * members;
            }
            if (per_rank_ && op.group == CommGroup::tp && tp_ > 1) {
                Item it;
                it.kind = Item::tp_barrier;
                it.barrier_ns = to_ns(s);
                it.barrier_name = intern(op.name);
                b.interaction(it);
            } else {
                b.local(intern(op.name), true, s);
            }
        }
        if (gathered) {
            Item it;
            it.kind = Item::wait;
            it.fam = gather_fam;
            b.interaction(it);
        }
        for (const ProgramOp* op : late) {
            Fam f = kDp;
            fam_of(op->group, f);
            Item it;
            it.kind = Item::issue;
            it.fam = f;
            it.coll = coll_index(op->collective, op->bytes * op->repeat, f, op->name);
            b.interaction(it);
        }
    }

    struct BlockRef {
        const workload::BlockProgram* block;
        double dense_weight; // share of the stage's replicated (dense) parameters
        double expert_weight;
    };

    std::vector<BlockRef> chunk_blocks(int stage, int chunk) const {
        const auto& st = plan_.stages[static_cast<std::size_t>(stage)];
        const auto split = [&](std::int64_t n) {
            const std::int64_t base = n / v_, extra = n % v_;
            return base + (chunk < extra ? 1 : 0);
        };
        const auto& s = plan_.stats;
        std::vector<BlockRef> out;
        if (st.has_embedding && chunk == 0) {
            out.push_back({&program_.embedding, static_cast<double>(s.embedding), 0.0});
        }
        for (std::int64_t i = 0; i < split(st.dense_layers); ++i) {
            out.push_back({&program_.dense_layer, static_cast<double>(s.attention + s.dense_mlp), 0.0});
        }
        for (std::int64_t i = 0; i < split(st.moe_layers); ++i) {
            out.push_back({&program_.moe_layer, static_cast<double>(s.attention + s.moe_shared), 1.0});
        }
        if (st.has_head && chunk == v_ - 1) {
            out.push_back({&program_.head, static_cast<double>(s.lm_head + s.final_norm), 0.0});
        }
        return out;
    }

    void build_programs() {
        program_ = workload::build_program(plan_);
        send_bytes_ = program_.pipeline_send.bytes;
        programs_.resize(static_cast<std::size_t>(pp_ * v_ * 3));
        finals_.resize(static_cast<std::size_t>(pp_));
        for (int s = 0; s < pp_; ++s) {
            const workload::StageStepOps step_ops = workload::build_stage_step_ops(plan_, s);
            // Gradient reduction of this stage, split over its blocks by parameter share.
            struct Sync {
                bool on = false;
                CollectiveOp op = CollectiveOp::reduce_scatter;
                double bytes = 0.0;
                std::string name;
            };
            std::array<Sync, kFams> sync;
            for (const ProgramOp& op : step_ops.gradient_sync) {
                Fam f = kDp;
                if (fam_of(op.group, f) && plan_.group_size(op.group) > 1 && op.bytes > 0.0) {
                    sync[f] = {true, op.collective, op.bytes * op.repeat, op.name};
                }
            }
            double dense_total = 0.0, expert_total = 0.0;
            for (int c = 0; c < v_; ++c) {
                for (const BlockRef& b : chunk_blocks(s, c)) {
                    dense_total += b.dense_weight;
                    expert_total += b.expert_weight;
                }
            }
            for (int c = 0; c < v_; ++c) {
                const auto blocks = chunk_blocks(s, c);
                {
                    Program& p = program(s, c, 0);
                    Builder b{*this, p};
                    for (const BlockRef& blk : blocks) {
                        add_ops(b, blk.block->forward);
                    }
                }
                for (int last = 0; last < 2; ++last) {
                    Program& p = program(s, c, 1 + last);
                    Builder b{*this, p};
                    std::array<double, kFams> pending{};
                    const auto flush = [&](Fam f) {
                        if (pending[f] <= 0.0) {
                            return;
                        }
                        Item it;
                        it.kind = Item::issue;
                        it.fam = f;
                        it.coll = coll_index(sync[f].op, pending[f], f, sync[f].name);
                        b.interaction(it);
                        pending[f] = 0.0;
                    };
                    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
                        add_ops(b, it->block->backward);
                        if (last == 0) {
                            continue;
                        }
                        // This block's gradients are final: into the bucket.
                        if (sync[kDp].on && dense_total > 0.0) {
                            pending[kDp] += sync[kDp].bytes * it->dense_weight / dense_total;
                            if (pending[kDp] >= opt_.grad_bucket) {
                                flush(kDp);
                            }
                        }
                        if (sync[kEdp].on && expert_total > 0.0) {
                            pending[kEdp] += sync[kEdp].bytes * it->expert_weight / expert_total;
                            if (pending[kEdp] >= opt_.grad_bucket) {
                                flush(kEdp);
                            }
                        }
                    }
                    if (last == 1) {
                        flush(kDp);
                        flush(kEdp);
                    }
                }
            }
            // After the pipeline: wait for the gradients, update, gather the parameters.
            Program& f = finals_[static_cast<std::size_t>(s)];
            Builder b{*this, f};
            for (int k = 0; k < kFams; ++k) {
                Item it;
                it.kind = Item::wait;
                it.fam = static_cast<Fam>(k);
                b.interaction(it);
            }
            b.local(intern(step_ops.optimizer.name), false,
                    coster_.cost(step_ops.optimizer, 1.0).seconds);
            for (const ProgramOp& op : step_ops.parameter_gather) {
                Fam fam = kDp;
                if (!fam_of(op.group, fam) || plan_.group_size(op.group) <= 1) {
                    continue;
                }
                Item it;
                it.kind = Item::blocking;
                it.fam = fam;
                it.coll = coll_index(op.collective, op.bytes * op.repeat, fam, op.name);
                b.interaction(it);
            }
        }
        schedules_.resize(static_cast<std::size_t>(pp_));
        for (int s = 0; s < pp_; ++s) {
            schedules_[static_cast<std::size_t>(s)] = workload::pipeline_schedule(
                plan_.training.parallelism.schedule, pp_, s, m_, v_);
        }
    }

    Program& program(int stage, int chunk, int kind) {
        return programs_[static_cast<std::size_t>((stage * v_ + chunk) * 3 + kind)];
    }
    const Program& program(int stage, int chunk, int kind) const {
        return programs_[static_cast<std::size_t>((stage * v_ + chunk) * 3 + kind)];
    }

    // Entities and ranks.
    std::int64_t group_of_entity(std::uint64_t e) const {
        return per_rank_ ? static_cast<std::int64_t>(e) / tp_ : static_cast<std::int64_t>(e);
    }
    std::uint32_t first_chip_of_group(std::int64_t g) const {
        return static_cast<std::uint32_t>(g * tp_ / rpc_);
    }
    /// Ranks of a group on each of its chips.
    int group_ranks_per_chip() const { return std::min(tp_, rpc_); }

    void build_families() {
        struct Kind {
            Fam fam = kDp;
            CommGroup group;
        };
        std::vector<Kind> kinds = {{kDp, CommGroup::dp}, {kCp, CommGroup::cp}};
        if (plan_.training.model.is_moe()) {
            kinds.push_back({kEp, CommGroup::ep});
            kinds.push_back({kEdp, CommGroup::expert_dp});
        }
        for (const Kind& k : kinds) {
            if (plan_.group_size(k.group) <= 1) {
                continue;
            }
            // Every group of the kind once, found from its first TP group (groups in increasing
            // order, so a family's first member is the lowest TP group not yet covered).
            std::vector<std::int32_t>& of_group = family_of_group_[k.fam];
            of_group.assign(static_cast<std::size_t>(groups_), -1);
            for (std::int64_t first = 0; first < groups_; ++first) {
                if (of_group[static_cast<std::size_t>(first)] >= 0) {
                    continue;
                }
                const auto id = static_cast<std::int32_t>(families_.size());
                std::vector<std::int64_t> groups = plan_.group_members(k.group, first * tp_);
                Family fam;
                fam.fam = k.fam;
                for (std::int64_t& g : groups) {
                    g /= tp_; // ranks of TP index 0 -> TP groups
                    of_group[static_cast<std::size_t>(g)] = id;
                    if (per_rank_) {
                        for (int t = 0; t < tp_; ++t) {
                            fam.members.push_back(static_cast<engine::EntityId>(g * tp_ + t));
                        }
                    } else {
                        fam.members.push_back(static_cast<engine::EntityId>(g));
                    }
                }
                // Chip groups: per TP index, the chips of its ranks; equal lists merge.
                for (int t = 0; t < tp_; ++t) {
                    std::vector<std::uint32_t> chips;
                    int per_chip = 0, run = 0;
                    for (const std::int64_t g : groups) {
                        const std::int64_t rank = t + std::int64_t{tp_} * g;
                        const auto chip = static_cast<std::uint32_t>(rank / rpc_);
                        if (!chips.empty() && chips.back() == chip) {
                            ++run;
                        } else {
                            chips.push_back(chip);
                            run = 1;
                        }
                        per_chip = std::max(per_chip, run);
                    }
                    bool merged = false;
                    for (auto& cg : fam.chip_groups) {
                        if (cg.chips == chips) {
                            ++cg.multiplier;
                            merged = true;
                            break;
                        }
                    }
                    if (!merged) {
                        fam.chip_groups.push_back({std::move(chips), per_chip, 1});
                    }
                }
                families_.push_back(std::move(fam));
            }
        }
    }

    void build_workers() {
        workers_.resize(workers_count_);
        inputs_.assign(workers_count_ * slots_, InputSlot{});
        // Partitions: blocks of NeuronLink domains (whole TP groups), then one for the families.
        const std::uint32_t domains = std::max<std::uint32_t>(1, fabric_.domains());
        const std::uint32_t worker_parts = std::min<std::uint32_t>(domains, 64);
        std::uint32_t last_part = 0;
        starts_.push_back(0);
        const bool speeds = !opt_.chip_speed.empty();
        if (speeds && opt_.chip_speed.size() != static_cast<std::size_t>(plan_.cluster.chips)) {
            throw std::invalid_argument("step simulation: chip_speed needs one factor per chip");
        }
        for (std::uint64_t e = 0; e < workers_count_; ++e) {
            Worker& w = workers_[e];
            const std::int64_t g = group_of_entity(e);
            w.stage = static_cast<int>(g / cols_);
            for (int f = 0; f < kFams; ++f) {
                const auto& of_group = family_of_group_[static_cast<std::size_t>(f)];
                w.family[static_cast<std::size_t>(f)] =
                    of_group.empty() ? -1 : of_group[static_cast<std::size_t>(g)];
            }
            // Speed: the slowest chip of the entity (of its rank's chip in rank mode).
            double speed = 1.0;
            if (speeds) {
                if (per_rank_) {
                    speed = opt_.chip_speed[static_cast<std::size_t>(static_cast<std::int64_t>(e) / rpc_)];
                } else {
                    for (int k = 0; k < chips_per_group_; ++k) {
                        speed = std::min(speed, opt_.chip_speed[first_chip_of_group(g) + k]);
                    }
                }
                if (!(speed > 0.0)) {
                    throw std::invalid_argument("step simulation: chip speed factors must be > 0");
                }
            }
            w.speed = speed;
            const std::uint32_t domain = fabric_.domain_of(first_chip_of_group(g));
            const auto part = static_cast<std::uint32_t>(
                static_cast<std::uint64_t>(domain) * worker_parts / domains);
            if (part != last_part) {
                starts_.push_back(static_cast<std::uint32_t>(e));
                last_part = part;
            }
        }
        starts_.push_back(static_cast<std::uint32_t>(workers_count_)); // families and wake
        partitions_ = static_cast<std::uint32_t>(starts_.size());
        if (per_rank_) {
            barriers_.assign(static_cast<std::size_t>(groups_), Barrier{});
        }
        // Traced ranks.
        for (std::int64_t r : opt_.trace_ranks) {
            if (r < 0 || r >= plan_.ranks) {
                throw std::invalid_argument("step simulation: no rank " + std::to_string(r) +
                                            " to trace");
            }
            const std::uint64_t e = per_rank_ ? static_cast<std::uint64_t>(r)
                                              : static_cast<std::uint64_t>(r / tp_);
            auto& t = traced_[e];
            if (std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) {
                t.ranks.push_back(r);
            }
        }
    }

    // ---------------------------------------------------------------- workers
    struct Barrier {
        int count = 0;
        std::int64_t latest = 0;
    };
    struct Traced {
        std::vector<std::int64_t> ranks;
        std::array<std::vector<std::pair<std::int64_t, std::uint32_t>>, kFams> issued; // (time, coll)
        std::array<std::size_t, kFams> next{};
    };

    std::size_t slot(bool forward, std::int64_t mb, int chunk) const {
        return static_cast<std::size_t>(((forward ? 0 : 1) * m_ + mb) * v_ + chunk);
    }
    int expected_parts() const { return per_rank_ ? 1 : chips_per_group_; }

    template <class Q>
    void trace(engine::Context<Q>& ctx, std::uint64_t e, int lane, std::int64_t start,
               std::int64_t end, std::uint32_t name) {
        if (traced_.empty()) {
            return; // no trace asked for: no lookup per op
        }
        auto it = traced_.find(e);
        if (it == traced_.end() || end <= start) {
            return;
        }
        for (std::int64_t r : it->second.ranks) {
            spans_[ctx.partition()].push_back({r, lane, start, end - start, name});
        }
    }

    template <class Q>
    void on_worker(engine::Context<Q>& ctx, Worker& w, const engine::Event& e) {
        const std::uint64_t self = ctx.self();
        const std::int64_t now = ctx.now_ns();
        switch (e.type) {
        case kStart:
            w.clock = now;
            run(ctx, w);
            return;
        case kResume:
            w.wait = Worker::none;
            run(ctx, w);
            return;
        case kInput: {
            const auto s = static_cast<std::size_t>(e.payload);
            InputSlot& in = inputs_[self * slots_ + s];
            ++in.count;
            if (w.wait == Worker::input && w.wait_target == s && in.count == expected_parts()) {
                w.bubble_ns += now - w.wait_since;
                trace(ctx, self, 0, w.wait_since, now, wait_input_name_);
                w.clock = now;
                w.wait = Worker::none;
                run(ctx, w);
            }
            return;
        }
        case kCollDone: {
            const auto f = static_cast<Fam>(e.payload);
            ++w.completed[f];
            if (auto it = traced_.find(self); it != traced_.end()) {
                Traced& t = it->second;
                if (t.next[f] < t.issued[f].size()) {
                    const auto [start, coll] = t.issued[f][t.next[f]++];
                    trace(ctx, self, 1, start, now, colls_[coll].name);
                }
            }
            if (w.wait == Worker::coll && w.wait_fam == f && w.completed[f] >= w.wait_target) {
                w.comm_ns += now - w.wait_since;
                w.clock = now;
                w.wait = Worker::none;
                run(ctx, w);
            }
            return;
        }
        case kTpDone:
            if (w.wait == Worker::tp) {
                w.comm_ns += now - w.wait_since;
                trace(ctx, self, 1, w.wait_since, now, w.wait_name);
                w.clock = now;
                w.wait = Worker::none;
                run(ctx, w);
            }
            return;
        default:
            return;
        }
    }

    /// Brings the worker's clock and the engine's time together before it interacts: false
    /// when it has to sleep until its clock first.
    template <class Q>
    bool sync(engine::Context<Q>& ctx, Worker& w) {
        if (w.clock > ctx.now_ns()) {
            w.wait = Worker::sleep;
            ctx.schedule_at_ns(ctx.self(), w.clock, kResume);
            return false;
        }
        return true;
    }

    template <class Q>
    void issue(engine::Context<Q>& ctx, Worker& w, Fam f, std::uint32_t coll) {
        const std::int32_t fam = w.family[f];
        if (fam < 0) {
            throw std::logic_error("step simulation: collective without a family");
        }
        const std::uint64_t seq = w.issued[f]++;
        ctx.schedule_at_ns(static_cast<engine::EntityId>(workers_count_ + static_cast<std::uint64_t>(fam)),
                           w.clock + lookahead_, kArrive, (seq << 32) | coll);
        if (auto it = traced_.find(ctx.self()); it != traced_.end()) {
            it->second.issued[f].push_back({w.clock, coll});
        }
    }

    template <class Q>
    void run(engine::Context<Q>& ctx, Worker& w) {
        const std::uint64_t self = ctx.self();
        const auto& tasks = schedules_[static_cast<std::size_t>(w.stage)];
        while (true) {
            if (w.mode == Worker::finished) {
                return;
            }
            if (w.mode == Worker::before_task) {
                if (static_cast<std::size_t>(w.task) == tasks.size()) {
                    w.pipeline_end = w.clock;
                    w.mode = Worker::final_ops;
                    w.item = 0;
                    continue;
                }
                const workload::PipelineTask& t = tasks[static_cast<std::size_t>(w.task)];
                const int vs = workload::virtual_stage(pp_, w.stage, t.chunk);
                const bool needs = t.forward ? vs > 0 : vs < pp_ * v_ - 1;
                if (needs) {
                    const std::size_t s = slot(t.forward, t.microbatch, t.chunk);
                    if (inputs_[self * slots_ + s].count < expected_parts()) {
                        if (!sync(ctx, w)) {
                            return;
                        }
                        w.wait = Worker::input;
                        w.wait_target = static_cast<std::uint32_t>(s);
                        w.wait_since = w.clock;
                        return;
                    }
                }
                w.mode = Worker::in_task;
                w.item = 0;
                w.task_start = w.clock;
                continue;
            }
            const workload::PipelineTask* task =
                w.mode == Worker::in_task ? &tasks[static_cast<std::size_t>(w.task)] : nullptr;
            const Program& p =
                task ? program(w.stage, task->chunk,
                               task->forward ? 0 : (task->microbatch == m_ - 1 ? 2 : 1))
                     : finals_[static_cast<std::size_t>(w.stage)];
            if (w.item == p.items.size()) {
                auto& bytes = link_bytes_[ctx.partition()];
                for (std::size_t k = 0; k < bytes.size(); ++k) {
                    bytes[k] += p.tp_bytes[k];
                }
                if (task) {
                    if (!send(ctx, w, *task)) {
                        return;
                    }
                    trace(ctx, self, 2, w.task_start, w.clock,
                          task_names_[static_cast<std::size_t>(
                              (task->microbatch * v_ + task->chunk) * 2 + (task->forward ? 0 : 1))]);
                    ++w.task;
                    w.mode = Worker::before_task;
                    continue;
                }
                w.mode = Worker::finished;
                w.end = w.clock;
                return;
            }
            const Item& it = p.items[w.item];
            switch (it.kind) {
            case Item::local:
                for (std::uint32_t i = it.span_begin; i < it.span_end; ++i) {
                    const Span& sp = p.spans[i];
                    const std::int64_t d =
                        sp.collective || w.speed == 1.0
                            ? sp.ns
                            : std::llround(static_cast<double>(sp.ns) / w.speed);
                    trace(ctx, self, sp.collective ? 1 : 0, w.clock, w.clock + d, sp.name);
                    w.clock += d;
                    (sp.collective ? w.comm_ns : w.compute_ns) += d;
                }
                ++w.item;
                continue;
            case Item::tp_barrier: {
                if (!sync(ctx, w)) {
                    return;
                }
                const std::int64_t g = group_of_entity(self);
                Barrier& b = barriers_[static_cast<std::size_t>(g)];
                b.latest = std::max(b.latest, w.clock);
                ++w.item;
                w.wait = Worker::tp;
                w.wait_since = w.clock;
                w.wait_name = it.barrier_name;
                if (++b.count == tp_) {
                    const std::int64_t at = b.latest + it.barrier_ns;
                    for (int r = 0; r < tp_; ++r) {
                        ctx.schedule_at_ns(static_cast<engine::EntityId>(g * tp_ + r), at, kTpDone);
                    }
                    b = Barrier{};
                }
                return;
            }
            case Item::issue:
                issue(ctx, w, it.fam, it.coll);
                ++w.item;
                continue;
            case Item::blocking:
                issue(ctx, w, it.fam, it.coll);
                ++w.item;
                w.wait = Worker::coll;
                w.wait_fam = it.fam;
                w.wait_target = w.issued[it.fam];
                w.wait_since = w.clock;
                return;
            case Item::wait:
                if (w.completed[it.fam] >= w.issued[it.fam]) {
                    ++w.item;
                    continue;
                }
                if (!sync(ctx, w)) {
                    return;
                }
                ++w.item;
                w.wait = Worker::coll;
                w.wait_fam = it.fam;
                w.wait_target = w.issued[it.fam];
                w.wait_since = w.clock;
                return;
            }
        }
    }

    /// Sends the task's output to the neighbouring virtual stage. False when the worker must
    /// first sleep until its clock.
    template <class Q>
    bool send(engine::Context<Q>& ctx, Worker& w, const workload::PipelineTask& t) {
        const int vs = workload::virtual_stage(pp_, w.stage, t.chunk);
        const int to = t.forward ? vs + 1 : vs - 1;
        if (to < 0 || to >= pp_ * v_) {
            return true;
        }
        if (!sync(ctx, w)) {
            return false;
        }
        const int to_stage = to % pp_;
        const int to_chunk = to / pp_;
        const std::uint64_t self = ctx.self();
        // To the same CP index of the same replica in the other stage.
        const std::int64_t delta = std::int64_t{to_stage - w.stage} * cols_; // in groups
        const std::size_t s = slot(t.forward, t.microbatch, to_chunk);
        if (per_rank_) {
            const std::int64_t to_rank = static_cast<std::int64_t>(self) + delta * tp_;
            network::FlowSpec f{static_cast<std::uint32_t>(static_cast<std::int64_t>(self) / rpc_),
                                static_cast<std::uint32_t>(to_rank / rpc_), send_bytes_};
            fabric_net_->start_group(ctx.partition(), w.clock,
                                     static_cast<engine::EntityId>(to_rank), kInput, s, {f});
            return true;
        }
        const std::int64_t g = static_cast<std::int64_t>(self);
        for (int k = 0; k < chips_per_group_; ++k) {
            network::FlowSpec f{first_chip_of_group(g) + static_cast<std::uint32_t>(k),
                                first_chip_of_group(g + delta) + static_cast<std::uint32_t>(k),
                                send_bytes_ * group_ranks_per_chip(),
                                static_cast<double>(group_ranks_per_chip())};
            fabric_net_->start_group(ctx.partition(), w.clock,
                                     static_cast<engine::EntityId>(g + delta), kInput, s, {f});
        }
        return true;
    }

    // ---------------------------------------------------------------- families
    template <class Q>
    void on_family(engine::Context<Q>& ctx, Family& f, const engine::Event& e) {
        switch (e.type) {
        case kArrive: {
            auto& a = f.arrivals[e.payload >> 32];
            ++a.count;
            a.coll = static_cast<std::uint32_t>(e.payload & 0xffffffffu);
            try_start(ctx, f);
            return;
        }
        case kFlowsDone: {
            Family::Sub& s = f.subs[e.payload];
            const network::Phase& ph = s.planned->plan.phases[s.phase];
            const std::int64_t local = static_cast<std::int64_t>(std::ceil(ph.local_seconds * 1e9));
            std::int64_t at = std::max(ctx.now_ns(), s.phase_start + local);
            if (merge_repeats_ && ph.repeat > 1) {
                // The repeats ran as one transfer of all their bytes; each further repeat adds
                // its flows' latency, or its on-chip work when that is longer.
                const std::int64_t k = ph.repeat;
                at = std::max(ctx.now_ns() + (k - 1) * s.planned->latency[s.phase],
                              s.phase_start + k * local);
            }
            ctx.schedule_at_ns(ctx.self(), at, kLocalDone, e.payload);
            return;
        }
        case kLocalDone: {
            Family::Sub& s = f.subs[e.payload];
            const network::Phase& ph = s.planned->plan.phases[s.phase];
            if (merge_repeats_ || ++s.repeat_done >= ph.repeat) {
                ++s.phase;
                s.repeat_done = 0;
            }
            start_phase(ctx, f, static_cast<std::uint32_t>(e.payload));
            return;
        }
        case kClosedDone:
            finish(ctx, f);
            return;
        default:
            return;
        }
    }

    const std::vector<Family::Planned>& plans_for(Family& f, std::uint32_t coll) {
        auto it = f.plans.find(coll);
        if (it != f.plans.end()) {
            return it->second;
        }
        std::vector<Family::Planned> plans;
        const CollDef& c = colls_[coll];
        std::vector<std::uint32_t> route;
        for (const auto& cg : f.chip_groups) {
            network::CollectiveRequest req;
            req.op = c.op;
            req.bytes = c.bytes * cg.multiplier;
            req.chips = cg.chips;
            req.ranks_per_chip = cg.ranks_per_chip;
            Family::Planned p;
            p.plan = network::plan_collective(fabric_, req, local_);
            for (const auto& ph : p.plan.phases) {
                std::int64_t latency = 0;
                if (merge_repeats_ && ph.repeat > 1) {
                    for (std::size_t i = 0; i < ph.flows.size(); ++i) {
                        const auto& fl = ph.flows[i];
                        if (fl.src == fl.dst) {
                            latency = std::max(latency, local_.step_latency.ns());
                            continue;
                        }
                        route.clear();
                        topology::route(fabric_, fl.src, fl.dst, i, route);
                        latency = std::max(latency, topology::route_latency_ns(
                                                        fabric_, route.data(), route.size()));
                    }
                }
                p.latency.push_back(latency);
            }
            // Each flow stands for the same flow of `multiplier` TP indices (their collectives
            // run side by side on these chips): it takes that many shares of the fabric.
            for (auto& ph : p.plan.phases) {
                for (auto& fl : ph.flows) {
                    fl.weight = static_cast<double>(cg.multiplier);
                }
            }
            if (merge_repeats_) {
                // A repeated phase becomes one phase moving all its repeats' bytes.
                for (auto& ph : p.plan.phases) {
                    if (ph.repeat > 1) {
                        for (auto& fl : ph.flows) {
                            fl.bytes *= ph.repeat;
                        }
                    }
                }
            }
            plans.push_back(std::move(p));
        }
        return f.plans.emplace(coll, std::move(plans)).first->second;
    }

    template <class Q>
    void try_start(engine::Context<Q>& ctx, Family& f) {
        if (f.running) {
            return;
        }
        auto it = f.arrivals.find(f.next);
        if (it == f.arrivals.end() || it->second.count < f.members.size()) {
            return;
        }
        f.running = true;
        f.coll = it->second.coll;
        ++instances_;
        if (opt_.collectives == FabricCollectives::closed_form) {
            const CollDef& c = colls_[f.coll];
            const double s = coster_.collective_seconds(c.op, c.bytes, comm_group(c.fam));
            ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + to_ns(s), kClosedDone);
            return;
        }
        const auto& plans = plans_for(f, f.coll);
        f.subs.assign(plans.size(), Family::Sub{});
        f.subs_left = static_cast<std::uint32_t>(plans.size());
        for (std::uint32_t i = 0; i < plans.size(); ++i) {
            f.subs[i].planned = &plans[i];
        }
        for (std::uint32_t i = 0; i < plans.size() && f.running; ++i) {
            start_phase(ctx, f, i);
        }
    }

    template <class Q>
    void start_phase(engine::Context<Q>& ctx, Family& f, std::uint32_t sub) {
        Family::Sub& s = f.subs[sub];
        const auto& phases = s.planned->plan.phases;
        if (s.phase >= phases.size()) {
            if (--f.subs_left == 0) {
                finish(ctx, f);
            }
            return;
        }
        s.phase_start = ctx.now_ns();
        // The plan lives in the family's cache for the whole run: no copy.
        fabric_net_->start_group_view(ctx.partition(), ctx.now_ns(), ctx.self(), kFlowsDone, sub,
                                      phases[s.phase].flows);
    }

    template <class Q>
    void finish(engine::Context<Q>& ctx, Family& f) {
        const std::int64_t at = ctx.now_ns() + lookahead_;
        for (const engine::EntityId m : f.members) {
            ctx.schedule_at_ns(m, at, kCollDone, f.fam);
        }
        f.running = false;
        f.arrivals.erase(f.next);
        ++f.next;
        try_start(ctx, f);
    }

    // ---------------------------------------------------------------- state
    const workload::Plan& plan_;
    const topology::Fabric& fabric_;
    const StepSimOptions& opt_;
    detail::Coster coster_;
    bool per_rank_;
    bool merge_repeats_;
    int tp_;
    int cp_;
    std::int64_t cols_; ///< TP groups per stage: cp x dp
    int pp_;
    int v_;
    std::int64_t m_;
    int rpc_;
    std::int64_t groups_ = 0;
    std::uint64_t workers_count_ = 0;
    int chips_per_group_ = 1;
    std::int64_t lookahead_ = 1;
    std::size_t slots_ = 0;
    network::LocalCosts local_{};

    std::vector<std::string> names_;
    std::unordered_map<std::string, std::uint32_t> name_index_;
    std::uint32_t wait_input_name_ = 0;
    std::vector<std::uint32_t> task_names_;

    workload::StepProgram program_;
    double send_bytes_ = 0.0;
    std::vector<CollDef> colls_;
    std::vector<Program> programs_; // [stage][chunk][forward, backward, last backward]
    std::vector<Program> finals_;   // per stage
    std::vector<std::vector<workload::PipelineTask>> schedules_;

    /// Per family kind, the family of each TP group (empty when the kind has no families).
    std::array<std::vector<std::int32_t>, kFams> family_of_group_;
    std::vector<Family> families_;
    std::uint64_t instances_ = 0;

    std::vector<Worker> workers_;
    std::vector<InputSlot> inputs_;
    std::vector<Barrier> barriers_;
    std::unordered_map<std::uint64_t, Traced> traced_;
    std::vector<std::uint32_t> starts_;
    std::uint32_t partitions_ = 1;

    std::unique_ptr<network::FlowNetwork> fabric_net_;
    std::vector<std::vector<TraceSpan>> spans_;                          // per partition
    std::vector<std::array<double, topology::kLinkKinds>> link_bytes_; // per partition

};

StepSimResult StepModel::result(const engine::RunStats& run) const {
    StepSimResult r;
    std::int64_t step = 0;
    std::int64_t pipeline = 0;
    for (std::uint64_t e = 0; e < workers_count_; ++e) {
        const Worker& w = workers_[e];
        if (w.mode != Worker::finished) {
            throw std::logic_error("step simulation: entity " + std::to_string(e) +
                                   " did not finish its step (a dependency was never met)");
        }
        step = std::max(step, w.end);
        pipeline = std::max(pipeline, w.pipeline_end);
    }
    const Worker* critical = nullptr;
    r.entities.reserve(workers_count_);
    for (std::uint64_t e = 0; e < workers_count_; ++e) {
        const Worker& w = workers_[e];
        if (critical == nullptr && w.end == step) {
            critical = &w;
        }
        EntityTimes t;
        const std::int64_t g = group_of_entity(e);
        t.first_rank = per_rank_ ? static_cast<std::int64_t>(e) : g * tp_;
        t.ranks = per_rank_ ? 1 : tp_;
        t.stage = w.stage;
        t.replica = g % cols_ / cp_;
        t.speed = w.speed;
        t.compute_s = static_cast<double>(w.compute_ns) * 1e-9;
        t.comm_s = static_cast<double>(w.comm_ns) * 1e-9;
        t.bubble_s = static_cast<double>(w.bubble_ns) * 1e-9;
        t.idle_s = static_cast<double>(step - w.end) * 1e-9;
        t.end_s = static_cast<double>(w.end) * 1e-9;
        r.entities.push_back(t);
    }

    StepEstimate est = estimate_step(plan_);
    const double analytic_step = est.step_s;
    est.step_s = static_cast<double>(step) * 1e-9;
    est.pipeline_s = static_cast<double>(pipeline) * 1e-9;
    if (est.step_s > 0.0) {
        const double scale = analytic_step / est.step_s;
        est.tokens_per_s *= scale;
        est.mfu *= scale;
        est.hfu *= scale;
        est.mbu *= scale;
    }
    if (critical != nullptr) {
        est.bubble_s = static_cast<double>(critical->bubble_ns) * 1e-9;
        est.exposed_comm_s = static_cast<double>(critical->comm_ns) * 1e-9;
    }
    est.bubble_fraction = est.step_s > 0.0 ? est.bubble_s / est.step_s : 0.0;
    r.estimate = est;

    // Link classes: flow traffic plus the closed-form TP collectives' share.
    std::array<double, topology::kLinkKinds> bytes = fabric_net_->link_bytes();
    for (const auto& part : link_bytes_) {
        for (std::size_t k = 0; k < bytes.size(); ++k) {
            bytes[k] += part[k];
        }
    }
    std::array<std::int64_t, topology::kLinkKinds> count{};
    std::array<double, topology::kLinkKinds> capacity{};
    for (std::uint32_t l = 0; l < fabric_.links(); ++l) {
        const auto k = static_cast<std::size_t>(fabric_.kind()[l]);
        ++count[k];
        capacity[k] += fabric_.capacity()[l];
    }
    for (int k = 0; k < topology::kLinkKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        if (count[i] == 0) {
            continue;
        }
        LinkClassUse u;
        u.kind = topology::to_string(static_cast<topology::LinkKind>(k));
        u.links = count[i];
        u.capacity_bytes_per_s = capacity[i];
        u.bytes = bytes[i];
        u.utilisation = est.step_s > 0.0 ? bytes[i] / (capacity[i] * est.step_s) : 0.0;
        r.links.push_back(u);
    }

    r.trace.names = names_;
    for (const auto& part : spans_) {
        r.trace.spans.insert(r.trace.spans.end(), part.begin(), part.end());
    }
    std::sort(r.trace.spans.begin(), r.trace.spans.end(), [](const TraceSpan& a, const TraceSpan& b) {
        return std::tie(a.rank, a.lane, a.start_ns, a.duration_ns, a.name) <
               std::tie(b.rank, b.lane, b.start_ns, b.duration_ns, b.name);
    });

    r.stats.entities = workers_count_;
    r.stats.partitions = partitions_;
    r.stats.lookahead_ns = lookahead_;
    r.stats.events = run.events;
    r.stats.windows = run.windows;
    r.stats.flows = fabric_net_->flows_started();
    r.stats.solves = fabric_net_->solves();
    r.stats.fabric_shards = opt_.fabric_shards;
    r.stats.migrations = fabric_net_->migrations();
    r.stats.migrated_flows = fabric_net_->migrated_flows();
    r.stats.fabric_route_s = fabric_net_->edge_times().route_s;
    r.stats.fabric_place_s = fabric_net_->edge_times().place_s;
    r.stats.fabric_shards_s = fabric_net_->edge_times().shards_s;
    r.stats.fabric_arrivals_s = fabric_net_->edge_times().arrivals_s;
    r.stats.fabric_collectives = instances_;
    r.stats.threads = run.threads;
    return r;
}

} // namespace

StepSimResult simulate_step(const workload::Plan& plan, const topology::Fabric& fabric,
                            const StepSimOptions& options) {
    StepModel model(plan, fabric, options);
    engine::Simulator<StepModel> sim(model, model.partition_map(),
                                     Duration::from_ns(model.lookahead_ns()));
    for (std::uint64_t e = 0; e < model.worker_count(); ++e) {
        sim.schedule(static_cast<engine::EntityId>(e), SimTime::zero(), kStart);
    }
    const engine::RunStats run = sim.run(SimTime::max(), std::max(1, options.threads));
    return model.result(run);
}

} // namespace trnsim::sim
