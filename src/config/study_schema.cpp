// Plan files (include/trnsim/config/study.hpp): their schema table; the kinds of scenario
// values sweeps and plans share; which kind of study file a file is; the schema documentation
// of both study files (the sweep table is in sweep_schema.cpp).
#include "study_common.hpp"

namespace trnsim::config {

using namespace study_files;

namespace {

// ---------------------------------------------------------------------------------------------
// Plan files

using PL = PlanSpec;

/// The values of one searched key: a single value, a list, or (integer keys) a range
/// {from: A, to: B, factor: F} or {from: A, to: B, step: S}. Each value is checked with the
/// scenario's own rule for `scenario_key`.
template <class T>
Entry<PL> search_entry(const std::string& key, const std::string& scenario_key,
                       SearchKey<T> PL::*member, T (*read)(const ScenarioSpec&), bool ranges,
                       const std::string& doc) {
    auto e = detail::make_entry<PL>("search." + key,
                                    ranges ? "list, value or range" : "list or value", "",
                                    "values of " + scenario_key, doc);
    e.default_doc = "the base scenario's";
    e.apply = [scenario_key, member, read, ranges](PL& out, const YAML::Node& n,
                                                   const std::string& p,
                                                   const SourceLocation& loc, const Context& ctx) {
        const Entry<ScenarioSpec>* rule = detail::scenario_schema().find(scenario_key);
        SearchKey<T>& k = out.*member;
        k.given = true;
        k.origin = loc;
        k.values.clear();
        k.written.clear();
        const auto check = [&](const YAML::Node& v, const std::string& vp,
                               const SourceLocation& vl) {
            ScenarioSpec scratch;
            rule->apply(scratch, v, vp, vl, ctx);
            k.values.push_back(read(scratch));
            k.written.push_back({flow_text(v), vl});
        };
        if (n.IsMap()) {
            if (!ranges) {
                throw InputError(p, "expected a value or a list of values, got a mapping", loc);
            }
            const YAML::Node from = n["from"], to = n["to"], factor = n["factor"],
                             step = n["step"];
            for (auto it = n.begin(); it != n.end(); ++it) {
                const std::string name = it->first.Scalar();
                if (name != "from" && name != "to" && name != "factor" && name != "step") {
                    const std::string guess =
                        detail::closest(name, {"from", "to", "factor", "step"});
                    throw InputError(p + "." + name,
                                     "unknown key '" + name + "' of a range (from, to, and "
                                     "factor or step)" +
                                         (guess.empty() ? "" : "; did you mean '" + guess + "'?"),
                                     where(ctx, p + "." + name, it->first, loc));
                }
            }
            if (!from.IsDefined() || !to.IsDefined() ||
                factor.IsDefined() == step.IsDefined()) {
                throw InputError(p, "a range is {from: A, to: B, factor: F} or {from: A, to: B, "
                                    "step: S}",
                                 loc);
            }
            const auto integer = [&](const YAML::Node& v, const char* name, std::int64_t lo) {
                const std::string vp = p + "." + name;
                return detail::parse_checked<std::int64_t>(
                    v, vp, where(ctx, vp, v, loc), parse_count,
                    [lo](std::int64_t x) { return x >= lo && x <= (std::int64_t{1} << 40); },
                    ">= " + std::to_string(lo));
            };
            const std::int64_t a = integer(from, "from", 0);
            const std::int64_t b = integer(to, "to", a);
            const std::int64_t by = factor.IsDefined() ? integer(factor, "factor", 2)
                                                       : integer(step, "step", 1);
            if (factor.IsDefined() && a == 0) {
                throw InputError(p + ".from", "a range by factor starts above 0",
                                 where(ctx, p + ".from", from, loc));
            }
            for (std::int64_t v = a; v <= b; v = factor.IsDefined() ? v * by : v + by) {
                if (k.written.size() >= 10000) {
                    throw InputError(p, "the range has more than 10,000 values", loc);
                }
                check(YAML::Node(std::to_string(v)), p, where(ctx, p, n, loc));
            }
            return;
        }
        if (n.IsSequence()) {
            if (n.size() == 0) {
                throw InputError(p, "an empty list: give at least one value", loc);
            }
            for (std::size_t i = 0; i < n.size(); ++i) {
                const std::string vp = p + "[" + std::to_string(i) + "]";
                check(n[i], vp, where(ctx, vp, n[i], loc));
            }
            return;
        }
        check(n, p, loc);
    };
    return e;
}

template <class Q>
Entry<PL> optional_limit(const std::string& path, std::optional<Q> PL::*member,
                         Q (*parse)(std::string_view), const std::string& type,
                         const std::string& doc) {
    auto e = detail::make_entry<PL>(path, type, "", "> 0", doc);
    e.default_doc = "no limit";
    e.apply = [member, parse](PL& out, const YAML::Node& n, const std::string& p,
                              const SourceLocation& loc, const Context&) {
        out.*member = detail::parse_checked<Q>(
            n, p, loc, parse, [](const Q& q) { return q > Q(); }, "> 0");
    };
    return e;
}

/// objective: a name (min_cost) or, for serving plans, a mapping {type: min_cost, rate: 20/s,
/// slo_attainment: 0.9} whose keys are checked here; whether they suit the base scenario's
/// arrivals is checked by the planner.
Entry<PL> objective_entry() {
    auto e = detail::make_entry<PL>(
        "objective", "choice or mapping", "min_cost",
        "min_time, min_cost, max_goodput, max_rate; or {type: ..., rate, speedup, rate_range, "
        "speedup_range, slo_attainment, tolerance}",
        "Training: the expected time to train, the expected cost or the goodput (tokens kept "
        "per second). Serving (a base with workload.type: inference) takes a mapping: "
        "`{type: min_cost, rate: 20/s, slo_attainment: 0.9}` ranks the fleets that meet the SLO "
        "for at least that fraction of the requests, Poisson (or the base's Gamma) arrivals at "
        "`rate` (a trace base: `speedup`), by cost per hour; `{type: max_rate, slo_attainment: "
        "0.9, rate_range: [1/s, 100/s], tolerance: 0.02}` finds each fleet's highest rate "
        "within the SLO by bisection (a trace base: `speedup_range`). slo_attainment "
        "defaults to 0.99, tolerance (the bracket's high / low - 1 where the bisection stops) "
        "to 0.02, rate_range to [0.1/s, 1000/s] and speedup_range to [0.01, 1000] "
        "(docs/user-guide.md, section 5).");
    e.apply = [](PL& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                 const Context& ctx) {
        const auto type_of = [](const YAML::Node& v, const std::string& vp,
                                const SourceLocation& vl) {
            const std::string t = detail::scalar_text(v, vp, vl);
            std::vector<std::string> names;
            for (const auto& nm : enum_names(Objective{})) {
                if (t == nm.name) {
                    return nm.value;
                }
                names.push_back(nm.name);
            }
            const std::string guess = detail::closest(t, names);
            throw InputError(vp,
                             "'" + t + "' is not one of: min_time, min_cost, max_goodput, "
                                       "max_rate" +
                                 (guess.empty() ? "" : "; did you mean '" + guess + "'?"),
                             vl);
        };
        if (!n.IsMap()) {
            out.objective = type_of(n, p, loc);
            return;
        }
        auto& o = out.serving;
        o.given = true;
        const std::vector<std::string> keys = {"type",          "rate",           "speedup",
                                               "rate_range",    "speedup_range",
                                               "slo_attainment", "tolerance"};
        std::vector<std::string> seen;
        for (auto it = n.begin(); it != n.end(); ++it) {
            const std::string k = it->first.Scalar();
            // A lookup takes the first of a repeated key: refused, as in every mapping.
            if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
                throw InputError(p + "." + k, "duplicate key",
                                 where(ctx, p + "." + k, it->first, loc));
            }
            seen.push_back(k);
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
                const std::string guess = detail::closest(k, keys);
                throw InputError(p + "." + k,
                                 "unknown key '" + k + "' of the objective (type, rate, "
                                 "speedup, rate_range, speedup_range, slo_attainment, "
                                 "tolerance)" +
                                     (guess.empty() ? "" : "; did you mean '" + guess + "'?"),
                                 where(ctx, p + "." + k, it->first, loc));
            }
        }
        const auto at = [&](const char* k) {
            return where(ctx, p + "." + k, n[k], loc);
        };
        if (!n["type"].IsDefined()) {
            throw InputError(p + ".type", "required key is missing (min_cost or max_rate)", loc);
        }
        out.objective = type_of(n["type"], p + ".type", at("type"));
        if (out.objective != Objective::min_cost && out.objective != Objective::max_rate) {
            throw InputError(p + ".type",
                             "the mapping form is for serving plans: min_cost or max_rate "
                             "(a training plan writes objective: " +
                                 std::string(to_string(out.objective)) + ")",
                             at("type"));
        }
        const bool min_cost = out.objective == Objective::min_cost;
        const auto only = [&](const char* k, bool allowed, const char* what) {
            if (n[k].IsDefined() && !allowed) {
                throw InputError(p + "." + k, std::string("is for ") + what, at(k));
            }
        };
        only("rate", min_cost, "type: min_cost (max_rate searches rate_range)");
        only("speedup", min_cost, "type: min_cost (max_rate searches speedup_range)");
        only("rate_range", !min_cost, "type: max_rate (min_cost serves one rate)");
        only("speedup_range", !min_cost, "type: max_rate (min_cost serves one speed-up)");
        only("tolerance", !min_cost, "type: max_rate (the bisection's stopping rule)");
        if (n["rate"].IsDefined() && n["speedup"].IsDefined()) {
            throw InputError(p + ".speedup", "give rate (Poisson or Gamma arrivals) or speedup "
                                             "(a trace), not both",
                             at("speedup"));
        }
        if (n["rate_range"].IsDefined() && n["speedup_range"].IsDefined()) {
            throw InputError(p + ".speedup_range", "give rate_range or speedup_range, not both",
                             at("speedup_range"));
        }
        const auto positive = [](double x) { return x > 0.0 && std::isfinite(x) && x <= 1e6; };
        if (n["rate"].IsDefined()) {
            o.rate_origin = at("rate");
            o.rate_per_s = read_rate_per_s(n["rate"], p + ".rate", o.rate_origin, ctx);
        }
        if (n["speedup"].IsDefined()) {
            o.speedup_origin = at("speedup");
            o.speedup = detail::parse_checked<double>(n["speedup"], p + ".speedup",
                                                      o.speedup_origin, parse_real, positive,
                                                      "> 0 and at most 1e6");
        }
        const auto range = [&](const char* k, bool rate, SourceLocation& origin) {
            const std::string kp = p + "." + k;
            origin = at(k);
            const YAML::Node v = n[k];
            if (!v.IsSequence() || v.size() != 2) {
                throw InputError(kp, std::string("expected [LOW, HIGH], such as ") +
                                         (rate ? "[1/s, 100/s]" : "[1, 50]") + ", got " +
                                         kind_text(v),
                                 origin);
            }
            std::array<double, 2> b{};
            for (std::size_t i = 0; i < 2; ++i) {
                const std::string ip = kp + "[" + std::to_string(i) + "]";
                const SourceLocation il = where(ctx, ip, v[i], origin);
                b[i] = rate ? read_rate_per_s(v[i], ip, il, ctx)
                            : detail::parse_checked<double>(v[i], ip, il, parse_real, positive,
                                                            "> 0 and at most 1e6");
            }
            if (!(b[0] < b[1])) {
                throw InputError(kp, "LOW must be below HIGH", origin);
            }
            return b;
        };
        if (n["rate_range"].IsDefined()) {
            o.rate_range = range("rate_range", true, o.rate_range_origin);
        }
        if (n["speedup_range"].IsDefined()) {
            o.speedup_range = range("speedup_range", false, o.speedup_range_origin);
        }
        if (n["slo_attainment"].IsDefined()) {
            o.attainment_origin = at("slo_attainment");
            o.slo_attainment = detail::parse_checked<double>(
                n["slo_attainment"], p + ".slo_attainment", o.attainment_origin, parse_real,
                [](double x) { return x > 0.0 && x <= 1.0; },
                "in (0, 1]: the fraction of requests that meet the SLO");
        }
        if (n["tolerance"].IsDefined()) {
            o.tolerance_origin = at("tolerance");
            o.tolerance = detail::parse_checked<double>(
                n["tolerance"], p + ".tolerance", o.tolerance_origin, parse_real,
                [](double x) { return x >= 1e-4 && x <= 1.0; }, "1e-4 to 1");
        }
    };
    return e;
}

