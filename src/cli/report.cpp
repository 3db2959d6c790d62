#include "report.hpp"

#include "reliability_report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <iomanip>
#include <map>
#include <stdexcept>

namespace trnsim::cli {

namespace {

std::string grouped(std::int64_t v) { return fmt::integer(v); }

std::string pad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string lpad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

void line(std::ostream& out, const std::string& label, const std::string& text) {
    out << "  " << pad(label, 11) << text << "\n";
}

std::string cluster_text(const config::ScenarioSpec& spec, const workload::Plan& plan) {
    const auto& c = plan.cluster;
    const auto& chip = spec.hardware.chip;
    std::string s;
    if (c.ultraservers > 0) {
        s += grouped(c.ultraservers) + " UltraServer" + (c.ultraservers > 1 ? "s" : "") + " = ";
    }
    s += grouped(c.instances) + " x " + chip.instance.name + " = " + grouped(c.chips) + " " +
         chip.name + " chips; " + grouped(plan.ranks) + " ranks (LNC=" +
         std::to_string(plan.lnc) + ")";
    return s;
}

} // namespace

void print_plan(std::ostream& out, const config::ScenarioSpec& spec, const workload::Plan& plan) {
    const auto& t = plan.training;
    const auto& m = t.model;
    const auto& par = t.parallelism;
    out << "trnsim: " << spec.name << " (" << spec.source_file << ")\n";
    line(out, "cluster", cluster_text(spec, plan));
    std::string model = m.name + ": " + fmt::count(static_cast<double>(plan.stats.total)) +
                        " parameters";
    if (m.is_moe()) {
        model += " (" + fmt::count(static_cast<double>(plan.stats.active)) + " active)";
    }
    model += ", " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
             ", " + compute::to_string(t.precision);
    line(out, "model", model);
    std::string batch = grouped(t.global_batch) + " sequences x " + grouped(t.sequence_length) +
                        " tokens = " + fmt::count(static_cast<double>(plan.tokens_per_step)) +
                        " tokens per step; ";
    batch += t.steps > 0 ? grouped(plan.steps) + " steps"
                         : fmt::count(static_cast<double>(t.tokens)) + " tokens = " +
                               grouped(plan.steps) + " steps";
    line(out, "batch", batch);
    std::string p = "tp " + std::to_string(plan.tp);
    if (plan.cp > 1) {
        p += ", cp " + std::to_string(plan.cp);
    }
    p += ", pp " + std::to_string(plan.pp) + ", dp " + std::to_string(plan.dp);
    if (plan.ep > 1) {
        p += ", ep " + std::to_string(plan.ep);
    }
    p += "; zero " + std::to_string(par.zero) + "; " + workload::to_string(par.schedule);
    if (plan.virtual_stages > 1) {
        p += " x" + std::to_string(plan.virtual_stages);
    }
    p += "; " + grouped(plan.microbatches) + " microbatches of " +
         std::to_string(par.microbatch) + "; recompute " + workload::to_string(par.recompute);
    line(out, "plan", p);
    std::string groups;
    for (auto g : {workload::CommGroup::tp, workload::CommGroup::cp, workload::CommGroup::dp,
                   workload::CommGroup::ep, workload::CommGroup::pp}) {
        if (plan.group_size(g) <= 1) {
            continue;
        }
        groups += (groups.empty() ? "" : " | ") + std::string(workload::to_string(g)) + ": " +
                  plan.group_shape(g).describe();
    }
    if (!groups.empty()) {
        line(out, "groups", groups);
    }
    const auto& b = plan.memory.worst;
    line(out, "memory",
         fmt::bytes(b.total()) + " of " + fmt::bytes(plan.memory.capacity_per_rank) +
             " HBM per rank (stage " + std::to_string(plan.memory.worst_stage) + "): weights " +
             fmt::bytes(b.weights) + ", gradients " + fmt::bytes(b.gradients) + ", optimizer " +
             fmt::bytes(b.optimizer) + ", activations " + fmt::bytes(b.activations) +
             ", buffers " + fmt::bytes(b.buffers) + ", reserve " + fmt::bytes(b.reserve));
    for (const auto& w : plan.warnings) {
        line(out, "warning", w);
    }
}

void print_run(std::ostream& out, const config::ScenarioSpec& spec, const sim::TrainingRun& run) {
    const auto& e = run.step;
    print_plan(out, spec, run.plan);
    std::string step = fmt::seconds(e.step_s) + " = pipeline " + fmt::seconds(e.pipeline_s);
    if (run.plan.pp > 1) {
        step += " (bubble " + fmt::seconds(e.bubble_s) + ", " + fmt::percent(e.bubble_fraction) +
                ")";
    }
    if (e.grad_sync_exposed_s > 0.0) {
        step += " + gradient sync " + fmt::seconds(e.grad_sync_exposed_s);
    }
    step += " + optimizer " + fmt::seconds(e.optimizer_s);
    if (e.param_gather_s > 0.0) {
        step += " + parameter gather " + fmt::seconds(e.param_gather_s);
    }
    line(out, "fidelity",
         run.step_sim
             ? std::string("step: simulated on the event engine; calibrated kernel costs, TP "
                           "collectives in closed form, pipeline, context-, data- and "
                           "expert-parallel traffic as flows (") +
                   sim::to_string(run.step_sim->stats.entities == static_cast<std::uint64_t>(
                                                                     run.plan.ranks)
                                      ? sim::StepEntities::rank
                                      : sim::StepEntities::tp_group) +
                   " entities)"
             : std::string("analytic: closed form; calibrated kernel costs, uncongested "
                           "collectives"));
    line(out, "step", step);
    if (run.step_sim) {
        const auto& st = run.step_sim->stats;
        line(out, "simulated",
             grouped(static_cast<std::int64_t>(st.entities)) + " entities (" +
                 sim::to_string(spec.simulation.step_entities == config::StepEntityMode::rank
                                    ? sim::StepEntities::rank
                                    : sim::StepEntities::tp_group) +
                 ") in " + grouped(st.partitions) + " partitions; " +
                 grouped(static_cast<std::int64_t>(st.events)) + " events, " +
                 grouped(static_cast<std::int64_t>(st.windows)) + " windows, " +
                 grouped(static_cast<std::int64_t>(st.flows)) + " flows, " +
                 grouped(static_cast<std::int64_t>(st.fabric_collectives)) +
                 " collectives between replicas; " + fmt::seconds(run.step_sim_wall_s) +
                 " wall on " + std::to_string(st.threads) + " thread" +
                 (st.threads > 1 ? "s" : ""));
    }
    line(out, "", "microbatch on stage " + std::to_string(e.slowest_stage) + ": forward " +
                      fmt::seconds(e.forward_s) + ", backward " + fmt::seconds(e.backward_s) +
                      "; exposed communication " + fmt::seconds(e.exposed_comm_s) + " per step");
    line(out, "throughput", fmt::count(e.tokens_per_s) + " tokens/s; MFU " + fmt::percent(e.mfu) +
                                ", HFU " + fmt::percent(e.hfu) + ", MBU " + fmt::percent(e.mbu));
    line(out, "training",
         grouped(run.plan.steps) + " steps in " + fmt::seconds(run.time_to_train_s) + "; " +
             grouped(static_cast<std::int64_t>(run.instance_hours)) + " instance-hours x " +
             fmt::money(spec.cost.instance_hour) + " = " +
             fmt::money(Money::usd(run.cost_usd)));
    if (run.reliability) {
        print_reliability(out, spec, run);
    }
    out << "  time per step on stage " << e.slowest_stage << " (top ops):\n";
    const std::size_t shown = std::min<std::size_t>(8, e.breakdown.size());
    for (std::size_t i = 0; i < shown; ++i) {
        const auto& op = e.breakdown[i];
        out << "    " << pad(op.name, 30) << lpad(fmt::seconds(op.seconds), 10) << "  "
            << lpad(fmt::percent(op.seconds / e.step_s), 6)
            << (op.collective ? "  (collective)" : "") << "\n";
    }
}

void print_collective_header(std::ostream& out, const sim::CollectiveBenchSpec& spec) {
    const std::string cluster =
        spec.cluster.ultraservers > 0
            ? fmt::integer(spec.cluster.ultraservers) + " UltraServer" +
                  (spec.cluster.ultraservers > 1 ? "s" : "")
            : fmt::integer(spec.cluster.instances) + " instance" +
                  (spec.cluster.instances > 1 ? "s" : "");
    out << "trnsim collective: " << network::to_string(spec.op) << " on " << cluster << " of "
        << spec.chip.name << " (fabric " << spec.fabric.name << "), "
        << (spec.ranks > 0 ? fmt::integer(spec.ranks) : std::string("all")) << " ranks, LNC="
        << (spec.lnc > 0 ? spec.lnc : spec.chip.lnc_default) << "\n";
    char line[160];
    std::snprintf(line, sizeof line, "%14s  %-34s %7s %12s %12s %12s\n", "size(B)", "algorithm",
                  "phases", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    out << line;
}

void print_collective_row(std::ostream& out, const sim::CollectiveRow& row) {
    char line[200];
    std::snprintf(line, sizeof line, "%14.0f  %-34s %7zu %12.2f %12.3f %12.3f\n", row.bytes,
                  row.algorithm.c_str(), row.phases, row.seconds * 1e6, row.algbw / 1e9,
                  row.busbw / 1e9);
    out << line << std::flush;
}

results::ResultsFile make_collective_results(const config::ScenarioSpec& spec,
                                             const sim::CollectiveBenchResult& r, int threads) {
    results::ResultsFile f;
    f.meta.trnsim_version = TRNSIM_VERSION;
    f.meta.name = spec.name;
    f.meta.scenario_yaml = spec.resolved_yaml;
    f.meta.seed = spec.seed;
    f.meta.threads = threads;
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

results::Table summary_table(const std::vector<std::vector<sim::SummaryValue>>& rows) {
    std::vector<std::string> names;
    std::map<std::string, std::size_t> index;
    std::vector<std::size_t> kind; // the variant's index: int64, double, string
    std::vector<int> width;
    for (const auto& row : rows) {
        for (const auto& v : row) {
            const auto [it, added] = index.emplace(v.name, names.size());
            if (added) {
                names.push_back(v.name);
                kind.push_back(v.value.index());
                width.push_back(1);
            } else if (kind[it->second] != v.value.index()) {
                throw std::logic_error("summary column " + v.name + " changes type");
            }
            if (const auto* s = std::get_if<std::string>(&v.value)) {
                width[it->second] = std::max(width[it->second], static_cast<int>(s->size()));
            }
        }
    }
    results::Table t;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (kind[i] == 0) {
            t.add_int(names[i]);
        } else if (kind[i] == 1) {
            t.add_float(names[i]);
        } else {
            t.add_string(names[i], width[i]);
        }
    }
    for (const auto& row : rows) {
        std::vector<results::Table::Value> values(names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            values[i] = kind[i] == 0   ? results::Table::Value(std::int64_t{-1})
                        : kind[i] == 1 ? results::Table::Value(std::nan(""))
                                       : results::Table::Value(std::string());
        }
        for (const auto& v : row) {
            const std::size_t i = index.at(v.name);
            values[i] = std::visit([](auto x) { return results::Table::Value(x); }, v.value);
        }
        t.add_row(values);
    }
    return t;
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
                   t.compute_s, t.comm_s, t.bubble_s, t.idle_s, t.end_s});
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
        {"lookahead_ns", st.lookahead_ns},
        {"events", static_cast<std::int64_t>(st.events)},
        {"windows", static_cast<std::int64_t>(st.windows)},
        {"flows", static_cast<std::int64_t>(st.flows)},
        {"solves", static_cast<std::int64_t>(st.solves)},
        {"fabric_shards", std::int64_t{st.fabric_shards}},
        {"migrations", static_cast<std::int64_t>(st.migrations)},
        {"migrated_flows", static_cast<std::int64_t>(st.migrated_flows)},
        {"fabric_collectives", static_cast<std::int64_t>(st.fabric_collectives)},
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

results::TraceData make_trace(const config::ScenarioSpec& spec, const sim::StepSimResult& step) {
    results::TraceData t;
    t.title = "trnsim step simulation: " + spec.name;
    t.threads = {"compute stream", "collective engines", "pipeline tasks"};
    t.names = step.trace.names;
    t.slices.reserve(step.trace.spans.size());
    for (const auto& s : step.trace.spans) {
        t.slices.push_back({s.rank, s.lane, s.start_ns, s.duration_ns, s.name});
    }
    return t;
}

results::ResultsFile make_results(const config::ScenarioSpec& spec, const sim::TrainingRun& run,
                                  int threads) {
    const auto& p = run.plan;
    const auto& e = run.step;
    results::ResultsFile f;
    f.meta.trnsim_version = TRNSIM_VERSION;
    f.meta.name = spec.name;
    f.meta.scenario_yaml = spec.resolved_yaml;
    f.meta.seed = spec.seed;
    f.meta.threads = threads;

    f.summary = summary_table({sim::summary_values(run)});

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
    if (run.reliability) {
        add_reliability_tables(f, run);
    }
    return f;
}

} // namespace trnsim::cli
