#include "step_workers.hpp"

#include "trnsim/network/collective_sim.hpp"
#include "trnsim/topology/routing.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

namespace trnsim::sim::detail {

using workload::CommGroup;

// ------------------------------------------------------------------------------------------
// Construction

StepWorkers::StepWorkers(const workload::Plan& plan, const StepLayout& layout,
                         const StepPrograms& programs, const StepFamilies& families,
                         const StepFabric& fabric, const StepSimOptions& options)
    : plan_(plan), layout_(layout), programs_(programs), merge_repeats_(options.merge_repeats) {
    workers_.resize(layout.workers);
    input_parts_.assign(layout.workers * layout.input_slots, 0);
    if (!options.chip_speed.empty() &&
        options.chip_speed.size() != static_cast<std::size_t>(plan.cluster.chips())) {
        throw std::invalid_argument("step simulation: chip_speed needs one factor per chip");
    }
    for (std::uint64_t e = 0; e < layout.workers; ++e) {
        Worker& w = workers_[e];
        const std::int64_t g = layout.tp_group_of(e);
        w.stage = static_cast<int>(g / layout.groups_per_stage);
        for (const CommGroup group : workload::kAllCommGroups) {
            w.family[index_of(group)] = families.family_of(group, g);
        }
        w.speed = speed_of(e, options);
    }
    const bool tp_flows = !programs.tp_collectives().empty();
    if (layout.per_rank || tp_flows) {
        tp_barriers_.assign(static_cast<std::size_t>(layout.tp_groups), TpBarrier{});
    }
    if (tp_flows) {
        tp_runs_.assign(static_cast<std::size_t>(layout.tp_groups), ChipGroupProgress{});
        plan_tp_collectives(fabric, options.merge_repeats);
    }
    add_traced(options);
    spans_.resize(layout.partitions());
}

double StepWorkers::speed_of(std::uint64_t worker, const StepSimOptions& options) const {
    if (options.chip_speed.empty()) {
        return 1.0;
    }
    // The slowest chip of a TP group, never above nominal; in rank mode its own chip's,
    // uncapped (so the two modes differ when every chip of a group is faster than nominal).
    double speed = 1.0;
    if (layout_.per_rank) {
        speed = options.chip_speed[static_cast<std::size_t>(static_cast<std::int64_t>(worker) /
                                                            layout_.ranks_per_chip)];
    } else {
        const std::uint32_t first = layout_.first_chip_of(layout_.tp_group_of(worker));
        for (int k = 0; k < layout_.chips_per_group; ++k) {
            speed = std::min(speed, options.chip_speed[first + static_cast<std::uint32_t>(k)]);
        }
    }
    if (!(speed > 0.0)) {
        throw std::invalid_argument("step simulation: chip speed factors must be > 0");
    }
    return speed;
}

void StepWorkers::plan_tp_collectives(const StepFabric& fabric, bool merge_repeats) {
    const std::uint32_t per_domain = fabric.topology().chips_per_domain();
    tp_position_.assign(per_domain, -1);
    for (std::int64_t g = 0; g < layout_.tp_groups; ++g) {
        const std::uint32_t first = layout_.first_chip_of(g);
        std::int32_t& index = tp_position_[first % per_domain];
        if (index >= 0) {
            continue;
        }
        index = static_cast<std::int32_t>(tp_planned_first_.size());
        tp_planned_first_.push_back(first);
        ChipGroup cg;
        for (int k = 0; k < layout_.chips_per_group; ++k) {
            cg.chips.push_back(first + static_cast<std::uint32_t>(k));
        }
        cg.ranks_per_chip = layout_.group_ranks_per_chip();
        std::vector<ChipGroupPlan> plans;
        for (const TpCollective& c : programs_.tp_collectives()) {
            plans.push_back(plan_chip_group(cg, c.op, c.bytes, merge_repeats, fabric));
        }
        tp_plans_.push_back(std::move(plans));
    }
}

void StepWorkers::find_lone_tp_groups(const StepFamilies& families, const StepFabric& fabric,
                                      bool enable) {
    if (tp_plans_.empty() || !enable) {
        return;
    }
    const topology::Fabric& topo = fabric.topology();
    const std::size_t links = topo.capacity().size();
    std::vector<std::uint32_t> hops;
    // Links some other transfer may use: every phase of every family plan (flow i of a phase
    // takes the route the flow network gives it, salt i) and every pipeline transfer (one
    // flow per group, salt 0) between neighbouring stages, both ways.
    std::vector<std::uint8_t> other(links, 0);
    const auto mark = [&](std::uint32_t src, std::uint32_t dst, std::size_t salt) {
        if (src == dst) {
            return;
        }
        hops.clear();
        topology::route(topo, src, dst, salt, hops);
        for (const std::uint32_t l : hops) {
            other[l] = 1;
        }
    };
    for (const Family& f : families.families()) {
        for (const auto& [collective, plans] : f.plans) {
            for (const ChipGroupPlan& cp : plans) {
                for (const network::Phase& ph : cp.plan.phases) {
                    for (std::size_t i = 0; i < ph.flows.size(); ++i) {
                        mark(ph.flows[i].src, ph.flows[i].dst, i);
                    }
                }
            }
        }
    }
    if (layout_.pp > 1) {
        for (std::int64_t g = 0; g < layout_.tp_groups; ++g) {
            const std::int64_t stage = g / layout_.groups_per_stage;
            const std::int64_t next = (stage + 1) % layout_.pp; // interleaved stages wrap
            const std::int64_t h = g + (next - stage) * layout_.groups_per_stage;
            for (int k = 0; k < layout_.chips_per_group; ++k) {
                const std::uint32_t a = layout_.first_chip_of(g) + static_cast<std::uint32_t>(k);
                const std::uint32_t b = layout_.first_chip_of(h) + static_cast<std::uint32_t>(k);
                mark(a, b, 0);
                mark(b, a, 0);
            }
        }
    }
    // Each TP group's links: alone when no other transfer and no other TP group uses one.
    constexpr std::int64_t kNobody = -1, kShared = -2;
    std::vector<std::int64_t> tp_user(links, kNobody);
    tp_alone_.assign(static_cast<std::size_t>(layout_.tp_groups), 1);
    const std::uint32_t per_domain = topo.chips_per_domain();
    for (std::int64_t g = 0; g < layout_.tp_groups; ++g) {
        const std::uint32_t first = layout_.first_chip_of(g);
        const auto position = static_cast<std::size_t>(tp_position_[first % per_domain]);
        const std::uint32_t planned = tp_planned_first_[position];
        for (const ChipGroupPlan& cp : tp_plans_[position]) {
            for (const network::Phase& ph : cp.plan.phases) {
                for (std::size_t i = 0; i < ph.flows.size(); ++i) {
                    const network::FlowSpec& fl = ph.flows[i];
                    if (fl.src == fl.dst) {
                        continue;
                    }
                    hops.clear();
                    topology::route(topo, fl.src - planned + first, fl.dst - planned + first, i,
                                    hops);
                    for (const std::uint32_t l : hops) {
                        if (other[l] != 0) {
                            tp_alone_[static_cast<std::size_t>(g)] = 0;
                        }
                        std::int64_t& u = tp_user[l];
                        if (u == kNobody) {
                            u = g;
                        } else if (u != g) {
                            if (u >= 0) {
                                tp_alone_[static_cast<std::size_t>(u)] = 0;
                            }
                            u = kShared;
                            tp_alone_[static_cast<std::size_t>(g)] = 0;
                        }
                    }
                }
            }
        }
    }
    lone_groups_ = static_cast<std::uint64_t>(
        std::count(tp_alone_.begin(), tp_alone_.end(), std::uint8_t{1}));
    if (lone_groups_ == 0) {
        return;
    }
    // Each phase with flows alone on the fabric, at the planned position's chips: one job
    // per phase, a second apart (a TP phase takes micro- to milliseconds), none overlapping.
    constexpr std::int64_t kApart = 1'000'000'000;
    std::vector<network::CollectiveJob> jobs;
    alone_phases_.assign(tp_plans_.size(), {});
    for (std::size_t pos = 0; pos < tp_plans_.size(); ++pos) {
        alone_phases_[pos].resize(tp_plans_[pos].size());
        for (std::size_t c = 0; c < tp_plans_[pos].size(); ++c) {
            const auto& phases = tp_plans_[pos][c].plan.phases;
            alone_phases_[pos][c].resize(phases.size());
            for (std::size_t k = 0; k < phases.size(); ++k) {
                const network::Phase& ph = phases[k];
                if (ph.flows.empty()) {
                    continue;
                }
                network::CollectiveJob job;
                network::Phase only;
                only.flows = ph.flows; // transfers only: no on-chip work, no overhead, once
                only.signature = ph.signature;
                job.plan.phases.push_back(std::move(only));
                job.start = SimTime::from_ns(static_cast<std::int64_t>(jobs.size()) * kApart);
                jobs.push_back(std::move(job));
                AlonePhase& a = alone_phases_[pos][c][k];
                for (std::size_t i = 0; i < ph.flows.size(); ++i) {
                    const network::FlowSpec& fl = ph.flows[i];
                    if (fl.src == fl.dst || fl.bytes <= 0.0) {
                        continue;
                    }
                    hops.clear();
                    topology::route(topo, fl.src, fl.dst, i, hops);
                    for (const std::uint32_t l : hops) {
                        a.link_bytes[static_cast<std::size_t>(topo.kind()[l])] += fl.bytes;
                    }
                }
            }
        }
    }
    network::CollectiveSimOptions o;
    o.reuse_identical_phases = false;
    const std::vector<network::CollectiveOutcome> out =
        network::simulate_collectives(topo, jobs, fabric.local_costs(), o);
    std::size_t j = 0;
    for (std::size_t pos = 0; pos < tp_plans_.size(); ++pos) {
        for (std::size_t c = 0; c < tp_plans_[pos].size(); ++c) {
            const auto& phases = tp_plans_[pos][c].plan.phases;
            for (std::size_t k = 0; k < phases.size(); ++k) {
                if (!phases[k].flows.empty()) {
                    const std::int64_t d = out[j].end.ns() - out[j].start.ns();
                    if (d >= kApart) {
                        throw std::logic_error("step simulation: a TP phase alone took 1 s or more");
                    }
                    alone_phases_[pos][c][k].transfer_ns = d;
                    ++j;
                }
            }
        }
    }
}

void StepWorkers::add_traced(const StepSimOptions& options) {
    for (const std::int64_t r : options.trace_ranks) {
        if (r < 0 || r >= plan_.ranks) {
            throw std::invalid_argument("step simulation: no rank " + std::to_string(r) +
                                        " to trace");
        }
        const std::uint64_t e = layout_.per_rank ? static_cast<std::uint64_t>(r)
                                                 : static_cast<std::uint64_t>(r / layout_.tp);
        auto& t = traced_[e];
        if (std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) {
            t.ranks.push_back(r);
        }
    }
}

// ------------------------------------------------------------------------------------------
// Events

void StepWorkers::handle(StepContext& ctx, const engine::Event& e, StepFabric& fabric) {
    Worker& w = workers_[ctx.self()];
    switch (e.type) {
    case kWorkerStart:
        w.clock_ns = ctx.now_ns();
        run(ctx, w, fabric);
        return;
    case kWorkerResume:
        w.waiting = Worker::Waiting::nothing;
        run(ctx, w, fabric);
        return;
    case kPipelineInput:
        on_input(ctx, w, static_cast<std::size_t>(e.payload), fabric);
        return;
    case kCollectiveDone:
        on_collective_done(ctx, w, static_cast<CommGroup>(e.payload), fabric);
        return;
    case kTpLaunched:
        start_tp_phase(ctx, layout_.tp_group_of(ctx.self()), fabric);
        return;
    case kTpFlowsDone: {
        const ChipGroupProgress& r = tp_runs_[static_cast<std::size_t>(e.payload)];
        ctx.schedule_at_ns(ctx.self(), phase_end_ns(r, ctx.now_ns(), merge_repeats_),
                           kTpLocalDone, e.payload);
        return;
    }
    case kTpLocalDone: {
        ChipGroupProgress& r = tp_runs_[static_cast<std::size_t>(e.payload)];
        if (merge_repeats_ || ++r.repeats_done >= r.plan->plan.phases[r.phase].repeat) {
            ++r.phase;
            r.repeats_done = 0;
        }
        start_tp_phase(ctx, static_cast<std::int64_t>(e.payload), fabric);
        return;
    }
    case kTpBarrierDone:
        if (w.waiting == Worker::Waiting::tp_barrier) {
            w.comm_ns += ctx.now_ns() - w.wait_since_ns;
            trace(ctx, ctx.self(), 1, w.wait_since_ns, ctx.now_ns(), w.wait_name);
            resume(ctx, w, fabric);
        }
        return;
    default:
        return;
    }
}

void StepWorkers::on_input(StepContext& ctx, Worker& w, std::size_t slot, StepFabric& fabric) {
    const std::uint64_t self = ctx.self();
    const std::uint16_t arrived = ++input_parts_[self * layout_.input_slots + slot];
    if (w.waiting == Worker::Waiting::input && w.wait_target == slot &&
        arrived == layout_.input_parts()) {
        w.bubble_ns += ctx.now_ns() - w.wait_since_ns;
        trace(ctx, self, 0, w.wait_since_ns, ctx.now_ns(), programs_.wait_input_name());
        resume(ctx, w, fabric);
    }
}

void StepWorkers::on_collective_done(StepContext& ctx, Worker& w, CommGroup group,
                                     StepFabric& fabric) {
    const std::uint64_t self = ctx.self();
    const std::size_t g = index_of(group);
    ++w.completed[g];
    if (auto it = traced_.find(self); it != traced_.end()) {
        TracedWorker& t = it->second;
        if (t.next_end[g] < t.issued[g].size()) {
            const auto [start, collective] = t.issued[g][t.next_end[g]++];
            trace(ctx, self, 1, start, ctx.now_ns(), programs_.collective(collective).name);
        }
    }
    if (w.waiting == Worker::Waiting::collective && w.wait_group == group &&
        w.completed[g] >= w.wait_target) {
        w.comm_ns += ctx.now_ns() - w.wait_since_ns;
        resume(ctx, w, fabric);
    }
}

void StepWorkers::resume(StepContext& ctx, Worker& w, StepFabric& fabric) {
    w.clock_ns = ctx.now_ns();
    w.waiting = Worker::Waiting::nothing;
    run(ctx, w, fabric);
}

// ------------------------------------------------------------------------------------------
// Walking the schedule

void StepWorkers::run(StepContext& ctx, Worker& w, StepFabric& fabric) {
    while (w.mode != Worker::Mode::finished) {
        if (w.mode == Worker::Mode::before_task) {
            if (!begin_task(ctx, w)) {
                return;
            }
            continue;
        }
        const auto& tasks = programs_.schedule(w.stage);
        const workload::PipelineTask* task =
            w.mode == Worker::Mode::in_task ? &tasks[static_cast<std::size_t>(w.task)] : nullptr;
        const Program& p = task != nullptr ? programs_.task_program(w.stage, *task)
                                           : programs_.final_program(w.stage);
        const bool more = w.action == p.actions.size() ? end_program(ctx, w, p, task, fabric)
                                                       : perform(ctx, w, p, p.actions[w.action],
                                                                 fabric);
        if (!more) {
            return;
        }
    }
}

bool StepWorkers::begin_task(StepContext& ctx, Worker& w) {
    const auto& tasks = programs_.schedule(w.stage);
    if (static_cast<std::size_t>(w.task) == tasks.size()) {
        w.pipeline_end_ns = w.clock_ns;
        w.mode = Worker::Mode::final_program;
        w.action = 0;
        return true;
    }
    const workload::PipelineTask& t = tasks[static_cast<std::size_t>(w.task)];
    const int vs = workload::virtual_stage(layout_.pp, w.stage, t.chunk);
    const bool needs_input = t.forward ? vs > 0 : vs < layout_.pp * layout_.virtual_stages - 1;
    if (needs_input) {
        const std::size_t s = layout_.input_slot(t.forward, t.microbatch, t.chunk);
        if (input_parts_[ctx.self() * layout_.input_slots + s] < layout_.input_parts()) {
            if (!sync(ctx, w)) {
                return false;
            }
            w.waiting = Worker::Waiting::input;
            w.wait_target = static_cast<std::uint32_t>(s);
            w.wait_since_ns = w.clock_ns;
            return false;
        }
    }
    w.mode = Worker::Mode::in_task;
    w.action = 0;
    w.task_start_ns = w.clock_ns;
    return true;
}

bool StepWorkers::end_program(StepContext& ctx, Worker& w, const Program& p,
                              const workload::PipelineTask* task, StepFabric& fabric) {
    // A worker that must sleep before its send comes back here: the program's TP bytes are
    // counted once, when the program is really done (after the send).
    if (task == nullptr) {
        fabric.add_tp_link_bytes(ctx.partition(), p.tp_link_bytes);
        w.mode = Worker::Mode::finished;
        w.end_ns = w.clock_ns;
        return false;
    }
    if (!send(ctx, w, *task, fabric)) {
        return false;
    }
    run_ops(ctx, w, p.after_send.data(), p.after_send.data() + p.after_send.size());
    fabric.add_tp_link_bytes(ctx.partition(), p.tp_link_bytes);
    trace(ctx, ctx.self(), 2, w.task_start_ns, w.clock_ns, programs_.task_name(*task));
    ++w.task;
    w.mode = Worker::Mode::before_task;
    return true;
}

bool StepWorkers::perform(StepContext& ctx, Worker& w, const Program& p, const Action& a,
                          StepFabric& fabric) {
    switch (a.kind) {
    case Action::run_local:
        run_local(ctx, w, p, a);
        ++w.action;
        return true;
    case Action::tp_barrier:
        if (sync(ctx, w)) {
            enter_tp_barrier(ctx, w, a, fabric);
        }
        return false;
    case Action::issue:
        issue(ctx, w, a.group, a.collective);
        ++w.action;
        return true;
    case Action::blocking:
        issue(ctx, w, a.group, a.collective);
        ++w.action;
        wait_for_collectives(w, a.group);
        return false;
    case Action::wait:
        if (w.completed[index_of(a.group)] >= w.issued[index_of(a.group)]) {
            ++w.action;
            return true;
        }
        if (sync(ctx, w)) {
            ++w.action;
            wait_for_collectives(w, a.group);
        }
        return false;
    }
    return false;
}

void StepWorkers::run_local(StepContext& ctx, Worker& w, const Program& p, const Action& a) {
    run_ops(ctx, w, p.local_ops.data() + a.ops_begin, p.local_ops.data() + a.ops_end);
}

void StepWorkers::run_ops(StepContext& ctx, Worker& w, const LocalOp* begin, const LocalOp* end) {
    for (const LocalOp* it = begin; it != end; ++it) {
        const LocalOp& op = *it;
        const std::int64_t d = op.tp_collective || w.speed == 1.0
                                   ? op.ns
                                   : std::llround(static_cast<double>(op.ns) / w.speed);
        trace(ctx, ctx.self(), op.tp_collective ? 1 : 0, w.clock_ns, w.clock_ns + d, op.name);
        w.clock_ns += d;
        (op.tp_collective ? w.comm_ns : w.compute_ns) += d;
    }
}

void StepWorkers::enter_tp_barrier(StepContext& ctx, Worker& w, const Action& a,
                                   StepFabric& fabric) {
    const std::int64_t g = layout_.tp_group_of(ctx.self());
    TpBarrier& b = tp_barriers_[static_cast<std::size_t>(g)];
    b.latest_ns = std::max(b.latest_ns, w.clock_ns);
    ++w.action;
    w.waiting = Worker::Waiting::tp_barrier;
    w.wait_since_ns = w.clock_ns;
    w.wait_name = a.barrier_name;
    if (++b.arrived == (layout_.per_rank ? layout_.tp : 1)) {
        // The collective runs from the last rank's arrival.
        const std::int64_t at = b.latest_ns + a.barrier_ns;
        b = TpBarrier{};
        if (a.tp_flows) {
            start_tp_run(ctx, g, a.collective, fabric);
            return;
        }
        for (int r = 0; r < layout_.tp; ++r) {
            ctx.schedule_at_ns(static_cast<engine::EntityId>(g * layout_.tp + r), at,
                               kTpBarrierDone);
        }
    }
}

void StepWorkers::start_tp_run(StepContext& ctx, std::int64_t g, std::uint32_t collective,
                               StepFabric& fabric) {
    const std::uint32_t first = layout_.first_chip_of(g);
    const auto position = static_cast<std::size_t>(
        tp_position_[first % fabric.topology().chips_per_domain()]);
    ChipGroupProgress& r = tp_runs_[static_cast<std::size_t>(g)];
    r = ChipGroupProgress{};
    r.plan = &tp_plans_[position][collective];
    // The runtime's launch of the collective, then its phases.
    const double launch = r.plan->plan.launch_seconds;
    if (launch > 0.0) {
        ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + to_ns(launch), kTpLaunched);
        return;
    }
    start_tp_phase(ctx, g, fabric);
}