Schema<PL> build_plan() {
    Schema<PL> s("Plan");
    s.field(base_entry<PL>("plan", "candidate"));
    s.field(study_name<PL>());
    s.field(objective_entry());
    s.section("constraints", "Limits a plan must meet (each optional).");
    s.field(optional_limit<Duration>("constraints.deadline", &PL::deadline, parse_duration,
                                     "duration",
                                     "Expected time to train (with failures when the base "
                                     "scenario has a reliability section) at most. A fleet "
                                     "plan: each job's time from its submission to its end, "
                                     "for the classes without a deadline of their own."));
    s.field(optional_limit<Money>("constraints.budget", &PL::budget, parse_money, "money",
                                  "Expected cost (job and spare instances) at most."));
    {
        auto e = detail::make_entry<PL>("constraints.max_chips", "count", "", ">= 1",
                                        "Chips of the job and its spares at most.");
        e.default_doc = "no limit";
        e.apply = [](PL& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context&) {
            out.max_chips = detail::parse_checked<std::int64_t>(
                n, p, loc, parse_count, [](std::int64_t x) { return x >= 1; }, ">= 1");
        };
        s.field(e);
    }
    {
        auto e = detail::make_entry<PL>("constraints.min_ettr", "number", "", "0 to 1",
                                        "Expected effective training time ratio at least.");
        e.default_doc = "no limit";
        e.apply = [](PL& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context&) {
            out.min_ettr = detail::parse_checked<double>(
                n, p, loc, parse_real, [](double x) { return x >= 0.0 && x <= 1.0; }, "0 to 1");
        };
        s.field(e);
    }
    s.field(detail::real<PL>("constraints.hbm_headroom",
                             [](PL& x) -> double& { return x.hbm_headroom; }, "0", 0.0, 0.9,
                             "0 to 0.9",
                             "Fraction of each rank's HBM the plan must leave free (plans that "
                             "do not fit at all are always rejected)."));
    s.section("search", "The search space: each key a list of values (or one value; integer "
                        "keys also a range {from: 64, to: 1024, factor: 2}). Absent keys keep "
                        "the base scenario's value. Every combination is a candidate.");
    s.field(search_entry<std::int64_t>(
        "ultraservers", "cluster.ultraservers", &PL::ultraservers,
        [](const ScenarioSpec& x) { return x.cluster.ultraservers; }, true,
        "UltraServers of the job (a base scenario counting UltraServers)."));
    s.field(search_entry<std::int64_t>(
        "instances", "cluster.instances", &PL::instances,
        [](const ScenarioSpec& x) { return x.cluster.instances; }, true,
        "Instances of the job (a base scenario counting instances)."));
    s.field(search_entry<std::int64_t>(
        "global_batch", "workload.global_batch", &PL::global_batch,
        [](const ScenarioSpec& x) { return x.training.global_batch; }, true,
        "Global batches in sequences per step. With workload.tokens the token count stays the "
        "base's and the steps follow the batch (with workload.steps the steps stay and the "
        "tokens follow). A larger batch allows more data parallelism; whether the model still "
        "converges in the same tokens is outside trnsim."));
    s.field(search_entry<int>("tp", "workload.parallelism.tp", &PL::tp,
                              [](const ScenarioSpec& x) { return x.training.parallelism.tp; },
                              true,
                              "Tensor parallel degrees (serving plans: workload.serving.tp, "
                              "ranks per replica)."));
    s.field(search_entry<int>("cp", "workload.parallelism.cp", &PL::cp,
                              [](const ScenarioSpec& x) { return x.training.parallelism.cp; },
                              true,
                              "Context parallel degrees (ring attention): each sequence split "
                              "over cp ranks, so the same chips need cp times fewer data-parallel "
                              "replicas; 2 x cp must divide the sequence length."));
    s.field(search_entry<int>("pp", "workload.parallelism.pp", &PL::pp,
                              [](const ScenarioSpec& x) { return x.training.parallelism.pp; },
                              true, "Pipeline stages."));
    s.field(search_entry<int>("dp", "workload.parallelism.dp", &PL::dp,
                              [](const ScenarioSpec& x) { return x.training.parallelism.dp; },
                              true, "Data parallel degrees (auto: the ranks left)."));
    s.field(search_entry<int>("ep", "workload.parallelism.ep", &PL::ep,
                              [](const ScenarioSpec& x) { return x.training.parallelism.ep; },
                              true,
                              "Expert parallel degrees (MoE; serving plans: "
                              "workload.serving.ep, expert groups in a replica)."));
    s.field(search_entry<int>("zero", "workload.parallelism.zero", &PL::zero,
                              [](const ScenarioSpec& x) { return x.training.parallelism.zero; },
                              true, "ZeRO stages."));
    s.field(search_entry<int>(
        "microbatch", "workload.parallelism.microbatch", &PL::microbatch,
        [](const ScenarioSpec& x) { return x.training.parallelism.microbatch; }, true,
        "Sequences per microbatch."));
    s.field(search_entry<workload::Recompute>(
        "recompute", "workload.parallelism.recompute", &PL::recompute,
        [](const ScenarioSpec& x) { return x.training.parallelism.recompute; }, false,
        "Activation recomputation: none, selective, full."));
    s.field(search_entry<workload::MasterWeights>(
        "master_weights", "workload.optimizer.master_weights", &PL::master_weights,
        [](const ScenarioSpec& x) { return x.training.optimizer.master_weights; }, false,
        "The optimizer's master weights: fp32 (a copy), none (the BF16 weights updated with "
        "stochastic rounding: 4 bytes a parameter less)."));
    s.field(search_entry<Duration>(
        "checkpoint_interval", "reliability.checkpoint.interval", &PL::checkpoint_interval,
        [](const ScenarioSpec& x) { return x.reliability.checkpoint.interval; }, false,
        "Checkpoint intervals (durations or auto); needs a reliability section in the base "
        "scenario."));
    s.field(search_entry<std::int64_t>(
        "spares", "reliability.spares.ultraservers", &PL::spares,
        [](const ScenarioSpec& x) { return x.reliability.spares.ultraservers; }, true,
        "Spare domains (UltraServers or instances, as the cluster counts); needs a reliability "
        "section in the base scenario. A fleet plan: fleet.spares, part of the pool."));
    s.field(search_entry<std::string>(
        "chip", "hardware.chip", &PL::chip,
        [](const ScenarioSpec& x) { return x.hardware.chip_ref; }, false,
        "Serving plans: chip presets (trn2, trn1, inf2) or chip files; each candidate pays its "
        "chip's instance price. hardware.lnc stays the base's for the base's chip and is the "
        "chip's default for the others."));
    s.field(search_entry<std::string>(
        "weights", "workload.serving.weights", &PL::weights,
        [](const ScenarioSpec& x) { return x.inference.serving.weights_name(); }, false,
        "Serving plans: the weights' storage (bf16, fp8, int8, mxfp8, mxfp4); a candidate "
        "whose chip cannot multiply it is invalid."));
    s.field(search_entry<std::string>(
        "sparsity", "workload.serving.sparsity", &PL::sparsity,
        [](const ScenarioSpec& x) { return x.inference.serving.sparsity_name(); }, false,
        "Serving plans: structured sparsity of the weights (dense, or N:M patterns such as "
        "2:4); a candidate whose chip has no sparse matmul is invalid."));
    s.field(search_entry<int>(
        "max_batch", "workload.serving.max_batch", &PL::max_batch,
        [](const ScenarioSpec& x) { return x.inference.serving.max_batch; }, true,
        "Serving plans: compiled decode batches."));
    s.field(search_entry<int>(
        "replicas", "workload.serving.replicas", &PL::replicas,
        [](const ScenarioSpec& x) { return x.inference.serving.replicas; }, true,
        "Serving plans: replicas of the model (auto: as many as the cluster holds)."));
    s.field(search_entry<int>(
        "prefill_replicas", "workload.serving.disaggregated.prefill_replicas",
        &PL::prefill_replicas,
        [](const ScenarioSpec& x) { return x.inference.serving.disaggregated.prefill_replicas; },
        true, "Serving plans: replicas that only prefill (0: not disaggregated)."));
    {
        auto e = detail::make_entry<PL>(
            "requests", "count", "500", "1 to 1000000",
            "Serving plans: requests of each candidate's run (replacing the base's count or "
            "duration). Few keep a plan fast: a candidate of 500 requests runs in milliseconds "
            "to a second; each fleet starts empty, so a short run is kinder than a long one at "
            "a rate near the fleet's limit.");
        e.apply = [](PL& out, const YAML::Node& n, const std::string& p,
                     const SourceLocation& loc, const Context&) {
            out.requests = detail::parse_checked<std::int64_t>(
                n, p, loc, parse_count, [](std::int64_t x) { return x >= 1 && x <= 1000000; },
                "1 to 1000000");
            out.requests_origin = loc;
        };
        s.field(e);
    }
    s.field(detail::integer<PL>("finalists", [](PL& x) -> int& { return x.finalists; }, "8", 1,
                                1000,
                                "Best candidates by the objective (analytic estimate) that are "
                                "simulated in full."));
    s.field(detail::integer<PL>("frontier", [](PL& x) -> int& { return x.frontier; }, "8", 0,
                                1000,
                                "Further candidates from the estimated Pareto frontier of cost "
                                "and time to train, spread along it, also simulated in full."));
    s.field(optional_seed<PL>("Seed of every finalist's run (the same for all, so finalists that "
                              "share components see the same failure draws)."));
    s.field(optional_replications<PL>(
        "Replications of each finalist's run simulation (each replication draws its own "
        "failures from the seed)."));
    s.section("output", "Where results go.");
    s.field(output_file<PL>());
    return s;
}

