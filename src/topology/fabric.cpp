#include "trnsim/topology/fabric.hpp"

#include "trnsim/core/error.hpp"

#include <algorithm>
#include <limits>

namespace trnsim::topology {

int FabricSpec::chips_per_instance() const {
    if (scale_up.kind == ScaleUpKind::switched) {
        return scale_up.instance_chips;
    }
    int n = 1;
    for (int d : scale_up.instance_torus) {
        n *= d;
    }
    return n;
}

int FabricSpec::chips_per_domain() const {
    return chips_per_instance() * std::max(1, scale_up.ultraserver_instances);
}

namespace {

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return static_cast<std::uint32_t>((a + b - 1) / b);
}

[[noreturn]] void too_big(const std::string& what) { throw InputError("cluster", what); }

} // namespace

void Fabric::add_link(std::uint32_t src, std::uint32_t dst, double capacity,
                      std::int64_t latency_ns, LinkKind kind) {
    src_.push_back(src);
    dst_.push_back(dst);
    capacity_.push_back(capacity);
    latency_.push_back(static_cast<std::int32_t>(latency_ns));
    kind_.push_back(kind);
}

int Fabric::coordinate(std::uint32_t chip, int d) const {
    if (d == static_cast<int>(spec_.scale_up.instance_torus.size())) {
        return static_cast<int>(instance_of(chip) % ipd_); // the UltraServer ring
    }
    std::uint32_t local = chip % cpi_;
    for (int i = 0; i < d; ++i) {
        local /= static_cast<std::uint32_t>(dims_[static_cast<std::size_t>(i)]);
    }
    return static_cast<int>(local % static_cast<std::uint32_t>(dims_[static_cast<std::size_t>(d)]));
}

std::uint32_t Fabric::torus_neighbour(std::uint32_t chip, int d, int dir) const {
    const int size = dims_[static_cast<std::size_t>(d)];
    const int c = coordinate(chip, d);
    const int next = (c + (dir > 0 ? 1 : size - 1)) % size;
    if (d == static_cast<int>(spec_.scale_up.instance_torus.size())) {
        const std::int64_t delta = static_cast<std::int64_t>(next - c) * cpi_;
        return static_cast<std::uint32_t>(static_cast<std::int64_t>(chip) + delta);
    }
    std::uint32_t stride = 1;
    for (int i = 0; i < d; ++i) {
        stride *= static_cast<std::uint32_t>(dims_[static_cast<std::size_t>(i)]);
    }
    return chip + static_cast<std::uint32_t>(next - c) * stride;
}

std::uint32_t Fabric::nic_of(std::uint32_t chip) const {
    const std::uint32_t local = chip % cpi_;
    return instance_of(chip) * nics_per_instance_ + local * nics_per_instance_ / cpi_;
}

std::uint32_t Fabric::leaf_of(std::uint32_t nic) const {
    const std::uint32_t instance = nic / nics_per_instance_;
    const std::uint32_t group = instance / leaf_down_ports_;
    return group * nics_per_instance_ + rail_of(nic);
}

std::size_t Fabric::memory_bytes() const {
    return capacity_.capacity() * sizeof(double) + latency_.capacity() * sizeof(std::int32_t) +
           kind_.capacity() * sizeof(LinkKind) + src_.capacity() * sizeof(std::uint32_t) +
           dst_.capacity() * sizeof(std::uint32_t) + node_kind_.capacity() * sizeof(NodeKind);
}

