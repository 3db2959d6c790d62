// The hardware hierarchy of a cluster, owned once: chips fill instances, instances fill scale-up
// domains, domains meet over the scale-out (EFA) fabric; and the class of link at each level
// with its bandwidth per chip and its latency.
//
// Levels, innermost first, with the link class a collective crosses there:
//   chip          on_chip       ranks of one chip (LNC), through HBM
//   instance      neuronlink    the instance's NeuronLink torus (trn2.48xlarge, trn1.32xlarge:
//                               4 x 4 chips)
//   UltraServer   neuronlink_z  the rings joining the same chip position of an UltraServer's
//                               instances (Trn2: 4 instances, a 4 x 4 x 4 torus)
//   cluster       efa           the scale-out Clos between domains
// A cluster of plain instances has no neuronlink_z level: its domain is the instance.
// A switched domain (Trainium3) of one switch level (Gen1) has one neuronlink level for the
// whole domain; of two (Gen2) neuronlink is its server's switch, neuronlink_z the switches
// joining a rack's servers, and neuronlink_rack the direct links joining the same chip
// position of its racks.
//
// Every module that needs to know what a domain is, which link class separates two ranks, or
// how many units a group of ranks spans asks this class (or ClusterShape, its counts): plans,
// serving placement, iteration costs, the run simulation and the reliability layout.
#pragma once

#include "trnsim/cluster/shape.hpp"
#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/network/collective_cost.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::cluster {

/// How the chips of a scale-up domain are connected (the chip file's instance.scale_up).
using trnsim::ScaleUpKind;

/// One class of link: what one chip drives over it, and the latency of one step across it.
struct LinkLevel {
    network::LinkClass link = network::LinkClass::on_chip;
    Bandwidth per_chip;
    Duration latency;
};

/// How many ranks, chips, instances, domains and racks a group of ranks occupies (a domain
/// in one rack counts as one).
struct UnitCounts {
    std::int64_t size = 0, chips = 0, instances = 0, domains = 0, racks = 0;
};

class Hierarchy {
public:
    Hierarchy() = default;
    /// A cluster of `shape` (already checked) made of `chip`, connected as the chip's
    /// instance says (or as `scale_up`). A switched domain (Trainium3) reaches every chip of
    /// the domain through its switches at the chip's NeuronLink bandwidth within an instance.
    Hierarchy(const compute::ChipSpec& chip, const ClusterShape& shape);
    Hierarchy(const compute::ChipSpec& chip, const ClusterShape& shape, ScaleUpKind scale_up);

    /// The cluster a scenario asks for: checks that the chip can form it (InputError at
    /// cluster.ultraservers / cluster.instances otherwise).
    static Hierarchy of(const compute::ChipSpec& chip, const ClusterSpec& spec);
    /// The smallest cluster holding `chips` chips from chip 0: one instance when they fit, else
    /// one UltraServer when the chip has them and they fit, else plain instances.
    static ClusterShape smallest_holding(const compute::ChipSpec& chip, std::int64_t chips);
    /// Instances per UltraServer of the chip's packaging; 0 when it is not sold in them.
    static std::int64_t instances_per_ultraserver(const compute::ChipSpec& chip);
    /// Chips of one UltraServer of the chip's packaging; an instance's when there is none.
    static std::int64_t chips_per_ultraserver(const compute::ChipSpec& chip);
    /// The counts of `spec` on `chip`'s packaging, without the checks of `of` (for a spec
    /// already checked).
    static ClusterShape shape_of(const compute::ChipSpec& chip, const ClusterSpec& spec);

    const ClusterShape& shape() const { return shape_; }
    ScaleUpKind scale_up() const { return scale_up_; }
    bool ultraserver_domains() const { return shape_.ultraserver_domains(); }
    std::int64_t chips() const { return shape_.chips; }
    std::int64_t instances() const { return shape_.instances; }
    std::int64_t ultraservers() const { return shape_.ultraservers; }
    std::int64_t domains() const { return shape_.domains(); }
    std::int64_t chips_per_instance() const { return shape_.chips_per_instance; }
    std::int64_t instances_per_domain() const { return shape_.instances_per_domain(); }
    std::int64_t chips_per_domain() const { return shape_.chips_per_domain(); }

    /// The link classes of this cluster, innermost first (on_chip, neuronlink[, neuronlink_z
    /// [, neuronlink_rack]], efa; a switched domain of one level has one neuronlink level for
    /// the whole domain).
    const std::vector<LinkLevel>& links() const { return links_; }
    /// Whether this cluster has a level of link class `c` (neuronlink_z: a torus of
    /// UltraServers only).
    bool has_link(network::LinkClass c) const;
    /// A link class of this cluster; asking for one it lacks is a bug (a failed check).
    const LinkLevel& link(network::LinkClass c) const;

    /// The units the members `ranks` (increasing) occupy, with `ranks_per_chip` ranks a chip.
    UnitCounts count(int ranks_per_chip, const std::vector<std::int64_t>& ranks) const;
    /// The same for the members first + k stride, k < size (stride >= 1), in closed form.
    UnitCounts count(int ranks_per_chip, std::int64_t first, std::int64_t stride,
                     std::int64_t size) const;
    /// A group's decomposition over the levels (no collective engine): members per level and
    /// the bandwidth one member drives there (its chip's links shared by the chip's ranks).
    network::GroupShape group_shape(int ranks_per_chip, const UnitCounts& n) const;

private:
    ClusterShape shape_;
    ScaleUpKind scale_up_ = ScaleUpKind::torus;
    std::vector<LinkLevel> links_;
};

} // namespace trnsim::cluster
