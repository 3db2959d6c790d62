#include "fields.hpp"
#include "tables.hpp"

namespace trnsim::config::detail {

using topology::FabricSpec;
using F = FabricSpec;

namespace {

Entry<F> bandwidth(std::string path, Ref<F, Bandwidth> ref, std::string doc) {
    return quantity<F, Bandwidth>(std::move(path), std::move(ref), parse_bandwidth, "bandwidth",
                                  "", Bandwidth::bytes_per_s(0.0), Bandwidth::bytes_per_s(1e18),
                                  true, "> 0", std::move(doc));
}

Entry<F> latency(std::string path, Ref<F, Duration> ref, std::string doc) {
    return quantity<F, Duration>(std::move(path), std::move(ref), parse_duration, "duration", "",
                                 Duration::zero(), Duration::from_ns(1'000'000'000), false,
                                 "0 to 1s", std::move(doc));
}

void tier(Schema<F>& s, const std::string& name, Ref<F, topology::SwitchTierSpec> ref,
          bool has_up, const std::string& what) {
    s.section("scale_out." + name, what);
    s.field(computed_default(
        integer<F>("scale_out." + name + ".down_ports",
                   [ref](F& f) -> int& { return ref(f).down_ports; }, "", 1, 1 << 20,
                   "Ports towards the endpoints."),
        "required with scale_out"));
    if (has_up) {
        s.field(computed_default(
            integer<F>("scale_out." + name + ".up_ports",
                       [ref](F& f) -> int& { return ref(f).up_ports; }, "", 0, 1 << 20,
                       "Ports towards the next tier."),
            "required with scale_out"));
        s.field(computed_default(
            bandwidth("scale_out." + name + ".up_bandwidth",
                      [ref](F& f) -> Bandwidth& { return ref(f).up_bandwidth; },
                      "Bandwidth of one up-link, per direction."),
            "required with scale_out"));
    }
    s.field(computed_default(latency("scale_out." + name + ".latency",
                                     [ref](F& f) -> Duration& { return ref(f).latency; },
                                     "Time to traverse the switch."),
                             "required with scale_out"));
}

Schema<F> build() {
    Schema<F> s("Fabric");
    s.field(required(text<F>("name", [](F& f) -> std::string& { return f.name; }, "",
                             "Fabric name.")));
    s.field(text<F>("description", [](F& f) -> std::string& { return f.description; }, "\"\"",
                    "One line shown by describe topology."));
    s.field(required(text<F>("chip", [](F& f) -> std::string& { return f.chip; }, "",
                             "Chip preset the fabric is built from (its per-chip NeuronLink and "
                             "EFA totals must match the links below).")));
    s.section("scale_up", "NeuronLink inside an instance and an UltraServer.");
    s.field(choice<F, ScaleUpKind>(
        "scale_up.kind", [](F& f) -> ScaleUpKind& { return f.scale_up.kind; }, "torus",
        "torus: rings per dimension; switched: each chip has one link each way into its "
        "domain's NeuronLink switches (Trn3), modelled as one non-blocking switch."));
    s.field(computed_default(
        integer_list<F>("scale_up.instance_torus",
                        [](F& f) -> std::vector<int>& { return f.scale_up.instance_torus; }, "",
                        2, 64, "Torus of the chips of one instance, dimension 0 first."),
        "required for a torus"));
    s.field(computed_default(
        integer<F>("scale_up.instance_chips",
                   [](F& f) -> int& { return f.scale_up.instance_chips; }, "", 1, 4096,
                   "Chips of one instance of a switched domain."),
        "required when switched"));
    s.section("scale_up.instance_link", "One NeuronLink link inside an instance; switched: a "
                                        "chip's link into its switches.");
    s.field(required(bandwidth("scale_up.instance_link.bandwidth",
                               [](F& f) -> Bandwidth& { return f.scale_up.instance_link.bandwidth; },
                               "Per direction.")));
    s.field(required(latency("scale_up.instance_link.latency",
                             [](F& f) -> Duration& { return f.scale_up.instance_link.latency; },
                             "Per hop (switched: chip to chip through the switch).")));
    s.field(integer<F>("scale_up.ultraserver_instances",
                       [](F& f) -> int& { return f.scale_up.ultraserver_instances; }, "0", 0, 64,
                       "Instances per UltraServer, their same-position chips in rings (0: "
                       "none)."));
    s.section("scale_up.ultraserver_link", "One NeuronLink link between the instances of an "
                                           "UltraServer; switched: a chip's link into the "
                                           "switches joining the servers of its rack (a second "
                                           "switch level; absent: one level).");
    s.field(computed_default(
        bandwidth("scale_up.ultraserver_link.bandwidth",
                  [](F& f) -> Bandwidth& { return f.scale_up.ultraserver_link.bandwidth; },
                  "Per direction."),
        "required with ultraserver_instances"));
    s.field(computed_default(
        latency("scale_up.ultraserver_link.latency",
                [](F& f) -> Duration& { return f.scale_up.ultraserver_link.latency; },
                "Per hop."),
        "required with ultraserver_instances"));
    s.field(integer<F>("scale_up.racks", [](F& f) -> int& { return f.scale_up.racks; }, "1", 1,
                       64,
                       "Switched UltraServer of two switch levels: racks its instances fill in "
                       "equal shares, the same chip position of every rack joined by a direct "
                       "link (Trn3 Gen2: 2)."));
    s.section("scale_up.rack_link", "One direct link between the same chip position of two "
                                    "racks of an UltraServer.");
    s.field(computed_default(
        bandwidth("scale_up.rack_link.bandwidth",
                  [](F& f) -> Bandwidth& { return f.scale_up.rack_link.bandwidth; },
                  "Per direction."),
        "required with racks > 1"));
    s.field(computed_default(
        latency("scale_up.rack_link.latency",
                [](F& f) -> Duration& { return f.scale_up.rack_link.latency; }, "Per hop."),
        "required with racks > 1"));
    s.section("scale_out", "EFA: a rail-optimised Clos of leaf, spine and core switches (absent: "
                           "one NeuronLink domain only).");
    s.field(computed_default(
        integer<F>("scale_out.nics_per_instance",
                   [](F& f) -> int& { return f.scale_out.nics_per_instance; }, "", 1, 1024,
                   "EFA interfaces per instance; NIC n of every instance is on rail n."),
        "required with scale_out"));
    s.field(computed_default(
        bandwidth("scale_out.nic_bandwidth",
                  [](F& f) -> Bandwidth& { return f.scale_out.nic_bandwidth; },
                  "One NIC's link to its leaf, per direction."),
        "required with scale_out"));
    s.field(computed_default(
        bandwidth("scale_out.host_bandwidth",
                  [](F& f) -> Bandwidth& { return f.scale_out.host_bandwidth; },
                  "A chip's path to its NIC, per direction."),
        "required with scale_out"));
    s.field(computed_default(
        latency("scale_out.nic_latency", [](F& f) -> Duration& { return f.scale_out.nic_latency; },
                "Software, PCIe and NIC overhead of one message, end to end."),
        "required with scale_out"));
    tier(s, "leaf", [](F& f) -> topology::SwitchTierSpec& { return f.scale_out.leaf; }, true,
         "Leaf switches: down-ports to the NICs of one rail.");
    tier(s, "spine", [](F& f) -> topology::SwitchTierSpec& { return f.scale_out.spine; }, true,
         "Spine switches: down-ports to the leaves of a pod, up-ports to the cores.");
    tier(s, "core", [](F& f) -> topology::SwitchTierSpec& { return f.scale_out.core; }, false,
         "Core switches: one down-port per pod.");
    return s;
}

} // namespace

const Schema<F>& fabric_schema() {
    static const Schema<F> s = build();
    return s;
}

} // namespace trnsim::config::detail
