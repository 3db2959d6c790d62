// A serving fleet ready to run (private to the sim module): checked, placed, its engine model,
// partitions and lookahead built. simulate_serving runs it on an engine of its own; ServeTenant
// runs it as a tenant of a shared engine (engine/tenants.hpp, sim/tenants.hpp). Both make the
// same calls in the same order, so a tenant's records equal the fleet's alone.
#pragma once

#include "trnsim/engine/tenants.hpp"
#include "trnsim/sim/serve.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "serve_layout.hpp"
#include "serve_model.hpp"
#include "serve_placement.hpp"

namespace trnsim::sim::detail {

class ServeFleet {
public:
    /// Checks `in` and builds the fleet; `in` must outlive it. InputError with a key path.
    explicit ServeFleet(const ServeInput& in);
    ServeFleet(const ServeFleet&) = delete;
    ServeFleet& operator=(const ServeFleet&) = delete;

    const engine::PartitionMap& partition_map() const { return map_; }
    Duration lookahead() const { return lookahead_; }
    ServeModel& model() { return *model_; }
    const ServeModel& model() const { return *model_; }

    /// The routers' start events, through `at(entity, time_ns, type)`.
    template <class At>
    void start(At&& at) const {
        const auto replicas = static_cast<std::uint32_t>(placement_.replicas.size());
        for (std::uint32_t k = 0; k < placement_.shards; ++k) {
            at(router_entity(k, replicas), std::int64_t{0}, kStart);
        }
    }

    /// After the run: the fleet's records, summary and figures (`run`: the engine's
    /// statistics of this fleet, `lookahead`: the engine's).
    ServingRun finish(const engine::RunStats& run, Duration lookahead);

private:
    const ServeInput& in_;
    Placement placement_;
    std::optional<topology::Fabric> fabric_;
    std::shared_ptr<const serving::AzureTrace> trace_;
    std::unique_ptr<serving::RequestSource> source_;
    engine::PartitionMap map_;
    std::unique_ptr<ServeModel> model_;
    Duration lookahead_;
};

/// A serving fleet as a tenant of a shared engine. Its fabric (disaggregated serving) would be
/// resolved at the shared engine's windows, so sim/tenants.cpp refuses disaggregated tenants.
class ServeTenant final : public engine::Tenant<ServeQueue> {
public:
    explicit ServeTenant(const ServeInput& in) : fleet_(in) {}

    engine::PartitionMap partition_map() const override { return fleet_.partition_map(); }
    Duration lookahead() const override { return fleet_.lookahead(); }
    void start(engine::Injector<ServeQueue>& in) override {
        handled_.assign(fleet_.partition_map().partitions(), 0);
        fleet_.start([&](engine::EntityId e, std::int64_t t, engine::EventType type) {
            in.at(e, t, type);
        });
    }
    void handle(ServeContext& ctx, const engine::Event& e) override {
        ++handled_[ctx.partition()];
        fleet_.model().handle(ctx, e);
    }
    void prefetch(engine::EntityId e) const override { fleet_.model().prefetch(e); }
    bool has_window_edge() const override { return true; }
    void window_edge(ServeEdge& edge) override { fleet_.model().window_edge(edge); }

    /// After the run on the shared engine (`engine`: its statistics and lookahead).
    ServingRun finish(const engine::RunStats& engine, Duration lookahead) {
        engine::RunStats mine = engine;
        mine.events = 0;
        for (const std::uint64_t n : handled_) {
            mine.events += n;
        }
        mine.remote_events = 0;
        return fleet_.finish(mine, lookahead);
    }

private:
    ServeFleet fleet_;
    std::vector<std::uint64_t> handled_; ///< per partition of the fleet
};

} // namespace trnsim::sim::detail
