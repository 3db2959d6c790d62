// Which components exist, where they sit, what a failure takes down, and the entity ids and
// partitions of the run simulation.
//
// Replaceable domain (what a domain is, the cluster module says: cluster/shape.hpp). A job runs
// on domains: UltraServers for a cluster of UltraServers (a broken
// NeuronLink ring stops the whole 4x4x4 torus, so the UltraServer is the unit of failure and
// replacement, reliability.md §7), instances otherwise. Spare domains are physical domains too:
// they age and fail while idle.
//
// Components per domain (derived from the chip data; `instances` is instances per domain):
//   chip, hbm     chips per instance x instances (one HBM entity stands for a chip's stacks)
//   host          1 per instance                software   1 per instance
//   nic           EFA interfaces per instance x instances
//   neuronlink    the cables of each instance torus: for dimensions d_1..d_n, sum over i of
//                 (chips / d_i) x ring(d_i), with ring(d) = d for d >= 3, 1 for d = 2, 0 for 1
//                 (a 4x4 torus: 32 cables), plus for an UltraServer the rings joining the same
//                 chip position of its instances: chips per instance x ring(instances)
//                 (16 rings of 4 for Trn2: 64 cables); counted by the cluster module
//                 (cluster::ClusterShape::neuronlink_cables_per_domain)
// Power domains: `fabric.power_domain_instances` consecutive instances, rounded up to whole
// domains; a power failure takes every domain in it (correlated failure).
//
// EFA fabric counts, from the switch radix k (`fabric.switch_radix`): the rail-optimised,
// non-blocking three-tier Clos the cluster module counts (cluster::clos_counts: leaves, pods,
// spines, cores), kept as counts only, so the run simulation does not build the link arrays.
//
// Blast radius (Impact). chip, hbm, host, neuronlink, and nic by default: the domain is
// replaced. software: the job restarts, nothing is replaced. power: every domain of the power
// domain is replaced. leaf/spine/core switches and NICs set to `degrade`: traffic is rerouted
// and the job slows down (fewer rails or spines) until the element is repaired in place; this is
// the default for a leaf when instances have several rails and for a spine or core tier with
// more than one switch. A switch set to `interrupt` restarts the job (the restart places ranks
// away from it). Either only when the switch carries the job's traffic: a leaf serving one of
// the job's instances, a spine of a pod with such a leaf, a core tier when the job's leaves lie
// in two pods or more; a switch that only the idle spares use neither stops nor slows the job
// (and a spare's NIC neither).
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"
#include "trnsim/engine/event.hpp"
#include "trnsim/reliability/spec.hpp"
#include "trnsim/cluster/shape.hpp"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace trnsim::reliability {

/// The chip and instance facts the layout needs (from compute::ChipSpec, which this module
/// does not depend on).
struct HardwareFacts {
    std::vector<int> instance_torus{4, 4}; ///< dimensions of the NeuronLink torus per instance
    int switch_ports = 0; ///< a switched domain's NeuronLink ports per chip (torus: 0)
    /// A switched domain's NeuronLink switches: in each instance, and joining an UltraServer's
    /// instances beyond theirs (torus: 0, 0).
    int instance_switches = 0;
    int ultraserver_switches = 0;
    int efa_interfaces = 1;                ///< per instance
    Bandwidth efa_bandwidth_per_instance;
    Bytes host_memory; ///< per instance (zero: unknown, not checked)
};

enum class Impact : std::uint8_t {
    replace_domain,   ///< interrupts the job; the domain goes to repair
    restart_only,     ///< interrupts the job; nothing is replaced
    power,            ///< interrupts; every domain of the power domain goes to repair
    fabric_interrupt, ///< interrupts the job; the switch is repaired in place
    fabric_degrade,   ///< no interruption; bandwidth lost until repaired in place
};

constexpr std::array<EnumName<Impact>, 5> enum_names(Impact) {
    return {{
        {Impact::replace_domain, "replace_domain"},
        {Impact::restart_only, "restart_only"},
        {Impact::power, "power"},
        {Impact::fabric_interrupt, "fabric_interrupt"},
        {Impact::fabric_degrade, "fabric_degrade"},
    }};
}
inline const char* to_string(Impact v) { return enum_name(v); }

/// What a run simulation entity is.
enum class EntityKind : std::uint8_t { controller, power, domain, component };

class Layout {
public:
    /// `present[c]`: the class has failure processes (or trace failures) and so entities.
    Layout(const cluster::ClusterShape& cluster, const HardwareFacts& hw, const FabricSpec& fabric,
           std::int64_t spare_domains, const std::array<bool, kClassCount>& present);

    // Domains.
    bool ultraserver_domains() const { return ultraserver_domains_; }
    std::int64_t job_domains() const { return job_domains_; }
    std::int64_t spare_domains() const { return spare_domains_; }
    std::int64_t domains() const { return job_domains_ + spare_domains_; }
    std::int64_t instances_per_domain() const { return instances_per_domain_; }
    std::int64_t chips_per_domain() const { return chips_per_instance_ * instances_per_domain_; }
    std::int64_t chips_per_instance() const { return chips_per_instance_; }
    std::int64_t domains_per_power() const { return domains_per_power_; }
    std::int64_t power_domains() const { return power_domains_; }