void StepWorkers::start_tp_phase(StepContext& ctx, std::int64_t g, StepFabric& fabric) {
    ChipGroupProgress& r = tp_runs_[static_cast<std::size_t>(g)];
    const auto& phases = r.plan->plan.phases;
    if (r.phase >= phases.size()) {
        // Done: the group's ranks (or the entity) go on.
        if (!layout_.per_rank) {
            ctx.schedule_at_ns(ctx.self(), ctx.now_ns(), kTpBarrierDone);
            return;
        }
        for (int k = 0; k < layout_.tp; ++k) {
            ctx.schedule_at_ns(static_cast<engine::EntityId>(g * layout_.tp + k), ctx.now_ns(),
                               kTpBarrierDone);
        }
        return;
    }
    r.phase_start_ns = ctx.now_ns();
    if (phases[r.phase].flows.empty()) {
        // On-chip work only (the ranks of each chip combining through HBM): its time, without
        // a trip through the fabric, whose answer would wait for the next window edge.
        ctx.schedule_at_ns(ctx.self(), phase_end_ns(r, ctx.now_ns(), merge_repeats_),
                           kTpLocalDone, static_cast<std::uint64_t>(g));
        return;
    }
    // The plan of the group's position, moved to its chips.
    const std::uint32_t first = layout_.first_chip_of(g);
    const auto position =
        static_cast<std::size_t>(tp_position_[first % fabric.topology().chips_per_domain()]);
    if (!tp_alone_.empty() && tp_alone_[static_cast<std::size_t>(g)] != 0) {
        // Nothing else can use these links: the phase's transfers take their time alone.
        const auto collective = static_cast<std::size_t>(r.plan - tp_plans_[position].data());
        const AlonePhase& a = alone_phases_[position][collective][r.phase];
        fabric.add_tp_link_bytes(ctx.partition(), a.link_bytes);
        ctx.schedule_at_ns(ctx.self(), ctx.now_ns() + a.transfer_ns, kTpFlowsDone,
                           static_cast<std::uint64_t>(g));
        return;
    }
    const std::uint32_t planned = tp_planned_first_[position];
    const std::span<const network::FlowSpec> planned_flows = phases[r.phase].flows;
    std::vector<network::FlowSpec> flows(planned_flows.begin(), planned_flows.end());
    for (network::FlowSpec& f : flows) {
        f.src = f.src - planned + first;
        f.dst = f.dst - planned + first;
    }
    fabric.start_tp_phase(ctx.partition(), ctx.now_ns(), ctx.self(), g, std::move(flows));
}

