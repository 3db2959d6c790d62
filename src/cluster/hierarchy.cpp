#include "trnsim/cluster/hierarchy.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <string>

namespace trnsim::cluster {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Ranks per chip, per instance, per rack and per domain.
struct UnitSizes {
    std::int64_t chip, instance, rack, domain;
    UnitSizes(int ranks_per_chip, const ClusterShape& s)
        : chip(ranks_per_chip), instance(chip * s.chips_per_instance),
          rack(instance * s.instances_per_rack()), domain(instance * s.instances_per_domain()) {}
};

} // namespace

Hierarchy::Hierarchy(const compute::ChipSpec& chip, const ClusterShape& shape)
    : Hierarchy(chip, shape, chip.instance.scale_up) {}

Hierarchy::Hierarchy(const compute::ChipSpec& chip, const ClusterShape& shape,
                     ScaleUpKind scale_up)
    : shape_(shape), scale_up_(scale_up) {
    using network::LinkClass;
    links_.push_back({LinkClass::on_chip, chip.hbm_bandwidth, chip.on_chip_latency});
    links_.push_back(
        {LinkClass::neuronlink, chip.neuronlink_intra_instance, chip.neuronlink_hop_latency});
    if (shape_.ultraserver_domains() &&
        (scale_up_ == ScaleUpKind::torus || chip.neuronlink_inter_instance.bytes_per_s() > 0.0)) {
        links_.push_back({LinkClass::neuronlink_z, chip.neuronlink_inter_instance,
                          chip.neuronlink_hop_latency});
    }
    if (shape_.ultraserver_domains() && shape_.racks_per_ultraserver > 1) {
        links_.push_back({LinkClass::neuronlink_rack, chip.neuronlink_inter_rack,
                          chip.neuronlink_hop_latency});
    }
    links_.push_back({LinkClass::efa, chip.efa_bandwidth_per_chip(), chip.efa_latency});
}

std::int64_t Hierarchy::instances_per_ultraserver(const compute::ChipSpec& chip) {
    return chip.ultraserver ? chip.ultraserver->instances : 0;
}

std::int64_t Hierarchy::chips_per_ultraserver(const compute::ChipSpec& chip) {
    return chip.ultraserver ? chip.ultraserver->instances * chip.instance.chips
                            : chip.instance.chips;
}

ClusterShape Hierarchy::shape_of(const compute::ChipSpec& chip, const ClusterSpec& spec) {
    ClusterShape s = make_cluster_shape(spec, chip.instance.chips, instances_per_ultraserver(chip));
    if (s.ultraserver_domains() && chip.ultraserver) {
        s.racks_per_ultraserver = chip.ultraserver->racks;
    }
    return s;
}

Hierarchy Hierarchy::of(const compute::ChipSpec& chip, const ClusterSpec& spec) {
    if (spec.counts_ultraservers() && !chip.ultraserver) {
        throw InputError("cluster.ultraservers", chip.name + " is not sold in UltraServers; "
                                                             "give cluster.instances instead");
    }
    if (chip.instance.efa_bandwidth.bytes_per_s() <= 0.0 &&
        spec.ultraservers + spec.instances > 1) {
        throw InputError(spec.domain_key(),
                         chip.instance.name +
                             " has no EFA to join instances: a job runs on one instance");
    }
    return Hierarchy(chip, shape_of(chip, spec));
}

ClusterShape Hierarchy::smallest_holding(const compute::ChipSpec& chip, std::int64_t chips) {
    ClusterSpec spec;
    if (chips > chip.instance.chips && chip.ultraserver &&
        chips <= chips_per_ultraserver(chip)) {
        spec.ultraservers = 1;
    } else {
        spec.instances = ceil_div(chips, chip.instance.chips);
    }
    return shape_of(chip, spec);
}

bool Hierarchy::has_link(network::LinkClass c) const {
    return std::any_of(links_.begin(), links_.end(),
                       [c](const LinkLevel& l) { return l.link == c; });
}

const LinkLevel& Hierarchy::link(network::LinkClass c) const {
    for (const LinkLevel& l : links_) {
        if (l.link == c) {
            return l;
        }
    }
    ::trnsim::detail::check_failed("has_link(c)", __FILE__, __LINE__,
                                   std::string("the cluster has no ") + network::to_string(c) +
                                       " level");
}

UnitCounts Hierarchy::count(int ranks_per_chip, const std::vector<std::int64_t>& ranks) const {
    const UnitSizes u(ranks_per_chip, shape_);
    UnitCounts n;
    n.size = static_cast<std::int64_t>(ranks.size());
    std::int64_t last_chip = -1, last_instance = -1, last_rack = -1, last_domain = -1;
    // Members are in increasing rank order, so distinct units appear as runs.
    for (const std::int64_t rank : ranks) {
        const std::int64_t chip = rank / u.chip;
        const std::int64_t instance = rank / u.instance;
        const std::int64_t rack = rank / u.rack;
        const std::int64_t domain = rank / u.domain;
        n.chips += chip != last_chip;
        n.instances += instance != last_instance;
        n.racks += rack != last_rack;
        n.domains += domain != last_domain;
        last_chip = chip;
        last_instance = instance;
        last_rack = rack;
        last_domain = domain;
    }
    return n;
}

// With a stride of at least a unit every member has its own; with a shorter one the members'
// units advance by 0 or 1 from one member to the next, so they are every unit from the first
// member's to the last's.
UnitCounts Hierarchy::count(int ranks_per_chip, std::int64_t first, std::int64_t stride,
                            std::int64_t size) const {
    const UnitSizes u(ranks_per_chip, shape_);
    const std::int64_t last = first + (size - 1) * stride;
    const auto units = [&](std::int64_t unit) {
        return stride >= unit ? size : last / unit - first / unit + 1;
    };
    return {size, units(u.chip), units(u.instance), units(u.domain), units(u.rack)};
}

network::GroupShape Hierarchy::group_shape(int ranks_per_chip, const UnitCounts& n) const {
    using network::LinkClass;
    const double r = static_cast<double>(ranks_per_chip);
    const auto members = [](std::int64_t outer, std::int64_t inner) {
        return static_cast<int>(ceil_div(outer, std::max<std::int64_t>(inner, 1)));
    };
    // A switched domain's switch levels are switched; the direct links between racks are not.
    const auto level = [&](const LinkLevel& l, int m) {
        return network::GroupLevel{l.link, m, l.per_chip / r, l.latency,
                                   scale_up_ == ScaleUpKind::switched &&
                                       (l.link == LinkClass::neuronlink ||
                                        l.link == LinkClass::neuronlink_z)};
    };
    network::GroupShape s;
    s.levels.push_back(level(link(LinkClass::on_chip), members(n.size, n.chips)));
    if (has_link(LinkClass::neuronlink_rack)) {
        s.levels.push_back(level(link(LinkClass::neuronlink), members(n.chips, n.instances)));
        s.levels.push_back(level(link(LinkClass::neuronlink_z), members(n.instances, n.racks)));
        s.levels.push_back(level(link(LinkClass::neuronlink_rack), members(n.racks, n.domains)));
    } else if (has_link(LinkClass::neuronlink_z)) {
        s.levels.push_back(level(link(LinkClass::neuronlink), members(n.chips, n.instances)));
        s.levels.push_back(level(link(LinkClass::neuronlink_z), members(n.instances, n.domains)));
    } else {
        s.levels.push_back(level(link(LinkClass::neuronlink), members(n.chips, n.domains)));
    }
    s.levels.push_back(level(link(LinkClass::efa), static_cast<int>(n.domains)));
    return s;
}

} // namespace trnsim::cluster