const Schema<PL>& plan_schema() {
    static const Schema<PL> s = build_plan();
    return s;
}

PlanSpec load_plan_root(const YAML::Node& root, const std::string& text, const std::string& file,
                        const fs::path& dir) {
    SourceMap sources;
    PlanSpec s = load_study_root(plan_schema(), root, text, file, dir, sources);
    s.objective_origin = sources.find("objective");
    s.sources = sources;
    return s;
}

} // namespace

ValueKind value_kind(const std::string& path) {
    const std::string* type = entry_type(path);
    if (type == nullptr) {
        return ValueKind::text;
    }
    if (starts_with(*type, "integer") || starts_with(*type, "count")) {
        return ValueKind::integer;
    }
    if (starts_with(*type, "number")) {
        return ValueKind::real;
    }
    if (starts_with(*type, "duration")) {
        return ValueKind::duration;
    }
    if (starts_with(*type, "bytes")) {
        return ValueKind::bytes;
    }
    if (starts_with(*type, "bandwidth")) {
        return ValueKind::bandwidth;
    }
    if (starts_with(*type, "money")) {
        return ValueKind::money;
    }
    return ValueKind::text;
}

std::optional<double> numeric_value(const std::string& path, const std::string& value_yaml) {
    const ValueKind kind = value_kind(path);
    if (kind == ValueKind::text) {
        return std::nullopt;
    }
    YAML::Node n;
    try {
        n = YAML::Load(value_yaml);
    } catch (const YAML::Exception&) {
        return std::nullopt;
    }
    if (!n.IsScalar()) {
        return std::nullopt;
    }
    const std::string& t = n.Scalar();
    try {
        switch (kind) {
        case ValueKind::integer:
            return static_cast<double>(parse_count(t));
        case ValueKind::real:
            return parse_real(t);
        case ValueKind::duration:
            return parse_duration(t).seconds();
        case ValueKind::bytes:
            return static_cast<double>(parse_bytes(t).count());
        case ValueKind::bandwidth:
            return parse_bandwidth(t).bytes_per_s();
        case ValueKind::money:
            return parse_money(t).usd();
        case ValueKind::text:
            break;
        }
    } catch (const UnitError&) {
    }
    return std::nullopt;
}