void StepWorkers::wait_for_collectives(Worker& w, CommGroup group) {
    w.waiting = Worker::Waiting::collective;
    w.wait_group = group;
    w.wait_target = w.issued[index_of(group)];
    w.wait_since_ns = w.clock_ns;
}

bool StepWorkers::send(StepContext& ctx, Worker& w, const workload::PipelineTask& t,
                       StepFabric& fabric) {
    const int vs = workload::virtual_stage(layout_.pp, w.stage, t.chunk);
    const int to = t.forward ? vs + 1 : vs - 1;
    if (to < 0 || to >= layout_.pp * layout_.virtual_stages) {
        return true;
    }
    if (!sync(ctx, w)) {
        return false;
    }
    const int to_stage = to % layout_.pp;
    const int to_chunk = to / layout_.pp;
    const auto self = static_cast<std::int64_t>(ctx.self());
    // To the same CP index of the same replica in the other stage.
    const std::int64_t delta = std::int64_t{to_stage - w.stage} * layout_.groups_per_stage;
    const std::size_t s = layout_.input_slot(t.forward, t.microbatch, to_chunk);
    const double bytes = programs_.pipeline_send_bytes();
    if (layout_.per_rank) {
        const std::int64_t to_rank = self + delta * layout_.tp;
        const network::FlowSpec f{static_cast<std::uint32_t>(self / layout_.ranks_per_chip),
                                  static_cast<std::uint32_t>(to_rank / layout_.ranks_per_chip),
                                  bytes};
        fabric.start_transfer(ctx.partition(), w.clock_ns, static_cast<engine::EntityId>(to_rank),
                              s, f);
        return true;
    }
    // One flow per chip for the group's ranks on it, weighted by their number.
    const int ranks = layout_.group_ranks_per_chip();
    for (int k = 0; k < layout_.chips_per_group; ++k) {
        const network::FlowSpec f{layout_.first_chip_of(self) + static_cast<std::uint32_t>(k),
                                  layout_.first_chip_of(self + delta) +
                                      static_cast<std::uint32_t>(k),
                                  bytes * ranks, static_cast<double>(ranks)};
        fabric.start_transfer(ctx.partition(), w.clock_ns,
                              static_cast<engine::EntityId>(self + delta), s, f);
    }
    return true;
}

