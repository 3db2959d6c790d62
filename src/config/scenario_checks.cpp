// The checks of a scenario that need several of its values and depend on workload.type, the
// defaults they resolve (a fabric for a collective, a step simulation or disaggregated
// serving), and the warnings of settings without effect.
#include "scenario_checks.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/serving/spec.hpp"

#include "tables.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace trnsim::config::detail {

namespace {

/// Whether fabric `f` can join the chips of `cluster` (as Fabric::build takes them): one of
/// UltraServers for UltraServers; for plain instances one without UltraServers, with EFA
/// when there is more than one instance.
bool fabric_fits(const topology::FabricSpec& f, const cluster::ClusterSpec& cluster) {
    const bool ultraservers = f.scale_up.ultraserver_instances > 1;
    if (cluster.counts_ultraservers()) {
        return ultraservers;
    }
    return !ultraservers && (cluster.instances == 1 || f.scale_out.nics_per_instance > 0);
}

/// Disaggregated serving without cluster.fabric: the KV caches of the prefills move over the
/// chip's <chip>-ultracluster when it exists and fits the cluster; otherwise the error says
/// so at workload.serving.disaggregated and names the presets of the chip that fit.
void disaggregation_fabric(ScenarioSpec& spec, const Context& ctx) {
    const std::string chip = spec.hardware.chip.name;
    const std::string fallback = chip + "-ultracluster";
    const std::vector<std::string> presets = fabric_presets();
    const bool exists = std::find(presets.begin(), presets.end(), fallback) != presets.end();
    const SourceLocation where = spec.sources.find("workload.serving.disaggregated");
    if (exists) {
        topology::FabricSpec f =
            detail::load_fabric_ref(fallback, ctx, "cluster.fabric", spec.sources.find("cluster"));
        if (fabric_fits(f, spec.cluster)) {
            spec.fabric_ref = fallback;
            spec.fabric = std::move(f);
            spec.has_fabric = true;
            return;
        }
    }
    const std::string size = spec.cluster.counts_ultraservers()
                                 ? std::to_string(spec.cluster.ultraservers) + " UltraServer" +
                                       (spec.cluster.ultraservers == 1 ? "" : "s")
                                 : std::to_string(spec.cluster.instances) + " plain instance" +
                                       (spec.cluster.instances == 1 ? "" : "s");
    std::string fits;
    for (const std::string& name : presets) {
        if (name == fallback) {
            continue;
        }
        const topology::FabricSpec f =
            detail::load_fabric_ref(name, ctx, "cluster.fabric", spec.sources.find("cluster"));
        if (f.chip == chip && fabric_fits(f, spec.cluster)) {
            fits += (fits.empty() ? "" : " or ") + name;
        }
    }
    const std::string why = exists ? "the default fabric " + fallback + " does not fit " + size
                                   : "chip " + chip + " has no default fabric (" + fallback +
                                         " does not exist)";
    throw InputError("workload.serving.disaggregated",
                     "disaggregated serving moves the KV caches over the cluster's fabric, and " +
                         why + ": " +
                         (fits.empty() ? "no fabric preset of " + chip + " chips fits " + size +
                                             "; give cluster.fabric (a fabric file of " + chip +
                                             " chips)"
                                       : "give cluster.fabric: " + fits),
                     where.known() ? where : spec.sources.find("workload.serving"));
}

/// workload.type: inference: the model, max_context, sizes and SLO required; the training
/// keys refused; the draft and the sizes against the compiled context checked.
void check_inference(ScenarioSpec& spec, const Context& ctx) {
    const SourceLocation workload = spec.sources.find("workload");
    const auto at = [&](const std::string& key) { return spec.sources.find(key); };
    const auto given = [&](const std::string& key) { return spec.sources.contains(key); };
    for (const char* key : {"workload.sequence_length", "workload.global_batch", "workload.tokens",
                            "workload.steps", "workload.parallelism", "workload.moe_imbalance",
                            "workload.collective"}) {
        if (given(key)) {
            throw InputError(key,
                             "is for workload.type: training or collective, not inference (a "
                             "replica's layout is workload.serving)",
                             at(key));
        }
    }
    const char* needs = " (needed by workload.type: inference)";
    for (const char* key : {"workload.model", "workload.serving.max_context",
                            "workload.requests.input_tokens", "workload.requests.output_tokens",
                            "workload.slo.ttft", "workload.slo.tpot"}) {
        if (!given(key)) {
            throw InputError(key, std::string("required key is missing") + needs, workload);
        }
    }
    serving::InferenceSpec& inf = spec.inference;
    inf.model = spec.training.model;
    serving::ServingSpec& sv = inf.serving;
    sv.precision = spec.training.precision;
    if (sv.weight_bytes == 0) {
        sv.weight_bytes = sv.precision == compute::Precision::fp8    ? 1
                          : sv.precision == compute::Precision::fp32 ? 4
                                                                     : 2;
    }
    // `speculative: {}` (given, without keys) would leave speculation off without a word.
    if (sv.speculative || given("workload.serving.speculative")) {
        const std::string base = "workload.serving.speculative";
        if (!given(base + ".draft")) {
            throw InputError(base + ".draft", "required key is missing (the draft model)",
                             at(base));
        }
        if (!given(base + ".k")) {
            throw InputError(base + ".k", "required key is missing (draft tokens per iteration)",
                             at(base));
        }
    }
    // The checks of the values against each other (serving/spec.hpp) name a key path; its
    // location comes from the scenario's sources.
    try {
        serving::check_inference(inf);
    } catch (const InputError& e) {
        throw e.located(spec.sources);
    }
    serving::RequestSpec& rq = inf.requests;
    const bool trace_arrivals = rq.arrival.kind == serving::ArrivalSpec::Kind::trace;
    if (given("workload.requests.count") && given("workload.requests.duration")) {
        throw InputError("workload.requests.duration",
                         "give only one of workload.requests.count or duration, not both",
                         at("workload.requests.duration"));
    }
    if (!given("workload.requests.count") && !given("workload.requests.duration") &&
        !trace_arrivals) {
        throw InputError("workload.requests",
                         "give workload.requests.count or workload.requests.duration (a trace "
                         "alone replays every row once)",
                         at("workload.requests"));
    }
    if (rq.prefix.groups > 0 && rq.prefix.tokens == 0) {
        throw InputError("workload.requests.prefix.tokens",
                         "shared prefixes need their length in tokens",
                         at("workload.requests.prefix"));
    }
    if (sv.disaggregated.prefill_replicas > 0 && !spec.has_fabric) {
        disaggregation_fabric(spec, ctx);
    }
}

} // namespace

