// The serving fleet's routers (private to the sim module; serve_layout.hpp lists the parts;
// include/trnsim/sim/serve.hpp "Events and latency" and "Router shards" give the model).
//
// A router shard owns the replicas of its NeuronLink domains as pools (unified or decode
// replicas; prefill replicas) and issues the requests whose id is its index modulo the shard
// count: open-loop arrivals at their times, or its closed-loop clients' requests. It sends
// each request to a replica by its policy (disaggregated: a prefill replica and the decode
// replica that gets the KV cache), counting what it sent against what the replicas reported
// back; a request no replica can take waits (stranded) until a domain serves again. With
// failures it also retries the requests a failed replica dropped (serve_failures.hpp).
//
// Threading: a shard's state is touched only by its own handler; it shares its partition with
// its replicas.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "trnsim/core/assert.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/spec.hpp"
#include "trnsim/sim/serve.hpp"

#include "serve_failures.hpp"
#include "serve_layout.hpp"
#include "serve_placement.hpp"
#include "serve_records.hpp"

namespace trnsim::sim::detail {

/// The router's view of a pool of replicas: its count of requests in flight on each member
/// (sent minus reported) and which members serve, with a tournament tree over the members
/// whose root is the least loaded enabled one (ties: the one chosen longest ago, then the
/// lowest index).
class ReplicaPool {
public:
    static constexpr std::uint32_t kNone = 0xffffffffu;

    void add(std::uint32_t replica) { members_.push_back(replica); }
    void build() {
        const std::size_t n = members_.size();
        load_.assign(n, 0);
        enabled_.assign(n, 1);
        available_ = n;
        last_.assign(n, 0);
        leaves_ = 1;
        while (leaves_ < n) {
            leaves_ <<= 1;
        }
        tree_.assign(2 * leaves_, kEmpty);
        for (std::size_t i = 0; i < n; ++i) {
            tree_[leaves_ + i] = static_cast<std::uint32_t>(i);
        }
        for (std::size_t v = leaves_ - 1; v >= 1; --v) {
            tree_[v] = better(tree_[2 * v], tree_[2 * v + 1]);
        }
    }
    std::size_t size() const { return members_.size(); }
    std::uint32_t member(std::uint32_t m) const { return members_[m]; }
    /// Requests in flight on member m, as the router counts them.
    std::int64_t load(std::uint32_t m) const { return load_[m]; }

    /// Picks a member for `policy` (prefix: the request's prefix id, 0 for none) among the
    /// enabled ones and counts it; kNone when every member is disabled.
    std::uint32_t choose(serving::RouterPolicy policy, std::uint32_t prefix, std::int64_t slack) {
        if (available_ == 0) {
            return kNone;
        }
        std::uint32_t m = 0;
        switch (policy) {
        case serving::RouterPolicy::round_robin:
            do {
                m = static_cast<std::uint32_t>(cursor_++ % members_.size());
            } while (enabled_[m] == 0);
            break;
        case serving::RouterPolicy::least_loaded:
            m = tree_[1];
            break;
        case serving::RouterPolicy::prefix_affinity: {
            m = tree_[1];
            if (prefix != 0) {
                const auto pref = static_cast<std::uint32_t>((prefix - 1) % members_.size());
                if (enabled_[pref] != 0 && load_[pref] <= load_[m] + slack) {
                    m = pref;
                }
            }
            break;
        }
        }
        ++load_[m];
        last_[m] = ++clock_;
        update(m);
        return m;
    }
    void done(std::uint32_t m) {
        TRNSIM_CHECK(m < members_.size() && load_[m] > 0,
                     "serve: a report for a replica with no request counted in its pool");
        --load_[m];
        update(m);
    }
    /// A failed member is skipped until enabled again (its load count stays).
    void set_enabled(std::uint32_t m, bool on) {
        if ((enabled_[m] != 0) != on) {
            enabled_[m] = on ? 1 : 0;
            available_ = on ? available_ + 1 : available_ - 1;
            update(m);
        }
    }

private:
    static constexpr std::uint32_t kEmpty = 0xffffffffu;
    std::uint32_t better(std::uint32_t a, std::uint32_t b) const {
        if (a == kEmpty) {
            return b;
        }
        if (b == kEmpty) {
            return a;
        }
        // Only while a member is disabled (a failure): the common path reads no flags.
        if (available_ != members_.size() && enabled_[a] != enabled_[b]) {
            return enabled_[a] != 0 ? a : b;
        }
        if (load_[a] != load_[b]) {
            return load_[a] < load_[b] ? a : b;
        }
        if (last_[a] != last_[b]) {
            return last_[a] < last_[b] ? a : b;
        }
        return a < b ? a : b;
    }
    void update(std::uint32_t m) {
        for (std::size_t v = (leaves_ + m) / 2; v >= 1; v /= 2) {
            tree_[v] = better(tree_[2 * v], tree_[2 * v + 1]);
        }
    }

