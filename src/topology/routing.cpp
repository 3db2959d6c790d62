#include "trnsim/topology/routing.hpp"

namespace trnsim::topology {

namespace {

std::uint64_t mix(std::uint64_t x) {
    // splitmix64 finaliser: a fixed, well-spread hash (no std::hash: it is not portable).
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void torus_route(const Fabric& f, std::uint32_t a, std::uint32_t b, std::uint64_t salt,
                 std::vector<std::uint32_t>& out) {
    std::uint32_t cur = a;
    for (int d = 0; d < f.torus_dims(); ++d) {
        const int size = f.torus_size(d);
        const int forward = (f.coordinate(b, d) - f.coordinate(cur, d) + size) % size;
        if (forward == 0) {
            continue;
        }
        const int backward = size - forward;
        int dir = forward < backward ? +1 : -1;
        if (forward == backward) {
            dir = ((salt >> d) & 1u) != 0 ? +1 : -1;
        }
        const int steps = dir > 0 ? forward : backward;
        for (int s = 0; s < steps; ++s) {
            out.push_back(f.torus_link(cur, d, dir));
            cur = f.torus_neighbour(cur, d, dir);
        }
    }
}

} // namespace

void route(const Fabric& f, std::uint32_t a, std::uint32_t b, std::uint64_t salt,
           std::vector<std::uint32_t>& out) {
    if (a == b) {
        return;
    }
    if (f.domain_of(a) == f.domain_of(b)) {
        if (f.two_switch_levels()) {
            // Across racks: the direct link to a's position in b's rack first, then inside it.
            const std::uint32_t rack = f.rack_in_domain(b);
            if (f.rack_in_domain(a) != rack) {
                out.push_back(f.rack_link(a, rack));
                a = f.rack_peer(a, rack);
                if (a == b) {
                    return;
                }
            }
            const bool server = f.instance_of(a) == f.instance_of(b);
            out.push_back(server ? f.switch_up(a) : f.rack_switch_up(a));
            out.push_back(server ? f.switch_down(b) : f.rack_switch_down(b));
            return;
        }
        if (f.switched()) {
            out.push_back(f.switch_up(a));
            out.push_back(f.switch_down(b));
            return;
        }
        torus_route(f, a, b, salt, out);
        return;
    }
    const std::uint32_t na = f.nic_of(a);
    const std::uint32_t nb = f.nic_of(b);
    const std::uint32_t la = f.leaf_of(na);
    const std::uint32_t lb = f.leaf_of(nb);
    out.push_back(f.host_up(a));
    out.push_back(f.nic_up(na));
    if (la != lb) {
        const std::uint64_t h = mix((std::uint64_t{a} << 32 | b) ^ mix(salt));
        const std::uint32_t plane = static_cast<std::uint32_t>(h % f.leaf_up_ports());
        out.push_back(f.leaf_up(la, plane));
        const std::uint32_t pa = f.pod_of_leaf(la);
        const std::uint32_t pb = f.pod_of_leaf(lb);
        if (pa != pb) {
            const std::uint32_t core =
                static_cast<std::uint32_t>((h >> 32) % f.spine_up_ports());
            out.push_back(f.spine_up(pa, plane, core));
            out.push_back(f.spine_down(pb, plane, core));
        }
        out.push_back(f.leaf_down(lb, plane));
    }
    out.push_back(f.nic_down(nb));
    out.push_back(f.host_down(b));
}

std::int64_t route_latency_ns(const Fabric& f, const std::uint32_t* links, std::size_t n) {
    std::int64_t t = 0;
    for (std::size_t i = 0; i < n; ++i) {
        t += f.latency_ns()[links[i]];
    }
    return t;
}

std::size_t route_hops(const Fabric& f, std::uint32_t a, std::uint32_t b) {
    std::vector<std::uint32_t> links;
    route(f, a, b, 0, links);
    return links.size();
}

} // namespace trnsim::topology
