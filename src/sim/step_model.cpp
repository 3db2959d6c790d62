#include "step_model.hpp"

#include <algorithm>
#include <chrono>

namespace trnsim::sim::detail {

StepModel::StepModel(const workload::Plan& plan, const topology::Fabric& fabric,
                     const StepSimOptions& options)
    : plan_(plan), layout_(plan, fabric, options), coster_(plan),
      programs_(plan, layout_, coster_, options.grad_bucket,
                options.tp_collectives == TpCollectives::flows),
      families_(plan, layout_, programs_, coster_, options),
      fabric_(plan, fabric, layout_.partitions(), wake_entity(), options.fabric_shards),
      workers_(plan, layout_, programs_, families_, fabric_, options) {
    const auto started = std::chrono::steady_clock::now();
    families_.plan_all(fabric_, std::max(1, options.threads));
    plans_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    workers_.find_lone_tp_groups(families_, fabric_, options.lone_tp_groups);
}

void StepModel::handle(StepContext& ctx, const engine::Event& e) {
    const engine::EntityId self = ctx.self();
    if (self < layout_.workers) {
        workers_.handle(ctx, e, fabric_);
    } else if (self < layout_.workers + families_.size()) {
        families_.handle(ctx, e, fabric_);
    }
    // The wake entity: the fabric resolves at the window edge its event makes.
}

StepEstimate StepModel::simulated_estimate(const StepEnd& end) const {
    StepEstimate est = estimate_step(plan_);
    const double analytic_step = est.step_time.seconds();
    est.step_time = Seconds::of(static_cast<double>(end.step_ns) * 1e-9);
    est.pipeline = Seconds::of(static_cast<double>(end.pipeline_ns) * 1e-9);
    if (est.step_time.seconds() > 0.0) {
        // Same work in a different time.
        const double scale = analytic_step / est.step_time.seconds();
        est.tokens_per_s *= scale;
        est.mfu *= scale;
        est.hfu *= scale;
        est.mbu *= scale;
    }
    if (end.critical != nullptr) {
        est.bubble = Seconds::of(static_cast<double>(end.critical->bubble_ns) * 1e-9);
        est.exposed_comm = Seconds::of(static_cast<double>(end.critical->comm_ns) * 1e-9);
    }
    est.bubble_fraction =
        est.step_time.seconds() > 0.0 ? est.bubble.seconds() / est.step_time.seconds() : 0.0;
    return est;
}

StepSimResult StepModel::result(const engine::RunStats& run) const {
    StepSimResult r;
    const StepEnd end = workers_.step_end();
    r.entities = workers_.entity_times(end.step_ns);
    r.estimate = simulated_estimate(end);
    r.links = fabric_.link_use(r.estimate.step_time.seconds());
    r.trace.names = programs_.names();
    r.trace.spans = workers_.trace_spans();

    r.stats.entities = layout_.workers;
    r.stats.partitions = layout_.partitions();
    r.stats.lookahead = Duration::from_ns(layout_.lookahead_ns);
    r.stats.events = run.events;
    r.stats.windows = run.windows;
    r.stats.shared_windows = run.shared_windows;
    fabric_.add_stats(r.stats);
    r.stats.fabric_collectives = families_.instances();
    r.stats.lone_tp_groups = workers_.lone_tp_groups();
    r.stats.threads = run.threads;
    r.stats.plans = Seconds::of(plans_s_);
    return r;
}

} // namespace trnsim::sim::detail