    std::vector<std::uint32_t> members_;
    std::vector<std::int64_t> load_;
    std::vector<std::uint8_t> enabled_;
    std::size_t available_ = 0;
    std::vector<std::uint64_t> last_;
    std::vector<std::uint32_t> tree_;
    std::size_t leaves_ = 1;
    std::uint64_t cursor_ = 0;
    std::uint64_t clock_ = 0;
};

/// One router of `serving.router_shards`: it owns the replicas of a block of NeuronLink
/// domains and the requests whose id is its index modulo the shard count, and lives in the
/// partition of its replicas (one router: partition 0, apart from its replicas').
struct RouterShard {
    engine::EntityId entity = 0;
    std::uint32_t index = 0;
    ReplicaPool main; ///< unified or decode replicas
    ReplicaPool prefill;
    std::uint64_t finished = 0; ///< reports of finished requests
    std::uint64_t abandoned = 0; ///< requests given up after kMaxAttempts attempts
    bool arrivals_open = true;
    std::deque<std::uint64_t> stranded; ///< no replica serves
    std::int64_t done_ns = -1;          ///< when all its requests were first done
};

class ServeRouter {
public:
    /// The shards of placement `pl` with their pools. `records` and `failures` must outlive
    /// the router (it only stores them here).
    ServeRouter(const ServeInput& in, const Placement& pl, const serving::RequestSource& source,
                FleetRecords& records, ServeFailures& failures);

    std::uint32_t shards() const { return shard_count_; }
    const RouterShard& shard(std::uint32_t k) const { return *shards_[k]; }
    /// Whether shard k's arrivals have ended and every request it issued has finished.
    bool all_done(std::uint32_t k) const {
        const RouterShard& sh = *shards_[k];
        return !sh.arrivals_open && sh.finished + sh.abandoned == records_.issued(k);
    }
    /// After the run: the latest time a shard's requests were all done.
    std::int64_t latest_done() const;

    /// An event for router shard k.
    void handle(ServeContext& ctx, std::uint32_t k, const engine::Event& e);

private:
    /// Issues the shard's next request at `now`; false when the limits say no more.
    bool issue(ServeContext& ctx, RouterShard& sh, std::int64_t now);
    /// Sends request `id` to a replica by the router's policy (disaggregated: a prefill
    /// replica, with the decode replica it hands the KV cache to), or keeps it until one
    /// serves.
    void route(ServeContext& ctx, RouterShard& sh, std::uint64_t id, std::int64_t now);
    /// The pool of the shard that holds replica r.
    ReplicaPool& pool_of(RouterShard& sh, std::uint32_t r) {
        return pl_.replicas[r].prefill ? sh.prefill : sh.main;
    }
    /// The arrival of request id + K (the shard's next) from that of id at `t`: the gaps of
    /// the requests between are the other shards', drawn here too (a trace's times are
    /// direct).
    SimTime arrival_after(std::uint64_t id, SimTime t) const;

    const ServeInput& in_;
    const Placement& pl_;
    const serving::RequestSource& source_;
    FleetRecords& records_;
    ServeFailures& failures_;
    const std::int64_t hop_; ///< engine delay of every router-replica event: the lookahead
    bool disaggregated_ = false;
    serving::RouterPolicy policy_ = serving::RouterPolicy::least_loaded;
    std::int64_t slack_ = 1;
    std::uint32_t shard_count_ = 1;
    std::vector<std::unique_ptr<RouterShard>> shards_;
    std::vector<std::uint32_t> pool_of_; ///< replica -> index in its shard's pool
};

} // namespace trnsim::sim::detail