bool StepWorkers::sync(StepContext& ctx, Worker& w) {
    if (w.clock_ns > ctx.now_ns()) {
        w.waiting = Worker::Waiting::own_clock;
        ctx.schedule_at_ns(ctx.self(), w.clock_ns, kWorkerResume);
        return false;
    }
    return true;
}

void StepWorkers::issue(StepContext& ctx, Worker& w, CommGroup group, std::uint32_t collective) {
    const std::int32_t family = w.family[index_of(group)];
    if (family < 0) {
        throw std::logic_error("step simulation: collective without a family");
    }
    const std::uint64_t sequence = w.issued[index_of(group)]++;
    ctx.schedule_at_ns(layout_.family_entity(static_cast<std::size_t>(family)),
                       w.clock_ns + layout_.lookahead_ns, kMemberArrived,
                       (sequence << 32) | collective);
    if (auto it = traced_.find(ctx.self()); it != traced_.end()) {
        it->second.issued[index_of(group)].push_back({w.clock_ns, collective});
    }
}

void StepWorkers::trace(StepContext& ctx, std::uint64_t worker, int lane, std::int64_t start,
                        std::int64_t end, std::uint32_t name) {
    if (traced_.empty()) {
        return; // no trace asked for: no lookup per op
    }
    auto it = traced_.find(worker);
    if (it == traced_.end() || end <= start) {
        return;
    }
    for (const std::int64_t r : it->second.ranks) {
        spans_[ctx.partition()].push_back(
            {r, lane, SimTime::from_ns(start), Duration::from_ns(end - start), name});
    }
}

