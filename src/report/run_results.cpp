#include "trnsim/report/run_results.hpp"

#include "tables.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

namespace trnsim::report {

std::vector<results::NamedValue> summary_values(const sim::TrainingRun& run, bool intervals) {
    const auto& p = run.plan;
    const auto& e = run.step;
    std::vector<results::NamedValue> v = {
        {"chips", p.cluster.chips()},
        {"ranks", p.ranks},
        {"instances", p.cluster.instances()},
        {"ultraservers", p.cluster.ultraservers()},
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
        {"step_time_s", e.step_time.seconds()},
        {"tokens_per_s", e.tokens_per_s},
        {"mfu", e.mfu},
        {"hfu", e.hfu},
        {"mbu", e.mbu},
        {"exposed_comm_s", e.exposed_comm.seconds()},
        {"bubble_fraction", e.bubble_fraction},
        {"memory_per_rank_bytes", p.memory.worst.total().count()},
        {"hbm_per_rank_bytes", p.memory.capacity_per_rank.count()},
        {"time_to_train_s", run.time_to_train.seconds()},
        {"instance_hours", run.instance_hours},
        {"cost_usd", run.cost_usd},
    };
    if (!run.reliability) {
        return v;
    }
    const reliability::RunSummary& r = *run.reliability;
    const auto& f = r.facts;
    v.insert(v.end(), {
                          {"ideal_time_to_train_s", run.ideal_time_to_train.seconds()},
                          {"replications", static_cast<std::int64_t>(r.replications.size())},
                          {"spare_domains", f.spare_domains},
                          {"job_mtbf_s",
                           f.job_failure_rate > 0 ? 1.0 / f.job_failure_rate : HUGE_VAL},
                          {"checkpoint_interval_s", f.checkpoint_interval.seconds()},
                          {"checkpoint_interval_reason",
                           std::string(reliability::to_string(f.checkpoint_interval_reason))},
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

std::optional<SlowestEntity> slowest_entity(const sim::StepSimResult& r) {
    if (r.entities.empty()) {
        return std::nullopt;
    }
    std::map<std::int32_t, std::vector<double>> by_stage;
    for (const auto& e : r.entities) {
        by_stage[e.stage].push_back(e.compute.seconds());
    }
    std::map<std::int32_t, double> median;
    for (auto& [stage, times] : by_stage) {
        std::sort(times.begin(), times.end());
        const std::size_t n = times.size();
        median[stage] = n % 2 == 1 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    }
    std::optional<SlowestEntity> best;
    for (const auto& e : r.entities) {
        const double m = median[e.stage];
        const double slowdown = m > 0.0 ? e.compute.seconds() / m : 1.0;
        if (!best || slowdown > best->slowdown) {
            best = SlowestEntity{e.stage, e.replica, e.first_rank, e.ranks, e.speed, slowdown};
        }
    }
    return best;
}

results::Meta meta(const config::ScenarioSpec& spec, const Writer& writer) {
    results::Meta m;
    m.trnsim_version = writer.version;
    m.name = spec.name;
    m.scenario_yaml = spec.resolved_yaml;
    m.seed = spec.seed;
    m.threads = writer.threads;
    return m;
}

void add_warnings(results::ResultsFile& f, const config::ScenarioSpec& spec) {
    if (spec.warnings.empty()) {
        return;
    }
    std::string text;
    for (const config::Warning& w : spec.warnings) {
        text += config::to_string(w) + "\n";
    }
    f.texts.emplace_back("/meta/warnings", std::move(text));
}

results::ResultsFile collective_results(const config::ScenarioSpec& spec,
                                        const sim::CollectiveBenchResult& r, const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(spec, writer);
    add_warnings(f, spec);
    auto& s = f.summary;
    for (const char* c : {"chips", "chips_used", "ranks", "instances", "ultraservers", "sizes"}) {
        s.add_int(c);
    }
    s.add_float("max_busbw_bytes_per_s");
    double best = 0.0;
    for (const auto& row : r.rows) {
        best = std::max(best, row.busbw);
    }
    s.add_row({r.chips, r.chips_used, r.ranks, r.instances, r.ultraservers,
               static_cast<std::int64_t>(r.rows.size()), best});
    results::Table t;
    t.add_float("size_bytes");
    t.add_string("algorithm", 48);
    t.add_int("phases");
    t.add_float("time_s");
    t.add_float("algbw_bytes_per_s");
    t.add_float("busbw_bytes_per_s");
    for (const auto& row : r.rows) {
        t.add_row({row.bytes, row.algorithm.substr(0, 48), static_cast<std::int64_t>(row.phases),
                   row.seconds, row.algbw, row.busbw});
    }
    f.tables.emplace_back("/collective", std::move(t));
    return f;
}

namespace {

/// /step/entities, /step/links and /step/simulation of a step simulation.
void add_step_tables(results::ResultsFile& f, const sim::StepSimResult& r) {
    results::Table e;
    for (const char* c : {"first_rank", "ranks", "stage", "replica"}) {
        e.add_int(c);
    }
    for (const char* c : {"speed", "compute_s", "comm_s", "bubble_s", "idle_s", "end_s"}) {
        e.add_float(c);
    }
    for (const auto& t : r.entities) {
        e.add_row({t.first_rank, std::int64_t{t.ranks}, std::int64_t{t.stage}, t.replica, t.speed,
                   t.compute.seconds(), t.comm.seconds(), t.bubble.seconds(), t.idle.seconds(),
                   t.end.seconds()});
    }
    f.tables.emplace_back("/step/entities", std::move(e));

    results::Table l;
    l.add_string("kind", 16);
    l.add_int("links");
    l.add_float("capacity_bytes_per_s");
    l.add_float("bytes");
    l.add_float("utilisation");
    for (const auto& u : r.links) {
        std::vector<results::Table::Value> row;
        row.emplace_back(std::in_place_type<std::string>, u.kind);
        row.emplace_back(std::in_place_type<std::int64_t>, u.links);
        row.emplace_back(std::in_place_type<double>, u.capacity_bytes_per_s);
        row.emplace_back(std::in_place_type<double>, u.bytes);
        row.emplace_back(std::in_place_type<double>, u.utilisation);
        l.add_row(row);
    }
    f.tables.emplace_back("/step/links", std::move(l));

    results::Table s;
    const auto& st = r.stats;
    const std::pair<const char*, std::int64_t> cols[] = {
        {"entities", static_cast<std::int64_t>(st.entities)},
        {"partitions", std::int64_t{st.partitions}},
        {"lookahead_ns", st.lookahead.ns()},
        {"events", static_cast<std::int64_t>(st.events)},
        {"windows", static_cast<std::int64_t>(st.windows)},
        {"flows", static_cast<std::int64_t>(st.flows)},
        {"solves", static_cast<std::int64_t>(st.solves)},
        {"fabric_shards", std::int64_t{st.fabric_shards}},
        {"migrations", static_cast<std::int64_t>(st.migrations)},
        {"migrated_flows", static_cast<std::int64_t>(st.migrated_flows)},
        {"fabric_collectives", static_cast<std::int64_t>(st.fabric_collectives)},
        {"lone_tp_groups", static_cast<std::int64_t>(st.lone_tp_groups)},
    };
    std::vector<results::Table::Value> row(std::size(cols));
    for (std::size_t i = 0; i < std::size(cols); ++i) {
        s.add_int(cols[i].first);
        row[i].emplace<std::int64_t>(cols[i].second);
    }
    s.add_row(row);
    f.tables.emplace_back("/step/simulation", std::move(s));
}

} // namespace

results::TraceData step_trace(const config::ScenarioSpec& spec, const sim::StepSimResult& step) {
    results::TraceData t;
    t.title = "trnsim step simulation: " + spec.name;
    t.threads = {"compute stream", "collective engines", "pipeline tasks"};
    t.names = step.trace.names;
    t.slices.reserve(step.trace.spans.size());
    for (const auto& s : step.trace.spans) {
        t.slices.push_back({s.rank, s.lane, s.start, s.duration, s.name});
    }
    return t;
}

results::ResultsFile run_results(const config::ScenarioSpec& spec, const sim::TrainingRun& run,
                                 const Writer& writer) {
    const auto& p = run.plan;
    const auto& e = run.step;
    results::ResultsFile f;
    f.meta = meta(spec, writer);
    add_warnings(f, spec);

    std::vector<results::NamedValue> summary = summary_values(run);
    if (run.step_sim) {
        if (const auto slow = slowest_entity(*run.step_sim)) {
            summary.insert(summary.end(),
                           {{"slowest_stage", std::int64_t{slow->stage}},
                            {"slowest_replica", slow->replica},
                            {"slowest_first_rank", slow->first_rank},
                            {"slowest_ranks", std::int64_t{slow->ranks}},
                            {"slowest_speed", slow->speed},
                            {"slowest_slowdown", slow->slowdown}});
        }
    }
    f.summary = results::table_from_rows({summary});

    if (run.step_sim) {
        add_step_tables(f, *run.step_sim);
    }

    results::Table breakdown;
    breakdown.add_string("op", 48);
    breakdown.add_int("collective");
    breakdown.add_float("time_per_step_s");
    for (const auto& op : e.breakdown) {
        breakdown.add_row({op.name.substr(0, 48), std::int64_t{op.collective ? 1 : 0}, op.seconds});
    }
    f.tables.emplace_back("/step/breakdown", std::move(breakdown));

    results::Table memory;
    memory.add_int("stage");
    for (const char* c : {"weights_bytes", "gradients_bytes", "optimizer_bytes",
                          "activations_bytes", "buffers_bytes", "reserve_bytes", "total_bytes"}) {
        memory.add_int(c);
    }
    for (std::size_t i = 0; i < p.memory.stages.size(); ++i) {
        const auto& b = p.memory.stages[i];
        memory.add_row({static_cast<std::int64_t>(i), b.weights.count(), b.gradients.count(),
                        b.optimizer.count(), b.activations.count(), b.buffers.count(),
                        b.reserve.count(), b.total().count()});
    }
    f.tables.emplace_back("/plan/memory", std::move(memory));

    results::Table stages;
    for (const char* c : {"stage", "first_layer", "layers", "dense_layers", "moe_layers",
                          "embedding", "head"}) {
        stages.add_int(c);
    }
    stages.add_float("forward_s");
    stages.add_float("backward_s");
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& st = p.stages[i];
        stages.add_row({static_cast<std::int64_t>(i), st.first_layer, st.layers(),
                        st.dense_layers, st.moe_layers, std::int64_t{st.has_embedding ? 1 : 0},
                        std::int64_t{st.has_head ? 1 : 0}, e.stage_forward.at(i).seconds(),
                        e.stage_backward.at(i).seconds()});
    }
    f.tables.emplace_back("/plan/stages", std::move(stages));
    if (run.reliability) {
        add_reliability_tables(f, run, spec.output.timeline != config::TimelineOutput::none);
    }
    return f;
}

results::ResultsFile scenario_results(const config::ScenarioSpec& spec,
                                      const sim::ScenarioOutcome& outcome, const Writer& writer) {
    if (const auto* run = std::get_if<sim::TrainingRun>(&outcome)) {
        return run_results(spec, *run, writer);
    }
    if (const auto* serving = std::get_if<sim::ServingScenarioRun>(&outcome)) {
        return serving_results(spec, *serving, writer);
    }
    if (const auto* tenants = std::get_if<sim::TenantsRun>(&outcome)) {
        return tenants_results(spec, *tenants, writer);
    }
    if (const auto* fleet = std::get_if<sim::FleetRun>(&outcome)) {
        return fleet_results(spec, *fleet, writer);
    }
    return collective_results(spec, std::get<sim::CollectiveBenchResult>(outcome), writer);
}

} // namespace trnsim::report