Fabric Fabric::build(const FabricSpec& spec, std::int64_t domains) {
    Fabric f;
    f.spec_ = spec;
    const auto& up = spec.scale_up;
    const auto& out = spec.scale_out;
    const bool switched = up.kind == ScaleUpKind::switched;
    f.dims_ = up.instance_torus;
    f.cpi_ = static_cast<std::uint32_t>(spec.chips_per_instance());
    f.ipd_ = static_cast<std::uint32_t>(std::max(1, up.ultraserver_instances));
    if (up.ultraserver_instances > 1 && !switched) {
        f.dims_.push_back(up.ultraserver_instances);
    }
    const std::string unit = up.ultraserver_instances > 1 ? "UltraServer" : "instance";
    if (domains < 1) {
        too_big("a cluster needs at least one " + unit);
    }
    if (domains > 1 && !out.present) {
        too_big("fabric '" + spec.name + "' has no scale-out network: it holds one " + unit +
                ", not " + std::to_string(domains));
    }
    const std::uint64_t chips = static_cast<std::uint64_t>(domains) * f.ipd_ * f.cpi_;
    if (chips >= (std::uint64_t{1} << 26)) {
        too_big(std::to_string(chips) + " chips is more than trnsim models (2^26)");
    }
    f.instances_ = static_cast<std::uint32_t>(domains) * f.ipd_;
    f.chips_ = static_cast<std::uint32_t>(chips);
    f.ultraservers_ = up.ultraserver_instances > 1 ? static_cast<std::uint32_t>(domains) : 0;
    f.two_levels_ = up.two_switch_levels();
    f.racks_ = f.two_levels_ ? static_cast<std::uint32_t>(std::max(1, up.racks)) : 1;
    f.degree_ = f.two_levels_ ? 4 + (f.racks_ - 1)
                : switched    ? 2
                              : static_cast<std::uint32_t>(2 * f.dims_.size());
    f.switches_ = f.two_levels_ ? f.instances_ + static_cast<std::uint32_t>(domains) * f.racks_
                  : switched    ? static_cast<std::uint32_t>(domains)
                                : 0;

    if (out.present) {
        f.nics_per_instance_ = static_cast<std::uint32_t>(out.nics_per_instance);
        f.nics_ = f.instances_ * f.nics_per_instance_;
        f.leaf_down_ports_ = static_cast<std::uint32_t>(out.leaf.down_ports);
        f.leaves_per_rail_ = ceil_div(f.instances_, f.leaf_down_ports_);
        f.leaves_ = f.leaves_per_rail_ * f.nics_per_instance_;
        f.leaves_per_pod_ = static_cast<std::uint32_t>(out.spine.down_ports);
        f.leaf_up_ports_ = static_cast<std::uint32_t>(out.leaf.up_ports);
        f.pods_ = ceil_div(f.leaves_, f.leaves_per_pod_);
        if (f.leaves_ > 1 && f.leaf_up_ports_ == 0) {
            too_big(std::to_string(f.leaves_) + " leaf switches need spines (leaf.up_ports)");
        }
        f.spines_ = f.leaves_ > 1 ? f.pods_ * f.leaf_up_ports_ : 0;
        if (f.pods_ > 1) {
            f.spine_up_ports_ = static_cast<std::uint32_t>(out.spine.up_ports);
            if (f.spine_up_ports_ == 0) {
                too_big(std::to_string(f.pods_) + " pods need a core tier (spine.up_ports)");
            }
            if (f.pods_ > static_cast<std::uint32_t>(out.core.down_ports)) {
                const std::uint64_t per_pod = std::uint64_t{f.leaves_per_pod_} *
                                              f.leaf_down_ports_ / f.nics_per_instance_ /
                                              f.ipd_;
                too_big("fabric '" + spec.name + "' holds at most " +
                        std::to_string(std::uint64_t(out.core.down_ports) * per_pod) + " " +
                        unit + "s (" + std::to_string(out.core.down_ports) + " pods of " +
                        std::to_string(per_pod) + "); asked for " + std::to_string(domains));
            }
            f.cores_ = f.leaf_up_ports_ * f.spine_up_ports_;
        }
    }

    // Nodes.
    f.node_kind_.reserve(f.chips_ + f.nics_ + f.leaves_ + f.spines_ + f.cores_ + f.switches_);
    f.node_kind_.insert(f.node_kind_.end(), f.chips_, NodeKind::chip);
    f.node_kind_.insert(f.node_kind_.end(), f.nics_, NodeKind::nic);
    f.node_kind_.insert(f.node_kind_.end(), f.leaves_, NodeKind::leaf);
    f.node_kind_.insert(f.node_kind_.end(), f.spines_, NodeKind::spine);
    f.node_kind_.insert(f.node_kind_.end(), f.cores_, NodeKind::core);
    f.node_kind_.insert(f.node_kind_.end(), f.switches_, NodeKind::neuronswitch);
    const std::uint32_t nic0 = f.chips_;
    const std::uint32_t leaf0 = nic0 + f.nics_;
    const std::uint32_t spine0 = leaf0 + f.leaves_;
    const std::uint32_t core0 = spine0 + f.spines_;
    const std::uint32_t switch0 = core0 + f.cores_;

    std::uint64_t links = std::uint64_t{f.chips_} * f.degree_;
    if (out.present) {
        links += 2ull * f.chips_ + 2ull * f.nics_ + 2ull * f.leaves_ * f.leaf_up_ports_ *
                                                        (f.spines_ > 0 ? 1 : 0) +
                 2ull * f.spines_ * f.spine_up_ports_;
    }
    f.capacity_.reserve(links);
    f.latency_.reserve(links);
    f.kind_.reserve(links);
    f.src_.reserve(links);
    f.dst_.reserve(links);

    // NeuronLink: each chip's link into its domain's switch and back (two levels: into its
    // server's and its rack's, and a direct link to its position in every other rack), or the
    // tori.
    for (std::uint32_t c = 0; c < f.chips_ && switched; ++c) {
        const std::uint32_t sw = switch0 + (f.two_levels_ ? f.instance_of(c) : f.domain_of(c));
        f.add_link(c, sw, up.instance_link.bandwidth.bytes_per_s(), up.instance_link.latency.ns(),
                   LinkKind::neuronlink);
        f.add_link(sw, c, up.instance_link.bandwidth.bytes_per_s(), 0, LinkKind::neuronlink);
        if (!f.two_levels_) {
            continue;
        }
        const std::uint32_t rack = f.domain_of(c) * f.racks_ + f.rack_in_domain(c);
        const std::uint32_t rack_sw = switch0 + f.instances_ + rack;
        const auto& l2 = up.ultraserver_link;
        f.add_link(c, rack_sw, l2.bandwidth.bytes_per_s(), l2.latency.ns(), LinkKind::neuronlink_z);
        f.add_link(rack_sw, c, l2.bandwidth.bytes_per_s(), 0, LinkKind::neuronlink_z);
        for (std::uint32_t r = 0; r < f.racks_; ++r) {
            if (r != f.rack_in_domain(c)) {
                f.add_link(c, f.rack_peer(c, r), up.rack_link.bandwidth.bytes_per_s(),
                           up.rack_link.latency.ns(), LinkKind::neuronlink_rack);
            }
        }
    }
    const int instance_dims = static_cast<int>(up.instance_torus.size());
    for (std::uint32_t c = 0; c < f.chips_ && !switched; ++c) {
        for (int d = 0; d < static_cast<int>(f.dims_.size()); ++d) {
            const bool z = d == instance_dims;
            const auto& link = z ? up.ultraserver_link : up.instance_link;
            for (int dir : {+1, -1}) {
                f.add_link(c, f.torus_neighbour(c, d, dir), link.bandwidth.bytes_per_s(),
                           link.latency.ns(), z ? LinkKind::neuronlink_z : LinkKind::neuronlink);
            }
        }
    }
    if (!out.present) {
        return f;
    }

    // Chips to their NICs (PCIe), NICs to their rail's leaf.
    f.host_base_ = static_cast<std::uint32_t>(f.capacity_.size());
    const std::int64_t half_nic = out.nic_latency.ns() / 2;
    for (std::uint32_t c = 0; c < f.chips_; ++c) {
        const std::uint32_t nic = nic0 + f.nic_of(c);
        f.add_link(c, nic, out.host_bandwidth.bytes_per_s(), half_nic, LinkKind::host);
        f.add_link(nic, c, out.host_bandwidth.bytes_per_s(), out.nic_latency.ns() - half_nic,
                   LinkKind::host);
    }
    f.nic_base_ = static_cast<std::uint32_t>(f.capacity_.size());
    for (std::uint32_t n = 0; n < f.nics_; ++n) {
        const std::uint32_t leaf = leaf0 + f.leaf_of(n);
        f.add_link(nic0 + n, leaf, out.nic_bandwidth.bytes_per_s(), out.leaf.latency.ns(),
                   LinkKind::efa_nic);
        f.add_link(leaf, nic0 + n, out.nic_bandwidth.bytes_per_s(), 0, LinkKind::efa_nic);
    }
    // Leaves to the spines of their pod.
    f.leaf_base_ = static_cast<std::uint32_t>(f.capacity_.size());
    if (f.spines_ > 0) {
        for (std::uint32_t l = 0; l < f.leaves_; ++l) {
            const std::uint32_t pod = f.pod_of_leaf(l);
            for (std::uint32_t u = 0; u < f.leaf_up_ports_; ++u) {
                const std::uint32_t spine = spine0 + pod * f.leaf_up_ports_ + u;
                f.add_link(leaf0 + l, spine, out.leaf.up_bandwidth.bytes_per_s(),
                           out.spine.latency.ns(), LinkKind::leaf_spine);
                f.add_link(spine, leaf0 + l, out.leaf.up_bandwidth.bytes_per_s(),
                           out.leaf.latency.ns(), LinkKind::leaf_spine);
            }
        }
    }
    // Spines to the cores of their plane.
    f.spine_base_ = static_cast<std::uint32_t>(f.capacity_.size());
    if (f.cores_ > 0) {
        for (std::uint32_t pod = 0; pod < f.pods_; ++pod) {
            for (std::uint32_t plane = 0; plane < f.leaf_up_ports_; ++plane) {
                const std::uint32_t spine = spine0 + pod * f.leaf_up_ports_ + plane;
                for (std::uint32_t k = 0; k < f.spine_up_ports_; ++k) {
                    const std::uint32_t core = core0 + plane * f.spine_up_ports_ + k;
                    f.add_link(spine, core, out.spine.up_bandwidth.bytes_per_s(),
                               out.core.latency.ns(), LinkKind::spine_core);
                    f.add_link(core, spine, out.spine.up_bandwidth.bytes_per_s(),
                               out.spine.latency.ns(), LinkKind::spine_core);
                }
            }
        }
    }
    return f;
}

} // namespace trnsim::topology
