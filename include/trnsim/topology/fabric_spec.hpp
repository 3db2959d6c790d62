// The description of a Trainium fabric, as read from topologies/<name>.yaml (the config module
// parses the file; this header holds the values).
//
// Scale-up: the chips of an instance form a NeuronLink torus (trn2.48xlarge and trn1.32xlarge:
// 4 x 4); an UltraServer joins the same-position chips of its instances in rings (Trn2: 4
// instances, a 4 x 4 x 4 torus). Or the domain is switched (Trn3): each chip has one link
// each way into the domain's switch (Gen1), or into its server's switch and its rack's
// (Gen2: two switch levels), with direct links between the racks' same-position chips. Scale-out: every instance has EFA interfaces (NICs) attached
// to a rail-optimised multi-tier Clos: NIC n of every instance hangs off a leaf of rail n; the
// leaves of a pod all connect to the pod's spines; spine j of every pod connects to the cores
// of plane j. Bandwidths are per direction of one link.
#pragma once

#include "trnsim/core/scale_up.hpp"
#include "trnsim/core/units.hpp"

#include <string>
#include <vector>

namespace trnsim::topology {

/// One kind of NeuronLink link.
struct TorusLinkSpec {
    Bandwidth bandwidth; ///< per direction
    Duration latency;    ///< per hop
};

struct ScaleUpSpec {
    /// A torus, or switched: every chip of the domain (its UltraServer, else its instance)
    /// has one link each way into the domain's NeuronLink switches (Trn3 NeuronSwitch-v1),
    /// which are modelled as one non-blocking switch.
    ScaleUpKind kind = ScaleUpKind::torus;
    std::vector<int> instance_torus; ///< e.g. {4, 4}; its product is the chips per instance
    int instance_chips = 0;          ///< switched: the chips of an instance (no torus)
    /// A torus link, or switched: a chip's link into its switches (all its NeuronLink ports).
    TorusLinkSpec instance_link;
    int ultraserver_instances = 0; ///< 0: no UltraServer
    /// A torus's rings between instances; switched: a chip's link into its rack's switches,
    /// joining the rack's servers (a second switch level, Trn3 Gen2; zero: one level).
    TorusLinkSpec ultraserver_link;
    /// Switched, two levels: racks the UltraServer's instances fill in equal shares; the same
    /// chip position of every two racks is joined by one direct link each way (`rack_link`).
    int racks = 1;
    TorusLinkSpec rack_link;

    /// A switched domain of two switch levels (server and rack).
    bool two_switch_levels() const {
        return kind == ScaleUpKind::switched && ultraserver_instances > 1 &&
               ultraserver_link.bandwidth.bytes_per_s() > 0.0;
    }
};

/// A switch tier of the Clos.
struct SwitchTierSpec {
    int down_ports = 0;     ///< towards the endpoints
    int up_ports = 0;       ///< towards the next tier (0 for the top tier)
    Bandwidth up_bandwidth; ///< per up-link, per direction
    Duration latency;       ///< to traverse the switch
};

struct ScaleOutSpec {
    bool present = false;
    int nics_per_instance = 0;
    Bandwidth nic_bandwidth;  ///< per NIC, per direction (the NIC-to-leaf link)
    Bandwidth host_bandwidth; ///< chip to its NIC (PCIe), per direction
    Duration nic_latency;     ///< end-to-end software, PCIe and NIC overhead of one message
    SwitchTierSpec leaf;
    SwitchTierSpec spine;
    SwitchTierSpec core;
};

struct FabricSpec {
    std::string name;
    std::string description;
    std::string chip; ///< chip preset this fabric is made of
    ScaleUpSpec scale_up;
    ScaleOutSpec scale_out;

    int chips_per_instance() const;
    /// Chips one NeuronLink domain holds (an UltraServer, else an instance).
    int chips_per_domain() const;
};

} // namespace trnsim::topology
