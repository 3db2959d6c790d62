// The runtime form of a fabric: nodes and directed links in flat arrays, plus the structured
// lookups routing needs. Built once from a FabricSpec and a cluster size; read-only after.
//
// Numbering. Nodes: chips [0, C), then NICs, leaves, spines, cores, and a switched domain's
// NeuronLink switches (one switch level: one a domain, in domain order; two levels: one an
// instance, in instance order, then one a rack, in rack order). A chip's index is
// instance x chips_per_instance + local, where local enumerates the instance torus with
// dimension 0 fastest; instance = ultraserver x instances_per_ultraserver + z.
// Links (each physical link is two directed links):
//   torus     chip c, direction j: c x degree + j   (j = 2 d for +d, 2 d + 1 for -d; the
//             UltraServer ring is the last dimension); a switched domain's chip c has two:
//             c x 2 into its switch, c x 2 + 1 out of it (LinkKind::neuronlink both); of two
//             switch levels, 4 + racks - 1: c x degree + 0 and + 1 into and out of its
//             server's switch (neuronlink), + 2 and + 3 its rack's (neuronlink_z), then one
//             direct link to its position in each other rack, in rack order (neuronlink_rack)
//   host      chip c to its NIC, and back
//   nic       NIC to its leaf, and back
//   leaf      leaf l up-port u to spine u of its pod, and back
//   spine     spine s up-port k to core k of its plane, and back
//
// Memory: about 24 bytes per directed link; a 524,288-chip Trn2 UltraCluster has ~7 million.
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/topology/fabric_spec.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::topology {

enum class NodeKind : std::uint8_t { chip, nic, leaf, spine, core, neuronswitch };
/// neuronlink_rack (last, so that the other kinds keep their order in reports): the direct
/// links between the racks of a switched UltraServer.
enum class LinkKind : std::uint8_t {
    neuronlink,
    neuronlink_z,
    host,
    efa_nic,
    leaf_spine,
    spine_core,
    neuronlink_rack
};

inline constexpr int kLinkKinds = 7;
constexpr std::array<EnumName<LinkKind>, 7> enum_names(LinkKind) {
    return {{
        {LinkKind::neuronlink, "neuronlink"},
        {LinkKind::neuronlink_z, "neuronlink_z"},
        {LinkKind::host, "host"},
        {LinkKind::efa_nic, "efa_nic"},
        {LinkKind::leaf_spine, "leaf_spine"},
        {LinkKind::spine_core, "spine_core"},
        {LinkKind::neuronlink_rack, "neuronlink_rack"},
    }};
}
inline const char* to_string(LinkKind v) { return enum_name(v); }
constexpr std::array<EnumName<NodeKind>, 6> enum_names(NodeKind) {
    return {{
        {NodeKind::chip, "chip"},
        {NodeKind::nic, "nic"},
        {NodeKind::leaf, "leaf"},
        {NodeKind::spine, "spine"},
        {NodeKind::core, "core"},
        {NodeKind::neuronswitch, "neuronswitch"},
    }};
}
inline const char* to_string(NodeKind v) { return enum_name(v); }

class Fabric {
public:
    /// `domains` UltraServers (when the spec has them) or instances. Throws InputError (key
    /// path "cluster") when the fabric cannot hold that many or the size needs a scale-out
    /// network the spec does not have.
    static Fabric build(const FabricSpec& spec, std::int64_t domains);

    const FabricSpec& spec() const { return spec_; }

    // ---- sizes ----
    std::uint32_t chips() const { return chips_; }
    std::uint32_t instances() const { return instances_; }
    std::uint32_t ultraservers() const { return ultraservers_; } ///< 0 without UltraServers
    std::uint32_t chips_per_instance() const { return cpi_; }
    std::uint32_t instances_per_domain() const { return ipd_; }
    std::uint32_t chips_per_domain() const { return cpi_ * ipd_; }
    std::uint32_t domains() const { return instances_ / ipd_; }
    std::uint32_t nics() const { return nics_; }
    std::uint32_t leaves() const { return leaves_; }
    std::uint32_t spines() const { return spines_; }
    std::uint32_t cores() const { return cores_; }
    /// A switched domain's switches: one a domain (one level), or one an instance and one a
    /// rack (two levels); 0 for a torus.
    std::uint32_t switches() const { return switches_; }
    bool switched() const { return switches_ > 0; }
    bool two_switch_levels() const { return two_levels_; }
    /// Racks of one domain (1 unless an UltraServer of two switch levels spans racks).
    std::uint32_t racks_per_domain() const { return racks_; }
    std::uint32_t chips_per_rack() const { return chips_per_domain() / racks_; }
    /// The rack of a chip within its domain.
    std::uint32_t rack_in_domain(std::uint32_t chip) const {
        return chip % chips_per_domain() / chips_per_rack();
    }
    std::uint32_t pods() const { return pods_; }
    std::uint32_t nodes() const { return static_cast<std::uint32_t>(node_kind_.size()); }
    std::uint32_t links() const { return static_cast<std::uint32_t>(capacity_.size()); }
    bool has_scale_out() const { return nics_ > 0; }

    // ---- links (flat arrays indexed by link id) ----
    const std::vector<double>& capacity() const { return capacity_; } ///< bytes/s
    const std::vector<std::int32_t>& latency_ns() const { return latency_; }
    const std::vector<LinkKind>& kind() const { return kind_; }
    const std::vector<std::uint32_t>& link_src() const { return src_; }
    const std::vector<std::uint32_t>& link_dst() const { return dst_; }
    NodeKind node_kind(std::uint32_t node) const { return node_kind_[node]; }

    // ---- structure ----
    std::uint32_t domain_of(std::uint32_t chip) const { return chip / chips_per_domain(); }
    std::uint32_t instance_of(std::uint32_t chip) const { return chip / cpi_; }
    /// Torus coordinate of a chip in dimension d (the UltraServer ring is the last one).
    int coordinate(std::uint32_t chip, int d) const;
    int torus_dims() const { return static_cast<int>(dims_.size()); }
    int torus_size(int d) const { return dims_[static_cast<std::size_t>(d)]; }
    /// The chip one step from `chip` along dimension d, direction +1 or -1.
    std::uint32_t torus_neighbour(std::uint32_t chip, int d, int dir) const;
    /// A switched domain: chip's link into its domain's switch (two levels: its server's), and
    /// the switch's to the chip.
    std::uint32_t switch_up(std::uint32_t chip) const { return degree_ * chip; }
    std::uint32_t switch_down(std::uint32_t chip) const { return degree_ * chip + 1; }
    /// Two switch levels: the chip's link into its rack's switch, and back.
    std::uint32_t rack_switch_up(std::uint32_t chip) const { return degree_ * chip + 2; }
    std::uint32_t rack_switch_down(std::uint32_t chip) const { return degree_ * chip + 3; }
    /// Two switch levels: the chip at `chip`'s position in rack `rack` of its domain.
    std::uint32_t rack_peer(std::uint32_t chip, std::uint32_t rack) const {
        const std::uint32_t cpr = chips_per_rack();
        return chip - (chip % chips_per_domain()) + rack * cpr + chip % cpr;
    }
    /// Two switch levels: the direct link from `chip` to its peer in rack `rack` (not its own).
    std::uint32_t rack_link(std::uint32_t chip, std::uint32_t rack) const {
        const std::uint32_t own = rack_in_domain(chip);
        return degree_ * chip + 4 + (rack < own ? rack : rack - 1);
    }
    std::uint32_t torus_link(std::uint32_t chip, int d, int dir) const {
        return chip * degree_ + static_cast<std::uint32_t>(2 * d + (dir > 0 ? 0 : 1));
    }

    std::uint32_t nic_of(std::uint32_t chip) const;
    std::uint32_t rail_of(std::uint32_t nic) const { return nic % nics_per_instance_; }
    std::uint32_t leaf_of(std::uint32_t nic) const;
    std::uint32_t pod_of_leaf(std::uint32_t leaf) const { return leaf / leaves_per_pod_; }
    std::uint32_t host_up(std::uint32_t chip) const { return host_base_ + 2 * chip; }
    std::uint32_t host_down(std::uint32_t chip) const { return host_base_ + 2 * chip + 1; }
    std::uint32_t nic_up(std::uint32_t nic) const { return nic_base_ + 2 * nic; }
    std::uint32_t nic_down(std::uint32_t nic) const { return nic_base_ + 2 * nic + 1; }
    /// Leaf `leaf` to spine `port` of its pod, and back.
    std::uint32_t leaf_up(std::uint32_t leaf, std::uint32_t port) const {
        return leaf_base_ + 2 * (leaf * leaf_up_ports_ + port);
    }
    std::uint32_t leaf_down(std::uint32_t leaf, std::uint32_t port) const {
        return leaf_up(leaf, port) + 1;
    }
    /// Spine (pod, plane) to core `port` of its plane, and back.
    std::uint32_t spine_up(std::uint32_t pod, std::uint32_t plane, std::uint32_t port) const {
        return spine_base_ + 2 * ((pod * leaf_up_ports_ + plane) * spine_up_ports_ + port);
    }
    std::uint32_t spine_down(std::uint32_t pod, std::uint32_t plane, std::uint32_t port) const {
        return spine_up(pod, plane, port) + 1;
    }
    std::uint32_t leaf_up_ports() const { return leaf_up_ports_; }
    std::uint32_t spine_up_ports() const { return spine_up_ports_; }

    /// Bytes held by the arrays.
    std::size_t memory_bytes() const;

private:
    void add_link(std::uint32_t src, std::uint32_t dst, double capacity, std::int64_t latency_ns,
                  LinkKind kind);

    FabricSpec spec_;
    std::uint32_t chips_ = 0, instances_ = 0, ultraservers_ = 0, cpi_ = 0, ipd_ = 1;
    std::uint32_t nics_ = 0, nics_per_instance_ = 0, leaves_ = 0, spines_ = 0, cores_ = 0;
    std::uint32_t switches_ = 0, racks_ = 1;
    bool two_levels_ = false;
    std::uint32_t pods_ = 0, leaves_per_pod_ = 1, leaf_down_ports_ = 1, leaf_up_ports_ = 0;
    std::uint32_t spine_up_ports_ = 0, leaves_per_rail_ = 0;
    std::vector<int> dims_;
    std::uint32_t degree_ = 0;
    std::uint32_t host_base_ = 0, nic_base_ = 0, leaf_base_ = 0, spine_base_ = 0;
    std::vector<NodeKind> node_kind_;
    std::vector<double> capacity_;
    std::vector<std::int32_t> latency_;
    std::vector<LinkKind> kind_;
    std::vector<std::uint32_t> src_;
    std::vector<std::uint32_t> dst_;
};

} // namespace trnsim::topology
