// A fabric file's cross-key checks and its agreement with its chip (validate_fabric), and
// loading a fabric preset or file.
#include "trnsim/cluster/hierarchy.hpp"

#include "load_ref.hpp"
#include "tables.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace trnsim::config::detail {

namespace {

bool close_to(double a, double b) { return std::fabs(a - b) <= 0.01 * std::max(std::fabs(a), std::fabs(b)); }

/// Cross-key checks of a fabric file and its agreement with the chip it is made of (the chip
/// file gives per-chip totals, the fabric file per-link values: they must agree).
void validate_fabric(topology::FabricSpec& f, const Context& ctx, const SourceLocation& top) {
    const auto at = [&](const std::string& key) {
        const SourceLocation l = ctx.sources ? ctx.sources->find(key) : SourceLocation{};
        return l.known() ? l : top;
    };
    const auto fail = [&](const std::string& key, const std::string& msg) {
        throw InputError(key, msg, at(key));
    };
    auto& up = f.scale_up;
    auto& out = f.scale_out;
    if (up.ultraserver_instances == 1) {
        fail("scale_up.ultraserver_instances", "an UltraServer has at least 2 instances (0: none)");
    }
    const bool switched = up.kind == ScaleUpKind::switched;
    if (switched && !up.instance_torus.empty()) {
        fail("scale_up.instance_torus", "a switched domain has no torus (scale_up.kind: switched)");
    }
    if (switched && up.instance_chips <= 0) {
        fail("scale_up.instance_chips", "required when scale_up.kind is switched");
    }
    if (!switched && up.instance_torus.empty()) {
        fail("scale_up.instance_torus", "required for a torus (or scale_up.kind: switched)");
    }
    if (!switched && up.instance_chips > 0) {
        fail("scale_up.instance_chips",
             "only for a switched domain: a torus's chips are its shape's product");
    }
    if (up.ultraserver_instances > 1 && !switched &&
        up.ultraserver_link.bandwidth.bytes_per_s() <= 0.0) {
        fail("scale_up.ultraserver_link.bandwidth",
             "required when scale_up.ultraserver_instances is set");
    }
    out.present = out.nics_per_instance > 0;
    if (out.present) {
        const std::pair<const char*, double> needed[] = {
            {"scale_out.nic_bandwidth", out.nic_bandwidth.bytes_per_s()},
            {"scale_out.host_bandwidth", out.host_bandwidth.bytes_per_s()},
            {"scale_out.leaf.down_ports", out.leaf.down_ports},
            {"scale_out.spine.down_ports", out.spine.down_ports},
        };
        for (const auto& [key, value] : needed) {
            if (value <= 0.0) {
                fail(key, "required when scale_out is given");
            }
        }
        if (out.leaf.up_ports > 0 && out.leaf.up_bandwidth.bytes_per_s() <= 0.0) {
            fail("scale_out.leaf.up_bandwidth", "required when scale_out.leaf.up_ports > 0");
        }
        if (out.spine.up_ports > 0 && out.spine.up_bandwidth.bytes_per_s() <= 0.0) {
            fail("scale_out.spine.up_bandwidth", "required when scale_out.spine.up_ports > 0");
        }
        if (out.spine.up_ports > 0 && out.core.down_ports <= 0) {
            fail("scale_out.core.down_ports", "required when scale_out.spine.up_ports > 0");
        }
    }
    const compute::ChipSpec chip = load_chip_ref(f.chip, ctx, "chip", at("chip"));
    const std::string source = " (chip '" + chip.name + "' says ";
    if (up.kind != chip.instance.scale_up) {
        fail("scale_up.kind", std::string("is ") + to_string(up.kind) + " but the chip's domain is " +
                                  to_string(chip.instance.scale_up) + source + "instance.scale_up)");
    }
    if (f.chips_per_instance() != chip.instance.chips) {
        fail(switched ? "scale_up.instance_chips" : "scale_up.instance_torus",
             "holds " + std::to_string(f.chips_per_instance()) + " chips but an instance has " +
                 std::to_string(chip.instance.chips) + source + "instance.chips)");
    }
    const double links = switched ? 1.0 : 2.0 * static_cast<double>(up.instance_torus.size());
    if (!close_to(up.instance_link.bandwidth.bytes_per_s() * links,
                  chip.neuronlink_intra_instance.bytes_per_s())) {
        fail("scale_up.instance_link.bandwidth",
             "x " + std::to_string(static_cast<int>(links)) +
                 " links per chip does not match the chip's NeuronLink bandwidth" + source +
                 "interconnect.neuronlink_intra_instance)");
    }
    if (up.instance_link.latency != chip.neuronlink_hop_latency) {
        fail("scale_up.instance_link.latency",
             "differs from the chip's NeuronLink hop latency" + source +
                 "interconnect.neuronlink_hop_latency)");
    }
    if (up.racks > 1 && !up.two_switch_levels()) {
        fail("scale_up.racks", "racks need a switched UltraServer of two switch levels "
                               "(scale_up.kind: switched and scale_up.ultraserver_link)");
    }
    if (up.racks > 1 && up.ultraserver_instances % up.racks != 0) {
        fail("scale_up.racks", "the " + std::to_string(up.ultraserver_instances) +
                                   " instances of an UltraServer do not fill " +
                                   std::to_string(up.racks) + " racks in equal shares");
    }
    if (up.racks > 1 && up.rack_link.bandwidth.bytes_per_s() <= 0.0) {
        fail("scale_up.rack_link.bandwidth", "required when scale_up.racks > 1");
    }
    if (switched && up.ultraserver_instances > 1) {
        const double chip_level2 = chip.neuronlink_inter_instance.bytes_per_s();
        if (!close_to(up.ultraserver_link.bandwidth.bytes_per_s(), chip_level2)) {
            fail("scale_up.ultraserver_link.bandwidth",
                 chip_level2 > 0.0 ? "does not match the chip's link into its rack's switches" +
                                         source + "interconnect.neuronlink_inter_instance)"
                                   : "the chip's UltraServer has one switch level" + source +
                                         "no interconnect.neuronlink_inter_instance)");
        }
        const int chip_racks = chip.ultraserver ? chip.ultraserver->racks : 1;
        if (up.racks != chip_racks) {
            fail("scale_up.racks", "is " + std::to_string(up.racks) + " but the chip's UltraServer "
                                   "fills " + std::to_string(chip_racks) + source +
                                       "ultraserver.racks)");
        }
        if (up.racks > 1 && !close_to(up.rack_link.bandwidth.bytes_per_s() * (up.racks - 1),
                                      chip.neuronlink_inter_rack.bytes_per_s())) {
            fail("scale_up.rack_link.bandwidth",
                 "x " + std::to_string(up.racks - 1) +
                     " other racks does not match the chip's bandwidth between racks" + source +
                     "interconnect.neuronlink_inter_rack)");
        }
    }
    if (up.ultraserver_instances > 1) {
        if (cluster::Hierarchy::instances_per_ultraserver(chip) != up.ultraserver_instances) {
            fail("scale_up.ultraserver_instances",
                 "does not match the chip's UltraServer" + source + "ultraserver.instances)");
        }
        if (!switched && !close_to(up.ultraserver_link.bandwidth.bytes_per_s() * 2.0,
                      chip.neuronlink_inter_instance.bytes_per_s())) {
            fail("scale_up.ultraserver_link.bandwidth",
                 "x 2 links per chip does not match the chip's NeuronLink bandwidth between "
                 "instances" + source + "interconnect.neuronlink_inter_instance)");
        }
    }
    if (out.present) {
        if (!close_to(out.nic_bandwidth.bytes_per_s() * out.nics_per_instance,
                      chip.instance.efa_bandwidth.bytes_per_s())) {
            fail("scale_out.nic_bandwidth",
                 "x scale_out.nics_per_instance does not match the instance's EFA bandwidth" +
                     source + "instance.efa_bandwidth)");
        }
        if (out.nics_per_instance != chip.instance.efa_interfaces) {
            fail("scale_out.nics_per_instance",
                 "does not match the instance's EFA interfaces" + source +
                     "instance.efa_interfaces)");
        }
    }
}

} // namespace

topology::FabricSpec load_fabric_ref(const std::string& ref, const Context& ctx,
                                     const std::string& path, const SourceLocation& loc) {
    return load_ref<topology::FabricSpec>(ref, "topologies", "fabric", fabric_schema(),
                                          validate_fabric, ctx, path, loc);
}

} // namespace trnsim::config::detail
