// Shared by the unit tests of the serving fleet's parts (serve_*_test.cpp): a small fleet on
// Trn2 at LNC 2 (4 ranks per chip, 16 chips per instance, 4 instances per UltraServer) with
// iteration costs from serving::test::TestCost (1 ms + 10 us per computed token).
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

#include "trnsim/config/load.hpp"
#include "trnsim/sim/serve.hpp"

#include "serve_layout.hpp"
#include "unit/serving/test_cost.hpp"

namespace trnsim::sim::detail::test {

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kUs = 1'000;

inline const serving::test::TestCost& cost() {
    static const serving::test::TestCost c;
    return c;
}

/// `ultraservers` UltraServers (0: `instances` plain instances) serving `replicas` replicas
/// of tp `tp`, round-robin, router latency 1 ms, no KV sampling.
inline ServeInput fleet(int ultraservers, int instances, int tp, int replicas) {
    ServeInput in;
    in.chip = config::load_chip("trn2");
    in.lnc = 2;
    in.cluster.ultraservers = ultraservers;
    in.cluster.instances = instances;
    serving::ServingSpec& s = in.spec.serving;
    s.tp = tp;
    s.replicas = replicas;
    s.max_batch = 8;
    s.max_context = 4096;
    s.kv_block = 16;
    s.router = serving::RouterPolicy::round_robin;
    s.router_latency = Duration::from_ns(1 * kMs);
    in.replica = {&cost(), 2000};
    in.seed = 3;
    in.options.kv_sample = Duration::zero();
    return in;
}

/// `count` requests of `input` + `output` tokens from `clients` closed-loop clients.
inline void closed_loop(ServeInput& in, std::int64_t count, int clients, std::int64_t input,
                        std::int64_t output) {
    serving::RequestSpec& r = in.spec.requests;
    r.input = {serving::TokenDistribution::Kind::fixed, static_cast<double>(input), 0, 1, 0, {}};
    r.output = {serving::TokenDistribution::Kind::fixed, static_cast<double>(output), 0, 1, 0, {}};
    r.arrival.kind = serving::ArrivalSpec::Kind::closed_loop;
    r.arrival.concurrency = clients;
    r.count = count;
}

/// An event an entity received: (time, entity, type, payload, aux).
using Seen =
    std::tuple<std::int64_t, engine::EntityId, engine::EventType, std::uint64_t, std::uint16_t>;

inline Seen seen(const ServeContext& ctx, const engine::Event& e) {
    return {ctx.now_ns(), ctx.self(), e.type, e.payload, e.aux};
}

} // namespace trnsim::sim::detail::test