/// Checks that depend on workload.type: the training keys are required for training and
/// meaningless for a collective; a collective needs a fabric (default: <chip>-ultracluster).
void check_workload(ScenarioSpec& spec, const Context& ctx) {
    const SourceLocation workload = spec.sources.find("workload");
    const auto at = [&](const std::string& key) { return spec.sources.find(key); };
    auto& t = spec.training;
    const std::pair<const char*, bool> training_keys[] = {
        {"workload.model", !spec.model_ref.empty()},
        {"workload.sequence_length", t.sequence_length > 0},
        {"workload.global_batch", t.global_batch > 0},
        {"workload.tokens", t.tokens > 0},
        {"workload.steps", t.steps > 0},
    };
    if (spec.workload_type == WorkloadType::inference) {
        check_inference(spec, ctx);
        return;
    }
    for (const char* key : {"workload.serving", "workload.requests", "workload.slo"}) {
        if (spec.sources.contains(key)) {
            throw InputError(key,
                             std::string("is for workload.type: inference, not ") +
                                 to_string(spec.workload_type),
                             at(key));
        }
    }
    if (spec.workload_type == WorkloadType::collective) {
        for (const auto& [key, given] : training_keys) {
            if (given) {
                throw InputError(key, "is for workload.type: training, not collective", at(key));
            }
        }
        if (spec.reliability.enabled) {
            throw InputError("reliability", "is for workload.type: training, not collective",
                             at("reliability"));
        }
        if (!spec.has_fabric) {
            spec.fabric_ref = spec.hardware.chip.name + "-ultracluster";
            spec.fabric = detail::load_fabric_ref(spec.fabric_ref, ctx, "cluster.fabric",
                                                  spec.sources.find("cluster"));
            spec.has_fabric = true;
        }
        return;
    }
    const char* needs = " (needed by workload.type: training)";
    if (spec.model_ref.empty()) {
        throw InputError("workload.model", std::string("required key is missing") + needs, workload);
    }
    if (t.sequence_length == 0) {
        throw InputError("workload.sequence_length", std::string("required key is missing") + needs,
                         workload);
    }
    if (t.global_batch == 0) {
        throw InputError("workload.global_batch", std::string("required key is missing") + needs,
                         workload);
    }
    if (t.tokens > 0 && t.steps > 0) {
        throw InputError("workload.steps",
                         "give only one of workload.tokens or workload.steps, not both",
                         at("workload.steps"));
    }
    if (t.tokens == 0 && t.steps == 0) {
        throw InputError("workload", "give one of workload.tokens or workload.steps", workload);
    }
    if (spec.sources.contains("workload.parallelism.stage_layers") &&
        spec.sources.contains("workload.parallelism.balance")) {
        throw InputError("workload.parallelism.balance",
                         "give only one of workload.parallelism.stage_layers (the layers of "
                         "each stage) or workload.parallelism.balance (a rule for them)",
                         at("workload.parallelism.balance"));
    }
    if (const std::string why = workload::master_weights_refusal(t.optimizer.master_weights, t,
                                                                 spec.hardware.chip);
        !why.empty()) {
        throw InputError("workload.optimizer.master_weights", why,
                         at("workload.optimizer.master_weights"));
    }
    if (!spec.output.trace.empty() && spec.simulation.fidelity != Fidelity::step) {
        throw InputError("output.trace", "a timeline needs simulation.fidelity: step",
                         at("output.trace"));
    }
    if (spec.simulation.fidelity == Fidelity::step && !spec.has_fabric) {
        // The step simulation runs its communication over the fabric.
        spec.fabric_ref = spec.hardware.chip.name + "-ultracluster";
        spec.fabric = detail::load_fabric_ref(spec.fabric_ref, ctx, "cluster.fabric",
                                              spec.sources.find("cluster"));
        spec.has_fabric = true;
    }
}

