// The `tenants:` form of a scenario (ADR 0002, docs/tenants.md): one cluster, several
// workloads. Each tenant is loaded as a single-workload scenario of its own: the document's
// shared sections (name, seed, hardware, simulation, cost, output, the cluster's fabric) with
// the tenant's workload and reliability sections, on a cluster of its allocation's domains.
// Its errors keep their location in the file and name the tenant's key
// (tenants[1].workload.serving.tp).
#include "load_root.hpp"

#include "trnsim/core/error.hpp"

#include <algorithm>
#include <charconv>
#include <set>

namespace trnsim::config {

bool tenant_owns_key(const std::string& key) {
    for (const std::string section : {"workload", "reliability"}) {
        if (key == section || key.rfind(section + ".", 0) == 0 ||
            key.rfind(section + "[", 0) == 0) {
            return true;
        }
    }
    return false;
}

namespace detail {

namespace fs = std::filesystem;

namespace {

SourceLocation at(const YAML::Node& n, const std::string& file) {
    const YAML::Mark m = n.Mark();
    if (m.line < 0) {
        return {file, 1, 1};
    }
    return {file, m.line + 1, m.column + 1};
}

/// A non-negative integer scalar.
std::int64_t integer(const YAML::Node& n, const std::string& path, const std::string& file) {
    const std::string text = n.IsScalar() ? n.Scalar() : std::string();
    std::int64_t v = -1;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size() || v < 0) {
        throw InputError(path, "expected a whole number of 0 or more, got '" + text + "'",
                         at(n, file));
    }
    return v;
}

/// The keys of mapping `n` must be among `allowed`.
void known_keys(const YAML::Node& n, const std::string& path, const std::string& file,
                std::initializer_list<const char*> allowed) {
    for (const auto& kv : n) {
        const std::string key = kv.first.Scalar();
        if (std::none_of(allowed.begin(), allowed.end(),
                         [&](const char* a) { return key == a; })) {
            std::string list;
            for (const char* a : allowed) {
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            throw InputError((path.empty() ? "" : path + ".") + key,
                             "unknown key (expected one of " + list + ")", at(kv.first, file));
        }
    }
}

bool valid_name(const std::string& s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
    });
}

struct TenantEntry {
    std::string name;
    cluster::Allocation allocation;
    SourceLocation allocation_at;
    YAML::Node node;
};

/// A tenant's error: its workload's and reliability's keys under tenants[i], its cluster's
/// under tenants[i].allocation (located there).
InputError tenant_error(const InputError& e, std::size_t i, const TenantEntry& t) {
    const std::string prefix = "tenants[" + std::to_string(i) + "]";
    const std::string& key = e.key_path();
    if (tenant_owns_key(key)) {
        return InputError(prefix + "." + key, e.message(), e.location());
    }
    if (key == "cluster" || key == "cluster.ultraservers" || key == "cluster.instances") {
        return InputError(prefix + ".allocation",
                          e.message() + " (tenant " + t.name + "'s allocation)",
                          t.allocation_at);
    }
    return InputError(key, e.message() + " (in tenant " + t.name + ")", e.location());
}

} // namespace

