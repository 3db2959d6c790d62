// The `tenants:` form of a scenario (ADR 0002, docs/tenants.md): one cluster, several
// workloads. Each tenant is loaded as a single-workload scenario of its own: the document's
// shared sections (name, seed, hardware, simulation, cost, output, the cluster's fabric) with
// the tenant's workload and reliability sections, on a cluster of its allocation's domains.
// Its errors keep their location in the file and name the tenant's key
// (tenants[1].workload.serving.tp).
#include "document.hpp"
#include "load_root.hpp"
#include "tables.hpp"

#include "trnsim/core/error.hpp"

#include "trnsim/core/parallel.hpp"

#include <algorithm>
#include <charconv>
#include <exception>
#include <optional>
#include <set>
#include <thread>

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

struct TenantEntry {
    std::string name;
    cluster::Allocation allocation;
    SourceLocation allocation_at;
    YAML::Node node;
};

} // namespace

/// The threads the entries load on: the scenario's simulation.threads when it is a number in
/// range (the schema checks it, and says what is wrong, when each entry loads), else every
/// hardware thread.
int entry_threads(const std::vector<ListEntry>& entries) {
    if (entries.size() < 2) {
        return 1;
    }
    const YAML::Node& doc = entries.front().document;
    const YAML::Node t = doc["simulation"] ? doc["simulation"]["threads"] : YAML::Node();
    long long n = 0;
    if (is_scalar(t)) {
        const std::string& text = t.Scalar();
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
        if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > 4096) {
            n = 0;
        }
    }
    if (n == 0) {
        n = std::max(1U, std::thread::hardware_concurrency());
    }
    return static_cast<int>(std::min<long long>(n, static_cast<long long>(entries.size())));
}

ScenarioSpec load_entries(const std::vector<ListEntry>& entries, const std::string& file,
                          const fs::path& base_dir, PresetCache* presets,
                          const LoadOptions& options, std::vector<ScenarioSpec>& loaded) {
    // The entries' documents are trees of their own (entry_document copies what they share),
    // so they load side by side; a preset read by several of them is read once (the cache
    // locks). Their errors are taken in order below: the first entry's that fails, as a
    // sequential loop would report it.
    PresetCache local;
    PresetCache* cache = presets != nullptr ? presets : &local;
    std::vector<ScenarioSpec> ones(entries.size());
    std::vector<std::optional<InputError>> failed(entries.size());
    std::vector<std::exception_ptr> broke(entries.size()); // anything else, also in order
    parallel_for(entries.size(), entry_threads(entries), [&](std::size_t i, int) {
        try {
            ones[i] = load_root(entries[i].document, file, base_dir, entries[i].name, {}, cache,
                                options);
        } catch (const InputError& caught) {
            failed[i] = caught;
        } catch (...) {
            broke[i] = std::current_exception();
        }
    });
    ScenarioSpec spec;
    // Warnings about the shared sections, once per entry that gave them: a setting without
    // effect on one entry may serve another, so only keys every entry warns of are kept
    // (with the first entry's message).
    std::vector<Warning> shared;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const ListEntry& e = entries[i];
        ScenarioSpec one = std::move(ones[i]);
        if (broke[i]) {
            std::rethrow_exception(broke[i]);
        }
        try {
            if (failed[i]) {
                throw *failed[i];
            }
            if (e.places) {
                e.places(one.sources);
            }
        } catch (const InputError& caught) {
            // The entry's own keys under its prefix; its cluster's at the key that sizes it.
            InputError err = caught;
            if (e.places && err.location().file == file && err.location().line <= 1) {
                SourceMap places; // a copied node has no place: the original's
                e.places(places);
                if (const SourceLocation p = places.find(err.key_path()); p.known()) {
                    err = InputError(err.key_path(), err.message(), p);
                }
            }
            const std::string& key = err.key_path();
            for (const auto& [section, from] : e.sections_at) {
                if (key == section || key.rfind(section + ".", 0) == 0) {
                    throw InputError(from + key.substr(section.size()), err.message(),
                                     err.location());
                }
            }
            if (tenant_owns_key(key)) {
                throw InputError(e.prefix + "." + key, err.message(), err.location());
            }
            if (key == "cluster" || key == "cluster.ultraservers" || key == "cluster.instances") {
                throw InputError(e.cluster_key,
                                 err.message() + " (" + e.what + " " + e.name + e.cluster_note +
                                     ")",
                                 e.cluster_at);
            }
            throw InputError(key, err.message() + " (in " + e.what + " " + e.name + ")",
                             err.location());
        }
        if (i == 0) {
            spec = one; // the shared sections, as the first entry read them
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
                w.key_path = e.prefix + "." + w.key_path;
                spec.warnings.push_back(w);
            } else {
                shared.push_back(w);
            }
        }
        loaded.push_back(std::move(one));
    }
    for (const Warning& w : shared) {
        const auto same = [&](const Warning& x) { return x.key_path == w.key_path; };
        const auto n = std::count_if(shared.begin(), shared.end(), same);
        if (n == static_cast<std::ptrdiff_t>(entries.size()) &&
            std::none_of(spec.warnings.begin(), spec.warnings.end(), same)) {
            spec.warnings.push_back(w);
        }
    }
    return spec;
}

