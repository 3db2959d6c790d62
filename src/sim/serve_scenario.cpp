#include "trnsim/sim/serve_scenario.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/engine/window_driver.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/workload/model.hpp"

#include "serving_setup.hpp"

#include <algorithm>
#include <chrono>
#include <memory>

#include "serve_bounds.hpp"
#include "serve_placement.hpp"

namespace trnsim::sim {

using detail::ServingSetup;

ServingSetup detail::serving_setup(const config::ScenarioSpec& spec, int threads) {
    ServingSetup s;
    const serving::InferenceSpec& inf = spec.inference;
    const int lnc = spec.hardware.lnc > 0 ? spec.hardware.lnc : spec.hardware.chip.lnc_default;
    s.cost = std::make_unique<serving::IterationCostModel>(
        inf.model, spec.hardware.chip, lnc, inf.serving,
        serving::ReplicaPlacement::single(spec.hardware.chip, lnc, inf.serving.tp),
        spec.hardware.hbm_reserve);
    const serving::ReplicaMemory& mem = s.cost->memory();
    ServeInput& in = s.input;
    in.spec = inf;
    in.chip = spec.hardware.chip;
    in.lnc = lnc;
    in.cluster = spec.cluster;
    if (spec.has_fabric) {
        in.fabric = spec.fabric;
    }
    in.replica = {s.cost.get(), mem.kv_capacity_tokens / inf.serving.kv_block};
    in.kv_bytes_per_token = mem.kv_per_token;
    in.trace = spec.trace;
    in.reliability = spec.reliability;
    in.seed = static_cast<std::uint64_t>(spec.seed);
    in.threads = threads;
    in.options.kv_sample = spec.simulation.kv_sample;
    in.options.router_window = spec.simulation.router_window;
    in.options.keep_records = spec.output.requests;
    in.options.max_memory = spec.simulation.max_memory;
    return s;
}

ServingLayout check_serving(const config::ScenarioSpec& spec) {
    const ServingSetup s = detail::serving_setup(spec, 1);
    // The requests' own checks (arrivals that do not fit in simulated time) come first, then
    // the memory estimate, which places the replicas itself: what it refuses could take the
    // other checks minutes or more memory than the machine has (10 million spares).
    (void)serving::RequestSource(s.input.spec.requests, s.input.spec.serving.max_context,
                                 s.input.seed, s.input.trace);
    detail::check_memory(spec, s.input, *s.cost);
    const std::vector<ReplicaPlacement> placement = check_serving_input(s.input);
    detail::check_progress(s.input, *s.cost);
    ServingLayout out;
    out.lnc = s.input.lnc;
    out.replicas = static_cast<std::uint32_t>(placement.size());
    for (const ReplicaPlacement& p : placement) {
        out.prefill_replicas += p.prefill ? 1 : 0;
    }
    out.kv_blocks_per_replica = s.input.replica.kv_blocks;
    out.memory = s.cost->memory();
    out.buckets = s.cost->buckets();
    const int shards = s.input.spec.serving.router_shards;
    out.router_shards = static_cast<std::uint32_t>(
        shards == 0 ? detail::auto_router_shards(s.input.spec, placement) : shards);
    return out;
}

double arrival_horizon_s() { return static_cast<double>(serving::kArrivalHorizonNs) * 1e-9; }

double mean_request_alone_seconds(const config::ScenarioSpec& spec) {
    const ServingSetup s = detail::serving_setup(spec, 1);
    const auto [input, output] = detail::mean_request(s.input);
    return detail::alone_seconds(*s.cost, input, output);
}

ServingScenarioRun run_serving(const config::ScenarioSpec& spec, int threads) {
    if (threads <= 0) {
        threads = spec.simulation.threads > 0 ? spec.simulation.threads
                                              : engine::default_thread_count();
    }
    const ServingSetup s = detail::serving_setup(spec, threads);
    const auto started = std::chrono::steady_clock::now();
    ServingRun run = simulate_serving(s.input);
    return detail::serving_outcome(
        spec, s, std::move(run),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

ServingScenarioRun detail::serving_outcome(const config::ScenarioSpec& spec,
                                           const ServingSetup& s, ServingRun run,
                                           double wall_s) {
    ServingScenarioRun out;
    out.run = std::move(run);
    out.wall = Seconds::of(wall_s);

    const compute::ChipSpec& chip = spec.hardware.chip;
    const cluster::ClusterShape shape = cluster::Hierarchy::shape_of(chip, spec.cluster);
    out.chips = shape.chips;
    out.instances = shape.instances;
    out.ultraservers = shape.ultraservers;
    out.tp = spec.inference.serving.tp;
    out.lnc = s.input.lnc;
    out.kv_blocks_per_replica = s.input.replica.kv_blocks;
    out.memory = s.cost->memory();
    out.buckets = s.cost->buckets();

    const serving::ServingSummary& sum = out.run.summary;
    // Spare instances are paid for like the cluster's.
    out.instance_hours = static_cast<double>(shape.instances + out.run.stats.spare_instances) *
                         out.run.stats.end.seconds() / 3600.0;
    out.cost_usd = out.instance_hours * spec.cost.instance_hour.usd();
    out.cost_per_million_output_tokens_usd =
        sum.output_tokens > 0 ? out.cost_usd / static_cast<double>(sum.output_tokens) * 1e6
                              : 0.0;

    // Measured utilisation: what the simulated iterations moved and computed per rank.
    const double rank_bw =
        chip.hbm_bandwidth.bytes_per_s() / static_cast<double>(chip.ranks_per_chip(out.lnc));
    const ServingRunStats& rs = out.run.stats;
    const double bytes = static_cast<double>(rs.iterations) *
                             static_cast<double>(out.memory.weights_per_rank.count()) +
                         rs.kv_tokens_touched *
                             static_cast<double>(out.memory.kv_per_token_per_rank.count());
    const double in_service_s =
        static_cast<double>(rs.replicas) * rs.end.seconds() - rs.replica_down.seconds();
    const serving::InferenceSpec& inf = spec.inference;
    const double flops =
        2.0 * static_cast<double>(workload::compute_stats(inf.model).active) /
        static_cast<double>(inf.serving.tp) *
        static_cast<double>(rs.prefill_tokens + rs.decode_tokens);
    const double rank_peak = chip.peak(inf.serving.precision).per_s() /
                             static_cast<double>(chip.ranks_per_chip(out.lnc));
    if (in_service_s > 0.0) {
        out.mbu = bytes / (in_service_s * rank_bw);
        out.mfu = flops / (in_service_s * rank_peak);
    }
    if (rs.busy.seconds() > 0.0) {
        out.mbu_busy = bytes / (rs.busy.seconds() * rank_bw);
    }

    // MBU of a decode iteration at the compiled batch and the mean served context.
    if (sum.requests > 0) {
        const double n = static_cast<double>(sum.requests);
        out.mean_decode_context = static_cast<double>(sum.input_tokens) / n +
                                  0.5 * static_cast<double>(sum.output_tokens) / n;
        const std::int64_t batch = spec.inference.serving.max_batch;
        const auto context = std::clamp<std::int64_t>(
            static_cast<std::int64_t>(out.mean_decode_context + 0.5), 1,
            spec.inference.serving.max_context);
        serving::IterationShape shape_it;
        shape_it.decode_sequences = batch;
        shape_it.decode_context_tokens = batch * context;
        shape_it.decode_max_context = context;
        out.decode_iteration = Seconds::of(s.cost->seconds(shape_it));
        const double read = static_cast<double>(out.memory.weights_per_rank.count()) +
                            static_cast<double>(batch * context) *
                                static_cast<double>(out.memory.kv_per_token_per_rank.count());
        out.decode_mbu = out.decode_iteration.seconds() > 0.0
                             ? read / (out.decode_iteration.seconds() * rank_bw)
                             : 0.0;
    }
    return out;
}

} // namespace trnsim::sim