// ------------------------------------------------------------------------------------------
// Results

StepEnd StepWorkers::step_end() const {
    StepEnd end;
    for (std::uint64_t e = 0; e < workers_.size(); ++e) {
        const Worker& w = workers_[e];
        if (w.mode != Worker::Mode::finished) {
            throw std::logic_error("step simulation: entity " + std::to_string(e) +
                                   " did not finish its step (a dependency was never met)");
        }
        end.step_ns = std::max(end.step_ns, w.end_ns);
        end.pipeline_ns = std::max(end.pipeline_ns, w.pipeline_end_ns);
    }
    for (const Worker& w : workers_) {
        if (w.end_ns == end.step_ns) {
            end.critical = &w;
            break;
        }
    }
    return end;
}

std::vector<EntityTimes> StepWorkers::entity_times(std::int64_t step_ns) const {
    std::vector<EntityTimes> out;
    out.reserve(workers_.size());
    for (std::uint64_t e = 0; e < workers_.size(); ++e) {
        const Worker& w = workers_[e];
        const std::int64_t g = layout_.tp_group_of(e);
        EntityTimes t;
        t.first_rank = layout_.per_rank ? static_cast<std::int64_t>(e) : g * layout_.tp;
        t.ranks = layout_.per_rank ? 1 : layout_.tp;
        t.stage = w.stage;
        t.replica = g % layout_.groups_per_stage / layout_.cp;
        t.speed = w.speed;
        t.compute = Seconds::of(static_cast<double>(w.compute_ns) * 1e-9);
        t.comm = Seconds::of(static_cast<double>(w.comm_ns) * 1e-9);
        t.bubble = Seconds::of(static_cast<double>(w.bubble_ns) * 1e-9);
        t.idle = Seconds::of(static_cast<double>(step_ns - w.end_ns) * 1e-9);
        t.end = Seconds::of(static_cast<double>(w.end_ns) * 1e-9);
        out.push_back(t);
    }
    return out;
}

std::vector<TraceSpan> StepWorkers::trace_spans() const {
    std::vector<TraceSpan> out;
    for (const auto& part : spans_) {
        out.insert(out.end(), part.begin(), part.end());
    }
    std::sort(out.begin(), out.end(), [](const TraceSpan& a, const TraceSpan& b) {
        return std::tie(a.rank, a.lane, a.start, a.duration, a.name) <
               std::tie(b.rank, b.lane, b.start, b.duration, b.name);
    });
    return out;
}

} // namespace trnsim::sim::detail
