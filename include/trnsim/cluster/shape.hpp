// The composition of a cluster: how many scale-up domains (Trn2 UltraServers, or plain
// instances), and what that means in instances and chips. This header decides what a scale-up
// domain is; nothing outside the cluster module does (tests/layering checks it). The link
// classes between the levels are in hierarchy.hpp; the fabric itself (NeuronLink tori, EFA Clos)
// is described in docs/network.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::cluster {

/// What the scenario asks for: exactly one of the two counts is non-zero.
struct ClusterSpec {
    std::int64_t ultraservers = 0;
    std::int64_t instances = 0;

    /// The spec counts UltraServers (else plain instances): its domains are UltraServers.
    bool counts_ultraservers() const { return ultraservers > 0; }
    /// The number of domains it asks for.
    std::int64_t domains() const { return counts_ultraservers() ? ultraservers : instances; }
    /// `n` UltraServers or `n` plain instances.
    static ClusterSpec of_domains(bool ultraservers, std::int64_t n) {
        return ultraservers ? ClusterSpec{n, 0} : ClusterSpec{0, n};
    }
    /// The scenario key that counts the domains: "cluster.ultraservers" or "cluster.instances".
    const char* domain_key() const {
        return counts_ultraservers() ? "cluster.ultraservers" : "cluster.instances";
    }
    /// The same without the section: "ultraservers" or "instances" (a column or flag name).
    const char* domain_name() const { return counts_ultraservers() ? "ultraservers" : "instances"; }
};

/// Counts derived from a ClusterSpec and the chip's packaging.
struct ClusterShape {
    std::int64_t chips_per_instance = 0;
    std::int64_t instances_per_ultraserver = 1; ///< 1 for a cluster of plain instances
    std::int64_t ultraservers = 0;              ///< 0 for a cluster of plain instances
    std::int64_t instances = 0;
    std::int64_t chips = 0;
    /// Racks an UltraServer's instances fill in equal shares (Trn3 Gen2: 2); 1 otherwise.
    std::int64_t racks_per_ultraserver = 1;

    /// The scale-up domain is an UltraServer (else the instance itself).
    bool ultraserver_domains() const { return ultraservers > 0; }
    std::int64_t instances_per_domain() const {
        return ultraserver_domains() ? instances_per_ultraserver : 1;
    }
    std::int64_t chips_per_domain() const { return chips_per_instance * instances_per_domain(); }
    /// Instances of one rack of a domain (all its instances when it has one rack).
    std::int64_t instances_per_rack() const {
        return ultraserver_domains() ? instances_per_ultraserver / racks_per_ultraserver : 1;
    }
    /// NeuronLink domains: the UltraServers, or the instances of a cluster of plain instances
    /// (the count topology::Fabric::build takes).
    std::int64_t domains() const { return ultraserver_domains() ? ultraservers : instances; }
    std::int64_t ranks_per_domain(std::int64_t ranks_per_chip) const {
        return ranks_per_chip * chips_per_domain();
    }
    /// The spec of a cluster of the same kind of domain with `n` of them.
    ClusterSpec with_domains(std::int64_t n) const {
        return ClusterSpec::of_domains(ultraserver_domains(), n);
    }
    /// NeuronLink cables of one domain: each instance's torus (for dimensions d_1..d_n, the sum
    /// over i of (chips / d_i) x ring(d_i), with ring(d) = d for d >= 3, 1 for d = 2, 0 for 1),
    /// plus for an UltraServer the rings joining the same chip position of its instances
    /// (chips per instance x ring(instances)). A switched domain (no torus, `switch_ports`
    /// NeuronLink ports a chip into its switches) has chips per domain x switch_ports.
    std::int64_t neuronlink_cables_per_domain(const std::vector<int>& instance_torus,
                                              int switch_ports = 0) const;
};

/// The switches of the scale-out fabric as counts: a rail-optimised, non-blocking three-tier
/// Clos of switches with `radix` ports, k/2 down and k/2 up (the structure of topology::Fabric;
/// with k = 128 the counts equal those of its trn2-ultracluster preset). Each instance has one
/// NIC per rail; a leaf serves k/2 instances of one rail:
///   leaves = rails x ceil(instances / (k/2)); pods = ceil(leaves / (k/2));
///   spines = pods x k/2 when there is more than one leaf; cores = (k/2)^2 (k/2 planes of k/2
///   cores) when there is more than one pod, else 0.
struct ClosCounts {
    std::int64_t rails = 1;
    std::int64_t instances_per_leaf = 1;
    std::int64_t spines_per_pod = 1;
    std::int64_t leaves_per_rail = 0;
    std::int64_t leaves = 0, pods = 0, spines = 0, cores = 0;
};
/// `rails` and `radix` below 1 and 2 count as 1 and 2.
ClosCounts clos_counts(std::int64_t instances, std::int64_t rails, std::int64_t radix);

/// How the scale-out Clos of clos_counts groups a cluster's domains, numbered in instance order:
/// consecutive domains whose instances hang off the same leaves (one leaf per rail) form a leaf
/// group; consecutive leaf groups whose leaves share spines form a pod. Traffic between domains
/// of one leaf group turns at the leaves, of one pod at the spines, of two pods at the cores.
/// With radix k and r rails: k/2 instances per leaf, k/2 leaves per pod, so
///   domains per leaf group = max(1, (k/2) / instances per domain)
///   leaf groups per pod    = max(1, (k/2) / r)
/// (a domain wider than a leaf's share is a group of its own).
struct DomainGroups {
    std::int64_t domains_per_leaf_group = 1;
    std::int64_t leaf_groups_per_pod = 1;
    std::int64_t domains_per_pod() const { return domains_per_leaf_group * leaf_groups_per_pod; }
};
/// `rails` and `radix` below 1 and 2 count as 1 and 2, as in clos_counts.
DomainGroups domain_groups(const ClusterShape& shape, std::int64_t rails, std::int64_t radix);

/// `instances_per_ultraserver` is 0 when the chip is not sold in UltraServers; the spec must then
/// count instances (the caller validates that).
ClusterShape make_cluster_shape(const ClusterSpec& spec, std::int64_t chips_per_instance,
                                std::int64_t instances_per_ultraserver);

/// A tenant's share of a cluster (ADR 0002): `domains` whole domains of the cluster's kind
/// (UltraServers, or plain instances), from domain `first` on. The tenant numbers them from 0
/// and sees a cluster of that many domains.
struct Allocation {
    std::int64_t first = 0;
    std::int64_t domains = 0;

    std::int64_t end() const { return first + domains; }
    /// The cluster the tenant sees: `domains` domains of `cluster`'s kind.
    ClusterSpec cluster(const ClusterSpec& whole) const {
        return ClusterSpec::of_domains(whole.counts_ultraservers(), domains);
    }
};

/// What is wrong with allocations of `cluster` ("" when nothing): each holds at least one
/// domain, lies inside the cluster and overlaps no other.
std::string allocation_problem(const ClusterSpec& cluster, const std::vector<Allocation>& all,
                               std::size_t* culprit = nullptr);

} // namespace trnsim::cluster