std::string format_value(ValueKind kind, double si) {
    switch (kind) {
    case ValueKind::integer:
        return std::to_string(std::llround(si));
    case ValueKind::real:
        return shortest(si);
    case ValueKind::duration:
        return shortest(si) + "s";
    case ValueKind::bytes:
        return std::to_string(std::llround(si)) + "B";
    case ValueKind::bandwidth:
        return shortest(si) + "B/s";
    case ValueKind::money:
        return shortest(si) + "USD";
    case ValueKind::text:
        break;
    }
    throw std::invalid_argument("format_value: a text key has no number");
}

FileKind file_kind(const std::string& path) {
    // A file that cannot be read or parsed is reported by the scenario loader.
    if (!input_file_problem(path).empty()) {
        return FileKind::scenario;
    }
    try {
        const YAML::Node root = detail::load_one_document(read_input_file(path, "")).node;
        if (!root.IsMap() || !root["base"].IsDefined()) {
            return FileKind::scenario;
        }
        for (const char* key : {"search", "objective", "constraints"}) {
            if (root[key].IsDefined()) {
                return FileKind::plan;
            }
        }
        return FileKind::sweep;
    } catch (const InputError&) {
        return FileKind::scenario;
    } catch (const YAML::Exception&) {
        return FileKind::scenario;
    }
}