    // Component counts (whole cluster, spares included), whether or not the class is present.
    std::int64_t count(ComponentClass c) const { return counts_[index(c)]; }
    /// Components of a domain class per domain (0 for power and switches).
    std::int64_t per_domain(ComponentClass c) const { return per_domain_[index(c)]; }
    bool present(ComponentClass c) const { return present_[index(c)]; }
    static bool domain_class(ComponentClass c);

    // Fabric (see the header comment).
    int rails() const { return rails_; }
    std::int64_t leaves_per_rail() const { return leaves_per_rail_; }
    std::int64_t instances_per_leaf() const { return instances_per_leaf_; }
    std::int64_t spines_per_pod() const { return spines_per_pod_; }
    /// Leaf l serves instances [(l mod leaves_per_rail) x instances_per_leaf, + instances_per_leaf)
    /// on rail l / leaves_per_rail; spine s sits in pod s / spines_per_pod.
    std::int64_t pod_of_spine(std::int64_t spine) const { return spine / spines_per_pod_; }
    /// Leaves per pod (k/2); pod p holds leaves [p x leaves_per_pod, + leaves_per_pod) of the
    /// rail-major leaf numbering.
    std::int64_t leaves_per_pod() const { return spines_per_pod_; }
    std::int64_t pod_of_leaf(std::int64_t leaf) const { return leaf / leaves_per_pod(); }
    /// The physical domains leaf `leaf` serves: [first, last).
    std::pair<std::int64_t, std::int64_t> domains_of_leaf(std::int64_t leaf) const;
    /// Switches of class `c` (leaf, spine, core) that carry the traffic of a job on domains
    /// 0 .. job_domains - 1 (the job's placement before any spare is used): its leaves, the
    /// spines of their pods, the cores when they span two pods or more.
    std::int64_t switches_carrying(ComponentClass c, std::int64_t job_domains) const;

    /// What a failure of class `c` with effect `e` does (the header's blast-radius rules). An
    /// effect the class cannot have (a degrading chip) is reported by `effect_problem`.
    Impact impact(ComponentClass c, Effect e) const;
    /// Empty when `e` is possible for `c` in this cluster, else why not.
    std::string effect_problem(ComponentClass c, Effect e) const;

    // Entities and partitions of the run simulation. Layout: the controller (entity 0, its own
    // partition), then per power domain [power entity][per domain: domain entity, its
    // components class by class], then the fabric switches. Partitions hold whole power domains
    // (at most 64 partitions of them, a fixed function of the cluster) plus one for the
    // switches, so the partitioning never depends on the thread count.
    std::uint32_t entities() const { return entities_; }
    engine::EntityId controller() const { return 0; }
    engine::EntityId domain_entity(std::int64_t domain) const;
    engine::EntityId power_entity(std::int64_t power_domain) const;
    /// Component `index` of class `c` (index over the whole cluster, spares included).
    engine::EntityId component(ComponentClass c, std::int64_t index) const;

    struct Located {
        EntityKind kind = EntityKind::controller;
        ComponentClass cls = ComponentClass::chip; ///< components and power entities
        std::int64_t index = -1;  ///< within the class (power: the power domain)
        std::int64_t domain = -1; ///< physical domain (domain entities and domain classes)
    };
    Located locate(engine::EntityId e) const;

    std::vector<std::uint32_t> partition_starts() const { return partition_starts_; }

private:
    static std::size_t index(ComponentClass c) { return static_cast<std::size_t>(c); }
    std::int64_t power_block_start(std::int64_t pd) const { return 1 + pd * power_stride_; }

    bool ultraserver_domains_ = false;
    std::int64_t job_domains_ = 0, spare_domains_ = 0;
    std::int64_t instances_per_domain_ = 1, chips_per_instance_ = 1;
    std::int64_t domains_per_power_ = 1, power_domains_ = 0;
    std::array<std::int64_t, kClassCount> counts_{};
    std::array<std::int64_t, kClassCount> per_domain_{};
    std::array<bool, kClassCount> present_{};
    int rails_ = 1;
    std::int64_t leaves_per_rail_ = 0, instances_per_leaf_ = 1, spines_per_pod_ = 1;

    // Entity arithmetic.
    std::array<std::int64_t, kClassCount> class_offset_{}; ///< within a domain, or the fabric
    std::int64_t domain_stride_ = 1; ///< domain entity + its components
    std::int64_t power_stride_ = 1;  ///< a full power block
    std::int64_t has_power_ = 0;
    std::int64_t fabric_start_ = 0;
    std::uint32_t entities_ = 0;
    std::vector<std::uint32_t> partition_starts_;
};

} // namespace trnsim::reliability
