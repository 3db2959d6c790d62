#include "trnsim/study/planner.hpp"

#include "frontier.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/reliability/expectation.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/workload/plan.hpp"
#include "trnsim/workload/training_spec.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <numeric>
#include <optional>

namespace trnsim::study {

double objective_value(config::Objective o, double time_s, double cost_usd, double goodput) {
    switch (o) {
    case config::Objective::min_time:
        return time_s;
    case config::Objective::min_cost:
        return cost_usd;
    case config::Objective::max_goodput:
        return -goodput;
    case config::Objective::max_rate: // serving plans only (enumerate refuses it here)
        break;
    }
    return 0.0;
}

namespace {

// Candidates are enumerated (about 100 bytes each) and estimated before anything is simulated:
// bounded before that (docs/user-guide.md, "Errors and guarantees").
constexpr std::size_t kMaxCandidates = 1'000'000;
constexpr double kInf = std::numeric_limits<double>::infinity();

bool counts_ultraservers(const config::ScenarioSpec& base) {
    return base.cluster.counts_ultraservers();
}

/// The candidate values of a key: the searched ones, else the base scenario's.
template <class T>
std::vector<T> values_of(const config::SearchKey<T>& k, T base) {
    return k.given ? k.values : std::vector<T>{base};
}

void apply(config::ScenarioSpec& s, const Candidate& c) {
    const bool us = counts_ultraservers(s);
    s.cluster = cluster::ClusterSpec::of_domains(us, c.domains);
    s.training.global_batch = c.global_batch;
    auto& p = s.training.parallelism;
    p.tp = c.tp;
    p.cp = c.cp;
    p.pp = c.pp;
    p.dp = c.dp;
    p.ep = c.ep;
    p.zero = c.zero;
    p.microbatch = c.microbatch;
    p.recompute = c.recompute;
    s.training.optimizer.master_weights = c.master_weights;
    s.reliability.checkpoint.interval = c.checkpoint_interval;
    (us ? s.reliability.spares.ultraservers : s.reliability.spares.instances) = c.spares;
}

/// Candidates [first, last) share their cluster and parallelism.
struct Group {
    std::size_t first = 0, last = 0;
};

/// Estimates the candidates of one group with `spec` (a scratch copy of the base scenario).
void estimate_group(const config::PlanSpec& plan, config::ScenarioSpec& spec,
                    const std::vector<Candidate>& cands, const Group& g,
                    std::vector<CandidateEstimate>& out) {
    apply(spec, cands[g.first]);
    const compute::ChipSpec& chip = spec.hardware.chip;
    const std::int64_t chips_per_domain =
        cluster::Hierarchy::shape_of(chip, spec.cluster).chips_per_domain();
    for (std::size_t i = g.first; i < g.last; ++i) {
        const Candidate& c = cands[i];
        out[i].chips = (c.domains + (spec.reliability.enabled ? c.spares : 0)) * chips_per_domain;
    }
    const auto reject = [&](Verdict v, const std::string& why) {
        for (std::size_t i = g.first; i < g.last; ++i) {
            out[i].verdict = v;
            out[i].reason = why;
        }
    };
    workload::Plan wp;
    try {
        wp = sim::make_plan(spec);
    } catch (const InputError& e) {
        const bool memory = e.message().find("does not fit in HBM") != std::string::npos;
        reject(memory ? Verdict::hbm : Verdict::invalid, e.key_path() + ": " + e.message());
        return;
    }
    const double fraction = wp.memory.worst.total().as_double() /
                            wp.memory.capacity_per_rank.as_double();
    if (fraction > 1.0 - plan.hbm_headroom) {
        for (std::size_t i = g.first; i < g.last; ++i) {
            out[i].dp = wp.dp;
            out[i].memory_fraction = fraction;
        }
        reject(Verdict::hbm, "needs " + fmt::percent(fraction) + " of each rank's HBM; " +
                                 "constraints.hbm_headroom leaves " +
                                 fmt::percent(1.0 - plan.hbm_headroom));
        return;
    }
    const sim::StepEstimate step = sim::estimate_step(wp);
    for (std::size_t i = g.first; i < g.last; ++i) {
        const Candidate& c = cands[i];
        CandidateEstimate& x = out[i];
        apply(spec, c);
        x.dp = wp.dp;
        x.step_time = step.step_time;
        x.memory_fraction = fraction;
        if (spec.reliability.enabled) {
            try {
                const reliability::Expectation e =
                    reliability::expect(sim::reliability_input(spec, wp, step));
                x.ettr = e.ettr;
                x.time_to_train = e.time_to_train;
                x.cost_usd = e.cost_usd;
                x.goodput = e.goodput;
                x.checkpoint_interval = e.facts.checkpoint_interval;
            } catch (const InputError& err) {
                x.verdict = Verdict::invalid;
                x.reason = err.key_path() + ": " + err.message();
                continue;
            }
        } else {
            x.ettr = 1.0;
            x.time_to_train = Seconds::of(static_cast<double>(wp.steps) * step.step_time.seconds());
            x.cost_usd = static_cast<double>(wp.cluster.instances()) * x.time_to_train.seconds() /
                         units::kSecondsPerHour * spec.cost.instance_hour.usd();
            x.goodput = step.tokens_per_s;
            x.checkpoint_interval = Seconds::of(kInf);
        }
        if (plan.max_chips && x.chips > *plan.max_chips) {
            x.verdict = Verdict::chips;
        } else if (plan.min_ettr && x.ettr < *plan.min_ettr) {
            x.verdict = Verdict::ettr;
        } else if (plan.deadline && !(x.time_to_train.seconds() <= plan.deadline->seconds())) {
            x.verdict = Verdict::deadline;
        } else if (plan.budget && !(x.cost_usd <= plan.budget->usd())) {
            x.verdict = Verdict::budget;
        }
    }
}

std::string misses_of(const config::PlanSpec& plan, const CandidateEstimate& x, double time,
                      double cost, double ettr) {
    std::string m;
    const auto add = [&](const char* what) { m += (m.empty() ? "" : ", ") + std::string(what); };
    if (plan.max_chips && x.chips > *plan.max_chips) {
        add("max_chips");
    }
    if (plan.min_ettr && ettr < *plan.min_ettr) {
        add("min_ettr");
    }
    if (plan.deadline && !(time <= plan.deadline->seconds())) {
        add("deadline");
    }
    if (plan.budget && !(cost <= plan.budget->usd())) {
        add("budget");
    }
    return m;
}

} // namespace

namespace detail {

std::vector<std::size_t> frontier_of(std::vector<std::size_t> idx, const std::vector<double>& time,
                                     const std::vector<double>& cost) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        if (time[a] != time[b]) {
            return time[a] < time[b];
        }
        return cost[a] != cost[b] ? cost[a] < cost[b] : a < b;
    });
    std::vector<std::size_t> out;
    double best = kInf;
    for (std::size_t i : idx) {
        if (cost[i] < best) {
            out.push_back(i);
            best = cost[i];
        }
    }
    return out;
}

} // namespace detail

