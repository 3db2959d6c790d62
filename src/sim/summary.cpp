#include "trnsim/sim/summary.hpp"

#include <cmath>

namespace trnsim::sim {

std::vector<SummaryValue> summary_values(const TrainingRun& run, bool intervals) {
    const auto& p = run.plan;
    const auto& e = run.step;
    std::vector<SummaryValue> v = {
        {"chips", p.cluster.chips},
        {"ranks", p.ranks},
        {"instances", p.cluster.instances},
        {"ultraservers", p.cluster.ultraservers},
        {"tp", std::int64_t{p.tp}},
        {"cp", std::int64_t{p.cp}},
        {"pp", std::int64_t{p.pp}},
        {"dp", std::int64_t{p.dp}},
        {"ep", std::int64_t{p.ep}},
        {"microbatches", p.microbatches},
        {"parameters", p.stats.total},
        {"active_parameters", p.stats.active},
        {"tokens_per_step", p.tokens_per_step},
        {"steps", p.steps},
        {"step_time_s", e.step_s},
        {"tokens_per_s", e.tokens_per_s},
        {"mfu", e.mfu},
        {"hfu", e.hfu},
        {"mbu", e.mbu},
        {"exposed_comm_s", e.exposed_comm_s},
        {"bubble_fraction", e.bubble_fraction},
        {"memory_per_rank_bytes", p.memory.worst.total().count()},
        {"hbm_per_rank_bytes", p.memory.capacity_per_rank.count()},
        {"time_to_train_s", run.time_to_train_s},
        {"instance_hours", run.instance_hours},
        {"cost_usd", run.cost_usd},
    };
    if (!run.reliability) {
        return v;
    }
    const reliability::RunSummary& r = *run.reliability;
    const auto& f = r.facts;
    v.insert(v.end(), {
                          {"ideal_time_to_train_s", run.ideal_time_to_train_s},
                          {"replications", static_cast<std::int64_t>(r.replications.size())},
                          {"spare_domains", f.spare_domains},
                          {"job_mtbf_s",
                           f.job_failure_rate > 0 ? 1.0 / f.job_failure_rate : HUGE_VAL},
                          {"checkpoint_interval_s", f.checkpoint_interval_s},
                          {"checkpoint_bytes", f.checkpoint_size.count()},
                      });
    const auto& fields = reliability::metric_fields();
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const std::string name = fields[i].first;
        if (name != "time_to_train_s" && name != "cost_usd") { // already above
            v.push_back({name, r.estimates[i].mean});
        }
    }
    if (intervals) {
        for (std::size_t i = 0; i < fields.size(); ++i) {
            v.push_back({std::string("ci95_") + fields[i].first, r.estimates[i].half_width});
        }
    }
    return v;
}

} // namespace trnsim::sim
