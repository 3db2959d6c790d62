#include "trnsim/cluster/shape.hpp"

#include <algorithm>

namespace trnsim::cluster {

namespace {

/// Cables of a ring of n nodes: n for n >= 3, one for two nodes, none for one.
std::int64_t ring_links(std::int64_t n) { return n >= 3 ? n : (n == 2 ? 1 : 0); }

} // namespace

std::int64_t ClusterShape::neuronlink_cables_per_domain(const std::vector<int>& instance_torus,
                                                        int switch_ports) const {
    if (instance_torus.empty() && switch_ports > 0) {
        return chips_per_domain() * switch_ports;
    }
    std::int64_t torus_links = 0;
    for (int d : instance_torus) {
        torus_links += (chips_per_instance / std::max(d, 1)) * ring_links(d);
    }
    const std::int64_t ipd = instances_per_domain();
    const std::int64_t ring_cables =
        ultraserver_domains() ? chips_per_instance * ring_links(ipd) : 0;
    return torus_links * ipd + ring_cables;
}

ClosCounts clos_counts(std::int64_t instances, std::int64_t rails, std::int64_t radix) {
    const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
    ClosCounts c;
    const std::int64_t half = std::max<std::int64_t>(radix / 2, 1);
    c.rails = std::max<std::int64_t>(rails, 1);
    c.instances_per_leaf = half;
    c.spines_per_pod = half;
    c.leaves_per_rail = ceil_div(instances, c.instances_per_leaf);
    c.leaves = c.rails * c.leaves_per_rail;
    c.pods = ceil_div(c.leaves, half); // k/2 leaves per pod
    c.spines = c.leaves > 1 ? c.pods * c.spines_per_pod : 0;
    c.cores = c.pods > 1 ? half * half : 0;
    return c;
}

DomainGroups domain_groups(const ClusterShape& shape, std::int64_t rails, std::int64_t radix) {
    const std::int64_t half = std::max<std::int64_t>(radix / 2, 1);
    DomainGroups g;
    g.domains_per_leaf_group =
        std::max<std::int64_t>(1, half / std::max<std::int64_t>(shape.instances_per_domain(), 1));
    g.leaf_groups_per_pod = std::max<std::int64_t>(1, half / std::max<std::int64_t>(rails, 1));
    return g;
}

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

std::string allocation_problem(const ClusterSpec& cluster, const std::vector<Allocation>& all,
                               std::size_t* culprit) {
    const std::string unit = cluster.domain_name();
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (culprit != nullptr) {
            *culprit = i;
        }
        const Allocation& a = all[i];
        if (a.domains < 1 || a.first < 0) {
            return "an allocation holds at least one domain, from a domain numbered 0 or more";
        }
        if (a.end() > cluster.domains()) {
            return "holds " + unit + " " + std::to_string(a.first) + " to " +
                   std::to_string(a.end() - 1) + ", but the cluster has " +
                   std::to_string(cluster.domains()) + " (0 to " +
                   std::to_string(cluster.domains() - 1) + ")";
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (a.first < all[j].end() && all[j].first < a.end()) {
                return "overlaps allocation " + std::to_string(j) + " (" + unit + " " +
                       std::to_string(all[j].first) + " to " + std::to_string(all[j].end() - 1) +
                       ")";
            }
        }
    }
    return "";
}

} // namespace trnsim::cluster