std::vector<config::Override> candidate_overrides(const config::PlanSpec& plan,
                                                  const config::ScenarioSpec& base,
                                                  const Candidate& c) {
    const bool us = counts_ultraservers(base);
    std::vector<config::Override> o;
    const auto add = [&](const char* path, std::string value, const auto& k) {
        o.push_back({path, std::move(value), k.origin});
    };
    add(us ? "cluster.ultraservers" : "cluster.instances", std::to_string(c.domains),
        us ? plan.ultraservers : plan.instances);
    add("workload.global_batch", std::to_string(c.global_batch), plan.global_batch);
    add("workload.parallelism.tp", std::to_string(c.tp), plan.tp);
    add("workload.parallelism.cp", std::to_string(c.cp), plan.cp);
    add("workload.parallelism.pp", std::to_string(c.pp), plan.pp);
    add("workload.parallelism.dp", c.dp == 0 ? "auto" : std::to_string(c.dp), plan.dp);
    add("workload.parallelism.ep", std::to_string(c.ep), plan.ep);
    add("workload.parallelism.zero", std::to_string(c.zero), plan.zero);
    add("workload.parallelism.microbatch", std::to_string(c.microbatch), plan.microbatch);
    add("workload.parallelism.recompute", workload::to_string(c.recompute), plan.recompute);
    if (plan.master_weights.given) {
        add("workload.optimizer.master_weights", workload::to_string(c.master_weights),
            plan.master_weights);
    }
    if (base.reliability.enabled) {
        add("reliability.checkpoint.interval",
            c.checkpoint_interval == Duration::zero()
                ? "auto"
                : std::to_string(c.checkpoint_interval.ns()) + "ns",
            plan.checkpoint_interval);
        add(us ? "reliability.spares.ultraservers" : "reliability.spares.instances",
            std::to_string(c.spares), plan.spares);
    }
    return o;
}

