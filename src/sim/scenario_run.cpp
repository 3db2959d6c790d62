#include "trnsim/sim/scenario_run.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/engine/window_driver.hpp"

namespace trnsim::sim {

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

ScenarioOutcome run_scenario(const config::ScenarioSpec& spec,
                             const ScenarioObservers& observers) {
    try {
        if (spec.workload_type == config::WorkloadType::collective) {
            const int threads = spec.simulation.threads > 0 ? spec.simulation.threads
                                                            : engine::default_thread_count();
            return run_collective_bench(collective_bench_spec(spec, threads),
                                        observers.collective_row);
        }
        return run_training(spec);
    } catch (const InputError& e) {
        throw e.located(spec.sources);
    }
}

} // namespace trnsim::sim
