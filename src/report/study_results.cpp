#include "trnsim/core/error.hpp"
#include "trnsim/report/study_results.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

namespace trnsim::report {

namespace {

using results::Table;

int string_width(const std::vector<std::string>& values) {
    std::size_t w = 1;
    for (const auto& v : values) {
        w = std::max(w, v.size());
    }
    return static_cast<int>(w);
}

} // namespace

std::vector<results::NamedValue> batch_run_values(const sim::ScenarioOutcome& outcome) {
    if (const auto* serving = std::get_if<sim::ServingScenarioRun>(&outcome)) {
        return serving_summary_values(*serving);
    }
    std::vector<results::NamedValue> out;
    for (auto& v : summary_values(std::get<sim::TrainingRun>(outcome), false)) {
        if (v.name != "replications") { // always 1 here; the batch has its own
            out.push_back(std::move(v));
        }
    }
    return out;
}

std::string batch_context(const std::string& base_resolved_yaml, std::int64_t base_seed) {
    return "# base scenario with the sweep's set applied\n" + base_resolved_yaml +
           "# base seed of the derived seeds\nbase_seed: " + std::to_string(base_seed) + "\n";
}

results::ResultsFile batch_results(const study::Sweep& sweep,
                                   const std::string& base_resolved_yaml,
                                   const std::string& context,
                                   const std::vector<study::RunRecord>& records,
                                   const Writer& writer) {
    results::ResultsFile f;
    f.meta.trnsim_version = writer.version;
    f.meta.name = sweep.spec.name;
    f.meta.scenario_yaml = base_resolved_yaml;
    f.meta.seed = sweep.base_seed;
    f.meta.threads = writer.threads;

    std::vector<std::vector<results::NamedValue>> rows;
    rows.reserve(records.size());
    for (const auto& r : records) {
        std::vector<results::NamedValue> row = {{"point", r.point},
                                              {"replicate", std::int64_t{r.replicate}},
                                              {"seed", r.seed}};
        row.insert(row.end(), r.values.begin(), r.values.end());
        rows.push_back(std::move(row));
    }
    f.summary = results::table_from_rows(rows);
    if (records.empty()) {
        f.summary.add_int("point");
        f.summary.add_int("replicate");
        f.summary.add_int("seed");
    }

    // /batch/points: the swept values, numbers in SI units when every point's value is one.
    Table points;
    points.add_int("point");
    points.add_int("replicates");
    std::vector<std::string> keys;
    for (const auto& p : sweep.points) {
        keys.push_back(p.key);
    }
    points.add_string("key", string_width(keys));
    const std::size_t nkeys = sweep.keys.size();
    std::vector<bool> numeric(nkeys, true);
    std::vector<std::vector<std::string>> texts(nkeys);
    for (const auto& p : sweep.points) {
        for (std::size_t k = 0; k < nkeys; ++k) {
            texts[k].push_back(p.swept[k].value);
            numeric[k] =
                numeric[k] && config::numeric_value(sweep.keys[k], p.swept[k].value).has_value();
        }
    }
    for (std::size_t k = 0; k < nkeys; ++k) {
        if (numeric[k]) {
            points.add_float(sweep.keys[k]);
        } else {
            points.add_string(sweep.keys[k], string_width(texts[k]));
        }
    }
    std::vector<std::int64_t> have(sweep.points.size(), 0);
    for (const auto& r : records) {
        ++have[static_cast<std::size_t>(r.point)];
    }
    for (const auto& p : sweep.points) {
        std::vector<Table::Value> row = {p.index, have[static_cast<std::size_t>(p.index)], p.key};
        for (std::size_t k = 0; k < nkeys; ++k) {
            if (numeric[k]) {
                row.emplace_back(*config::numeric_value(sweep.keys[k], p.swept[k].value));
            } else {
                row.emplace_back(p.swept[k].value);
            }
        }
        points.add_row(row);
    }
    f.tables.emplace_back("/batch/points", std::move(points));

    // /batch/keys: per swept key, its axis (keys zipped together share one; the random
    // block is one) and the unit of its /batch/points column, so readers can label values.
    Table key_table;
    key_table.add_string("key", string_width(sweep.keys));
    key_table.add_int("axis");
    key_table.add_string("kind", 6);
    key_table.add_string("unit", 7);
    const auto unit_of = [](const std::string& key, bool is_number) -> std::string {
        if (!is_number) {
            return "text";
        }
        switch (config::value_kind(key)) {
        case config::ValueKind::integer:
            return "integer";
        case config::ValueKind::real:
            return "real";
        case config::ValueKind::duration:
            return "s";
        case config::ValueKind::bytes:
            return "bytes";
        case config::ValueKind::bandwidth:
            return "B/s";
        case config::ValueKind::money:
            return "USD";
        case config::ValueKind::text:
            break;
        }
        return "text";
    };
    {
        std::size_t k = 0;
        std::int64_t axis = 0;
        for (const auto& a : sweep.spec.axes) {
            for (std::size_t j = 0; j < a.keys.size(); ++j, ++k) {
                key_table.add_row({sweep.keys[k], axis,
                                   std::string(a.keys.size() > 1 ? "zip" : "list"),
                                   unit_of(sweep.keys[k], numeric[k])});
            }
            ++axis;
        }
        for (; k < nkeys; ++k) {
            key_table.add_row({sweep.keys[k], axis, std::string("random"),
                               unit_of(sweep.keys[k], numeric[k])});
        }
    }
    f.tables.emplace_back("/batch/keys", std::move(key_table));

    // /batch/mean: per point, the mean and 95% interval of every float value.
    std::vector<std::vector<results::NamedValue>> means;
    for (const auto& s : study::point_statistics(records)) {
        std::vector<results::NamedValue> row = {{"point", s.point},
                                              {"replicates", std::int64_t{s.replicates}}};
        for (std::size_t i = 0; i < s.names.size(); ++i) {
            row.push_back({s.names[i], s.estimates[i].mean});
        }
        for (std::size_t i = 0; i < s.names.size(); ++i) {
            row.push_back({"ci95_" + s.names[i], s.estimates[i].half_width});
        }
        means.push_back(std::move(row));
    }
    Table mean = results::table_from_rows(means);
    if (means.empty()) {
        mean.add_int("point");
        mean.add_int("replicates");
    }
    f.tables.emplace_back("/batch/mean", std::move(mean));
    f.texts.emplace_back("/batch/sweep", sweep.spec.text);
    f.texts.emplace_back("/batch/context", context);
    return f;
}

std::vector<study::RunRecord> read_batch_records(const std::string& path,
                                                 const study::Sweep& sweep,
                                                 const std::string& context) {
    const SourceLocation at{path, 0, 0};
    std::optional<std::string> old_context;
    Table points, summary;
    try {
        old_context = results::read_text(path, "/batch/context");
        if (old_context) {
            points = results::read_table(path, "/batch/points");
            summary = results::read_summary(path);
        }
    } catch (const std::runtime_error& e) {
        throw InputError("", std::string("--resume: cannot read the results: ") + e.what(), at);
    }
    if (!old_context) {
        throw InputError("", "--resume: not the results of a sweep (no /batch/context)", at);
    }
    if (*old_context != context) {
        throw InputError("", "--resume: the file holds a sweep of another base scenario, `set` "
                             "or seed; run without --resume to replace it, or write elsewhere "
                             "with -o",
                         at);
    }
    std::map<std::string, std::int64_t> by_key;
    for (const auto& p : sweep.points) {
        by_key.emplace(p.key, p.index);
    }
    const auto column = [&](const Table& t, const char* name) -> const Table::Column& {
        const int i = t.find(name);
        if (i < 0) {
            throw InputError("", std::string("--resume: the file has no column ") + name, at);
        }
        return t.columns()[static_cast<std::size_t>(i)];
    };
    const auto& old_index = column(points, "point");
    const auto& old_key = column(points, "key");
    std::map<std::int64_t, std::int64_t> renumber; // old point -> new point
    for (std::size_t r = 0; r < points.rows(); ++r) {
        if (const auto it = by_key.find(old_key.strings[r]); it != by_key.end()) {
            renumber[old_index.ints[r]] = it->second;
        }
    }
    const auto& point = column(summary, "point");
    const auto& replicate = column(summary, "replicate");
    const auto& seed = column(summary, "seed");
    std::vector<study::RunRecord> out;
    for (std::size_t r = 0; r < summary.rows(); ++r) {
        const auto it = renumber.find(point.ints[r]);
        if (it == renumber.end() || replicate.ints[r] >= sweep.replications) {
            continue;
        }
        study::RunRecord rec;
        rec.point = it->second;
        rec.replicate = static_cast<int>(replicate.ints[r]);
        rec.seed = seed.ints[r];
        if (rec.seed != sweep.run(rec.point * sweep.replications + rec.replicate).seed) {
            throw InputError("", "--resume: run " + std::to_string(r) +
                                     " of the file has another seed than this sweep gives it",
                             at);
        }
        for (const auto& c : summary.columns()) {
            if (c.name == "point" || c.name == "replicate" || c.name == "seed") {
                continue;
            }
            if (c.type == Table::Type::int64) {
                rec.values.push_back({c.name, c.ints[r]});
            } else if (c.type == Table::Type::float64) {
                rec.values.push_back({c.name, c.floats[r]});
            } else {
                rec.values.push_back({c.name, c.strings[r]});
            }
        }
        out.push_back(std::move(rec));
    }
    study::sort_records(out);
    return out;
}

namespace {

/// /plan/verdicts: candidates per verdict, with the first rejection message of each.
template <class Range>
Table verdict_table(const Range& items) {
    std::map<study::Verdict, std::int64_t> counts;
    std::map<study::Verdict, std::string> example;
    for (const auto& x : items) {
        ++counts[x.verdict];
        if (example[x.verdict].empty()) {
            example[x.verdict] = x.reason;
        }
    }
    std::vector<std::string> examples;
    for (const auto& [v, why] : example) {
        examples.push_back(why);
    }
    Table verdicts;
    verdicts.add_string("verdict", 8);
    verdicts.add_int("candidates");
    verdicts.add_string("example", string_width(examples));
    for (const auto& [v, n] : counts) {
        verdicts.add_row({std::string(study::to_string(v)), n, example[v]});
    }
    return verdicts;
}

/// A plan's /summary (the ranked candidates' rows, `rank` first: `values` ends with a rank
/// column, kept once) and the table at `path` (every candidate's row with its reason).
template <class Evaluations, class Values>
void candidate_tables(results::ResultsFile& f, const std::vector<std::int64_t>& ranking,
                      const Evaluations& evaluations, const Values& values,
                      const std::string& path) {
    std::vector<std::vector<results::NamedValue>> ranked;
    for (const std::int64_t i : ranking) {
        auto row = values(static_cast<std::size_t>(i));
        row.insert(row.begin(),
                   {"rank", std::int64_t{static_cast<std::int64_t>(ranked.size()) + 1}});
        row.pop_back(); // the rank column once
        ranked.push_back(std::move(row));
    }
    f.summary = results::table_from_rows(ranked);
    if (ranked.empty()) {
        f.summary.add_int("rank");
    }
    std::vector<std::vector<results::NamedValue>> all;
    for (std::size_t i = 0; i < evaluations.size(); ++i) {
        all.push_back(values(i));
        all.back().push_back({"reason", evaluations[i].reason});
    }
    f.tables.emplace_back(path, results::table_from_rows(all));
}

/// A serving plan's file: /summary (the feasible fleets in rank order), /plan/serving (every
/// candidate), /plan/objective, /plan/verdicts and /plan/file.
results::ResultsFile serving_plan_results(const config::PlanSpec& plan,
                                          const config::ScenarioSpec& base,
                                          const study::ServingPlanResult& r,
                                          const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(base, writer);
    f.meta.name = plan.name;
    const auto values = [&](std::size_t i) {
        const auto& c = r.candidates[i];
        const auto& x = r.evaluations[i];
        return std::vector<results::NamedValue>{
            {"candidate", static_cast<std::int64_t>(i)},
            {"chip", c.chip},
            {"instances", x.instances},
            {"ultraservers", c.ultraservers ? c.domains : std::int64_t{0}},
            {"chips", x.chips},
            {"tp", std::int64_t{c.tp}},
            {"ep", std::int64_t{c.ep}},
            {"max_batch", std::int64_t{c.max_batch}},
            {"weights", c.weights},
            {"sparsity", c.sparsity},
            {"replicas", x.replicas},
            {"prefill_replicas", x.prefill_replicas},
            {"verdict", std::string(study::to_string(x.verdict))},
            {"cost_per_hour_usd", x.cost_per_hour_usd},
            {"rate", x.rate},
            {"slo_attainment", x.slo_attainment},
            {"ttft_p99_s", x.ttft_p99.seconds()},
            {"tpot_p99_s", x.tpot_p99.seconds()},
            {"output_tokens_per_s", x.output_tokens_per_s},
            {"cost_per_million_output_tokens_usd", x.cost_per_million_output_tokens_usd},
            {"rate_low", x.rate_low},
            {"rate_high", x.rate_high},
            {"attainment_high", x.attainment_high},
            {"simulations", std::int64_t{x.simulations}},
            {"pareto", std::int64_t{x.pareto ? 1 : 0}},
            {"rank", std::int64_t{x.rank}},
        };
    };
    candidate_tables(f, r.ranking, r.evaluations, values, "/plan/serving");

    Table objective;
    objective.add_string("objective", 8);
    for (const char* c : {"slo_attainment", "rate", "rate_range_low", "rate_range_high",
                          "tolerance", "ttft_slo_s", "tpot_slo_s", "max_chips"}) {
        objective.add_float(c);
    }
    objective.add_int("requests");
    objective.add_int("trace");
    const bool max_rate = plan.objective == config::Objective::max_rate;
    const auto& a = base.inference.requests.arrival;
    const double rate = r.trace ? plan.serving.speedup.value_or(a.speedup)
                                : plan.serving.rate_per_s.value_or(a.rate_per_s);
    const std::array<double, 2> range =
        r.trace ? plan.serving.speedup_range.value_or(std::array<double, 2>{0.01, 1000.0})
                : plan.serving.rate_range.value_or(std::array<double, 2>{0.1, 1000.0});
    objective.add_row({std::string(config::to_string(plan.objective)),
                       plan.serving.slo_attainment, max_rate ? NAN : rate,
                       max_rate ? range[0] : NAN, max_rate ? range[1] : NAN,
                       max_rate ? plan.serving.tolerance : NAN,
                       base.inference.slo.ttft.seconds(), base.inference.slo.tpot.seconds(),
                       plan.max_chips ? static_cast<double>(*plan.max_chips) : HUGE_VAL,
                       plan.requests, std::int64_t{r.trace ? 1 : 0}});
    f.tables.emplace_back("/plan/objective", std::move(objective));
    f.tables.emplace_back("/plan/verdicts", verdict_table(r.evaluations));
    f.texts.emplace_back("/plan/file", plan.text);
    return f;
}

/// A fleet plan's file: /summary (the pools that meet everything, fewest domains first),
/// /plan/fleet (every candidate, in evaluation order), /plan/fewest, /plan/verdicts and
/// /plan/file.
results::ResultsFile fleet_plan_results(const config::PlanSpec& plan,
                                        const config::ScenarioSpec& base,
                                        const study::FleetPlanResult& r, const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(base, writer);
    f.meta.name = plan.name;
    const std::string unit = base.cluster.domain_name();
    const auto values = [&](std::size_t i) {
        const auto& c = r.candidates[i];
        const auto& x = r.evaluations[i];
        return std::vector<results::NamedValue>{
            {"candidate", static_cast<std::int64_t>(i)},
            {unit, c.domains},
            {"spares", c.spares},
            {"chips", x.chips},
            {"bisection", std::int64_t{c.refined ? 1 : 0}},
            {"verdict", std::string(study::to_string(x.verdict))},
            {"cost_per_hour_usd", x.cost_per_hour_usd},
            {"jobs", x.jobs},
            {"jobs_finished", x.finished},
            {"deadlines_missed", x.deadlines_missed},
            {"mean_wait_s", x.mean_wait.seconds()},
            {"end_s", x.end.seconds()},
            {"worst_slo_attainment", x.worst_attainment},
            {"worst_service", x.worst_service},
            {"services_below_slo", x.slo_missed},
            {"busy_fraction", x.busy_fraction},
            {"fragmented_fraction", x.fragmented_fraction},
            {"rank", std::int64_t{x.rank}},
        };
    };
    candidate_tables(f, r.ranking, r.evaluations, values, "/plan/fleet");
    Table fewest;
    fewest.add_int("spares");
    fewest.add_int(unit);
    fewest.add_int("at_low_end");
    for (const auto& w : r.fewest) {
        fewest.add_row({w.spares, w.domains, std::int64_t{w.at_low_end ? 1 : 0}});
    }
    f.tables.emplace_back("/plan/fewest", std::move(fewest));
    f.tables.emplace_back("/plan/verdicts", verdict_table(r.evaluations));
    f.texts.emplace_back("/plan/file", plan.text);
    return f;
}

} // namespace

results::ResultsFile plan_results(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                                  const study::PlanResult& result, const Writer& writer) {
    if (result.serving) {
        return serving_plan_results(plan, base, *result.serving, writer);
    }
    if (result.fleet) {
        return fleet_plan_results(plan, base, *result.fleet, writer);
    }
    results::ResultsFile f;
    if (!result.finalists.empty()) {
        // The best plan's own tables, as `trnsim run` writes them.
        const auto& best = result.finalists.front();
        f = run_results(best.spec, best.run, writer);
    } else {
        f.meta = meta(base, writer);
    }
    f.meta.name = plan.name;

    std::vector<std::vector<results::NamedValue>> rows;
    for (const auto& fin : result.finalists) {
        const auto& c = result.candidates[static_cast<std::size_t>(fin.candidate)];
        const auto& x = result.estimates[static_cast<std::size_t>(fin.candidate)];
        std::vector<results::NamedValue> row = {
            {"rank", std::int64_t{fin.rank}},
            {"candidate", fin.candidate},
            {"meets_constraints", std::int64_t{fin.meets ? 1 : 0}},
            {"frontier", std::int64_t{fin.frontier ? 1 : 0}},
            {"by_objective", std::int64_t{fin.by_objective ? 1 : 0}},
            {"global_batch", c.global_batch},
            {"zero", std::int64_t{c.zero}},
            {"microbatch", std::int64_t{c.microbatch}},
            {"recompute", std::string(workload::to_string(c.recompute))},
            {"master_weights", std::string(workload::to_string(c.master_weights))},
            {"est_step_time_s", x.step_time.seconds()},
            {"est_time_to_train_s", x.time_to_train.seconds()},
            {"est_cost_usd", x.cost_usd},
            {"est_ettr", x.ettr},
            {"sim_ettr", fin.ettr},
            {"sim_goodput", fin.goodput},
            {"misses", fin.meets ? std::string() : fin.misses},
            {"chips_with_spares", x.chips},
        };
        for (auto& v : summary_values(fin.run)) {
            row.push_back(std::move(v));
        }
        rows.push_back(std::move(row));
    }
    f.summary = results::table_from_rows(rows);
    if (rows.empty()) {
        f.summary.add_int("rank");
    }

    Table t;
    t.add_int("candidate");
    t.add_int(base.cluster.domain_name());
    t.add_int("spares");
    t.add_int("chips");
    t.add_int("job_chips");
    t.add_int("global_batch");
    for (const char* c : {"tp", "cp", "pp", "dp", "ep", "zero", "microbatch"}) {
        t.add_int(c);
    }
    t.add_string("recompute", 9);
    t.add_string("master_weights", 4);
    t.add_string("verdict", 8);
    for (const char* c : {"checkpoint_interval_s", "step_time_s", "memory_fraction", "ettr",
                          "time_to_train_s", "cost_usd", "goodput"}) {
        t.add_float(c);
    }
    t.add_int("frontier");
    t.add_int("finalist");
    for (std::size_t i = 0; i < result.candidates.size(); ++i) {
        const auto& c = result.candidates[i];
        const auto& x = result.estimates[i];
        // Spares count in `chips` only with a reliability section (the planner's rule).
        const std::int64_t domains = c.domains + (base.reliability.enabled ? c.spares : 0);
        const std::int64_t job_chips = domains > 0 ? x.chips / domains * c.domains : 0;
        t.add_row({static_cast<std::int64_t>(i),
                   c.domains,
                   c.spares,
                   x.chips,
                   job_chips,
                   c.global_batch,
                   std::int64_t{c.tp},
                   std::int64_t{c.cp},
                   std::int64_t{c.pp},
                   std::int64_t{x.dp > 0 ? x.dp : c.dp},
                   std::int64_t{c.ep},
                   std::int64_t{c.zero},
                   std::int64_t{c.microbatch},
                   std::string(workload::to_string(c.recompute)),
                   std::string(workload::to_string(c.master_weights)),
                   std::string(study::to_string(x.verdict)),
                   x.checkpoint_interval.seconds(),
                   x.step_time.seconds(),
                   x.memory_fraction,
                   x.ettr,
                   x.time_to_train.seconds(),
                   x.cost_usd,
                   x.goodput,
                   std::int64_t{x.frontier ? 1 : 0},
                   std::int64_t{x.finalist ? 1 : 0}});
    }
    f.tables.emplace_back("/plan/candidates", std::move(t));

    Table limits;
    for (const char* c : {"deadline_s", "budget_usd", "max_chips", "min_ettr", "hbm_headroom"}) {
        limits.add_float(c);
    }
    limits.add_string("objective", 12);
    limits.add_row({plan.deadline ? plan.deadline->seconds() : HUGE_VAL,
                    plan.budget ? plan.budget->usd() : HUGE_VAL,
                    plan.max_chips ? static_cast<double>(*plan.max_chips) : HUGE_VAL,
                    plan.min_ettr.value_or(0.0), plan.hbm_headroom,
                    std::string(config::to_string(plan.objective))});
    f.tables.emplace_back("/plan/constraints", std::move(limits));

    // /plan/search: what the search found, as `trnsim plan` prints it; with no feasible
    // candidate, fastest and cheapest say how close it came.
    Table search;
    for (const char* c : {"candidates", "feasible", "step_estimates", "fastest", "cheapest"}) {
        search.add_int(c);
    }
    search.add_row({static_cast<std::int64_t>(result.candidates.size()), result.feasible,
                    result.step_estimates, result.fastest, result.cheapest});
    f.tables.emplace_back("/plan/search", std::move(search));

    f.tables.emplace_back("/plan/verdicts", verdict_table(result.estimates));
    f.texts.emplace_back("/plan/file", plan.text);
    return f;
}

} // namespace trnsim::report