namespace {

/// Plans search one workload's configurations.
void refuse_tenants(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    if (!base.tenants.empty()) {
        throw InputError("base", "trnsim plan searches a single-workload scenario; the base "
                                 "is a tenants scenario (plan one tenant's workload as a "
                                 "scenario of its own)",
                         plan.base_origin);
    }
}

} // namespace

std::size_t candidate_count(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    refuse_tenants(plan, base);
    if (base.fleet) {
        return enumerate_fleet(plan, base).size();
    }
    return base.workload_type == config::WorkloadType::inference
               ? enumerate_serving(plan, base).size()
               : enumerate(plan, base).size();
}

std::vector<Candidate> enumerate(const config::PlanSpec& plan, const config::ScenarioSpec& base) {
    if (base.workload_type != config::WorkloadType::training) {
        throw InputError("base",
                         "trnsim plan needs a training or an inference scenario, not " +
                             std::string(config::to_string(base.workload_type)),
                         plan.base_origin);
    }
    if (plan.ultraservers.given && plan.instances.given) {
        throw InputError("search.instances",
                         "give search.ultraservers or search.instances, not both",
                         plan.instances.origin);
    }
    if (plan.objective == config::Objective::max_rate || plan.serving.given) {
        throw InputError("objective",
                         "is for serving plans (a base with workload.type: inference); a "
                         "training plan's objective is min_time, min_cost or max_goodput",
                         plan.objective_origin);
    }
    const std::pair<const char*, const config::SearchKey<int>*> serving_keys[] = {
        {"search.max_batch", &plan.max_batch},
        {"search.replicas", &plan.replicas},
        {"search.prefill_replicas", &plan.prefill_replicas}};
    for (const auto& [key, k] : serving_keys) {
        if (k->given) {
            throw InputError(key, "is for serving plans (a base with workload.type: inference)",
                             k->origin);
        }
    }
    for (const auto& [key, k] : {std::pair{"search.weights", &plan.weights},
                                 std::pair{"search.sparsity", &plan.sparsity}}) {
        if (k->given) {
            throw InputError(key, "is for serving plans (a base with workload.type: inference)",
                             k->origin);
        }
    }
    if (plan.sources.contains("requests")) {
        throw InputError("requests",
                         "is for serving plans (a base with workload.type: inference): the "
                         "requests of each candidate's serving run",
                         plan.requests_origin);
    }
    if (plan.chip.given) {
        throw InputError("search.chip",
                         "is for serving plans (a base with workload.type: inference); a "
                         "training plan keeps the base's chip",
                         plan.chip.origin);
    }
    const bool us = counts_ultraservers(base);
    if (us && plan.instances.given) {
        throw InputError("search.instances",
                         "the base scenario counts UltraServers (cluster.ultraservers): search "
                         "ultraservers",
                         plan.instances.origin);
    }
    if (!us && plan.ultraservers.given) {
        throw InputError("search.ultraservers",
                         "the base scenario counts plain instances (cluster.instances): search "
                         "instances",
                         plan.ultraservers.origin);
    }
    if (!base.reliability.enabled) {
        const std::pair<const char*, const SourceLocation*> keys[] = {
            {"search.checkpoint_interval",
             plan.checkpoint_interval.given ? &plan.checkpoint_interval.origin : nullptr},
            {"search.spares", plan.spares.given ? &plan.spares.origin : nullptr}};
        for (const auto& [key, origin] : keys) {
            if (origin != nullptr) {
                throw InputError(key, "needs a reliability section in the base scenario",
                                 *origin);
            }
        }
    }
    for (const workload::MasterWeights m : plan.master_weights.values) {
        if (const std::string why =
                workload::master_weights_refusal(m, base.training, base.hardware.chip);
            !why.empty()) {
            throw InputError("search.master_weights", why, plan.master_weights.origin);
        }
    }
    const auto& par = base.training.parallelism;
    if (plan.pp.given && !par.stage_layers.empty()) {
        for (const int p : plan.pp.values) {
            if (static_cast<std::size_t>(p) != par.stage_layers.size()) {
                throw InputError("search.pp",
                                 "the base scenario lists workload.parallelism.stage_layers "
                                 "for " + std::to_string(par.stage_layers.size()) +
                                     " stages, so it cannot run with pp = " +
                                     std::to_string(p) +
                                     "; drop stage_layers (balance: even or llama3 lay out "
                                     "any pp) or search only pp = " +
                                     std::to_string(par.stage_layers.size()),
                                 plan.pp.origin);
            }
        }
    }
    const auto domains = values_of(us ? plan.ultraservers : plan.instances,
                                   base.cluster.domains());
    const auto batch = values_of(plan.global_batch, base.training.global_batch);
    const auto tp = values_of(plan.tp, par.tp);
    const auto cp = values_of(plan.cp, par.cp);
    const auto pp = values_of(plan.pp, par.pp);
    const auto dp = values_of(plan.dp, par.dp);
    const auto ep = values_of(plan.ep, par.ep);
    const auto zero = values_of(plan.zero, par.zero);
    const auto micro = values_of(plan.microbatch, par.microbatch);
    const auto recompute = values_of(plan.recompute, par.recompute);
    const auto master = values_of(plan.master_weights, base.training.optimizer.master_weights);
    const auto interval = values_of(plan.checkpoint_interval, base.reliability.checkpoint.interval);
    const auto spares = values_of(plan.spares, base.reliability.spares.count());
    const double total = static_cast<double>(domains.size()) * static_cast<double>(batch.size()) *
                         static_cast<double>(tp.size()) * static_cast<double>(cp.size()) *
                         static_cast<double>(pp.size()) *
                         static_cast<double>(dp.size()) * static_cast<double>(ep.size()) *
                         static_cast<double>(zero.size()) * static_cast<double>(micro.size()) *
                         static_cast<double>(recompute.size()) *
                         static_cast<double>(master.size()) *
                         static_cast<double>(interval.size()) * static_cast<double>(spares.size());
    if (total > static_cast<double>(kMaxCandidates)) {
        throw InputError("search",
                         "has " + (total < 9e18 ? fmt::integer(std::llround(total)) : fmt::count(total)) + " candidates (the product of the search "
                         "lists); a plan searches at most " + fmt::integer(
                             static_cast<std::int64_t>(kMaxCandidates)) + ": narrow the search",
                         {plan.file, 1, 1});
    }
    std::vector<Candidate> out;
    out.reserve(static_cast<std::size_t>(total));
    for (auto d : domains)
        for (auto b : batch)
            for (int t : tp)
                for (int x : cp)
                    for (int p : pp)
                        for (int a : dp)
                            for (int e : ep)
                                for (int z : zero)
                                    for (int m : micro)
                                        for (auto r : recompute)
                                            for (auto w : master)
                                                for (auto ci : interval)
                                                    for (auto s : spares) {
                                                        out.push_back({d, b, t, x, p, a, e, z, m,
                                                                       r, w, ci, s});
                                                    }
    return out;
}