ScenarioSpec load_tenants(YAML::Node root, const std::string& file, const fs::path& base_dir,
                          const std::string& default_name, PresetCache* presets,
                          const LoadOptions& options) {
    const YAML::Node& croot = root;
    known_keys(croot, "", file,
               {"name", "seed", "hardware", "cluster", "simulation", "cost", "output", "tenants"});
    const YAML::Node list = croot["tenants"];
    if (!list.IsSequence() || list.size() == 0) {
        throw InputError("tenants", "expected a list of tenants, each with a name, an allocation "
                                    "and a workload",
                         at(list, file));
    }
    const YAML::Node cl = croot["cluster"];
    if (!cl.IsMap()) {
        throw InputError("cluster", "a tenants scenario needs the cluster they share "
                                    "(ultraservers or instances)",
                         cl.IsDefined() ? at(cl, file) : SourceLocation{file, 1, 1});
    }
    known_keys(cl, "cluster", file, {"ultraservers", "instances", "fabric"});
    if (cl["ultraservers"].IsDefined() == cl["instances"].IsDefined()) {
        throw InputError("cluster", "give exactly one of cluster.ultraservers or "
                                    "cluster.instances",
                         at(cl, file));
    }
    const bool ultraservers = cl["ultraservers"].IsDefined();
    const char* unit = ultraservers ? "ultraservers" : "instances";
    const cluster::ClusterSpec whole = cluster::ClusterSpec::of_domains(
        ultraservers, integer(cl[unit], std::string("cluster.") + unit, file));

    // The list: names, allocations.
    std::vector<TenantEntry> entries;
    std::set<std::string> names;
    std::int64_t next_first = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node n = list[i];
        const std::string path = "tenants[" + std::to_string(i) + "]";
        if (!n.IsMap()) {
            throw InputError(path, "a tenant is a mapping with name, allocation and workload",
                             at(n, file));
        }
        known_keys(n, path, file, {"name", "allocation", "workload", "reliability"});
        TenantEntry e;
        e.node = n;
        const YAML::Node name = n["name"];
        e.name = name.IsScalar() ? name.Scalar() : std::string();
        if (!valid_name(e.name)) {
            throw InputError(path + ".name",
                             "a tenant's name is 1 to 64 letters, digits, '_', '-' or '.' (it "
                             "names the tenant's group in the results file)",
                             name.IsDefined() ? at(name, file) : at(n, file));
        }
        if (!names.insert(e.name).second) {
            throw InputError(path + ".name", "another tenant is named " + e.name, at(name, file));
        }
        const YAML::Node a = n["allocation"];
        if (!a.IsMap()) {
            throw InputError(path + ".allocation",
                             std::string("expected {") + unit + ": N} (optionally first: K), "
                             "the tenant's share of the cluster's " + unit,
                             a.IsDefined() ? at(a, file) : at(n, file));
        }
        known_keys(a, path + ".allocation", file, {"ultraservers", "instances", "first"});
        const char* other = ultraservers ? "instances" : "ultraservers";
        if (a[other].IsDefined()) {
            throw InputError(path + ".allocation." + other,
                             std::string("the cluster is counted in ") + unit +
                                 ", so allocations are too",
                             at(a[other], file));
        }
        if (!a[unit].IsDefined()) {
            throw InputError(path + ".allocation", std::string("give the tenant's ") + unit,
                             at(a, file));
        }
        e.allocation.domains = integer(a[unit], path + ".allocation." + unit, file);
        e.allocation.first = a["first"].IsDefined()
                                 ? integer(a["first"], path + ".allocation.first", file)
                                 : next_first;
        e.allocation_at = at(a, file);
        next_first = e.allocation.end();
        if (!n["workload"].IsMap()) {
            throw InputError(path + ".workload", "each tenant needs its workload section",
                             n["workload"].IsDefined() ? at(n["workload"], file) : at(n, file));
        }
        entries.push_back(std::move(e));
    }
    std::vector<cluster::Allocation> allocations;
    for (const TenantEntry& e : entries) {
        allocations.push_back(e.allocation);
    }
    std::size_t culprit = 0;
    if (const std::string problem = cluster::allocation_problem(whole, allocations, &culprit);
        !problem.empty()) {
        throw InputError("tenants[" + std::to_string(culprit) + "].allocation", problem,
                         entries[culprit].allocation_at);
    }

    // Each tenant as a scenario of its own.
    ScenarioSpec spec;
    // Warnings about the shared sections, once per tenant that gave them: a setting without
    // effect on one tenant may serve another, so only keys every tenant warns of are kept
    // (with the first tenant's message).
    std::vector<Warning> shared;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const TenantEntry& e = entries[i];
        YAML::Node doc(YAML::NodeType::Map);
        for (const auto& kv : croot) {
            const std::string key = kv.first.Scalar();
            if (key != "tenants" && key != "cluster" && key != "name") {
                doc[key] = kv.second;
            }
        }
        doc["name"] = e.name;
        YAML::Node c(YAML::NodeType::Map);
        c[unit] = e.allocation.domains;
        if (cl["fabric"].IsDefined()) {
            c["fabric"] = cl["fabric"];
        }
        doc["cluster"] = c;
        doc["workload"] = e.node["workload"];
        if (e.node["reliability"].IsDefined()) {
            doc["reliability"] = e.node["reliability"];
        }
        ScenarioSpec one;
        try {
            one = load_root(doc, file, base_dir, e.name, {}, presets, options);
        } catch (const InputError& err) {
            throw tenant_error(err, i, e);
        }
        if (i == 0) {
            spec = one; // the shared sections, as the first tenant read them
            spec.input_files.clear();
            spec.warnings.clear();
        }
        for (const std::string& f : one.input_files) {
            if (std::find(spec.input_files.begin(), spec.input_files.end(), f) ==
                spec.input_files.end()) {
                spec.input_files.push_back(f);
            }
        }
        for (Warning w : one.warnings) {
            if (tenant_owns_key(w.key_path)) {
                w.key_path = "tenants[" + std::to_string(i) + "]." + w.key_path;
                spec.warnings.push_back(w);
            } else {
                shared.push_back(w);
            }
        }
        spec.tenants.push_back({e.name, e.allocation, nullptr});
        spec.tenants.back().scenario = std::make_shared<ScenarioSpec>(std::move(one));
    }

    for (const Warning& w : shared) {
        const auto same = [&](const Warning& x) { return x.key_path == w.key_path; };
        const auto n = std::count_if(shared.begin(), shared.end(), same);
        if (n == static_cast<std::ptrdiff_t>(entries.size()) &&
            std::none_of(spec.warnings.begin(), spec.warnings.end(), same)) {
            spec.warnings.push_back(w);
        }
    }

    // The scenario itself: the whole cluster, its name and results file.
    const YAML::Node name = croot["name"];
    spec.name = name.IsScalar() ? name.Scalar() : default_name;
    spec.cluster = whole;
    spec.source_file = file;
    const YAML::Node out = croot["output"];
    if (!(out.IsMap() && out["file"].IsDefined())) {
        spec.output.file = "results/" + spec.name + ".h5";
    }
    for (TenantSpec& t : spec.tenants) {
        auto s = std::make_shared<ScenarioSpec>(*t.scenario);
        s->output.file = spec.output.file;
        t.scenario = std::move(s);
    }
    spec.sources.add("tenants", at(list, file));
    if (options.resolved_text) {
        // The first tenant's resolved shared sections, the whole cluster, and each tenant's
        // resolved workload and reliability sections.
        YAML::Node resolved = YAML::Load(spec.tenants.front().scenario->resolved_yaml);
        resolved["name"] = spec.name;
        resolved.remove("workload");
        resolved.remove("reliability");
        resolved["cluster"][unit] = whole.domains();
        if (YAML::Node o = resolved["output"]; o.IsMap()) {
            o["file"] = spec.output.file;
        }
        YAML::Node tenants(YAML::NodeType::Sequence);
        for (const TenantSpec& t : spec.tenants) {
            const YAML::Node mine = YAML::Load(t.scenario->resolved_yaml);
            YAML::Node n(YAML::NodeType::Map);
            n["name"] = t.name;
            n["allocation"][unit] = t.allocation.domains;
            n["allocation"]["first"] = t.allocation.first;
            n["workload"] = mine["workload"];
            if (mine["reliability"].IsDefined()) {
                n["reliability"] = mine["reliability"];
            }
            tenants.push_back(n);
        }
        resolved["tenants"] = tenants;
        YAML::Emitter emitter;
        emitter << resolved;
        spec.resolved_yaml = std::string(emitter.c_str()) + "\n";
    }
    return spec;
}

} // namespace detail
} // namespace trnsim::config
