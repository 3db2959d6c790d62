#include "trnsim/sim/workload_kinds.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/engine/window_driver.hpp"

#include <array>

namespace trnsim::sim {

namespace {

ScenarioOutcome run_training_kind(const config::ScenarioSpec& spec, const RunSettings& s) {
    RunOptions options;
    options.record = s.record;
    return run_training(spec, options);
}

ScenarioOutcome run_inference_kind(const config::ScenarioSpec& spec, const RunSettings& s) {
    return run_serving(spec, s.threads);
}

ScenarioOutcome run_collective_kind(const config::ScenarioSpec& spec, const RunSettings& s) {
    return run_collective_bench(collective_bench_spec(spec, run_threads(spec, s.threads)),
                                s.collective_row);
}

const std::array<WorkloadKind, 3> kKinds = {{
    {config::WorkloadType::training, "training", true, true,
     [](const config::ScenarioSpec& spec) { (void)check_training(spec); }, run_training_kind},
    {config::WorkloadType::collective, "collective", false, false,
     [](const config::ScenarioSpec& spec) {
         check_collective_bench(collective_bench_spec(spec, 1));
     },
     run_collective_kind},
    {config::WorkloadType::inference, "inference", true, false,
     [](const config::ScenarioSpec& spec) { (void)check_serving(spec); }, run_inference_kind},
}};

} // namespace

std::span<const WorkloadKind> workload_kinds() { return kKinds; }

const WorkloadKind& workload_kind(config::WorkloadType type) {
    for (const WorkloadKind& k : kKinds) {
        if (k.type == type) {
            return k;
        }
    }
    TRNSIM_CHECK(false, "a workload type without a kind");
    return kKinds.front();
}

int run_threads(const config::ScenarioSpec& spec, int requested) {
    if (requested > 0) {
        return requested;
    }
    return spec.simulation.threads > 0 ? spec.simulation.threads : engine::default_thread_count();
}

CollectiveBenchSpec collective_bench_spec(const config::ScenarioSpec& spec, int threads) {
    CollectiveBenchSpec bench;
    bench.chip = spec.hardware.chip;
    bench.lnc = spec.hardware.lnc;
    bench.fabric = spec.fabric;
    bench.cluster = spec.cluster;
    bench.op = spec.collective.op;
    bench.sizes = spec.collective.sizes;
    bench.ranks = spec.collective.ranks;
    bench.algorithm = spec.collective.algorithm;
    bench.threads = threads;
    return bench;
}

ScenarioOutcome run_scenario(const config::ScenarioSpec& spec, const RunSettings& settings) {
    if (!spec.tenants.empty()) {
        return run_tenants(spec, settings.threads);
    }
    if (spec.fleet) {
        return run_fleet(spec, settings.threads);
    }
    const WorkloadKind& kind = workload_kind(spec.workload_type);
    try {
        if (!kind.run_checks_first) {
            kind.check(spec);
        }
        return kind.run(spec, settings);
    } catch (const InputError& e) {
        throw e.located(spec.sources);
    }
}

void check_scenario(const config::ScenarioSpec& spec) {
    if (!spec.tenants.empty()) {
        check_tenants(spec);
        return;
    }
    if (spec.fleet) {
        check_fleet(spec);
        return;
    }
    try {
        workload_kind(spec.workload_type).check(spec);
    } catch (const InputError& e) {
        throw e.located(spec.sources);
    }
}

} // namespace trnsim::sim
