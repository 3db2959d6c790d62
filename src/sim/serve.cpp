// The serving fleet on the engine (sim/serve.hpp describes the model): the entry points.
// The model lives in the serve_* files of this directory; serve_layout.hpp lists its parts.
#include "trnsim/sim/serve.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/engine/simulator.hpp"
#include "trnsim/reliability/run.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/topology/fabric.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "serve_fleet.hpp"
#include "serve_layout.hpp"
#include "serve_model.hpp"
#include "serve_placement.hpp"

namespace trnsim::sim {

namespace {

using detail::kFirstReplica;
using detail::Placement;
using serving::RequestRecord;

bool needs_trace(const serving::RequestSpec& r) {
    using K = serving::TokenDistribution::Kind;
    return r.arrival.kind == serving::ArrivalSpec::Kind::trace || r.input.kind == K::trace ||
           r.output.kind == K::trace;
}

/// What simulate_serving checks and builds before it simulates.
struct Prepared {
    int lnc = 0;
    Placement placement;
    std::optional<topology::Fabric> fabric;
    std::shared_ptr<const serving::AzureTrace> trace;
};

Prepared prepare(const ServeInput& in) {
    Prepared p;
    p.lnc = in.lnc > 0 ? in.lnc : in.chip.lnc_default;
    if (p.lnc < 1 || in.chip.physical_cores % p.lnc != 0) {
        throw InputError("hardware.lnc", "LNC " + std::to_string(p.lnc) +
                                             " does not divide the " +
                                             std::to_string(in.chip.physical_cores) +
                                             " cores of a chip");
    }
    if (!in.replica.cost || in.replica.kv_blocks < 1) {
        throw std::invalid_argument("serve: every replica kind needs a cost and KV blocks");
    }
    p.placement = detail::place(in, p.lnc);
    const Placement& pl = p.placement;
    if (in.reliability.enabled) {
        reliability::validate_fleet(in.reliability, detail::fleet_shape(in),
                                     detail::fleet_hardware(in));
    }
    if (in.fabric && in.fabric->chip != in.chip.name) {
        // Its links' bandwidths and latencies are another chip's: KV transfers over it would
        // run at the wrong speed (as collective benchmarks refuse it).
        throw InputError("cluster.fabric", "fabric '" + in.fabric->name + "' is made of " +
                                               in.fabric->chip + " chips, not " + in.chip.name);
    }
    if (in.spec.serving.disaggregated.prefill_replicas > 0) {
        if (!in.fabric) {
            throw InputError("cluster.fabric",
                             "disaggregated serving moves KV caches over the fabric: give one");
        }
        if (in.kv_bytes_per_token.count() <= 0) {
            throw std::invalid_argument("serve: disaggregation needs the KV bytes per token");
        }
        const std::int64_t domains = in.fabric->scale_up.ultraserver_instances > 0
                                         ? pl.instances / in.fabric->scale_up.ultraserver_instances
                                         : pl.instances;
        p.fabric = topology::Fabric::build(*in.fabric, domains);
        if (static_cast<std::int64_t>(p.fabric->chips()) != pl.chips) {
            throw InputError("cluster.fabric", "fabric " + in.fabric->name + " holds " +
                                                   std::to_string(p.fabric->chips()) +
                                                   " chips for this cluster, the cluster has " +
                                                   std::to_string(pl.chips));
        }
    }
    p.trace = in.trace;
    if (!p.trace && needs_trace(in.spec.requests)) {
        p.trace = std::make_shared<serving::AzureTrace>(serving::read_azure_trace(
            in.spec.requests.arrival.trace_file, in.spec.requests.arrival.speedup));
    }
    return p;
}

} // namespace

std::vector<ReplicaPlacement> check_serving_input(const ServeInput& in) {
    const Prepared p = prepare(in);
    const serving::RequestSource source(in.spec.requests, in.spec.serving.max_context, in.seed,
                                        p.trace);
    return p.placement.replicas;
}

namespace detail {

ServeFleet::ServeFleet(const ServeInput& in) : in_(in) {
    Prepared prepared = prepare(in);
    placement_ = std::move(prepared.placement);
    fabric_ = std::move(prepared.fabric);
    trace_ = std::move(prepared.trace);
    source_ = std::make_unique<serving::RequestSource>(
        in.spec.requests, in.spec.serving.max_context, in.seed, trace_);
    const Placement& pl = placement_;

    // One router: partition 0 holds it and the wake entity, then one partition per NeuronLink
    // domain with replicas. K router shards: partition k holds shard k and its replicas
    // (partition 0 also the wake entity); no event crosses partitions.
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    const std::uint32_t entities = kFirstReplica + replicas + (pl.shards - 1);
    if (pl.shards == 1) {
        std::vector<std::uint32_t> starts = {0};
        for (std::uint32_t r = 0; r < replicas; ++r) {
            if (r == 0 || pl.replicas[r].domain != pl.replicas[r - 1].domain) {
                starts.push_back(kFirstReplica + r);
            }
        }
        map_ = engine::PartitionMap::from_starts(entities, starts);
    } else {
        std::vector<std::uint32_t> owner(entities, 0);
        for (std::uint32_t r = 0; r < replicas; ++r) {
            owner[kFirstReplica + r] = pl.shard_of_domain[pl.replicas[r].domain];
        }
        for (std::uint32_t k = 1; k < pl.shards; ++k) {
            owner[kFirstReplica + replicas + (k - 1)] = k;
        }
        map_ = engine::PartitionMap::from_owners(owner, pl.shards);
    }

    model_ = std::make_unique<ServeModel>(in, pl, *source_, fabric_ ? &*fabric_ : nullptr,
                                          map_.partitions());
    // Disaggregated, the fabric's flows are resolved at the window edges: the windows stay the
    // router's, whatever the shards.
    const bool fabric_windows = in.spec.serving.disaggregated.prefill_replicas > 0;
    lookahead_ = Duration::from_ns(pl.shards == 1 || fabric_windows
                                       ? hop_ns(in)
                                       : std::max(hop_ns(in), kShardedWindowNs));
}

ServingRun ServeFleet::finish(const engine::RunStats& run, Duration lookahead) {
    const ServeInput& in = in_;
    const Placement& pl = placement_;
    ServeModel& model = *model_;
    ServingRun out;
    out.placement = pl.replicas;
    std::vector<RequestRecord> records = model.take_records();
    std::int64_t end = model.last_event();
    // A request that never finished (failures left no replica to serve it, or it was given
    // up after kMaxAttempts attempts) is left out of the figures: the results are partial
    // (ServingSummary::unfinished).
    for (const RequestRecord& r : records) {
        if (r.finished()) {
            end = std::max(end, r.finish.ns());
        }
    }
    std::vector<serving::TokenGap> gaps;
    model.finish(end, out, gaps);
    model.catch_up_outages();
    model.failure_stats(end, out.stats);
    out.summary = serving::summarize(records, in.spec.slo);
    out.slowest = serving::slowest_replica(records);
    serving::add_itl(out.summary, std::move(gaps));
    if (in.options.keep_records) {
        out.requests = std::move(records);
    }
    ServingRunStats& st = out.stats;
    const auto replicas = static_cast<std::uint32_t>(pl.replicas.size());
    st.replicas = replicas;
    for (const ReplicaPlacement& p : pl.replicas) {
        st.prefill_replicas += p.prefill ? 1 : 0;
    }
    st.replicas_per_unit = pl.per_unit;
    st.router_shards = pl.shards;
    st.unit_is_ultraserver = pl.unit_is_ultraserver;
    st.partitions = map_.partitions();
    st.events = run.events;
    st.remote_events = run.remote_events;
    st.windows = run.windows;
    st.shared_windows = run.shared_windows;
    st.lookahead = lookahead;
    st.router_latency =
        Duration::from_ns(std::max<std::int64_t>(in.spec.serving.router_latency.ns(), 1));
    st.threads = run.threads;
    st.end = Seconds::of(static_cast<double>(end) * 1e-9);
    return out;
}

} // namespace detail

ServingRun simulate_serving(const ServeInput& in) {
    detail::ServeFleet fleet(in);
    engine::Simulator<detail::ServeModel, detail::ServeQueue> sim(
        fleet.model(), fleet.partition_map(), fleet.lookahead());
    fleet.start([&](engine::EntityId e, std::int64_t t, engine::EventType type) {
        sim.schedule(e, SimTime::from_ns(t), type);
    });
    const int threads = in.threads > 0 ? in.threads : engine::default_thread_count();
    const engine::RunStats run = sim.run(SimTime::max(), threads);
    return fleet.finish(run, fleet.lookahead());
}

} // namespace trnsim::sim
