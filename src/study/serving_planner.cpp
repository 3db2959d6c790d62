// The serving planner (include/trnsim/study/planner.hpp, "Serving plans"): candidates built
// as scenarios through the config module, checked with sim::check_serving, simulated with
// sim::run_serving at the objective's rate or bisected for the highest rate within the SLO.
#include "frontier.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>

namespace trnsim::study {

namespace {

using Kind = serving::ArrivalSpec::Kind;

// Every serving candidate is simulated (several times with max_rate), so the search is
// bounded lower than a training plan's analytic one.
constexpr std::size_t kMaxServingCandidates = 10'000;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::array<double, 2> kRateRange = {0.1, 1000.0};     // requests per second
constexpr std::array<double, 2> kSpeedupRange = {0.01, 1000.0}; // of the trace's own rate

std::string shortest(double v) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), res.ptr);
}

bool is_trace(const config::ScenarioSpec& base) {
    return base.inference.requests.arrival.kind == Kind::trace;
}

/// The rate of a min_cost plan: the objective's, else the base's own (a trace's speed-up or
/// a Poisson or Gamma rate).
double target_rate(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    const auto& a = base.inference.requests.arrival;
    if (is_trace(base)) {
        return plan.serving.speedup.value_or(a.speedup);
    }
    return plan.serving.rate_per_s.value_or(a.rate_per_s);
}

std::array<double, 2> rate_range(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    if (is_trace(base)) {
        return plan.serving.speedup_range.value_or(kSpeedupRange);
    }
    return plan.serving.rate_range.value_or(kRateRange);
}

/// The figures of one serving run.
struct Point {
    double attainment = NAN, ttft_p99 = NAN, tpot_p99 = NAN, tokens_per_s = NAN,
           per_million = NAN;
};

void fill(ServingEvaluation& x, const Point& p, double rate) {
    x.rate = rate;
    x.slo_attainment = p.attainment;
    x.ttft_p99 = Seconds::of(p.ttft_p99);
    x.tpot_p99 = Seconds::of(p.tpot_p99);
    x.output_tokens_per_s = p.tokens_per_s;
    x.cost_per_million_output_tokens_usd = p.per_million;
}

std::string rate_text(double rate, bool trace) {
    const std::string v = fmt::fixed(rate, rate < 10.0 ? 3 : 1);
    return trace ? "speed-up " + v : v + "/s";
}