PlanResult run_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base, int threads,
                    const std::function<void(const std::string&)>& progress) {
    const auto say = [&](const std::string& s) {
        if (progress) {
            progress(s);
        }
    };
    refuse_tenants(plan, base);
    threads = std::max(1, threads);
    PlanResult r;
    if (base.fleet) {
        r.fleet = run_fleet_plan(plan, base, threads, progress);
        r.domain_name = counts_ultraservers(base) ? "UltraServers" : "instances";
        return r;
    }
    if (base.workload_type == config::WorkloadType::inference) {
        r.serving = run_serving_plan(plan, base, threads, progress);
        r.domain_name = counts_ultraservers(base) ? "UltraServers" : "instances";
        return r;
    }
    r.domain_name = counts_ultraservers(base) ? "UltraServers" : "instances";
    r.candidates = enumerate(plan, base);
    const auto& cands = r.candidates;
    r.estimates.resize(cands.size());

    // Groups of candidates sharing cluster, batch and parallelism (interval and spares vary
    // fastest).
    std::vector<Group> groups;
    for (std::size_t i = 0; i < cands.size();) {
        std::size_t j = i + 1;
        const auto same = [&](const Candidate& a, const Candidate& b) {
            return a.domains == b.domains && a.global_batch == b.global_batch && a.tp == b.tp &&
                   a.cp == b.cp && a.pp == b.pp && a.dp == b.dp && a.ep == b.ep &&
                   a.zero == b.zero && a.microbatch == b.microbatch && a.recompute == b.recompute &&
                   a.master_weights == b.master_weights;
        };
        while (j < cands.size() && same(cands[i], cands[j])) {
            ++j;
        }
        groups.push_back({i, j});
        i = j;
    }
    r.step_estimates = static_cast<std::int64_t>(groups.size());
    say("estimating " + fmt::integer(static_cast<std::int64_t>(cands.size())) +
        " candidates (" + fmt::integer(r.step_estimates) +
        " cluster and parallelism combinations) on " + std::to_string(threads) + " threads");

    const auto t0 = std::chrono::steady_clock::now();
    // One scenario per thread to edit for each group (a copy of the base, made when the
    // thread takes its first group).
    std::vector<std::optional<config::ScenarioSpec>> scratch(static_cast<std::size_t>(threads));
    parallel_for(groups.size(), threads, [&](std::size_t gi, int worker) {
        std::optional<config::ScenarioSpec>& mine = scratch[static_cast<std::size_t>(worker)];
        if (!mine) {
            mine.emplace(base);
        }
        estimate_group(plan, *mine, cands, groups[gi], r.estimates);
    });
    const auto t1 = std::chrono::steady_clock::now();
    r.estimate_seconds = std::chrono::duration<double>(t1 - t0).count();

    // Frontier over the candidates that meet every constraint but deadline and budget (which
    // are themselves limits on the two axes).
    std::vector<double> time(cands.size()), cost(cands.size());
    std::vector<std::size_t> runnable, feasible;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        const auto& x = r.estimates[i];
        time[i] = x.time_to_train.seconds();
        cost[i] = x.cost_usd;
        if ((x.verdict == Verdict::ok || x.verdict == Verdict::deadline ||
             x.verdict == Verdict::budget) &&
            std::isfinite(x.time_to_train.seconds())) {
            runnable.push_back(i);
        }
        if (x.verdict == Verdict::ok) {
            feasible.push_back(i);
        }
    }
    r.feasible = static_cast<std::int64_t>(feasible.size());
    for (std::size_t i : runnable) {
        // The first in enumeration order on ties.
        if (r.fastest < 0 || time[i] < time[static_cast<std::size_t>(r.fastest)]) {
            r.fastest = static_cast<std::int64_t>(i);
        }
        if (r.cheapest < 0 || cost[i] < cost[static_cast<std::size_t>(r.cheapest)]) {
            r.cheapest = static_cast<std::int64_t>(i);
        }
    }
    for (std::size_t i : detail::frontier_of(runnable, time, cost)) {
        r.estimates[i].frontier = true;
    }

    // Finalists: the best by the objective, then frontier points spread along it.
    std::vector<std::size_t> ranked = feasible;
    std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
        const auto& x = r.estimates[a];
        const auto& y = r.estimates[b];
        return objective_value(plan.objective, x.time_to_train.seconds(), x.cost_usd, x.goodput) <
               objective_value(plan.objective, y.time_to_train.seconds(), y.cost_usd, y.goodput);
    });
    std::vector<std::size_t> chosen(ranked.begin(),
                                    ranked.begin() + std::min<std::size_t>(
                                                         ranked.size(),
                                                         static_cast<std::size_t>(plan.finalists)));
    const std::size_t by_objective = chosen.size();
    std::vector<std::size_t> front;
    for (std::size_t i : detail::frontier_of(feasible, time, cost)) {
        if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) {
            front.push_back(i);
        }
    }
    const std::size_t k = std::min<std::size_t>(front.size(), static_cast<std::size_t>(plan.frontier));
    for (std::size_t j = 0; j < k; ++j) {
        const std::size_t at = k == 1 ? 0 : (j * (front.size() - 1) + (k - 1) / 2) / (k - 1);
        if (std::find(chosen.begin(), chosen.end(), front[at]) == chosen.end()) {
            chosen.push_back(front[at]);
        }
    }
    for (std::size_t i : chosen) {
        r.estimates[i].finalist = true;
    }

    say("simulating " + std::to_string(chosen.size()) + " finalists (" +
        config::to_string(base.simulation.fidelity) + " fidelity" +
        (base.reliability.enabled ? ", failures and checkpoints" : "") + ")");
    r.finalists.resize(chosen.size());
    std::vector<config::Override> extra;
    if (plan.seed) {
        extra.push_back({"seed", std::to_string(*plan.seed), {}});
    }
    if (plan.replications) {
        extra.push_back({"simulation.replications", std::to_string(*plan.replications), {}});
    }
    std::vector<std::exception_ptr> errors(chosen.size());
    const config::ScenarioBase file = config::ScenarioBase::read(plan.base);
    parallel_for(chosen.size(), threads, [&](std::size_t f, int) {
        try {
            Finalist& fin = r.finalists[f];
            fin.candidate = static_cast<std::int64_t>(chosen[f]);
            fin.by_objective = f < by_objective;
            std::vector<config::Override> o = candidate_overrides(plan, base, cands[chosen[f]]);
            o.insert(o.end(), extra.begin(), extra.end());
            fin.spec = config::load_scenario_with(file, o);
            fin.spec.simulation.threads = 1; // finalists run side by side
            try {
                fin.run = sim::run_training(fin.spec);
            } catch (const InputError& e) {
                throw e.located(fin.spec.sources);
            }
            const auto& x = r.estimates[chosen[f]];
            if (fin.run.reliability) {
                fin.ettr = fin.run.reliability->estimate("ettr").mean;
                fin.goodput = fin.run.reliability->estimate("goodput").mean;
            } else {
                fin.ettr = 1.0;
                fin.goodput = fin.run.step.tokens_per_s;
            }
            fin.misses =
                misses_of(plan, x, fin.run.time_to_train.seconds(), fin.run.cost_usd, fin.ettr);
            fin.meets = fin.misses.empty();
        } catch (...) {
            errors[f] = std::current_exception();
        }
    });
    for (const auto& e : errors) {
        if (e) {
            std::rethrow_exception(e);
        }
    }
    r.simulate_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();

    // Rank on the simulated figures; mark the finalists' own frontier.
    std::stable_sort(r.finalists.begin(), r.finalists.end(),
                     [&](const Finalist& a, const Finalist& b) {
                         if (a.meets != b.meets) {
                             return a.meets;
                         }
                         const double va = objective_value(plan.objective,
                                                           a.run.time_to_train.seconds(),
                                                           a.run.cost_usd, a.goodput);
                         const double vb = objective_value(plan.objective,
                                                           b.run.time_to_train.seconds(),
                                                           b.run.cost_usd, b.goodput);
                         return va != vb ? va < vb : a.candidate < b.candidate;
                     });
    std::vector<double> ft(r.finalists.size()), fc(r.finalists.size());
    std::vector<std::size_t> all(r.finalists.size());
    for (std::size_t i = 0; i < r.finalists.size(); ++i) {
        r.finalists[i].rank = static_cast<int>(i) + 1;
        ft[i] = r.finalists[i].run.time_to_train.seconds();
        fc[i] = r.finalists[i].run.cost_usd;
        all[i] = i;
    }
    for (std::size_t i : detail::frontier_of(all, ft, fc)) {
        r.finalists[i].frontier = true;
    }
    return r;
}

} // namespace trnsim::study
