// The serving fleet's replicas (private to the sim module; serve_layout.hpp lists the parts;
// include/trnsim/sim/serve.hpp describes the model): entities that each drive a
// serving::ReplicaScheduler through its steps, take requests from their router, report
// finishes (and, disaggregated, prefills) back to it, hand KV caches to decode replicas or take
// them in (serve_transfers.hpp), go down and up with their domain, and sample their KV blocks
// in use.
//
// Time. A replica runs hop - L behind the router in engine time (serve_layout.hpp, hop_ns):
// its own time is the engine's minus that offset, and every time it keeps (records, samples,
// step ends) is its own.
//
// Steps. The scheduler may run several identical decode iterations as one step; an arrival
// cuts the step at the next iteration boundary (poke), and the superseded step-end event is
// recognised by its generation. Step ends have priority 1, so requests arriving at the
// instant an iteration ends join the next iteration.
//
// Threading: replica r's state is touched only by r's handler; it writes the records of the
// requests it holds.
#pragma once

#include <cstdint>
#include <vector>

#include "trnsim/serving/scheduler.hpp"
#include "trnsim/sim/serve.hpp"

#include "serve_layout.hpp"
#include "serve_placement.hpp"
#include "serve_records.hpp"
#include "serve_transfers.hpp"

namespace trnsim::sim::detail {

class ServeReplicas {
public:
    /// The replicas of placement `pl`: their kinds from `in` (prefill replicas with
    /// in.prefill when it has a cost), their roles (unified, or prefill and decode when
    /// disaggregated). `transfers` is null unless disaggregated. `reports`: whether replicas
    /// tell their router of each finish (its policy counts them, its clients wait for them,
    /// or failures need them). `records` and `transfers` must outlive the replicas.
    ServeReplicas(const ServeInput& in, const Placement& pl, FleetRecords& records,
                  KvTransfers* transfers, bool reports);

    std::size_t size() const { return reps_.size(); }

    /// An event for replica r.
    void handle(ServeContext& ctx, std::uint32_t r, const engine::Event& e);
    /// Prefetches the state of the replica at index r (the engine's hook; r may be past the
    /// replicas, for a router shard's entity, and then the addresses are never read).
    void prefetch(std::uint32_t r) const {
        // The replica's scheduler object (about 1 KiB; its vectors' contents are one more
        // load away and are left to the handler).
        const char* p = reinterpret_cast<const char*>(&reps_[r]);
        for (std::size_t off = 0; off < sizeof(Replica); off += 64) {
            __builtin_prefetch(p + off, 1);
        }
    }

    /// The last event any replica handled (replica time).
    std::int64_t last_event() const;
    /// After the run: the KV samples up to `end` and the per-replica figures.
    void finish(std::int64_t end, ServingRun& out, std::vector<serving::TokenGap>& gaps);

private:
    struct Replica {
        Replica(const serving::ServingSpec& sv, const serving::IterationCost& cost,
                std::int64_t blocks, std::uint64_t seed, serving::ReplicaRole role, bool fast)
            : sched(sv, cost, blocks, seed, role, fast) {}
        serving::ReplicaScheduler sched;
        std::uint64_t generation = 0;
        std::int64_t pending = -1; ///< time of the valid step event, -1 when none
        std::int64_t next_sample = 0;
        std::vector<std::int32_t> samples; ///< blocks in use every sample_ns_
        std::int64_t last_event = 0;
        std::uint64_t transfers = 0;       ///< KV caches received
        double transfer_bytes = 0.0;
        bool down = false;                 ///< its domain failed; requests bounce
        std::uint32_t epoch = 0;           ///< failures so far
        std::int64_t down_ns = -1;         ///< replica time of the last failure
    };

    void sample_until(Replica& rep, std::int64_t t);
    /// Its domain failed: its state is gone, and every request it held goes back.
    void fail(ServeContext& ctx, std::uint32_t r, std::int64_t now);
    /// A KV transfer for decode replica r arrived or was cancelled (kKvArrived, kKvCancelled).
    void transfer_ended(ServeContext& ctx, std::uint32_t r, const engine::Event& e,
                        std::int64_t now);
    /// A failure of replica `failed` dropped request `id` at replica r (where: kAtPrefill or
    /// kAtDecode): back to its router.
    void drop(ServeContext& ctx, std::uint32_t r, std::uint64_t id, std::uint16_t where,
              std::uint32_t failed);
    void schedule_step(ServeContext& ctx, std::uint32_t r, std::int64_t at);
    /// Something arrived: cut a fast-forwarded step at the next boundary, or wake an idle
    /// replica (after the other arrivals of this instant).
    void poke(ServeContext& ctx, std::uint32_t r, std::int64_t now);
    void completed(ServeContext& ctx, std::uint32_t r, const serving::Completion& c);

    const ServeInput& in_;
    const Placement& pl_;
    FleetRecords& records_;
    KvTransfers* transfers_;
    const std::int64_t hop_; ///< engine delay of every router-replica event: the lookahead
    const std::int64_t off_; ///< replica time = engine time - off_ (router: engine time)
    const std::int64_t sample_ns_;
    /// KV samples per replica that fit in a sixteenth of ServeOptions::max_memory (failures
    /// can stretch a run far beyond the span check_memory estimated): the series stops there.
    std::size_t max_samples_ = 0;
    bool disaggregated_ = false;
    bool reports_ = true;
    std::int64_t prefix_tokens_ = 0;

    std::vector<Replica> reps_;
    std::vector<engine::EntityId> router_of_; ///< replica -> its router shard's entity
};

} // namespace trnsim::sim::detail
