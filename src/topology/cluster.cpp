#include "trnsim/topology/cluster.hpp"

namespace trnsim::topology {

ClusterShape make_cluster_shape(const ClusterSpec& spec, std::int64_t chips_per_instance,
                                std::int64_t instances_per_ultraserver) {
    ClusterShape s;
    s.chips_per_instance = chips_per_instance;
    if (spec.ultraservers > 0 && instances_per_ultraserver > 0) {
        s.instances_per_ultraserver = instances_per_ultraserver;
        s.ultraservers = spec.ultraservers;
        s.instances = spec.ultraservers * instances_per_ultraserver;
    } else {
        // Plain instances: no NeuronLink between them, even when the chip also comes in
        // UltraServers.
        s.instances_per_ultraserver = 1;
        s.ultraservers = 0;
        s.instances = spec.instances;
    }
    s.chips = s.instances * chips_per_instance;
    return s;
}

} // namespace trnsim::topology