/// Evaluates one candidate (every InputError of its scenario is its rejection).
ServingEvaluation evaluate(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                           const config::ScenarioBase& file, const ServingCandidate& c) {
    ServingEvaluation x;
    const bool trace = is_trace(base);
    const bool max_rate = plan.objective == config::Objective::max_rate;
    const std::array<double, 2> range = rate_range(plan, base);
    const double first = max_rate ? range[1] : target_rate(plan, base);
    const auto build = [&](double rate) {
        config::LoadOptions lo;
        lo.resolved_text = false;
        config::ScenarioSpec s =
            config::load_scenario_with(file, serving_overrides(plan, base, c, rate), lo);
        s.output.requests = false; // the summary is all a plan needs
        return s;
    };
    config::ScenarioSpec spec;
    try {
        spec = build(first);
        const compute::ChipSpec& chip = spec.hardware.chip;
        if (spec.cluster.counts_ultraservers() && !chip.ultraserver) {
            throw InputError("cluster.ultraservers",
                             chip.name + " is not sold in UltraServers: count instances");
        }
        x.instances = cluster::Hierarchy::shape_of(chip, spec.cluster).instances;
        x.chips = x.instances * chip.instance.chips;
        x.cost_per_hour_usd = static_cast<double>(x.instances) * spec.cost.instance_hour.usd();
        const sim::ServingLayout layout = sim::check_serving(spec);
        x.replicas = layout.replicas;
        x.prefill_replicas = layout.prefill_replicas;
    } catch (const InputError& e) {
        const bool memory = e.message().find("does not fit in HBM") != std::string::npos;
        x.verdict = memory ? Verdict::hbm : Verdict::invalid;
        x.reason = e.key_path() + ": " + e.message();
        return x;
    }
    if (plan.max_chips && x.chips > *plan.max_chips) {
        x.verdict = Verdict::chips;
        x.reason = fmt::integer(x.chips) + " chips, constraints.max_chips " +
                   fmt::integer(*plan.max_chips);
        return x;
    }
    const auto run = [&](double rate) {
        const config::ScenarioSpec s = rate == first ? spec : build(rate);
        const sim::ServingScenarioRun r = sim::run_serving(s, 1);
        ++x.simulations;
        const auto& m = r.run.summary;
        return Point{m.slo_attainment, m.ttft_p99.seconds(), m.tpot_p99.seconds(),
                     m.output_tokens_per_s, r.cost_per_million_output_tokens_usd};
    };
    const double target = plan.serving.slo_attainment;
    const auto meets = [&](const Point& p) { return p.attainment >= target; };
    const auto missed = [&](const Point& p, double rate) {
        return "SLO met by " + fmt::percent(p.attainment) + " of the requests at " +
               rate_text(rate, trace) + " (objective " + fmt::percent(target) + ")";
    };
    if (!max_rate) {
        const Point p = run(first);
        fill(x, p, first);
        if (!meets(p)) {
            x.verdict = Verdict::slo;
            x.reason = missed(p, first);
        }
        return x;
    }
    // Bisection: low meets, high misses; geometric midpoints (rates span decades).
    const Point top = run(range[1]);
    if (meets(top)) {
        fill(x, top, range[1]);
        x.rate_low = range[1];
        x.rate_high = kInf;
        return x;
    }
    Point at_low = run(range[0]);
    Point at_high = top;
    double low = range[0], high = range[1];
    if (!meets(at_low)) {
        fill(x, at_low, range[0]);
        x.rate_high = range[0];
        x.attainment_high = at_low.attainment;
        x.verdict = Verdict::slo;
        x.reason = missed(at_low, range[0]) + ", the low end of the range";
        return x;
    }
    while (high / low > 1.0 + plan.serving.tolerance) {
        const double mid = std::sqrt(low * high);
        if (!(mid > low && mid < high)) {
            break; // the doubles cannot split the bracket further
        }
        const Point p = run(mid);
        if (meets(p)) {
            low = mid;
            at_low = p;
        } else {
            high = mid;
            at_high = p;
        }
    }
    fill(x, at_low, low);
    x.rate_low = low;
    x.rate_high = high;
    x.attainment_high = at_high.attainment;
    return x;
}

std::string rate_g(double rate) {
    char text[48];
    std::snprintf(text, sizeof text, "%g/s", rate);
    return text;
}

/// Where a plan's rate comes from: the objective's key, or the plan file.
std::pair<std::string, SourceLocation> rate_key(const config::PlanSpec& plan) {
    const bool max_rate = plan.objective == config::Objective::max_rate;
    const auto& o = plan.serving;
    const std::string key = max_rate ? "objective.rate_range" : "objective.rate";
    const SourceLocation& at = max_rate ? o.rate_range_origin : o.rate_origin;
    return {key, at.line > 0 ? at : SourceLocation{plan.file, 1, 1}};
}