PlanSpec load_plan(const std::string& path) {
    const std::string text = read_file(path, "plan");
    return load_plan_root(parse_document(text, path, "plan"), text, path,
                          fs::path(path).parent_path());
}

PlanSpec load_plan_text(const std::string& text, const std::string& name) {
    return load_plan_root(parse_document(text, name, "plan"), text, name, fs::current_path());
}

std::vector<std::string> search_input_files(const PlanSpec& plan) {
    std::vector<std::string> files;
    if (!plan.chip.given) {
        return files;
    }
    const fs::path dirs[] = {fs::path(plan.base).parent_path(),
                             fs::path(plan.file).parent_path()};
    for (const fs::path& dir : dirs) {
        Context ctx;
        ctx.file = plan.file;
        ctx.base_dir = dir;
        ctx.data_dir = data_dir();
        for (const std::string& ref : plan.chip.values) {
            try {
                const std::string file =
                    detail::find_preset(ref, "topologies/chips", "chip", ctx, "search.chip",
                                        plan.chip.origin)
                        .string();
                if (std::find(files.begin(), files.end(), file) == files.end()) {
                    files.push_back(file);
                }
            } catch (const InputError&) {
                // Not found: the candidates naming it are refused, nothing of it is read.
            }
        }
    }
    return files;
}

