#include "trnsim/topology/analysis.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>

namespace trnsim::topology {

namespace {

using Csr = boost::compressed_sparse_row_graph<boost::directedS>;
constexpr std::uint32_t kUnreached = std::numeric_limits<std::uint32_t>::max();

Csr make_csr(const Fabric& f) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges(f.links());
    for (std::uint32_t l = 0; l < f.links(); ++l) {
        edges[l] = {f.link_src()[l], f.link_dst()[l]};
    }
    return Csr(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), f.nodes());
}

std::vector<std::uint32_t> bfs(const Csr& g, std::uint32_t from) {
    std::vector<std::uint32_t> dist(boost::num_vertices(g), kUnreached);
    dist[from] = 0;
    auto dmap = boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g));
    boost::breadth_first_search(
        g, from,
        boost::visitor(boost::make_bfs_visitor(boost::record_distances(dmap, boost::on_tree_edge()))));
    return dist;
}

/// The chip farthest from the BFS source, and its distance.
std::pair<std::uint32_t, std::uint32_t> farthest_chip(const Fabric& f,
                                                      const std::vector<std::uint32_t>& dist) {
    std::pair<std::uint32_t, std::uint32_t> best{0, 0};
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        if (dist[c] != kUnreached && dist[c] > best.second) {
            best = {c, dist[c]};
        }
    }
    return best;
}

double bisection_by_tier(const Fabric& f) {
    const auto& spec = f.spec();
    if ((f.domains() == 1 || !f.has_scale_out()) && f.two_switch_levels()) {
        const double half = 0.5 * f.chips_per_domain();
        if (f.racks_per_domain() > 1) {
            // The halves of the chips are the halves of the racks: each chip of one half has
            // a direct link to its position in each rack of the other.
            return half * (f.racks_per_domain() / 2) *
                   spec.scale_up.rack_link.bandwidth.bytes_per_s();
        }
        // Half the chips send through their links into the rack's (non-blocking) switches.
        return half * spec.scale_up.ultraserver_link.bandwidth.bytes_per_s();
    }
    if ((f.domains() == 1 || !f.has_scale_out()) && f.switched()) {
        // Half the chips send through their links into the (non-blocking) switch.
        return 0.5 * f.chips_per_domain() * spec.scale_up.instance_link.bandwidth.bytes_per_s();
    }
    if (f.domains() == 1 || !f.has_scale_out()) {
        // Cut the domain's torus across its last dimension (the halves by chip index): a ring
        // of any size >= 2 is crossed twice, so 2 x (chips / size) links per direction.
        const int d = f.torus_dims() - 1;
        const double per_link = d == static_cast<int>(spec.scale_up.instance_torus.size())
                                    ? spec.scale_up.ultraserver_link.bandwidth.bytes_per_s()
                                    : spec.scale_up.instance_link.bandwidth.bytes_per_s();
        return 2.0 * f.chips_per_domain() / f.torus_size(d) * per_link;
    }
    // Traffic between the halves crosses the NICs of one half, then, when the halves fall on
    // leaf-group (pod) boundaries, the up-links of one half's leaves (spines). When a leaf
    // group or pod straddles the halves, part of the traffic turns back below that tier, so
    // the tier is not a cut: it is left out (the estimate is then an upper bound).
    const auto& out = spec.scale_out;
    const double half = 0.5;
    double cut = std::min(f.chips() * half * out.host_bandwidth.bytes_per_s(),
                          f.nics() * half * out.nic_bandwidth.bytes_per_s());
    const std::uint32_t groups = f.leaves() / out.nics_per_instance;
    if (f.spines() > 0 && groups % 2 == 0) {
        cut = std::min(cut, f.leaves() * half * f.leaf_up_ports() *
                                out.leaf.up_bandwidth.bytes_per_s());
    }
    if (f.cores() > 0 && f.pods() % 2 == 0) {
        cut = std::min(cut, f.spines() * half * f.spine_up_ports() *
                                out.spine.up_bandwidth.bytes_per_s());
    }
    return cut;
}

} // namespace

std::vector<std::uint32_t> hop_distances(const Fabric& f, std::uint32_t from) {
    return bfs(make_csr(f), from);
}

FabricReport analyse(const Fabric& f) {
    FabricReport r;
    for (std::uint32_t l = 0; l < f.links(); ++l) {
        const auto k = static_cast<std::size_t>(f.kind()[l]);
        ++r.links[k];
        r.link_bandwidth[k] = f.capacity()[l];
    }
    const Csr g = make_csr(f);
    const std::vector<std::uint32_t> from0 = bfs(g, 0);
    r.connected = std::none_of(from0.begin(), from0.end(),
                               [](std::uint32_t d) { return d == kUnreached; });
    // Double sweep: the farthest chip from chip 0, then the farthest from it.
    const auto a = farthest_chip(f, from0);
    r.diameter = farthest_chip(f, bfs(g, a.first)).second;
    r.bisection = bisection_by_tier(f);
    return r;
}

double max_flow_between_halves(const Fabric& f) {
    using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
    using Graph = boost::adjacency_list<
        boost::vecS, boost::vecS, boost::directedS, boost::no_property,
        boost::property<boost::edge_capacity_t, double,
                        boost::property<boost::edge_residual_capacity_t, double,
                                        boost::property<boost::edge_reverse_t,
                                                        Traits::edge_descriptor>>>>;
    const std::uint32_t source = f.nodes();
    const std::uint32_t sink = f.nodes() + 1;
    Graph g(f.nodes() + 2);
    auto capacity = boost::get(boost::edge_capacity, g);
    auto reverse = boost::get(boost::edge_reverse, g);
    const auto add = [&](std::uint32_t u, std::uint32_t v, double c) {
        const auto e = boost::add_edge(u, v, g).first;
        const auto back = boost::add_edge(v, u, g).first;
        capacity[e] = c;
        capacity[back] = 0.0;
        reverse[e] = back;
        reverse[back] = e;
    };
    for (std::uint32_t l = 0; l < f.links(); ++l) {
        add(f.link_src()[l], f.link_dst()[l], f.capacity()[l]);
    }
    const double unlimited = 1e30;
    for (std::uint32_t c = 0; c < f.chips(); ++c) {
        if (c < f.chips() / 2) {
            add(source, c, unlimited);
        } else {
            add(c, sink, unlimited);
        }
    }
    return boost::push_relabel_max_flow(g, source, sink);
}

} // namespace trnsim::topology