/// A plan's requests at its slowest rate must arrive within simulated time and their KV
/// samples fit in simulation.max_memory on one replica (the fewest a candidate has), as
/// each candidate's run would check (docs/serving.md "Bounds"): refused once, up front,
/// rather than every candidate rejected.
void check_plan_arrivals(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    const bool max_rate = plan.objective == config::Objective::max_rate;
    const double rate = max_rate ? rate_range(plan, base)[0] : target_rate(plan, base);
    if (!(rate > 0.0) || plan.requests < 2) {
        return;
    }
    const auto& a = base.inference.requests.arrival;
    const double cv = a.kind == Kind::gamma ? a.gamma_cv : 1.0;
    const double gaps = static_cast<double>(plan.requests - 1);
    const double mean_s = gaps / rate;
    const double reach_s = mean_s + 6.0 * cv * std::sqrt(gaps) / rate;
    const double horizon_s = sim::arrival_horizon_s();
    const auto [key, at] = rate_key(plan);
    const std::string head = fmt::integer(plan.requests) + " requests at " + rate_g(rate) +
                             " arrive over " +
                             fmt::seconds(mean_s) + " on average";
    if (!(reach_s <= horizon_s)) {
        throw InputError(key,
                         head + " (" + fmt::seconds(reach_s) +
                             " six standard deviations out), beyond the " +
                             fmt::seconds(horizon_s) +
                             " of simulated time arrivals may take: raise the rate or lower "
                             "requests",
                         at);
    }
    const double sample_s = base.simulation.kv_sample.seconds();
    if (sample_s > 0.0) {
        const double bytes = (mean_s / sample_s + 1.0) * 20.0;
        const auto limit = static_cast<double>(base.simulation.max_memory.count());
        if (bytes > limit) {
            throw InputError(key,
                             head + ", sampled every " + fmt::seconds(sample_s) +
                                 ": the KV series of one replica alone would need " +
                                 fmt::bytes(bytes) + ", more than simulation.max_memory " +
                                 fmt::bytes(base.simulation.max_memory) +
                                 ": raise the rate, lower requests, or raise the base's "
                                 "simulation.kv_sample or simulation.max_memory",
                             at);
        }
    }
}

} // namespace

std::vector<config::Warning> serving_plan_warnings(const config::PlanSpec& plan,
                                                   const config::ScenarioSpec& base) {
    (void)enumerate_serving(plan, base); // its refusals come before any warning
    std::vector<config::Warning> out;
    if (plan.objective != config::Objective::max_rate || is_trace(base) ||
        plan.requests < 2) {
        return out;
    }
    const double top = rate_range(plan, base)[1];
    const double span_s = static_cast<double>(plan.requests - 1) / top;
    double alone_s = 0.0;
    try {
        alone_s = sim::mean_request_alone_seconds(base);
    } catch (const InputError&) {
        return out; // the base's own layout does not fit: the candidates' checks will say
    }
    if (span_s < alone_s) {
        const auto [key, at] = rate_key(plan);
        out.push_back({key,
                       "at " + rate_g(top) + " the " + fmt::integer(plan.requests) +
                           " requests arrive within " + fmt::seconds(span_s) +
                           ", less than one request's time alone on a replica (" +
                           fmt::seconds(alone_s) +
                           "): rates this high measure a burst, not a sustained rate; raise "
                           "requests to at least " +
                           fmt::integer(static_cast<std::int64_t>(std::ceil(top * alone_s)) + 1) +
                           " or lower the top of the range to " +
                           rate_g(static_cast<double>(plan.requests - 1) / alone_s),
                       at});
    }
    return out;
}

