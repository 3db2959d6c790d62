// Routes through a fabric.
//
// Inside a switched domain: through its switch (two levels: the server's switch inside a
// server, the rack's between its servers; to another rack the direct link to the same position
// there first). Inside a NeuronLink torus domain (an UltraServer, else an instance):
// dimension-order routing on the torus, dimension 0 first and the UltraServer ring last, each dimension in its shorter
// direction (a tie, half-way round, is broken by the salt, so traffic spreads over both).
// Between domains: chip -> its NIC -> its rail's leaf, and if the destination's NIC is on
// another leaf, up to a spine of the pod (and, for another pod, to a core of that spine's plane
// and down to the destination pod's spine of the same plane), then down. The spine (and core)
// is chosen by a deterministic hash of (source, destination, salt): equal-cost multi-path.
//
// Routes are computed on demand (never a table of all pairs) in O(hops).
#pragma once

#include "trnsim/topology/fabric.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::topology {

/// Appends the directed links from chip `a` to chip `b` to `out` (nothing when a == b).
void route(const Fabric& f, std::uint32_t a, std::uint32_t b, std::uint64_t salt,
           std::vector<std::uint32_t>& out);

/// Sum of the links' latencies (the NIC overhead rides on the host links).
std::int64_t route_latency_ns(const Fabric& f, const std::uint32_t* links, std::size_t n);

/// Hop count of the route (links).
std::size_t route_hops(const Fabric& f, std::uint32_t a, std::uint32_t b);

} // namespace trnsim::topology
