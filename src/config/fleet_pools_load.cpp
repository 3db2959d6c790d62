// The `fleet:` form's pools (docs/fleet.md, "Several pools") and its durations.
#include "fleet_load_parts.hpp"

#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"

namespace trnsim::config::detail {

Duration fleet_duration(const YAML::Node& n, const std::string& path, const std::string& file) {
    Duration d;
    try {
        d = parse_duration(is_scalar(n) ? n.Scalar() : std::string());
    } catch (const UnitError& e) {
        throw InputError(path, e.what(), at(n, file));
    }
    if (d < Duration::zero()) {
        throw InputError(path, "must not be negative", at(n, file));
    }
    return d;
}

std::vector<PoolDraft> read_pools(const YAML::Node& croot, const YAML::Node& f,
                                  const SharedCluster& cl, std::int64_t spares,
                                  const std::string& file) {
std::vector<PoolDraft> pools;
pools.push_back({"main", cl, spares, croot, "", YAML::Node(), {}, -1});
if (const YAML::Node pl = f["pools"]; pl.IsDefined()) {
    if (!is_sequence(pl) || pl.size() == 0) {
        throw InputError("fleet.pools",
                         "expected a list of pools beside the cluster's, each with a name, "
                         "its ultraservers or instances, and its hardware and cost if they "
                         "differ",
                         at(pl, file));
    }
    for (std::size_t k = 0; k < pl.size(); ++k) {
        const YAML::Node n = pl[k];
        const std::string path = "fleet.pools[" + std::to_string(k) + "]";
        if (!is_map(n)) {
            throw InputError(path, "a pool is a mapping with name and ultraservers or "
                                   "instances",
                             at(n, file));
        }
        known_keys(n, path, file,
                   {"name", "hardware", "ultraservers", "instances", "spares", "cost"});
        PoolDraft d;
        d.path = path;
        d.node = n;
        const YAML::Node name = n["name"];
        d.name = is_scalar(name) ? name.Scalar() : std::string();
        if (!valid_name(d.name)) {
            throw InputError(path + ".name",
                             "a pool's name is 1 to 64 letters, digits, '_', '-' or '.'",
                             name.IsDefined() ? at(name, file) : at(n, file));
        }
        for (const PoolDraft& other : pools) {
            if (other.name == d.name) {
                throw InputError(path + ".name",
                                 d.name == "main"
                                     ? std::string("main is the cluster's own pool")
                                     : "another pool is named " + d.name,
                                 at(name, file));
            }
        }
        if (n["ultraservers"].IsDefined() == n["instances"].IsDefined()) {
            throw InputError(path, "give exactly one of ultraservers or instances",
                             at(n, file));
        }
        d.cl.ultraservers = n["ultraservers"].IsDefined();
        d.cl.unit = d.cl.ultraservers ? "ultraservers" : "instances";
        d.cl.domains = integer(n[d.cl.unit], path + "." + d.cl.unit, file);
        if (d.cl.domains < 1 || d.cl.domains > 1'000'000) {
            throw InputError(path + "." + d.cl.unit, "1 to 1,000,000",
                             at(n[d.cl.unit], file));
        }
        d.cl.node = YAML::Node(YAML::NodeType::Map);
        d.cl.node[d.cl.unit] = d.cl.domains;
        if (n["spares"].IsDefined()) {
            d.spares = integer(n["spares"], path + ".spares", file);
            if (d.spares < 0 || d.spares >= d.cl.domains) {
                throw InputError(path + ".spares",
                                 "0 to " + std::to_string(d.cl.domains - 1) +
                                     " (the pool's " + std::to_string(d.cl.domains) + " " +
                                     d.cl.unit + " less one to run on)",
                                 at(n["spares"], file));
            }
        }
        d.root = YAML::Node(YAML::NodeType::Map);
        for (const auto& kv : croot) {
            const std::string key = kv.first.Scalar();
            if (key != "hardware" && key != "cost") {
                d.root[key] = kv.second;
            }
        }
        for (const char* section : {"hardware", "cost"}) {
            if (const YAML::Node x = n[section]; x.IsDefined()) {
                if (!is_map(x)) {
                    throw InputError(path + "." + section, "expected a mapping",
                                     at(x, file));
                }
                d.root[section] = x;
                d.sections_at.emplace_back(section, path + "." + section);
            } else if (croot[section].IsDefined()) {
                d.root[section] = croot[section];
            }
        }
        pools.push_back(std::move(d));
    }
}
    return pools;
}

} // namespace trnsim::config::detail