std::vector<ServingCandidate> enumerate_serving(const config::PlanSpec& plan,
                                                const config::ScenarioSpec& base) {
    const auto refuse = [](const std::string& key, const std::string& why,
                           const SourceLocation& at) { throw InputError(key, why, at); };
    const char* serving_keys =
        "a serving plan searches chip, ultraservers, instances, tp, max_batch, replicas, "
        "prefill_replicas, weights, sparsity and ep";
    const std::pair<const char*, bool> training_keys[] = {
        {"global_batch", plan.global_batch.given},
        {"cp", plan.cp.given},
        {"pp", plan.pp.given},
        {"dp", plan.dp.given},
        {"zero", plan.zero.given},
        {"microbatch", plan.microbatch.given},
        {"recompute", plan.recompute.given},
        {"master_weights", plan.master_weights.given},
        {"checkpoint_interval", plan.checkpoint_interval.given},
        {"spares", plan.spares.given}};
    for (const auto& [key, given] : training_keys) {
        if (given) {
            const std::string path = std::string("search.") + key;
            refuse(path,
                   std::string("is for training plans; the base scenario serves requests "
                               "(workload.type: inference): ") +
                       serving_keys,
                   plan.sources.find(path));
        }
    }
    for (const char* key : {"constraints.deadline", "constraints.budget",
                            "constraints.min_ettr", "constraints.hbm_headroom", "finalists",
                            "frontier", "replications"}) {
        if (plan.sources.contains(key)) {
            refuse(key,
                   "is for training plans; a serving plan's limits are objective."
                   "slo_attainment and constraints.max_chips, and it simulates every candidate",
                   plan.sources.find(key));
        }
    }
    if (plan.objective != config::Objective::min_cost &&
        plan.objective != config::Objective::max_rate) {
        refuse("objective",
               std::string("a serving plan's objective is min_cost or max_rate, not ") +
                   config::to_string(plan.objective),
               plan.objective_origin);
    }
    const auto& o = plan.serving;
    const Kind kind = base.inference.requests.arrival.kind;
    if (kind == Kind::trace) {
        if (o.rate_per_s) {
            refuse("objective.rate",
                   "the base scenario replays a trace: give objective.speedup (its rate "
                   "times this)",
                   o.rate_origin);
        }
        if (o.rate_range) {
            refuse("objective.rate_range",
                   "the base scenario replays a trace: give objective.speedup_range",
                   o.rate_range_origin);
        }
    } else {
        if (o.speedup) {
            refuse("objective.speedup",
                   "is for a base scenario that replays a trace; give objective.rate",
                   o.speedup_origin);
        }
        if (o.speedup_range) {
            refuse("objective.speedup_range",
                   "is for a base scenario that replays a trace; give objective.rate_range",
                   o.speedup_range_origin);
        }
        if (kind == Kind::closed_loop && plan.objective == config::Objective::min_cost &&
            !o.rate_per_s) {
            refuse("objective.rate",
                   "the base scenario's clients are a closed loop: give the rate of the "
                   "Poisson arrivals to plan for ({type: min_cost, rate: 20/s})",
                   plan.objective_origin);
        }
    }
    if (kind != Kind::trace) {
        check_plan_arrivals(plan, base);
    }
    if (plan.chip.given) {
        if (base.cost.origin == "cost.instance_hour") {
            refuse("search.chip",
                   "the base scenario gives cost.instance_hour, which would price every chip "
                   "alike: remove it (each chip's instance price applies) to search chips",
                   plan.chip.origin);
        }
        if (base.sources.contains("cluster.fabric")) {
            refuse("search.chip",
                   "the base scenario gives cluster.fabric, which is one chip's: remove it "
                   "(each chip's <chip>-ultracluster applies) to search chips",
                   plan.chip.origin);
        }
    }

    std::vector<std::string> chips =
        plan.chip.given ? plan.chip.values : std::vector<std::string>{base.hardware.chip_ref};
    std::vector<std::pair<bool, std::int64_t>> clusters;
    for (auto n : plan.instances.values) {
        clusters.emplace_back(false, n);
    }
    for (auto n : plan.ultraservers.values) {
        clusters.emplace_back(true, n);
    }
    if (!plan.instances.given && !plan.ultraservers.given) {
        clusters.emplace_back(base.cluster.counts_ultraservers(), base.cluster.domains());
    }
    const auto& sv = base.inference.serving;
    const auto values = [](const config::SearchKey<int>& k, int v) {
        return k.given ? k.values : std::vector<int>{v};
    };
    const auto tp = values(plan.tp, sv.tp);
    const auto batch = values(plan.max_batch, sv.max_batch);
    const auto replicas = values(plan.replicas, sv.replicas);
    const auto prefill = values(plan.prefill_replicas, sv.disaggregated.prefill_replicas);
    const auto ep = values(plan.ep, sv.ep);
    const auto texts = [](const config::SearchKey<std::string>& k, std::string v) {
        return k.given ? k.values : std::vector<std::string>{std::move(v)};
    };
    const auto weights = texts(plan.weights, sv.weights_name());
    const auto sparsity = texts(plan.sparsity, sv.sparsity_name());
    const double total = static_cast<double>(weights.size()) *
                         static_cast<double>(sparsity.size()) * static_cast<double>(chips.size()) *
                         static_cast<double>(clusters.size()) * static_cast<double>(tp.size()) *
                         static_cast<double>(batch.size()) *
                         static_cast<double>(replicas.size()) *
                         static_cast<double>(prefill.size()) * static_cast<double>(ep.size());
    if (total > static_cast<double>(kMaxServingCandidates)) {
        refuse("search",
               "has " + fmt::integer(std::llround(total)) +
                   " candidates (the product of the search lists); a serving plan simulates "
                   "every candidate and searches at most " +
                   fmt::integer(static_cast<std::int64_t>(kMaxServingCandidates)) +
                   ": narrow the search",
               {plan.file, 1, 1});
    }
    std::vector<ServingCandidate> out;
    out.reserve(static_cast<std::size_t>(total));
    for (const auto& chip : chips)
        for (const auto& [us, n] : clusters)
            for (int t : tp)
                for (int b : batch)
                    for (int r : replicas)
                        for (int p : prefill)
                            for (const auto& w : weights)
                                for (const auto& s : sparsity)
                                    for (int e : ep) {
                                        out.push_back({chip, us, n, t, b, r, p, w, s, e});
                                    }
    return out;
}

