// The names of collectives, of the link classes a group crosses and of the collective
// algorithms: the small vocabulary that scenarios, the command line and reports share with the
// network module. Kept apart from collectives.hpp (which pulls in the flow model) so that spec
// headers such as config/scenario.hpp can name a collective without it.
#pragma once

#include "trnsim/core/enum_names.hpp"

#include <array>

namespace trnsim::network {

enum class CollectiveOp { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, send_recv };

constexpr std::array<EnumName<CollectiveOp>, 6> enum_names(CollectiveOp) {
    return {{
        {CollectiveOp::all_reduce, "all_reduce"},
        {CollectiveOp::reduce_scatter, "reduce_scatter"},
        {CollectiveOp::all_gather, "all_gather"},
        {CollectiveOp::all_to_all, "all_to_all"},
        {CollectiveOp::broadcast, "broadcast"},
        {CollectiveOp::send_recv, "send_recv"},
    }};
}
inline const char* to_string(CollectiveOp v) { return enum_name(v); }

/// The link class a group level crosses.
/// neuronlink_rack: the direct links joining the same chip position of an UltraServer's racks
/// (Trn3 Gen2: 2 racks of 18 servers).
enum class LinkClass { on_chip, neuronlink, neuronlink_z, neuronlink_rack, efa };

constexpr std::array<EnumName<LinkClass>, 5> enum_names(LinkClass) {
    return {{
        {LinkClass::on_chip, "on_chip"},
        {LinkClass::neuronlink, "neuronlink"},
        {LinkClass::neuronlink_z, "neuronlink_z"},
        {LinkClass::neuronlink_rack, "neuronlink_rack"},
        {LinkClass::efa, "efa"},
    }};
}
inline const char* to_string(LinkClass v) { return enum_name(v); }

/// How a collective is decomposed into phases (collectives.hpp describes each).
enum class Algorithm { automatic, ring, bidirectional_ring, mesh, rdh, torus_rings, hierarchical };

constexpr std::array<EnumName<Algorithm>, 7> enum_names(Algorithm) {
    return {{
        {Algorithm::automatic, "auto"},
        {Algorithm::hierarchical, "hierarchical"},
        {Algorithm::ring, "ring"},
        {Algorithm::bidirectional_ring, "bidirectional_ring"},
        {Algorithm::mesh, "mesh"},
        {Algorithm::rdh, "rdh"},
        {Algorithm::torus_rings, "torus_rings"},
    }};
}
inline const char* to_string(Algorithm v) { return enum_name(v); }

} // namespace trnsim::network