std::string study_schema_markdown() {
    std::string md;
    md += "\n## " + sweep_schema().title() + " file (`trnsim batch`)\n\n";
    md += "A sweep names a base scenario and the keys that vary. Each grid key, each zip group "
          "and the random block is one axis; the points are every combination of the axes (grid "
          "keys in file order, then zip groups, then random samples; the last axis varies "
          "fastest). Every point runs `replications` times, each run with its own seed: a hash "
          "of the base seed, the point's key changes and the replicate, so a point's results do "
          "not depend on its position in the sweep. Every point is validated against the "
          "scenario schema before anything runs; an error names the key path and the line of "
          "the sweep file that wrote the value.\n\n";
    md += sweep_schema().markdown();
    md += "\n## " + plan_schema().title() + " file (`trnsim plan`)\n\n";
    md += "A plan names a base scenario, an objective, constraints and a search space; every "
          "combination of the search values is a candidate. Candidates are estimated "
          "analytically (the step estimate, and with a reliability section the closed-form "
          "failure and checkpoint model of docs/reliability.md), then the best `finalists` and "
          "up to `frontier` further points of the estimated cost/time Pareto frontier are "
          "simulated in full with the base scenario's `simulation.fidelity`.\n\n"
          "A base scenario with `workload.type: inference` makes a serving plan: the search keys "
          "are chip, ultraservers and instances (both may be given), tp (workload.serving.tp), "
          "max_batch, replicas and prefill_replicas; every candidate is simulated with "
          "`requests` requests at the objective's rate (min_cost) or bisected for the highest "
          "rate within the SLO (max_rate); the training-only keys are refused "
          "(docs/user-guide.md, section 5).\n\n";
    md += plan_schema().markdown();
    return md;
}

} // namespace trnsim::config