std::vector<config::Override> serving_overrides(const config::PlanSpec& plan,
                                                const config::ScenarioSpec& base,
                                                const ServingCandidate& c, double rate) {
    std::vector<config::Override> o;
    const auto add = [&](const char* path, std::string value, const SourceLocation& at) {
        o.push_back({path, std::move(value), at});
    };
    if (plan.chip.given) {
        add("hardware.chip", c.chip, plan.chip.origin);
        if (c.chip != base.hardware.chip_ref) {
            add("hardware.lnc", "null", plan.chip.origin); // the chip's default
        }
    }
    if (plan.instances.given || plan.ultraservers.given) {
        const SourceLocation& at = c.ultraservers ? plan.ultraservers.origin
                                                  : plan.instances.origin;
        add(c.ultraservers ? "cluster.instances" : "cluster.ultraservers", "null", at);
        add(c.ultraservers ? "cluster.ultraservers" : "cluster.instances",
            std::to_string(c.domains), at);
    }
    if (plan.tp.given) {
        add("workload.serving.tp", std::to_string(c.tp), plan.tp.origin);
    }
    if (plan.max_batch.given) {
        add("workload.serving.max_batch", std::to_string(c.max_batch), plan.max_batch.origin);
    }
    if (plan.replicas.given) {
        add("workload.serving.replicas", c.replicas == 0 ? "auto" : std::to_string(c.replicas),
            plan.replicas.origin);
    }
    if (plan.prefill_replicas.given) {
        add("workload.serving.disaggregated.prefill_replicas",
            std::to_string(c.prefill_replicas), plan.prefill_replicas.origin);
    }
    if (plan.weights.given) {
        add("workload.serving.weights", c.weights, plan.weights.origin);
    }
    if (plan.sparsity.given) {
        add("workload.serving.sparsity", c.sparsity, plan.sparsity.origin);
    }
    if (plan.ep.given) {
        add("workload.serving.ep", std::to_string(c.ep), plan.ep.origin);
    }
    add("workload.requests.count", std::to_string(plan.requests), plan.requests_origin);
    add("workload.requests.duration", "null", plan.requests_origin);
    const SourceLocation& at = plan.objective_origin;
    switch (base.inference.requests.arrival.kind) {
    case Kind::trace:
        add("workload.requests.arrival.speedup", shortest(rate), at);
        break;
    case Kind::poisson:
        add("workload.requests.arrival.poisson.rate", shortest(rate) + "/s", at);
        break;
    case Kind::gamma:
        add("workload.requests.arrival.gamma.rate", shortest(rate) + "/s", at);
        break;
    case Kind::closed_loop:
        add("workload.requests.arrival", "{poisson: {rate: " + shortest(rate) + "/s}}", at);
        break;
    }
    if (plan.seed) {
        add("seed", std::to_string(*plan.seed), plan.sources.find("seed"));
    }
    return o;
}

