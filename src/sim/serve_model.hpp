// The serving fleet's engine model (private to the sim module; serve_layout.hpp lists the
// parts): it owns the records, the failures, the KV transfers, the routers and the replicas,
// sends each event to the part its entity belongs to, resolves the fabric at window edges,
// and hands the parts' figures out after the run.
//
// Invariants: the parts are built once, in a fixed order (records, failures, transfers,
// routers, replicas), and never rebuilt, so the references between them stay valid; during
// the run only handlers (one entity's state each, and the records of the requests it holds)
// and the window edge (all partitions stopped) change state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trnsim/serving/metrics.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/sim/serve.hpp"
#include "trnsim/topology/fabric.hpp"

#include "serve_failures.hpp"
#include "serve_layout.hpp"
#include "serve_placement.hpp"
#include "serve_records.hpp"
#include "serve_replicas.hpp"
#include "serve_router.hpp"
#include "serve_transfers.hpp"

namespace trnsim::sim::detail {

class ServeModel {
public:
    /// The fleet `pl` of `in` with requests from `source`; `fabric` (disaggregated only) for
    /// the KV transfers over `partitions` engine partitions. Every argument must outlive the
    /// model.
    ServeModel(const ServeInput& in, const Placement& pl, const serving::RequestSource& source,
               const topology::Fabric* fabric, std::uint32_t partitions);

    void handle(ServeContext& ctx, const engine::Event& e);
    /// The engine calls this for the entity of the next event: its replica's state.
    void prefetch(engine::EntityId e) const {
        if (e >= kFirstReplica) {
            replicas_.prefetch(e - kFirstReplica);
        }
    }
    void window_edge(ServeEdge& edge) {
        if (transfers_) {
            transfers_->window_edge(edge);
        }
    }

    /// After the run: every request's record, by id, freeing the tables as it goes.
    std::vector<serving::RequestRecord> take_records() {
        return records_.take(source_.closed_loop());
    }
    /// After the run, with router shards: the outages each shard did not follow up to the
    /// latest shard's done time (serve_failures.hpp, catch_up).
    void catch_up_outages() { failures_.catch_up(router_.latest_done()); }
    /// After the run: the failure figures up to `end` (router time).
    void failure_stats(std::int64_t end, ServingRunStats& st) const {
        failures_.add_stats(end, replicas_.size(), st);
    }
    /// The last event any replica handled.
    std::int64_t last_event() const { return replicas_.last_event(); }
    /// After the run: the KV samples up to `end` and the per-replica figures.
    void finish(std::int64_t end, ServingRun& out, std::vector<serving::TokenGap>& gaps) {
        replicas_.finish(end, out, gaps);
    }

private:
    const serving::RequestSource& source_;
    FleetRecords records_;
    ServeFailures failures_;
    std::unique_ptr<KvTransfers> transfers_; ///< disaggregated only
    ServeRouter router_;
    ServeReplicas replicas_;
};

} // namespace trnsim::sim::detail
