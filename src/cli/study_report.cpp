#include "study_report.hpp"

#include "report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace trnsim::cli {

namespace {

using results::Table;

std::string pad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

int string_width(const std::vector<std::string>& values) {
    std::size_t w = 1;
    for (const auto& v : values) {
        w = std::max(w, v.size());
    }
    return static_cast<int>(w);
}

/// "12.3 d +- 0.4 d" (or without the interval when it is 0 or unknown).
template <class F>
std::string with_ci(double mean, double half, F format) {
    if (!std::isfinite(mean)) {
        return "never";
    }
    if (half > 0.0 && std::isfinite(half)) {
        return format(mean) + " +- " + format(half);
    }
    return format(mean);
}

} // namespace

std::string batch_context(const std::string& base_resolved_yaml, std::int64_t base_seed) {
    return "# base scenario with the sweep's set applied\n" + base_resolved_yaml +
           "# base seed of the derived seeds\nbase_seed: " + std::to_string(base_seed) + "\n";
}

results::ResultsFile make_batch_results(const study::Sweep& sweep,
                                        const std::string& base_resolved_yaml,
                                        const std::string& context,
                                        const std::vector<study::RunRecord>& records,
                                        int threads) {
    results::ResultsFile f;
    f.meta.trnsim_version = TRNSIM_VERSION;
    f.meta.name = sweep.spec.name;
    f.meta.scenario_yaml = base_resolved_yaml;
    f.meta.seed = sweep.base_seed;
    f.meta.threads = threads;

    std::vector<std::vector<sim::SummaryValue>> rows;
    rows.reserve(records.size());
    for (const auto& r : records) {
        std::vector<sim::SummaryValue> row = {{"point", r.point},
                                              {"replicate", std::int64_t{r.replicate}},
                                              {"seed", r.seed}};
        row.insert(row.end(), r.values.begin(), r.values.end());
        rows.push_back(std::move(row));
    }
    f.summary = summary_table(rows);
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

    // /batch/mean: per point, the mean and 95% interval of every float value.
    std::vector<std::vector<sim::SummaryValue>> means;
    for (const auto& s : study::point_statistics(records)) {
        std::vector<sim::SummaryValue> row = {{"point", s.point},
                                              {"replicates", std::int64_t{s.replicates}}};
        for (std::size_t i = 0; i < s.names.size(); ++i) {
            row.push_back({s.names[i], s.estimates[i].mean});
        }
        for (std::size_t i = 0; i < s.names.size(); ++i) {
            row.push_back({"ci95_" + s.names[i], s.estimates[i].half_width});
        }
        means.push_back(std::move(row));
    }
    Table mean = summary_table(means);
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

void print_batch(std::ostream& out, const study::Sweep& sweep,
                 const std::vector<study::RunRecord>& records, std::size_t max_points) {
    const auto stats = study::point_statistics(records);
    if (stats.empty()) {
        return;
    }
    const auto value = [](const study::PointStatistics& s, const char* name, double& mean,
                          double& half) {
        for (std::size_t i = 0; i < s.names.size(); ++i) {
            if (s.names[i] == name) {
                mean = s.estimates[i].mean;
                half = s.estimates[i].half_width;
                return true;
            }
        }
        return false;
    };
    const bool runs = std::any_of(stats.begin(), stats.end(), [&](const auto& s) {
        double m = 0, h = 0;
        return value(s, "ettr", m, h);
    });
    std::vector<std::vector<std::string>> cells = {{"point", "time to train", "cost"}};
    if (runs) {
        cells[0].push_back("ETTR");
    }
    cells[0].push_back("values");
    for (std::size_t i = 0; i < stats.size() && i < max_points; ++i) {
        const auto& s = stats[i];
        double t = 0, th = 0, c = 0, ch = 0, e = 0, eh = 0;
        value(s, "time_to_train_s", t, th);
        value(s, "cost_usd", c, ch);
        const bool has_ettr = value(s, "ettr", e, eh);
        std::string values;
        for (const auto& o : sweep.points[static_cast<std::size_t>(s.point)].swept) {
            values += (values.empty() ? "" : ", ") + config::to_string(o);
        }
        std::vector<std::string> row = {
            std::to_string(s.point), with_ci(t, th, [](double v) { return fmt::seconds(v); }),
            with_ci(c, ch, [](double v) { return fmt::money(Money::usd(v)); })};
        if (runs) {
            row.push_back(has_ettr ? with_ci(e, eh, [](double v) { return fmt::percent(v); })
                                   : std::string("-"));
        }
        row.push_back(values);
        cells.push_back(std::move(row));
    }
    std::vector<std::size_t> width(cells[0].size(), 0);
    for (const auto& row : cells) {
        for (std::size_t k = 0; k + 1 < row.size(); ++k) {
            width[k] = std::max(width[k], row[k].size());
        }
    }
    for (const auto& row : cells) {
        out << " ";
        for (std::size_t k = 0; k < row.size(); ++k) {
            out << " " << (k + 1 < row.size() ? pad(row[k], width[k] + 1) : row[k]);
        }
        out << "\n";
    }
    if (stats.size() > max_points) {
        out << "  ... " << fmt::integer(static_cast<std::int64_t>(stats.size() - max_points))
            << " more points in the results file\n";
    }
}

results::ResultsFile make_plan_results(const config::PlanSpec& plan,
                                       const config::ScenarioSpec& base,
                                       const study::PlanResult& result, int threads) {
    results::ResultsFile f;
    if (!result.finalists.empty()) {
        // The best plan's own tables, as `trnsim run` writes them.
        const auto& best = result.finalists.front();
        f = make_results(best.spec, best.run, threads);
    } else {
        f.meta.trnsim_version = TRNSIM_VERSION;
        f.meta.scenario_yaml = base.resolved_yaml;
        f.meta.seed = base.seed;
        f.meta.threads = threads;
    }
    f.meta.name = plan.name;

    std::vector<std::vector<sim::SummaryValue>> rows;
    for (const auto& fin : result.finalists) {
        const auto& c = result.candidates[static_cast<std::size_t>(fin.candidate)];
        const auto& x = result.estimates[static_cast<std::size_t>(fin.candidate)];
        std::vector<sim::SummaryValue> row = {
            {"rank", std::int64_t{fin.rank}},
            {"candidate", fin.candidate},
            {"meets_constraints", std::int64_t{fin.meets ? 1 : 0}},
            {"frontier", std::int64_t{fin.frontier ? 1 : 0}},
            {"by_objective", std::int64_t{fin.by_objective ? 1 : 0}},
            {"global_batch", c.global_batch},
            {"zero", std::int64_t{c.zero}},
            {"microbatch", std::int64_t{c.microbatch}},
            {"recompute", std::string(workload::to_string(c.recompute))},
            {"est_step_time_s", x.step_s},
            {"est_time_to_train_s", x.time_to_train_s},
            {"est_cost_usd", x.cost_usd},
            {"est_ettr", x.ettr},
            {"sim_ettr", fin.ettr},
            {"sim_goodput", fin.goodput},
        };
        for (auto& v : sim::summary_values(fin.run)) {
            row.push_back(std::move(v));
        }
        rows.push_back(std::move(row));
    }
    f.summary = summary_table(rows);
    if (rows.empty()) {
        f.summary.add_int("rank");
    }

    Table t;
    t.add_int("candidate");
    t.add_int(base.cluster.ultraservers > 0 ? "ultraservers" : "instances");
    t.add_int("spares");
    t.add_int("chips");
    t.add_int("global_batch");
    for (const char* c : {"tp", "cp", "pp", "dp", "ep", "zero", "microbatch"}) {
        t.add_int(c);
    }
    t.add_string("recompute", 9);
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
        t.add_row({static_cast<std::int64_t>(i), c.domains, c.spares, x.chips, c.global_batch,
                   std::int64_t{c.tp}, std::int64_t{c.cp}, std::int64_t{c.pp},
                   std::int64_t{x.dp > 0 ? x.dp : c.dp},
                   std::int64_t{c.ep}, std::int64_t{c.zero}, std::int64_t{c.microbatch},
                   std::string(workload::to_string(c.recompute)),
                   std::string(study::to_string(x.verdict)), x.checkpoint_interval_s, x.step_s,
                   x.memory_fraction, x.ettr, x.time_to_train_s, x.cost_usd, x.goodput,
                   std::int64_t{x.frontier ? 1 : 0}, std::int64_t{x.finalist ? 1 : 0}});
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
    f.texts.emplace_back("/plan/file", plan.text);
    return f;
}

void print_plan_result(std::ostream& out, const config::PlanSpec& plan,
                       const config::ScenarioSpec& base, const study::PlanResult& r) {
    const auto line = [&](const std::string& label, const std::string& text) {
        out << "  " << pad(label, 11) << text << "\n";
    };
    out << "trnsim plan: " << plan.name << " (" << plan.file << ")\n";
    std::string goal = std::string(config::to_string(plan.objective));
    if (plan.deadline) {
        goal += "; deadline " + fmt::duration(*plan.deadline);
    }
    if (plan.budget) {
        goal += "; budget " + fmt::money(*plan.budget);
    }
    if (plan.max_chips) {
        goal += "; at most " + fmt::integer(*plan.max_chips) + " chips";
    }
    if (plan.min_ettr) {
        goal += "; ETTR at least " + fmt::percent(*plan.min_ettr);
    }
    if (plan.hbm_headroom > 0.0) {
        goal += "; HBM headroom " + fmt::percent(plan.hbm_headroom);
    }
    line("objective", goal);
    line("base", base.name + " (" + plan.base + "): " + base.training.model.name + ", " +
                     fmt::count(static_cast<double>(base.training.tokens)) + " tokens" +
                     (base.reliability.enabled ? ", with failures" : ""));
    std::map<study::Verdict, std::int64_t> verdicts;
    std::map<study::Verdict, std::string> example;
    for (const auto& x : r.estimates) {
        ++verdicts[x.verdict];
        if (!x.reason.empty() && example[x.verdict].empty()) {
            example[x.verdict] = x.reason;
        }
    }
    line("search", fmt::integer(static_cast<std::int64_t>(r.candidates.size())) +
                       " candidates, " + fmt::integer(r.step_estimates) +
                       " step estimates, in " + fmt::seconds(r.estimate_seconds));
    std::string rejected;
    for (const auto& [v, n] : verdicts) {
        if (v != study::Verdict::ok) {
            rejected += (rejected.empty() ? "" : ", ") + fmt::integer(n) + " " + to_string(v);
        }
    }
    line("estimated", fmt::integer(r.feasible) + " feasible" +
                          (rejected.empty() ? "" : "; rejected: " + rejected));
    for (const auto& [v, why] : example) {
        if (!why.empty()) {
            line("", std::string("e.g. ") + to_string(v) + ": " + why.substr(0, 150) +
                         (why.size() > 150 ? "..." : ""));
        }
    }
    if (r.finalists.empty()) {
        line("result", "no candidate meets the constraints");
        // How close the search came: the fastest and the cheapest estimates that run.
        const auto describe = [&](std::int64_t i) {
            const auto& c = r.candidates[static_cast<std::size_t>(i)];
            const auto& x = r.estimates[static_cast<std::size_t>(i)];
            const std::int64_t spares = base.reliability.enabled ? c.spares : 0;
            const std::int64_t job_chips = x.chips / (c.domains + spares) * c.domains;
            return fmt::integer(c.domains) + " " + r.domain_name + " (" +
                   fmt::integer(job_chips) + " chips) + " + fmt::integer(spares) +
                   " spare, batch " + fmt::integer(c.global_batch) + ", tp " +
                   std::to_string(c.tp) + " cp " + std::to_string(c.cp) + " pp " +
                   std::to_string(c.pp) + " dp " +
                   fmt::integer(x.dp) + ": " + fmt::seconds(x.time_to_train_s) + ", " +
                   fmt::money(Money::usd(x.cost_usd)) + " (estimate, misses " +
                   to_string(x.verdict) + ")";
        };
        if (r.fastest >= 0) {
            line("fastest", describe(r.fastest));
        }
        if (r.cheapest >= 0 && r.cheapest != r.fastest) {
            line("cheapest", describe(r.cheapest));
        }
        return;
    }
    const int reps = r.finalists.front().run.reliability
                         ? static_cast<int>(r.finalists.front().run.reliability->replications.size())
                         : 0;
    line("simulated", std::to_string(r.finalists.size()) + " finalists in " +
                          fmt::seconds(r.simulate_seconds) + " (" +
                          config::to_string(base.simulation.fidelity) + " fidelity" +
                          (reps > 0 ? ", run simulation with failures, " + std::to_string(reps) +
                                          " replication" + (reps == 1 ? "" : "s")
                                    : "") +
                          ")");
    const bool us = base.cluster.ultraservers > 0;
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "  %4s %6s %8s %6s %4s %3s %3s %5s %4s %3s %-9s %9s %6s %9s %7s %10s %14s  %s\n",
                  "rank", us ? "US" : "inst", "chips", "batch", "tp", "cp", "pp", "dp", "zero",
                  "mb", "recompute", "ckpt", "spares", "step", "ETTR", "time", "cost", "notes");
    out << buf;
    for (const auto& fin : r.finalists) {
        const auto& c = r.candidates[static_cast<std::size_t>(fin.candidate)];
        const auto& x = r.estimates[static_cast<std::size_t>(fin.candidate)];
        const auto& p = fin.run.plan;
        std::string notes;
        if (fin.frontier) {
            notes += "pareto";
        }
        if (!fin.meets) {
            notes += (notes.empty() ? "" : "; ") + std::string("misses ") + fin.misses;
        }
        const double interval = fin.run.reliability
                                    ? fin.run.reliability->facts.checkpoint_interval_s
                                    : x.checkpoint_interval_s;
        std::snprintf(
            buf, sizeof buf,
            "  %4d %6lld %8s %6lld %4d %3d %3d %5d %4d %3d %-9s %9s %6lld %9s %7s %10s %14s  %s\n",
            fin.rank, static_cast<long long>(c.domains), fmt::integer(x.chips).c_str(),
            static_cast<long long>(c.global_batch), p.tp, p.cp, p.pp, p.dp, c.zero,
            c.microbatch, workload::to_string(c.recompute),
            std::isfinite(interval) ? fmt::seconds(interval).c_str() : "none",
            static_cast<long long>(base.reliability.enabled ? c.spares : 0),
            fmt::seconds(fin.run.step.step_s).c_str(), fmt::percent(fin.ettr).c_str(),
            fmt::seconds(fin.run.time_to_train_s).c_str(),
            fmt::money(Money::usd(fin.run.cost_usd)).c_str(), notes.c_str());
        out << buf;
    }
    const auto& best = r.finalists.front();
    if (best.meets) {
        const auto& c = r.candidates[static_cast<std::size_t>(best.candidate)];
        const std::string batch =
            plan.global_batch.given ? ", batch " + fmt::integer(c.global_batch) + " sequences" : "";
        line("best", fmt::integer(c.domains) + " " + r.domain_name + " (" +
                         fmt::integer(best.run.plan.cluster.chips) + " chips) + " +
                         fmt::integer(base.reliability.enabled ? c.spares : 0) + " spare" + batch +
                         ": " + fmt::seconds(best.run.time_to_train_s) + ", " +
                         fmt::money(Money::usd(best.run.cost_usd)));
    } else {
        line("best", "no finalist meets every constraint once simulated; see the notes");
    }
}

} // namespace trnsim::cli