ServingPlanResult run_serving_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                                   int threads,
                                   const std::function<void(const std::string&)>& progress) {
    ServingPlanResult r;
    r.candidates = enumerate_serving(plan, base);
    r.trace = is_trace(base);
    const auto& cands = r.candidates;
    r.evaluations.resize(cands.size());
    const bool max_rate = plan.objective == config::Objective::max_rate;
    if (progress) {
        const auto range = rate_range(plan, base);
        progress("evaluating " + fmt::integer(static_cast<std::int64_t>(cands.size())) +
                 " serving candidates of " + fmt::integer(plan.requests) + " requests " +
                 (max_rate ? "(bisecting " + rate_text(range[0], r.trace) + " to " +
                                 rate_text(range[1], r.trace) + ")"
                           : "at " + rate_text(target_rate(plan, base), r.trace)) +
                 " on " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s"));
    }
    const config::ScenarioBase file = config::ScenarioBase::read(plan.base);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::exception_ptr> errors(cands.size());
    std::size_t done = 0;
    auto last = t0;
    std::mutex mutex; // guards done, last and the progress calls
    parallel_for(cands.size(), threads, [&](std::size_t i, int) {
        try {
            r.evaluations[i] = evaluate(plan, base, file, cands[i]);
        } catch (...) {
            errors[i] = std::current_exception();
        }
        {
            const std::lock_guard<std::mutex> lock(mutex);
            ++done;
            const auto now = std::chrono::steady_clock::now();
            // A line every 5 s of a long plan (the count only: never a result).
            if (progress && done < cands.size() &&
                std::chrono::duration<double>(now - last).count() >= 5.0) {
                last = now;
                progress("  " + fmt::integer(static_cast<std::int64_t>(done)) + " of " +
                         fmt::integer(static_cast<std::int64_t>(cands.size())) +
                         " candidates evaluated");
            }
        }
    });
    for (const auto& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    std::vector<double> cost(cands.size()), ttft(cands.size());
    std::vector<std::size_t> simulated;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        const auto& x = r.evaluations[i];
        r.simulations += x.simulations;
        cost[i] = x.cost_per_million_output_tokens_usd;
        ttft[i] = x.ttft_p99.seconds();
        // max_rate: the fleets with a rate found (a fleet that misses even the low end has
        // no figures at a rate it serves); min_cost: every simulated fleet.
        const bool point = max_rate ? x.verdict == Verdict::ok : x.simulations > 0;
        if (point && std::isfinite(cost[i]) && std::isfinite(ttft[i])) {
            simulated.push_back(i);
        }
        if (x.verdict == Verdict::ok) {
            r.ranking.push_back(static_cast<std::int64_t>(i));
        }
    }
    for (std::size_t i : detail::frontier_of(simulated, cost, ttft)) {
        r.evaluations[i].pareto = true;
    }
    std::stable_sort(r.ranking.begin(), r.ranking.end(), [&](std::int64_t a, std::int64_t b) {
        const auto& x = r.evaluations[static_cast<std::size_t>(a)];
        const auto& y = r.evaluations[static_cast<std::size_t>(b)];
        if (max_rate && x.rate != y.rate) {
            return x.rate > y.rate;
        }
        if (x.cost_per_hour_usd != y.cost_per_hour_usd) {
            return x.cost_per_hour_usd < y.cost_per_hour_usd;
        }
        return x.cost_per_million_output_tokens_usd < y.cost_per_million_output_tokens_usd;
    });
    for (std::size_t k = 0; k < r.ranking.size(); ++k) {
        r.evaluations[static_cast<std::size_t>(r.ranking[k])].rank = static_cast<int>(k) + 1;
    }
    return r;
}

} // namespace trnsim::study
