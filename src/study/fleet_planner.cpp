// The fleet planner (include/trnsim/study/planner.hpp, "fleet plan"; docs/fleet.md "Sizing a
// fleet"): the base's classes and services prepared once (plans, checkpoints, measured
// capacities), then the fleet run at each searched pool size and spares, then a bisection
// between the largest size that misses and the smallest that meets every deadline and SLO.
#include "frontier.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/sim/fleet_run.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>

namespace trnsim::study {

namespace {

// Every fleet candidate is a fleet run; the bisection adds at most log2 of the range's gaps.
constexpr std::size_t kMaxFleetCandidates = 10'000;

[[noreturn]] void refuse(const std::string& key, const std::string& why,
                         const SourceLocation& at) {
    throw InputError(key, why, at);
}

/// The evaluation of one candidate's scenario (its InputError is its rejection).
FleetEvaluation evaluate(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                         const config::ScenarioBase& file, const sim::FleetRun& prepared,
                         const FleetCandidate& c) {
    FleetEvaluation x;
    config::ScenarioSpec spec;
    try {
        config::LoadOptions lo;
        lo.resolved_text = false;
        spec = config::load_scenario_with(file, fleet_overrides(plan, base, c), lo);
    } catch (const InputError& e) {
        x.verdict = Verdict::invalid;
        x.reason = e.what();
        return x;
    }
    const cluster::ClusterShape shape =
        cluster::Hierarchy::shape_of(spec.hardware.chip, spec.cluster);
    x.chips = shape.chips;
    x.cost_per_hour_usd = spec.cost.instance_hour.usd() * static_cast<double>(shape.instances);
    // The other pools (fleet.pools) as given: their chips and price count too.
    for (std::size_t k = 1; k < spec.fleet->pools.size(); ++k) {
        const config::FleetPool& p = spec.fleet->pools[k];
        const cluster::ClusterShape other =
            cluster::Hierarchy::shape_of(p.hardware.chip, p.cluster);
        x.chips += other.chips;
        x.cost_per_hour_usd += p.cost.instance_hour.usd() * static_cast<double>(other.instances);
    }
    if (plan.max_chips && x.chips > *plan.max_chips) {
        x.verdict = Verdict::chips;
        x.reason = fmt::integer(x.chips) + " chips, more than constraints.max_chips (" +
                   fmt::integer(*plan.max_chips) + ")";
        return x;
    }
    const sim::FleetRun run = sim::run_fleet(spec, prepared);
    const sim::FleetJobMeans m = sim::fleet_means(run);
    x.jobs = m.jobs;
    x.finished = m.finished;
    x.deadlines_missed = m.deadlines_missed;
    x.mean_wait = m.wait;
    x.end = Seconds::of(run.result.end.seconds());
    // The searched pool's (main's) fractions, over its own run.
    const fleet::FleetResult& main = run.pools.front().result;
    const double pool_s =
        static_cast<double>(run.pools.front().input.domains) * main.end.seconds();
    if (pool_s > 0.0) {
        x.busy_fraction =
            main.pool.domain_time[static_cast<std::size_t>(fleet::DomainUse::busy)].seconds() /
            pool_s;
        x.fragmented_fraction = main.pool.fragmented_time.seconds() / pool_s;
    }
    std::string first_slo;
    for (std::size_t i = 0; i < run.services.size(); ++i) {
        const double a = run.result.services[i].attainment();
        const double target = spec.fleet->services[i].attainment;
        if (!(a >= x.worst_attainment)) { // NaN at first
            x.worst_attainment = a;
            x.worst_service = run.services[i].name;
        }
        if (a < target) {
            ++x.slo_missed;
            if (first_slo.empty()) {
                first_slo = run.services[i].name + " met its SLO for " + fmt::percent(a) +
                            " of its requests, below its attainment of " +
                            fmt::percent(target);
            }
        }
    }
    if (x.deadlines_missed > 0) {
        x.verdict = Verdict::deadline;
        // The first job (in submission order) that missed, for the reason.
        for (std::size_t j = 0; j < run.result.jobs.size(); ++j) {
            const fleet::JobRecord& r = run.result.jobs[j];
            const sim::FleetClassRun& k =
                run.classes[static_cast<std::size_t>(run.class_of_job[j])];
            if (k.deadline <= Duration::zero()) {
                continue;
            }
            if (sim::missed_deadline(run, j)) {
                x.reason = fmt::integer(x.deadlines_missed) + " of " + fmt::integer(m.jobs) +
                           " jobs missed their deadline; the first, " + k.name + " #" +
                           fmt::integer(run.index_in_class[j]) + ", " +
                           (r.finished() ? "ended " + fmt::seconds((r.end - r.submit).seconds()) +
                                               " after its submission"
                                         : std::string("could not end in time")) +
                           " against " + fmt::seconds(k.deadline.seconds());
                break;
            }
        }
    } else if (x.slo_missed > 0) {
        x.verdict = Verdict::slo;
        x.reason = first_slo;
    }
    return x;
}

std::string count_text(std::int64_t n, const char* one, const char* many) {
    return fmt::integer(n) + " " + (n == 1 ? one : many);
}

} // namespace

std::vector<FleetCandidate> enumerate_fleet(const config::PlanSpec& plan,
                                            const config::ScenarioSpec& base) {
    const bool us = base.cluster.counts_ultraservers();
    const char* other = us ? "search.instances" : "search.ultraservers";
    const config::SearchKey<std::int64_t>& size = us ? plan.ultraservers : plan.instances;
    if ((us ? plan.instances : plan.ultraservers).given) {
        refuse(other,
               std::string("the base's pool counts ") + (us ? "UltraServers" : "instances") +
                   ": search " + (us ? "ultraservers" : "instances"),
               plan.sources.find(other));
    }
    const std::string keys = "a fleet plan searches the pool's size (search." +
                             std::string(us ? "ultraservers" : "instances") +
                             ") and search.spares, within constraints.deadline and max_chips";
    const std::pair<const char*, bool> other_keys[] = {
        {"search.global_batch", plan.global_batch.given},
        {"search.tp", plan.tp.given},
        {"search.cp", plan.cp.given},
        {"search.pp", plan.pp.given},
        {"search.dp", plan.dp.given},
        {"search.ep", plan.ep.given},
        {"search.zero", plan.zero.given},
        {"search.microbatch", plan.microbatch.given},
        {"search.recompute", plan.recompute.given},
        {"search.master_weights", plan.master_weights.given},
        {"search.checkpoint_interval", plan.checkpoint_interval.given},
        {"search.chip", plan.chip.given},
        {"search.weights", plan.weights.given},
        {"search.sparsity", plan.sparsity.given},
        {"search.max_batch", plan.max_batch.given},
        {"search.replicas", plan.replicas.given},
        {"search.prefill_replicas", plan.prefill_replicas.given}};
    for (const auto& [key, given] : other_keys) {
        if (given) {
            refuse(key, "is not a fleet plan's: " + keys + " (a class's or a service's own "
                        "keys are its scenario's)",
                   plan.sources.find(key));
        }
    }
    for (const char* key : {"constraints.budget", "constraints.min_ettr",
                            "constraints.hbm_headroom", "finalists", "frontier", "replications",
                            "requests"}) {
        if (plan.sources.contains(key)) {
            refuse(key, std::string("is not a fleet plan's: ") + keys +
                            "; it runs every candidate's whole fleet once",
                   plan.sources.find(key));
        }
    }
    if (plan.objective != config::Objective::min_cost || plan.serving.given) {
        refuse("objective",
               "a fleet plan's objective is min_cost (the fewest domains that meet every "
               "class's deadline and every service's SLO attainment)",
               plan.objective_origin);
    }
    const std::vector<std::int64_t> sizes =
        size.given ? size.values
                   : std::vector<std::int64_t>{us ? base.cluster.ultraservers
                                                  : base.cluster.instances};
    const std::vector<std::int64_t> spares =
        plan.spares.given ? plan.spares.values : std::vector<std::int64_t>{base.fleet->spares};
    bool deadline = plan.deadline.has_value();
    for (const config::FleetJobClass& c : base.fleet->jobs) {
        deadline = deadline || c.deadline > Duration::zero();
    }
    if (!deadline && base.fleet->services.empty()) {
        refuse("constraints.deadline",
               "the base's job classes have no deadline and it has no services: give "
               "constraints.deadline (each job's, from its submission) or fleet.jobs[i].deadline, "
               "else any pool that holds the largest gang is enough",
               plan.sources.contains("constraints") ? plan.sources.find("constraints")
                                                    : plan.base_origin);
    }
    if (sizes.size() * spares.size() > kMaxFleetCandidates) {
        refuse("search",
               "a fleet plan runs every candidate's fleet: at most " +
                   fmt::integer(static_cast<std::int64_t>(kMaxFleetCandidates)) +
                   " candidates, not " +
                   fmt::integer(static_cast<std::int64_t>(sizes.size() * spares.size())),
               plan.sources.find("search"));
    }
    std::vector<FleetCandidate> out;
    for (const std::int64_t s : spares) {
        for (const std::int64_t d : sizes) {
            out.push_back({d, s, false});
        }
    }
    return out;
}

std::vector<config::Override> fleet_overrides(const config::PlanSpec& plan,
                                              const config::ScenarioSpec& base,
                                              const FleetCandidate& c) {
    std::vector<config::Override> o;
    const bool us = base.cluster.counts_ultraservers();
    const config::SearchKey<std::int64_t>& size = us ? plan.ultraservers : plan.instances;
    o.push_back({us ? "cluster.ultraservers" : "cluster.instances", std::to_string(c.domains),
                 size.given ? size.origin : plan.base_origin});
    o.push_back({"fleet.spares", std::to_string(c.spares),
                 plan.spares.given ? plan.spares.origin : plan.base_origin});
    if (plan.deadline) {
        for (const config::FleetJobClass& k : base.fleet->jobs) {
            if (k.deadline <= Duration::zero()) {
                o.push_back({"fleet.jobs." + k.name + ".deadline",
                             std::to_string(plan.deadline->ns()) + "ns",
                             plan.sources.find("constraints.deadline")});
            }
        }
    }
    if (plan.seed) {
        o.push_back({"seed", std::to_string(*plan.seed), plan.sources.find("seed")});
    }
    return o;
}

FleetPlanResult run_fleet_plan(const config::PlanSpec& plan, const config::ScenarioSpec& base,
                               int threads,
                               const std::function<void(const std::string&)>& progress) {
    const auto say = [&](const std::string& s) {
        if (progress) {
            progress(s);
        }
    };
    FleetPlanResult r;
    r.candidates = enumerate_fleet(plan, base);
    const config::ScenarioBase file = config::ScenarioBase::read(plan.base);
    const auto t0 = std::chrono::steady_clock::now();
    say("preparing " + count_text(static_cast<std::int64_t>(base.fleet->jobs.size()),
                                  "job class", "job classes") +
        " and " + count_text(static_cast<std::int64_t>(base.fleet->services.size()), "service",
                             "services") +
        " once on " + count_text(threads, "thread", "threads"));
    const sim::FleetRun prepared = sim::prepare_fleet(base, threads);
    const auto t1 = std::chrono::steady_clock::now();
    r.prepare_seconds = std::chrono::duration<double>(t1 - t0).count();

    const auto run_all = [&](const std::vector<FleetCandidate>& batch) {
        std::vector<FleetEvaluation> got(batch.size());
        std::vector<std::exception_ptr> errors(batch.size());
        parallel_for(batch.size(), threads, [&](std::size_t i, int) {
            try {
                got[i] = evaluate(plan, base, file, prepared, batch[i]);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
        for (const auto& e : errors) {
            if (e) {
                std::rethrow_exception(e);
            }
        }
        return got;
    };
    say("running " + count_text(static_cast<std::int64_t>(r.candidates.size()), "fleet",
                                "fleets") +
        " on " + count_text(threads, "thread", "threads"));
    r.evaluations = run_all(r.candidates);

    // For each spares value: the smallest searched size that meets everything, and the
    // largest below it that does not; then bisection between the two (the spares values side
    // by side on the threads). A size a bisection rejects as invalid counts as a miss.
    std::vector<std::int64_t> spares_values;
    for (const FleetCandidate& c : r.candidates) {
        if (std::find(spares_values.begin(), spares_values.end(), c.spares) ==
            spares_values.end()) {
            spares_values.push_back(c.spares);
        }
    }
    struct Bracket {
        std::int64_t miss = -1, meet = -1;
    };
    std::vector<Bracket> brackets(spares_values.size());
    std::vector<FleetPlanResult::Fewest> fewest(spares_values.size());
    for (std::size_t k = 0; k < spares_values.size(); ++k) {
        fewest[k].spares = spares_values[k];
        std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            const FleetCandidate& c = r.candidates[i];
            if (c.spares != spares_values[k]) {
                continue;
            }
            smallest = std::min(smallest, c.domains);
            if (r.evaluations[i].verdict == Verdict::ok &&
                (brackets[k].meet < 0 || c.domains < brackets[k].meet)) {
                brackets[k].meet = c.domains;
            }
        }
        for (std::size_t i = 0; i < r.candidates.size(); ++i) {
            const FleetCandidate& c = r.candidates[i];
            if (c.spares == spares_values[k] && r.evaluations[i].verdict != Verdict::ok &&
                c.domains < brackets[k].meet && c.domains > brackets[k].miss) {
                brackets[k].miss = c.domains;
            }
        }
        fewest[k].at_low_end = brackets[k].meet >= 0 && brackets[k].meet == smallest;
    }
    const auto gap = [](const Bracket& b) {
        return b.meet >= 0 && b.miss >= 0 && b.meet - b.miss > 1;
    };
    while (std::any_of(brackets.begin(), brackets.end(), gap)) {
        std::vector<FleetCandidate> batch;
        std::vector<std::size_t> which;
        for (std::size_t k = 0; k < brackets.size(); ++k) {
            if (gap(brackets[k])) {
                batch.push_back({brackets[k].miss + (brackets[k].meet - brackets[k].miss) / 2,
                                 spares_values[k], true});
                which.push_back(k);
            }
        }
        say("bisecting: " + count_text(static_cast<std::int64_t>(batch.size()), "fleet",
                                       "fleets"));
        const std::vector<FleetEvaluation> got = run_all(batch);
        for (std::size_t b = 0; b < batch.size(); ++b) {
            Bracket& br = brackets[which[b]];
            (got[b].verdict == Verdict::ok ? br.meet : br.miss) = batch[b].domains;
            r.candidates.push_back(batch[b]);
            r.evaluations.push_back(got[b]);
        }
    }
    for (std::size_t k = 0; k < brackets.size(); ++k) {
        fewest[k].domains = brackets[k].meet;
    }
    r.fewest = std::move(fewest);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();

    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        if (r.evaluations[i].verdict == Verdict::ok) {
            r.ranking.push_back(static_cast<std::int64_t>(i));
        }
    }
    std::stable_sort(r.ranking.begin(), r.ranking.end(), [&](std::int64_t a, std::int64_t b) {
        const FleetCandidate& x = r.candidates[static_cast<std::size_t>(a)];
        const FleetCandidate& y = r.candidates[static_cast<std::size_t>(b)];
        if (x.domains != y.domains) {
            return x.domains < y.domains;
        }
        return x.spares < y.spares;
    });
    for (std::size_t k = 0; k < r.ranking.size(); ++k) {
        r.evaluations[static_cast<std::size_t>(r.ranking[k])].rank = static_cast<int>(k) + 1;
    }
    return r;
}

} // namespace trnsim::study
