// The run simulation of one training job as a tenant of a shared engine (engine/tenants.hpp):
// its components, domains, power domains and controller on the engine's entities, its chunks
// (run.hpp) as pauses. It runs one replication, replication 0 of simulate(), and its summary is
// what simulate() returns for that replication alone; the controller's delay behind the true
// time (an hour) is its own clock, not the engine's lookahead.
#pragma once

#include "trnsim/engine/tenants.hpp"
#include "trnsim/reliability/run.hpp"

#include <memory>

namespace trnsim::reliability {

class RunTenant final : public engine::Tenant<engine::QuaternaryHeap> {
public:
    using Queue = engine::QuaternaryHeap;

    /// Checks the input as simulate() does (validate; InputError with a key path). The
    /// control's replications and threads are not used: a tenant is one replication, run on
    /// the shared engine's threads.
    RunTenant(const RunInput& input, const RunControl& control);
    ~RunTenant() override;
    RunTenant(const RunTenant&) = delete;
    RunTenant& operator=(const RunTenant&) = delete;

    engine::PartitionMap partition_map() const override;
    Duration lookahead() const override;
    void start(engine::Injector<Queue>& in) override;
    void handle(engine::Context<Queue>& ctx, const engine::Event& e) override;
    void prefetch(engine::EntityId e) const override;
    std::int64_t pause_at() const override;
    void resume(engine::Injector<Queue>& in) override;
    bool done() const override;

    /// After the run, once: the summary of its replication (RunSummary::seconds left at 0).
    RunSummary take_summary();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace trnsim::reliability