ScenarioSpec load_tenants(YAML::Node root, const std::string& file, const fs::path& base_dir,
                          const std::string& default_name, PresetCache* presets,
                          const LoadOptions& options) {
    const YAML::Node& croot = root;
    known_keys(croot, "", file,
               {"name", "seed", "hardware", "cluster", "simulation", "cost", "output", "tenants"});
    const YAML::Node list = croot["tenants"];
    if (!is_sequence(list) || list.size() == 0) {
        throw InputError("tenants", "expected a list of tenants, each with a name, an allocation "
                                    "and a workload",
                         at(list, file));
    }
    const SharedCluster cl = shared_cluster(croot, file, "a tenants scenario");
    const bool ultraservers = cl.ultraservers;
    const char* unit = cl.unit;
    const cluster::ClusterSpec whole = cluster::ClusterSpec::of_domains(ultraservers, cl.domains);

    // The list: names, allocations.
    std::vector<TenantEntry> entries;
    std::set<std::string> names;
    std::int64_t next_first = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const YAML::Node n = list[i];
        const std::string path = "tenants[" + std::to_string(i) + "]";
        if (!is_map(n)) {
            throw InputError(path, "a tenant is a mapping with name, allocation and workload",
                             at(n, file));
        }
        known_keys(n, path, file, {"name", "allocation", "workload", "reliability"});
        TenantEntry e;
        e.node = n;
        const YAML::Node name = n["name"];
        e.name = is_scalar(name) ? name.Scalar() : std::string();
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
        if (!is_map(a)) {
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
        if (!is_map(n["workload"])) {
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
    std::vector<ListEntry> list_entries;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const TenantEntry& e = entries[i];
        list_entries.push_back(
            {e.name, "tenants[" + std::to_string(i) + "]", "tenant",
             entry_document(croot, cl, "tenants", e.name, e.allocation.domains, e.node),
             "tenants[" + std::to_string(i) + "].allocation", "'s allocation", e.allocation_at,
             [croot, node = e.node, file](SourceMap& m) {
                 entry_places(croot, "tenants", node, file, m);
             }});
    }
    std::vector<ScenarioSpec> loaded;
    ScenarioSpec spec = load_entries(list_entries, file, base_dir, presets, options, loaded);
    for (std::size_t i = 0; i < entries.size(); ++i) {
        spec.tenants.push_back({entries[i].name, entries[i].allocation, nullptr});
        spec.tenants.back().scenario = std::make_shared<ScenarioSpec>(std::move(loaded[i]));
    }

    // The scenario itself: the whole cluster, its name and results file.
    const YAML::Node name = croot["name"];
    spec.name = is_scalar(name) ? name.Scalar() : default_name;
    spec.cluster = whole;
    spec.source_file = file;
    const YAML::Node out = croot["output"];
    if (!(is_map(out) && out["file"].IsDefined())) {
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
        if (YAML::Node o = resolved["output"]; is_map(o)) {
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
