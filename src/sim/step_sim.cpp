// simulate_step: the entry point of the step simulation. The model lives in the step_*
// files of this directory; step_layout.hpp lists its parts.
#include "trnsim/sim/step_sim.hpp"

#include <algorithm>

#include "trnsim/engine/simulator.hpp"

#include "step_model.hpp"

namespace trnsim::sim {

StepSimResult simulate_step(const workload::Plan& plan, const topology::Fabric& fabric,
                            const StepSimOptions& options) {
    detail::StepModel model(plan, fabric, options);
    engine::Simulator<detail::StepModel, detail::StepQueue> sim(
        model, model.partition_map(), Duration::from_ns(model.lookahead_ns()));
    for (std::uint64_t e = 0; e < model.worker_count(); ++e) {
        sim.schedule(static_cast<engine::EntityId>(e), SimTime::zero(), detail::kWorkerStart);
    }
    const engine::RunStats run = sim.run(SimTime::max(), std::max(1, options.threads));
    return model.result(run);
}

} // namespace trnsim::sim
