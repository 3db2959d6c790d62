// The `fleet:` form as resolved (`trnsim validate --resolved`, /meta/scenario): every default
// filled in, each entry's workload as its own scenario resolved it.
#include "fleet_load_parts.hpp"

#include "trnsim/core/parallel.hpp"

#include <iomanip>
#include <sstream>

namespace trnsim::config::detail {

std::string resolved_fleet_yaml(const ScenarioSpec& spec, const std::vector<PoolDraft>& pools,
                                const SharedCluster& cl, int threads,
                                const std::string& fleet_reliability_yaml) {
    // The first class's resolved shared sections, the whole cluster, the fleet's settings
    // and each class's resolved workload and reliability sections.
    const FleetSpec& fl = *spec.fleet;
    const std::size_t classes = fl.jobs.size();
    const auto main_first = static_cast<std::size_t>(pools[0].first_entry);
    YAML::Node resolved =
        YAML::Load(main_first < classes
                       ? fl.jobs[main_first].scenario->resolved_yaml
                       : fl.services[main_first - classes].scenario->resolved_yaml);
    resolved["name"] = spec.name;
    resolved.remove("workload");
    resolved.remove("reliability");
    resolved["cluster"][cl.unit] = cl.domains;
    if (YAML::Node o = resolved["output"]; is_map(o)) {
        o["file"] = spec.output.file;
    }
    YAML::Node fleet(YAML::NodeType::Map);
    fleet["policy"] = to_string(spec.fleet->policy);
    fleet["spares"] = spec.fleet->spares;
    if (spec.fleet->horizon > Duration::zero()) {
        fleet["horizon"] = std::to_string(spec.fleet->horizon.ns()) + "ns";
    }
    if (!spec.fleet->trace_file.empty()) {
        fleet["trace"] = spec.fleet->trace_file;
    }
    if (spec.fleet->window_to > Duration::zero()) {
        fleet["request_level"]["from"] = std::to_string(spec.fleet->window_from.ns()) + "ns";
        fleet["request_level"]["to"] = std::to_string(spec.fleet->window_to.ns()) + "ns";
    }
    for (const auto& [tenant, quota] : spec.fleet->quotas) {
        fleet["quotas"][tenant] = quota;
    }
    // Each entry's resolved text read back, side by side (separate trees).
    std::vector<YAML::Node> mines(fl.jobs.size() + fl.services.size());
    parallel_for(mines.size(), threads, [&](std::size_t i, int) {
        mines[i] = YAML::Load(i < classes ? fl.jobs[i].scenario->resolved_yaml
                                          : fl.services[i - classes].scenario->resolved_yaml);
    });
    // The other pools, their hardware and cost as their first entry resolved them.
    YAML::Node pool_list(YAML::NodeType::Sequence);
    for (std::size_t k = 1; k < pools.size(); ++k) {
        const YAML::Node& mine = mines[static_cast<std::size_t>(pools[k].first_entry)];
        YAML::Node n(YAML::NodeType::Map);
        n["name"] = pools[k].name;
        n["hardware"] = mine["hardware"];
        n[pools[k].cl.unit] = pools[k].cl.domains;
        n["spares"] = pools[k].spares;
        if (mine["cost"].IsDefined()) {
            n["cost"] = mine["cost"];
        }
        pool_list.push_back(n);
    }
    if (pools.size() > 1) {
        fleet["pools"] = pool_list;
    }
    YAML::Node jobs(YAML::NodeType::Sequence);
    for (std::size_t i = 0; i < classes; ++i) {
        const FleetJobClass& c = fl.jobs[i];
        const YAML::Node& mine = mines[i];
        YAML::Node n(YAML::NodeType::Map);
        n["name"] = c.name;
        n["tenant"] = c.tenant;
        if (c.gangs.empty()) {
            n["gang"] = c.gang;
        } else {
            for (const std::int64_t x : c.gangs) {
                n["gang"].push_back(x);
            }
            n["gang"].SetStyle(YAML::EmitterStyle::Flow);
        }
        n["count"] = c.count;
        n["submit"] = std::to_string(c.submit.ns()) + "ns";
        n["every"] = std::to_string(c.every.ns()) + "ns";
        n["priority"] = c.priority;
        if (c.pool > 0) {
            n["pool"] = pools[c.pool].name;
        }
        if (c.deadline > Duration::zero()) {
            n["deadline"] = std::to_string(c.deadline.ns()) + "ns";
        }
        n["workload"] = mine["workload"];
        if (mine["reliability"].IsDefined()) {
            n["reliability"] = mine["reliability"];
        }
        jobs.push_back(n);
    }
    if (classes > 0) {
        fleet["jobs"] = jobs;
    }
    YAML::Node services(YAML::NodeType::Sequence);
    for (std::size_t i = 0; i < fl.services.size(); ++i) {
        const FleetService& v = fl.services[i];
        const YAML::Node& mine = mines[classes + i];
        YAML::Node n(YAML::NodeType::Map);
        n["name"] = v.name;
        n["tenant"] = v.tenant;
        n["priority"] = v.priority;
        n["borrow"] = v.borrow;
        n["attainment"] = v.attainment;
        if (v.pool > 0) {
            n["pool"] = pools[v.pool].name;
        }
        n["workload"] = mine["workload"];
        YAML::Node l(YAML::NodeType::Map);
        {
            std::ostringstream rate; // a rate needs its unit to be read back
            rate << std::setprecision(17) << v.load.rate << "/s";
            l["rate"] = rate.str();
        }
        l["peak"] = v.load.peak;
        l["peak_at"] = std::to_string(v.load.peak_at.ns()) + "ns";
        l["period"] = std::to_string(v.load.period.ns()) + "ns";
        l["step"] = std::to_string(v.load.step.ns()) + "ns";
        n["load"] = l;
        const fleet::AutoscalerSpec& x = v.autoscale;
        YAML::Node a(YAML::NodeType::Map);
        a["signal"] = to_string(x.signal);
        a["target"] = x.target;
        a["min"] = x.min;
        a["max"] = x.max;
        a["interval"] = std::to_string(x.interval.ns()) + "ns";
        a["lag"] = std::to_string(x.lag.ns()) + "ns";
        a["provisioning"] = std::to_string(x.provisioning.ns()) + "ns";
        a["drain"] = std::to_string(x.drain.ns()) + "ns";
        if (v.load_bandwidth.bytes_per_s() > 0.0) {
            a["load_bandwidth"] = std::to_string(v.load_bandwidth.bytes_per_s()) + "B/s";
        }
        n["autoscale"] = a;
        services.push_back(n);
    }
    if (!fl.services.empty()) {
        fleet["services"] = services;
    }
    resolved["fleet"] = fleet;
    if (!fleet_reliability_yaml.empty()) {
        resolved["reliability"] = YAML::Load(fleet_reliability_yaml)["reliability"];
    }
    YAML::Emitter emitter;
    emitter << resolved;
    return std::string(emitter.c_str()) + "\n";
}

} // namespace trnsim::config::detail
