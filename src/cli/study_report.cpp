#include "study_report.hpp"

#include "trnsim/core/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace trnsim::cli {

namespace {

std::string pad(const std::string& s, std::size_t width) {
    return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
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
    // A serving sweep shows its latency, SLO and cost per token; a training sweep its time to
    // train, cost and (with failures) ETTR.
    const bool serving = std::any_of(stats.begin(), stats.end(), [&](const auto& s) {
        double m = 0, h = 0;
        return value(s, "slo_attainment", m, h);
    });
    std::vector<std::vector<std::string>> cells;
    if (serving) {
        cells = {{"point", "TTFT p99", "TPOT p99", "SLO met", "$/M tokens", "cost", "values"}};
    } else {
        cells = {{"point", "time to train", "cost"}};
        if (runs) {
            cells[0].push_back("ETTR");
        }
        cells[0].push_back("values");
    }
    const auto seconds = [](double v) { return fmt::seconds(v); };
    const auto money = [](double v) { return fmt::money(Money::usd(v)); };
    for (std::size_t i = 0; i < stats.size() && i < max_points; ++i) {
        const auto& s = stats[i];
        std::string values;
        for (const auto& o : sweep.points[static_cast<std::size_t>(s.point)].swept) {
            values += (values.empty() ? "" : ", ") + config::to_string(o);
        }
        double c = 0, ch = 0;
        value(s, "cost_usd", c, ch);
        std::vector<std::string> row = {std::to_string(s.point)};
        if (serving) {
            double a = 0, ah = 0, b = 0, bh = 0, m = 0, mh = 0, k = 0, kh = 0;
            value(s, "ttft_p99_s", a, ah);
            value(s, "tpot_p99_s", b, bh);
            value(s, "slo_attainment", m, mh);
            value(s, "cost_per_million_output_tokens_usd", k, kh);
            row.push_back(with_ci(a, ah, seconds));
            row.push_back(with_ci(b, bh, seconds));
            row.push_back(with_ci(m, mh, [](double v) { return fmt::percent(v); }));
            row.push_back(with_ci(k, kh, money));
            row.push_back(with_ci(c, ch, money));
        } else {
            double t = 0, th = 0, e = 0, eh = 0;
            value(s, "time_to_train_s", t, th);
            const bool has_ettr = value(s, "ettr", e, eh);
            row.push_back(with_ci(t, th, seconds));
            row.push_back(with_ci(c, ch, money));
            if (runs) {
                row.push_back(has_ettr ? with_ci(e, eh, [](double v) { return fmt::percent(v); })
                                       : std::string("-"));
            }
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

namespace {

std::string rate_of(double rate, bool trace) {
    if (!std::isfinite(rate)) {
        return "-";
    }
    const std::string v = fmt::fixed(rate, rate < 10.0 ? 3 : 1);
    return trace ? "x" + v : v + "/s";
}

/// A serving plan: the search, the rejections, the ranked fleets and the closest misses.
void print_serving_plan(std::ostream& out, const config::PlanSpec& plan,
                        const config::ScenarioSpec& base, const study::ServingPlanResult& r) {
    const auto line = [&](const std::string& label, const std::string& text) {
        out << "  " << pad(label, 11) << text << "\n";
    };
    const bool max_rate = plan.objective == config::Objective::max_rate;
    const auto& slo = base.inference.slo;
    out << "trnsim plan: " << plan.name << " (" << plan.file << ")\n";
    line("objective",
         std::string(config::to_string(plan.objective)) + ": SLO (TTFT <= " +
             fmt::duration(slo.ttft) + ", TPOT <= " + fmt::duration(slo.tpot) + ") met by " +
             fmt::percent(plan.serving.slo_attainment) + " of " + fmt::integer(plan.requests) +
             " requests" + (max_rate ? ", the highest rate" : "") +
             (plan.max_chips ? "; at most " + fmt::integer(*plan.max_chips) + " chips" : "") +
             "; ranked by " + (max_rate ? "rate, then cost per hour" : "cost per hour"));
    line("base", base.name + " (" + plan.base + "): " + base.inference.model.name +
                     (r.trace ? ", the trace's arrivals (rates are speed-ups)"
                              : ", Poisson arrivals"));
    std::map<study::Verdict, std::int64_t> verdicts;
    std::map<study::Verdict, std::string> example;
    for (const auto& x : r.evaluations) {
        ++verdicts[x.verdict];
        if (!x.reason.empty() && example[x.verdict].empty()) {
            example[x.verdict] = x.reason;
        }
    }
    line("search", fmt::integer(static_cast<std::int64_t>(r.candidates.size())) +
                       " candidates, " + fmt::integer(r.simulations) + " serving runs in " +
                       fmt::seconds(r.seconds));
    std::string rejected;
    for (const auto& [v, n] : verdicts) {
        if (v != study::Verdict::ok) {
            rejected += (rejected.empty() ? "" : ", ") + fmt::integer(n) + " " + to_string(v);
        }
    }
    line("evaluated", fmt::integer(static_cast<std::int64_t>(r.ranking.size())) + " feasible" +
                          (rejected.empty() ? "" : "; rejected: " + rejected));
    for (const auto& [v, why] : example) {
        if (!why.empty() && v != study::Verdict::slo) {
            line("", std::string("e.g. ") + to_string(v) + ": " + why.substr(0, 150) +
                         (why.size() > 150 ? "..." : ""));
        }
    }
    char buf[400];
    const auto header = [&]() {
        std::snprintf(buf, sizeof buf,
                      "  %4s %-6s %5s %5s %4s %5s %6s %7s %9s %10s %7s %8s %8s %9s  %s\n",
                      "rank", "chip", "inst", "US", "tp", "batch", "repl", "prefill", "$/hour",
                      max_rate ? "rate found" : "rate", "SLO met", "TTFT p99", "TPOT p99",
                      "$/M tok", max_rate ? "bracket; notes" : "notes");
        out << buf;
    };
    const auto row = [&](std::int64_t i, const std::string& rank) {
        const auto& c = r.candidates[static_cast<std::size_t>(i)];
        const auto& x = r.evaluations[static_cast<std::size_t>(i)];
        std::string notes;
        if (max_rate && x.verdict == study::Verdict::ok) {
            notes = "[" + rate_of(x.rate_low, r.trace) + ", " +
                    (std::isfinite(x.rate_high) ? rate_of(x.rate_high, r.trace)
                                                : std::string("above the range")) +
                    ")";
        }
        if (x.pareto) {
            notes += (notes.empty() ? "" : "; ") + std::string("pareto");
        }
        std::snprintf(
            buf, sizeof buf,
            "  %4s %-6s %5lld %5s %4d %5d %6lld %7lld %9s %10s %7s %8s %8s %9s  %s\n",
            rank.c_str(), c.chip.c_str(), static_cast<long long>(x.instances),
            c.ultraservers ? std::to_string(c.domains).c_str() : "-", c.tp, c.max_batch,
            static_cast<long long>(x.replicas), static_cast<long long>(x.prefill_replicas),
            fmt::money(Money::usd(x.cost_per_hour_usd)).c_str(),
            rate_of(x.rate, r.trace).c_str(), fmt::percent(x.slo_attainment).c_str(),
            fmt::seconds(x.ttft_p99.seconds()).c_str(), fmt::seconds(x.tpot_p99.seconds()).c_str(),
            fmt::money(Money::usd(x.cost_per_million_output_tokens_usd)).c_str(),
            notes.c_str());
        std::string text = buf;
        while (text.size() > 1 && text[text.size() - 2] == ' ') {
            text.erase(text.size() - 2, 1); // no trailing blanks before the newline
        }
        out << text;
    };
    constexpr std::size_t kRows = 20;
    if (!r.ranking.empty()) {
        header();
        for (std::size_t k = 0; k < r.ranking.size() && k < kRows; ++k) {
            row(r.ranking[k], std::to_string(k + 1));
        }
        if (r.ranking.size() > kRows) {
            out << "  ... " << fmt::integer(static_cast<std::int64_t>(r.ranking.size() - kRows))
                << " more feasible candidates in the results file\n";
        }
    }
    // The closest misses: the simulated candidates that missed the SLO, highest attainment
    // first (the first in enumeration order on ties).
    std::vector<std::int64_t> misses;
    for (std::size_t i = 0; i < r.evaluations.size(); ++i) {
        if (r.evaluations[i].verdict == study::Verdict::slo) {
            misses.push_back(static_cast<std::int64_t>(i));
        }
    }
    std::stable_sort(misses.begin(), misses.end(), [&](std::int64_t a, std::int64_t b) {
        return r.evaluations[static_cast<std::size_t>(a)].slo_attainment >
               r.evaluations[static_cast<std::size_t>(b)].slo_attainment;
    });
    if (!misses.empty()) {
        line("misses", "the closest of each chip among the " +
                           fmt::integer(static_cast<std::int64_t>(misses.size())) +
                           (misses.size() == 1 ? " candidate that misses" : " candidates that miss") +
                           " the SLO" +
                           (max_rate ? " (at the low end of the range)" : "") + ":");
        if (r.ranking.empty()) {
            header();
        }
        // The closest miss of each chip first (why a chip lost), then the next closest, up
        // to three rows.
        std::vector<std::int64_t> shown;
        std::set<std::string> chips;
        for (std::int64_t i : misses) {
            if (chips.insert(r.candidates[static_cast<std::size_t>(i)].chip).second) {
                shown.push_back(i);
            }
        }
        for (std::int64_t i : misses) {
            if (shown.size() >= 3) {
                break;
            }
            if (std::find(shown.begin(), shown.end(), i) == shown.end()) {
                shown.push_back(i);
            }
        }
        for (std::int64_t i : shown) {
            row(i, "-");
        }
    }
    if (r.ranking.empty()) {
        line("result", "no candidate meets the SLO objective");
        return;
    }
    const auto& c = r.candidates[static_cast<std::size_t>(r.ranking.front())];
    const auto& x = r.evaluations[static_cast<std::size_t>(r.ranking.front())];
    line("best", fmt::integer(c.domains) + " " + c.chip + " " +
                     (c.ultraservers ? "UltraServers" : "instances") + " (" +
                     fmt::integer(x.chips) + " chips), " + fmt::integer(x.replicas) +
                     " replicas of tp " + std::to_string(c.tp) + ", batch " +
                     std::to_string(c.max_batch) +
                     (x.prefill_replicas > 0
                          ? " (" + fmt::integer(x.prefill_replicas) + " prefill)"
                          : "") +
                     ": " + fmt::money(Money::usd(x.cost_per_hour_usd)) + " an hour, " +
                     (max_rate ? "serves " + rate_of(x.rate, r.trace) + " at " : "") +
                     fmt::percent(x.slo_attainment) + " SLO attainment, " +
                     fmt::money(Money::usd(x.cost_per_million_output_tokens_usd)) +
                     " per million output tokens");
}

void print_fleet_plan(std::ostream& out, const config::PlanSpec& plan,
                      const config::ScenarioSpec& base, const std::string& unit,
                      const study::FleetPlanResult& r) {
    const auto line = [&](const std::string& label, const std::string& text) {
        out << "  " << pad(label, 11) << text << "\n";
    };
    const config::FleetSpec& f = *base.fleet;
    std::int64_t jobs = static_cast<std::int64_t>(f.trace.size());
    for (const config::FleetJobClass& c : f.jobs) {
        jobs += c.count;
    }
    out << "trnsim plan: " << plan.name << " (" << plan.file << ")\n";
    line("objective",
         "min_cost: the fewest " + unit + " on which every job ends within its deadline" +
             (plan.deadline ? " (" + fmt::duration(*plan.deadline) + " unless its class sets one)"
                            : std::string()) +
             (f.services.empty() ? std::string()
                                 : " and every service meets its SLO attainment") +
             (plan.max_chips ? "; at most " + fmt::integer(*plan.max_chips) + " chips" : ""));
    line("base", base.name + " (" + plan.base + "): " + fmt::integer(jobs) +
                     (jobs == 1 ? " job of " : " jobs of ") +
                     fmt::integer(static_cast<std::int64_t>(f.jobs.size())) +
                     (f.jobs.size() == 1 ? " class, " : " classes, ") +
                     fmt::integer(static_cast<std::int64_t>(f.services.size())) +
                     (f.services.size() == 1 ? " service" : " services"));
    std::int64_t refined = 0;
    for (const study::FleetCandidate& c : r.candidates) {
        refined += c.refined ? 1 : 0;
    }
    line("search", fmt::integer(static_cast<std::int64_t>(r.candidates.size())) + " fleets (" +
                       fmt::integer(static_cast<std::int64_t>(r.candidates.size()) - refined) +
                       " searched, " + fmt::integer(refined) + " by bisection) in " +
                       fmt::seconds(r.seconds) + ", after the classes' plans and the services' " +
                       "capacities in " + fmt::seconds(r.prepare_seconds));
    std::vector<std::size_t> order(r.candidates.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        order[i] = i;
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const study::FleetCandidate& x = r.candidates[a];
        const study::FleetCandidate& y = r.candidates[b];
        return x.spares != y.spares ? x.spares < y.spares : x.domains < y.domains;
    });
    char buf[400];
    std::snprintf(buf, sizeof buf, "  %6s %7s %-8s %10s %11s %7s %10s %9s %6s %6s  %s\n",
                  "spares", unit == "UltraServers" ? "US" : "inst", "verdict", "$/hour",
                  "jobs done", "missed", "wait mean", "worst SLO", "busy", "frag", "notes");
    out << buf;
    for (const std::size_t i : order) {
        const study::FleetCandidate& c = r.candidates[i];
        const study::FleetEvaluation& x = r.evaluations[i];
        const bool ran = std::isfinite(x.end.seconds());
        std::string notes = c.refined ? "bisection" : "";
        // A deadline's misses are counted in their column; the first is in the results file.
        if (!x.reason.empty() && x.verdict != study::Verdict::deadline) {
            notes += (notes.empty() ? "" : "; ") + x.reason.substr(0, 110) +
                     (x.reason.size() > 110 ? "..." : "");
        }
        std::snprintf(
            buf, sizeof buf, "  %6lld %7lld %-8s %10s %11s %7s %10s %9s %6s %6s  %s\n",
            static_cast<long long>(c.spares), static_cast<long long>(c.domains),
            to_string(x.verdict), fmt::money(Money::usd(x.cost_per_hour_usd)).c_str(),
            ran ? (fmt::integer(x.finished) + "/" + fmt::integer(x.jobs)).c_str() : "-",
            ran ? fmt::integer(x.deadlines_missed).c_str() : "-",
            !ran ? "-" : x.mean_wait > Seconds{} ? fmt::seconds(x.mean_wait.seconds()).c_str() : "0 s",
            std::isfinite(x.worst_attainment) ? fmt::percent(x.worst_attainment).c_str() : "-",
            ran ? fmt::percent(x.busy_fraction).c_str() : "-",
            ran ? fmt::percent(x.fragmented_fraction).c_str() : "-", notes.c_str());
        std::string text = buf;
        while (text.size() > 1 && text[text.size() - 2] == ' ') {
            text.erase(text.size() - 2, 1); // no trailing blanks before the newline
        }
        out << text;
    }
    std::string fewest;
    for (const study::FleetPlanResult::Fewest& w : r.fewest) {
        fewest += (fewest.empty() ? "" : "; ") + fmt::integer(w.spares) +
                  (w.spares == 1 ? " spare: " : " spares: ") +
                  (w.domains < 0 ? "none in the range"
                                 : (w.at_low_end ? "at most " : "") + fmt::integer(w.domains));
    }
    line("fewest", fewest);
    if (r.ranking.empty()) {
        line("result", "no pool in the range meets every deadline and SLO: search larger sizes");
        return;
    }
    const std::size_t b = static_cast<std::size_t>(r.ranking.front());
    const study::FleetCandidate& c = r.candidates[b];
    const study::FleetEvaluation& x = r.evaluations[b];
    line("best", fmt::integer(c.domains) + " " + unit + " (" + fmt::integer(x.chips) +
                     " chips) with " + fmt::integer(c.spares) +
                     (c.spares == 1 ? " spare" : " spares") + ": " +
                     fmt::money(Money::usd(x.cost_per_hour_usd)) + " an hour; " +
                     fmt::integer(x.finished) + " of " + fmt::integer(x.jobs) +
                     " jobs done, none late" +
                     (std::isfinite(x.worst_attainment)
                          ? "; the lowest SLO attainment " + fmt::percent(x.worst_attainment) +
                                " (" + x.worst_service + ")"
                          : std::string()) +
                     (r.fewest.size() == 1 && r.fewest.front().at_low_end
                          ? "; the range's smallest size: fewer may do"
                          : std::string()));
}

} // namespace

void print_plan_result(std::ostream& out, const config::PlanSpec& plan,
                       const config::ScenarioSpec& base, const study::PlanResult& r) {
    if (r.serving) {
        print_serving_plan(out, plan, base, *r.serving);
        return;
    }
    if (r.fleet) {
        print_fleet_plan(out, plan, base, r.domain_name, *r.fleet);
        return;
    }
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
                   fmt::integer(x.dp) + ": " + fmt::seconds(x.time_to_train.seconds()) + ", " +
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
    const bool us = base.cluster.counts_ultraservers();
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
                                    ? fin.run.reliability->facts.checkpoint_interval.seconds()
                                    : x.checkpoint_interval.seconds();
        std::snprintf(
            buf, sizeof buf,
            "  %4d %6lld %8s %6lld %4d %3d %3d %5d %4d %3d %-9s %9s %6lld %9s %7s %10s %14s  %s\n",
            fin.rank, static_cast<long long>(c.domains), fmt::integer(x.chips).c_str(),
            static_cast<long long>(c.global_batch), p.tp, p.cp, p.pp, p.dp, c.zero,
            c.microbatch, workload::to_string(c.recompute),
            std::isfinite(interval) ? fmt::seconds(interval).c_str() : "none",
            static_cast<long long>(base.reliability.enabled ? c.spares : 0),
            fmt::seconds(fin.run.step.step_time.seconds()).c_str(), fmt::percent(fin.ettr).c_str(),
            fmt::seconds(fin.run.time_to_train.seconds()).c_str(),
            fmt::money(Money::usd(fin.run.cost_usd)).c_str(), notes.c_str());
        out << buf;
    }
    const auto& best = r.finalists.front();
    if (best.meets) {
        const auto& c = r.candidates[static_cast<std::size_t>(best.candidate)];
        const std::string batch =
            plan.global_batch.given ? ", batch " + fmt::integer(c.global_batch) + " sequences" : "";
        line("best", fmt::integer(c.domains) + " " + r.domain_name + " (" +
                         fmt::integer(best.run.plan.cluster.chips()) + " chips) + " +
                         fmt::integer(base.reliability.enabled ? c.spares : 0) + " spare" + batch +
                         ": " + fmt::seconds(best.run.time_to_train.seconds()) + ", " +
                         fmt::money(Money::usd(best.run.cost_usd)));
    } else {
        line("best", "no finalist meets every constraint once simulated; see the notes");
    }
}

} // namespace trnsim::cli
