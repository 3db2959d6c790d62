#include "trnsim/sim/tenants.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/engine/tenants.hpp"
#include "trnsim/reliability/run_tenant.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <chrono>
#include <deque>
#include <optional>

#include "entry_error.hpp"
#include "serve_fleet.hpp"
#include "serving_setup.hpp"

namespace trnsim::sim {

namespace {

/// An error of tenant i's scenario, located in the file and keyed under tenants[i].
InputError tenant_error(const InputError& e, const config::ScenarioSpec& spec, std::size_t i) {
    return detail::entry_error(e, spec, "tenants[" + std::to_string(i) + "]", "tenant");
}

void check_tenant(const config::ScenarioSpec& t) {
    switch (t.workload_type) {
    case config::WorkloadType::collective:
        throw InputError("workload.type",
                         "a collective benchmark measures the fabric on its own; it is not a "
                         "tenant (run it as a scenario of its own)",
                         t.sources.find("workload.type"));
    case config::WorkloadType::inference:
        if (t.inference.serving.disaggregated.prefill_replicas > 0) {
            throw InputError("workload.serving.disaggregated",
                             "disaggregated serving is not a tenant yet: its KV transfers are "
                             "resolved at the engine's window edges, which a shared engine "
                             "would move (run it as a scenario of its own)",
                             t.sources.find("workload.serving.disaggregated"));
        }
        break;
    case config::WorkloadType::training:
        if (t.reliability.enabled && t.simulation.replications > 1) {
            throw InputError("simulation.replications",
                             "a tenants scenario runs one replication of each training job's "
                             "run simulation; remove simulation.replications",
                             t.sources.find("simulation.replications"));
        }
        break;
    }
    workload_kind(t.workload_type).check(t);
}

/// One tenant while the shared engine runs: the training job's halves or the serving
/// fleet's setup, and its engine tenant (none for a training job without failures).
struct Slot {
    std::optional<TrainingPrep> training;
    std::unique_ptr<reliability::RunTenant> job;
    std::optional<detail::ServingSetup> serving;
    std::unique_ptr<detail::ServeTenant> fleet;
    std::size_t index = 0; ///< in the TenantSet
};

} // namespace

void check_tenants(const config::ScenarioSpec& spec) {
    if (!spec.output.trace.empty()) {
        throw InputError("output.trace",
                         "a tenants scenario writes no step timeline; run the training tenant's "
                         "workload as a scenario of its own with --trace",
                         spec.sources.find("output.trace"));
    }
    for (std::size_t i = 0; i < spec.tenants.size(); ++i) {
        const config::ScenarioSpec& t = *spec.tenants[i].scenario;
        try {
            check_tenant(t);
        } catch (const InputError& e) {
            throw tenant_error(e, t, i);
        }
    }
}

TenantsRun run_tenants(const config::ScenarioSpec& spec, int threads) {
    check_tenants(spec);
    threads = run_threads(spec, threads);
    engine::TenantSet<engine::QuaternaryHeap> set;
    std::deque<Slot> slots; // never moved: the tenants refer to their setups
    for (std::size_t i = 0; i < spec.tenants.size(); ++i) {
        const config::ScenarioSpec& t = *spec.tenants[i].scenario;
        Slot& slot = slots.emplace_back();
        try {
            if (t.workload_type == config::WorkloadType::training) {
                slot.training = prepare_training(t);
                if (slot.training->input) {
                    slot.job = std::make_unique<reliability::RunTenant>(*slot.training->input,
                                                                        slot.training->control);
                    slot.index = set.add(*slot.job);
                }
            } else {
                slot.serving = detail::serving_setup(t, threads);
                slot.fleet = std::make_unique<detail::ServeTenant>(slot.serving->input);
                slot.index = set.add(*slot.fleet);
            }
        } catch (const InputError& e) {
            throw tenant_error(e, t, i);
        }
    }

    TenantsRun out;
    out.threads = threads;
    const auto started = std::chrono::steady_clock::now();
    engine::RunStats stats;
    if (set.size() > 0) {
        stats = set.run(threads);
        out.lookahead = Duration::from_ns(set.lookahead().ns());
    }
    out.wall = Seconds::of(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    out.events = stats.events;
    out.windows = stats.windows;
    out.threads = stats.threads > 0 ? stats.threads : threads;
    for (std::size_t i = 0; i < spec.tenants.size(); ++i) {
        const config::TenantSpec& ts = spec.tenants[i];
        const config::ScenarioSpec& t = *ts.scenario;
        Slot& slot = slots[i];
        TenantRun r;
        r.name = ts.name;
        r.allocation = ts.allocation;
        r.spec = ts.scenario;
        if (slot.training) {
            if (slot.job) {
                reliability::RunSummary summary = slot.job->take_summary();
                summary.seconds = out.wall.seconds();
                r.engine_events = set.handled(slot.index);
                complete_training(slot.training->run, t, std::move(summary));
            }
            r.outcome = std::move(slot.training->run);
        } else {
            r.engine_events = set.handled(slot.index);
            ServingRun run = slot.fleet->finish(stats, set.lookahead());
            r.outcome =
                detail::serving_outcome(t, *slot.serving, std::move(run), out.wall.seconds());
        }
        out.tenants.push_back(std::move(r));
    }
    return out;
}

} // namespace trnsim::sim