/// Settings without effect here, requests the scenario cannot fulfil (issue 18: a warning
/// for each, `--strict` refuses them), and a layout chosen for the user (pipeline stages of
/// unequal layers when pp does not divide them and no layout key is given).
void collect_warnings(ScenarioSpec& spec) {
    const auto given = [&](const std::string& key) { return spec.sources.contains(key); };
    const auto warn = [&](const std::string& key, const std::string& message) {
        spec.warnings.push_back({key, message, spec.sources.find(key)});
    };
    const bool training = spec.workload_type == WorkloadType::training;
    const bool step = training && spec.simulation.fidelity == Fidelity::step;
    if (!step) {
        const char* why = training ? "has no effect at simulation.fidelity: analytic (the step "
                                     "simulation models it)"
                                   : "has no effect outside a training step simulation";
        for (const char* key : {"hardware.speed", "simulation.step_entities",
                                "simulation.fabric_collectives", "simulation.tp_collectives",
                                "workload.parallelism.grad_bucket"}) {
            if (given(key)) {
                warn(key, why);
            }
        }
    }
    if (training && !given("workload.parallelism.stage_layers") &&
        !given("workload.parallelism.balance")) {
        const auto& par = spec.training.parallelism;
        const std::int64_t layers = spec.training.model.layers;
        if (par.pp > 1 && par.pp <= layers && layers % par.pp != 0) {
            const std::int64_t q = layers / par.pp, r = layers % par.pp;
            const std::string stages =
                r == 1 ? "stage 1 holds " : "stages 1 to " + std::to_string(r) + " hold ";
            warn("workload.parallelism.pp",
                 "pp = " + std::to_string(par.pp) + " does not divide the model's " +
                     std::to_string(layers) + " layers: " + stages + std::to_string(q + 1) +
                     " layers, the others " + std::to_string(q) +
                     " (balance: even); set workload.parallelism.balance or stage_layers to "
                     "choose the layout");
        }
    }
    if (spec.workload_type == WorkloadType::inference) {
        for (const char* key : {"workload.optimizer", "workload.graph.grad_accumulator"}) {
            if (given(key)) {
                warn(key, "has no effect on serving (it is a training job's)");
            }
        }
    }
    if (given("output.trace_ranks") && spec.output.trace.empty()) {
        warn("output.trace_ranks", "has no effect without output.trace (or --trace)");
    }
    if (spec.reliability.enabled && spec.workload_type == WorkloadType::inference) {
        for (const char* key : {"reliability.checkpoint", "reliability.recovery.scope",
                                "reliability.recovery.run_degraded", "simulation.replications",
                                "simulation.duration", "simulation.time_limit",
                                "output.timeline"}) {
            if (given(key)) {
                warn(key, "has no effect on a serving fleet (nothing is checkpointed; one run "
                          "until every request has finished; docs/serving.md, \"Failures\")");
            }
        }
        std::string ignored;
        for (const reliability::FailureSpec& f : spec.reliability.failures) {
            if (reliability::is_switch(f.component) || f.effect == reliability::Effect::degrade) {
                const std::string name = f.cause.empty() ? to_string(f.component) : f.cause;
                if (ignored.find(name) == std::string::npos) {
                    ignored += (ignored.empty() ? "" : ", ") + name;
                }
            }
        }
        bool trace_switches = false;
        for (const reliability::TraceFailure& f : spec.reliability.trace.failures) {
            trace_switches = trace_switches || reliability::is_switch(f.component);
        }
        if (trace_switches) {
            warn("reliability.trace",
                 "its switch failures do not take serving replicas down (requests reach them "
                 "over the front-end network, which is not modelled): they are not simulated");
        }
        if (!ignored.empty()) {
            warn("reliability.failures",
                 "switch failures and degrading failures (" + ignored +
                     ") do not take serving replicas down (requests reach them over the "
                     "front-end network, which is not modelled): they are not simulated");
        }
    }
    if (!spec.reliability.enabled) {
        for (const char* key : {"simulation.replications", "simulation.duration",
                                "simulation.time_limit", "output.timeline"}) {
            if (given(key)) {
                warn(key, "has no effect without a reliability section (nothing is replicated "
                          "or run over time)");
            }
        }
    } else if (spec.reliability.failures.empty() && spec.reliability.trace.failures.empty()) {
        warn("reliability", "has no failure processes (no preset, failures or trace): the run "
                            "simulation has nothing to fail, only checkpoints to take");
    }
    if (given("cost.pricing") && given("cost.instance_hour")) {
        warn("cost.pricing", "has no effect: cost.instance_hour sets the price");
    }
    if (spec.workload_type == WorkloadType::inference) {
        const serving::ServingSpec& sv = spec.inference.serving;
        if (given("workload.serving.ep") && sv.ep > 1 && !spec.inference.model.is_moe()) {
            warn("workload.serving.ep", "has no effect: the model has no experts");
        }
        if (given("workload.serving.prefix_caching") && sv.prefix_caching &&
            spec.inference.requests.prefix.groups == 0) {
            warn("workload.serving.prefix_caching",
                 "finds nothing to reuse: the requests have no shared prefixes "
                 "(workload.requests.prefix)");
        }
        if (given("simulation.router_window") && sv.disaggregated.prefill_replicas == 0 &&
            spec.simulation.router_window <= sv.router_latency) {
            warn("simulation.router_window", "has no effect at or below the router latency");
        }
        // The reverse (groups without tokens) is an error: a prefix needs a length.
        for (const char* key :
             {"workload.requests.prefix.tokens", "workload.requests.prefix.fraction"}) {
            if (given(key) && spec.inference.requests.prefix.groups == 0) {
                warn(key, "has no effect without workload.requests.prefix.groups (no shared "
                          "prefixes are drawn)");
            }
        }
    }
}

} // namespace trnsim::config::detail
