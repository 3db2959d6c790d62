// The `fleet:` form of a scenario (docs/fleet.md): training jobs sharing the cluster's domains
// under one scheduler. Each job class is loaded as a single-workload scenario of its own: the
// document's shared sections with the class's workload and reliability sections, on a cluster
// of its gang's domains (where its plan and step time are estimated). Its errors keep their
// location in the file and name the class's key (fleet.jobs[1].workload.parallelism.tp).
#include "document.hpp"
#include "fleet_load_parts.hpp"
#include "load_root.hpp"

#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/input_file.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace trnsim::config::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxJobsPerClass = 1'000'000;




fleet::Policy policy(const YAML::Node& n, const std::string& file) {
    const std::string text = is_scalar(n) ? n.Scalar() : std::string();
    std::string names;
    for (const auto& [value, name] : enum_names(fleet::Policy{})) {
        if (text == name) {
            return value;
        }
        names += (names.empty() ? "" : ", ") + std::string(name);
    }
    throw InputError("fleet.policy", "expected one of " + names + ", got '" + text + "'",
                     at(n, file));
}

} // namespace

ScenarioSpec load_fleet(YAML::Node root, const std::string& file, const fs::path& base_dir,
                        const std::string& default_name, PresetCache* presets,
                        const LoadOptions& options) {
    const YAML::Node& croot = root;
    known_keys(croot, "", file,
               {"name", "seed", "hardware", "cluster", "simulation", "cost", "output", "fleet",
                "reliability"});
    const YAML::Node f = croot["fleet"];
    if (!is_map(f)) {
        throw InputError("fleet", "expected a mapping: the scheduler's policy, spares, quotas "
                                  "and the job classes (jobs)",
                         at(f, file));
    }
    known_keys(f, "fleet", file,
               {"policy", "spares", "horizon", "quotas", "jobs", "services", "trace",
                "request_level", "pools"});
    const bool traced = f["trace"].IsDefined();
    const SharedCluster cl = shared_cluster(croot, file, "a fleet scenario");

    FleetSpec fs;
    if (f["policy"].IsDefined()) {
        fs.policy = policy(f["policy"], file);
    }
    if (f["spares"].IsDefined()) {
        fs.spares = integer(f["spares"], "fleet.spares", file);
        if (fs.spares >= cl.domains) {
            throw InputError("fleet.spares",
                             std::to_string(fs.spares) + " spares leave none of the cluster's " +
                                 std::to_string(cl.domains) + " " + cl.unit + " to run jobs on",
                             at(f["spares"], file));
        }
    }
    if (f["horizon"].IsDefined()) {
        fs.horizon = fleet_duration(f["horizon"], "fleet.horizon", file);
        if (fs.horizon == Duration::zero()) {
            throw InputError("fleet.horizon",
                             "must be positive (leave it out to run until every job finishes)",
                             at(f["horizon"], file));
        }
    }
    std::map<std::string, std::int64_t> quota_of;
    if (const YAML::Node q = f["quotas"]; q.IsDefined()) {
        if (!is_map(q)) {
            throw InputError("fleet.quotas",
                             std::string("expected a mapping from tenant names to the ") +
                                 cl.unit + " each may hold at once",
                             at(q, file));
        }
        for (const auto& kv : q) {
            const std::string name = kv.first.Scalar();
            const std::string path = "fleet.quotas." + name;
            if (!valid_name(name)) {
                throw InputError(path, "a tenant's name is 1 to 64 letters, digits, '_', '-' "
                                       "or '.'",
                                 at(kv.first, file));
            }
            const std::int64_t n = integer(kv.second, path, file);
            if (n < 1) {
                throw InputError(path, "a quota is at least 1", at(kv.second, file));
            }
            quota_of[name] = n;
            fs.quotas.emplace_back(name, n);
        }
    }

    // The pools: the scenario's own cluster (`main`), then fleet.pools.
    std::vector<PoolDraft> pools = read_pools(croot, f, cl, fs.spares, file);
    // The pool an entry names (`pool:`, default main): its index.
    const auto pool_of = [&](const YAML::Node& n, const std::string& path) -> std::size_t {
        const YAML::Node x = n["pool"];
        if (!x.IsDefined()) {
            return 0;
        }
        const std::string want = is_scalar(x) ? x.Scalar() : std::string();
        std::string names_list;
        for (std::size_t k = 0; k < pools.size(); ++k) {
            if (pools[k].name == want) {
                return k;
            }
            names_list += (k == 0 ? "" : ", ") + pools[k].name;
        }
        throw InputError(path + ".pool", "no pool is named '" + want + "' (the pools: " +
                                             names_list + ")",
                         at(x, file));
    };
    // An entry's document, located and keyed as its pool's.
    const auto pool_entry = [&](ListEntry e, std::size_t k, const YAML::Node& n) {
        const PoolDraft& d = pools[k];
        if (k > 0) {
            e.cluster_key = d.path + "." + d.cl.unit;
            e.cluster_note = "'s pool " + d.name;
            e.cluster_at = at(d.node[d.cl.unit], file);
            e.sections_at = d.sections_at;
        }
        e.places = [root = d.root, n, file, k, path = d.path, unit = d.cl.unit,
                    node = d.node](SourceMap& m) {
            entry_places(root, "fleet", n, file, m);
            if (k > 0) { // the pool's size, for its checks' errors
                m.add(path + "." + unit, at(node[unit], file));
            }
        };
        return e;
    };
    // The message a gang or a maximum too large for pool k ends with.
    const auto pool_words = [&](std::size_t k) {
        const PoolDraft& d = pools[k];
        return std::string(k == 0 ? " (the cluster's " : " (pool " + d.name + "'s ") +
               std::to_string(d.cl.domains) + " less " + std::to_string(d.spares) +
               " spares)";
    };

    const YAML::Node list = f["jobs"];
    const YAML::Node service_list = f["services"];
    if (service_list.IsDefined() && (!is_sequence(service_list) || service_list.size() == 0)) {
        throw InputError("fleet.services", "expected a list of services, each with a name, an "
                                           "inference workload, a load and an autoscaler",
                         at(service_list, file));
    }
    const bool has_services = service_list.IsDefined();
    if ((list.IsDefined() || !has_services) && (!is_sequence(list) || list.size() == 0)) {
        throw InputError("fleet.jobs", "expected a list of job classes, each with a name, a "
                                       "gang and a training workload",
                         list.IsDefined() ? at(list, file) : at(f, file));
    }
    if (has_services && !f["horizon"].IsDefined()) {
        throw InputError("fleet.horizon",
                         "a fleet with services runs for a given time: give fleet.horizon",
                         at(f, file));
    }
    if (const YAML::Node w = f["request_level"]; w.IsDefined()) {
        if (!has_services) {
            throw InputError("fleet.request_level",
                             "a window at request level replays the fleet's services: it has "
                             "none",
                             at(w, file));
        }
        if (!is_map(w)) {
            throw InputError("fleet.request_level",
                             "expected a mapping {from: DURATION, to: DURATION}", at(w, file));
        }
        known_keys(w, "fleet.request_level", file, {"from", "to"});
        for (const char* k : {"from", "to"}) {
            if (!w[k].IsDefined()) {
                throw InputError(std::string("fleet.request_level.") + k,
                                 "give the window's from and to (durations from the start)",
                                 at(w, file));
            }
        }
        fs.window_from = fleet_duration(w["from"], "fleet.request_level.from", file);
        fs.window_to = fleet_duration(w["to"], "fleet.request_level.to", file);
        if (fs.window_to <= fs.window_from) {
            throw InputError("fleet.request_level.to", "the window ends after it starts",
                             at(w["to"], file));
        }
        if (fs.window_to > fs.horizon) {
            throw InputError("fleet.request_level.to",
                             "the window ends within the run (fleet.horizon)", at(w["to"], file));
        }
    }
    std::vector<ListEntry> entries;
    std::set<std::string> names, tenants;
    for (std::size_t i = 0; list.IsDefined() && i < list.size(); ++i) {
        const YAML::Node n = list[i];
        const std::string path = "fleet.jobs[" + std::to_string(i) + "]";
        if (!is_map(n)) {
            throw InputError(path, "a job class is a mapping with name, gang and workload",
                             at(n, file));
        }
        known_keys(n, path, file,
                   {"name", "tenant", "gang", "count", "submit", "every", "priority", "deadline",
                    "workload", "reliability", "pool"});
        FleetJobClass c;
        c.pool = pool_of(n, path);
        const PoolDraft& home = pools[c.pool];
        const YAML::Node name = n["name"];
        c.name = is_scalar(name) ? name.Scalar() : std::string();
        if (!valid_name(c.name)) {
            throw InputError(path + ".name",
                             "a job class's name is 1 to 64 letters, digits, '_', '-' or '.' "
                             "(it names its jobs in the results file)",
                             name.IsDefined() ? at(name, file) : at(n, file));
        }
        if (!names.insert(c.name).second) {
            throw InputError(path + ".name", "another job class is named " + c.name,
                             at(name, file));
        }
        c.tenant = c.name;
        if (const YAML::Node t = n["tenant"]; t.IsDefined()) {
            c.tenant = is_scalar(t) ? t.Scalar() : std::string();
            if (!valid_name(c.tenant)) {
                throw InputError(path + ".tenant",
                                 "a tenant's name is 1 to 64 letters, digits, '_', '-' or '.'",
                                 at(t, file));
            }
        }
        tenants.insert(c.tenant);
        if (!n["gang"].IsDefined()) {
            throw InputError(path + ".gang",
                             std::string("give the ") + home.cl.unit +
                                 " each job of the class holds",
                             at(n, file));
        }
        const std::int64_t grantable = home.cl.domains - home.spares;
        const YAML::Node g = n["gang"];
        if (g.IsSequence()) { // an elastic class: its allowed gangs
            if (g.size() < 2) {
                throw InputError(path + ".gang",
                                 "an elastic class lists at least two gangs (else give one "
                                 "number)",
                                 at(g, file));
            }
            for (std::size_t k = 0; k < g.size(); ++k) {
                const std::int64_t x =
                    integer(g[k], path + ".gang[" + std::to_string(k) + "]", file);
                if (x < 1 || x > grantable || (k > 0 && x <= c.gangs.back())) {
                    throw InputError(path + ".gang[" + std::to_string(k) + "]",
                                     "an elastic class's gangs increase, each 1 to " +
                                         std::to_string(grantable) + " " + home.cl.unit +
                                         pool_words(c.pool),
                                     at(g[k], file));
                }
                c.gangs.push_back(x);
            }
            c.gang = c.gangs.front();
        } else {
            c.gang = integer(g, path + ".gang", file);
        }
        if (c.gang < 1 || c.gang > grantable) {
            throw InputError(path + ".gang",
                             "a job holds 1 to " + std::to_string(grantable) + " " +
                                 home.cl.unit + pool_words(c.pool),
                             at(n["gang"], file));
        }
        if (const auto q = quota_of.find(c.tenant); q != quota_of.end() && c.gang > q->second) {
            throw InputError(path + ".gang",
                             std::to_string(c.gang) + " " + cl.unit + " exceed tenant " +
                                 c.tenant + "'s quota of " + std::to_string(q->second),
                             at(n["gang"], file));
        }
        if (n["count"].IsDefined()) {
            c.count = integer(n["count"], path + ".count", file);
            const std::int64_t least = traced ? 0 : 1; // a trace may hold all of its jobs
            if (c.count < least || c.count > kMaxJobsPerClass) {
                throw InputError(path + ".count",
                                 std::to_string(least) + " to " +
                                     std::to_string(kMaxJobsPerClass) + " jobs a class" +
                                     (traced ? "" : " (0 with a fleet.trace)"),
                                 at(n["count"], file));
            }
        }
        if (n["submit"].IsDefined()) {
            c.submit = fleet_duration(n["submit"], path + ".submit", file);
        }
        if (n["every"].IsDefined()) {
            c.every = fleet_duration(n["every"], path + ".every", file);
        }
        if (n["deadline"].IsDefined()) {
            c.deadline = fleet_duration(n["deadline"], path + ".deadline", file);
            if (c.deadline <= Duration::zero()) {
                throw InputError(path + ".deadline",
                                 "a deadline is a positive duration from a job's submission",
                                 at(n["deadline"], file));
            }
        }
        // The last submission within a century (and within the range of simulated time).
        const double last_s =
            c.submit.seconds() + c.every.seconds() * static_cast<double>(c.count - 1);
        if (last_s > 100.0 * units::kSecondsPerYear) {
            throw InputError(path + ".every",
                             "the class's last job would be submitted after 100 years",
                             n["every"].IsDefined() ? at(n["every"], file) : at(n, file));
        }
        if (n["priority"].IsDefined()) {
            const std::int64_t p = integer(n["priority"], path + ".priority", file);
            if (p > kMaxPriority) {
                throw InputError(path + ".priority", "at most " + std::to_string(kMaxPriority),
                                 at(n["priority"], file));
            }
            c.priority = static_cast<int>(p);
        }
        if (!is_map(n["workload"])) {
            throw InputError(path + ".workload", "each job class needs its training workload",
                             n["workload"].IsDefined() ? at(n["workload"], file) : at(n, file));
        }
        const YAML::Node type = n["workload"]["type"];
        if (type.IsDefined() && !(is_scalar(type) && type.Scalar() == "training")) {
            throw InputError(path + ".workload.type",
                             "a fleet's jobs are training jobs (workload.type: training)",
                             at(type, file));
        }
        if (pools[c.pool].first_entry < 0) {
            pools[c.pool].first_entry = static_cast<std::ptrdiff_t>(entries.size());
        }
        entries.push_back(pool_entry(
            {c.name, path, "job class",
             entry_document(home.root, home.cl, "fleet", c.name, c.gang, n), path + ".gang",
             "'s gang", at(n["gang"], file), {}},
            c.pool, n));
        fs.jobs.push_back(std::move(c));
    }
    for (std::size_t i = 0; has_services && i < service_list.size(); ++i) {
        const YAML::Node n = service_list[i];
        const std::string path = "fleet.services[" + std::to_string(i) + "]";
        if (!is_map(n)) {
            throw InputError(path, "a service is a mapping with name, workload, load and "
                                   "autoscale",
                             at(n, file));
        }
        const std::size_t k = pool_of(n, path);
        FleetService v = read_service(n, path, file, pools[k].cl.domains - pools[k].spares,
                                      pools[k].cl.unit, quota_of);
        v.pool = k;
        if (!names.insert(v.name).second) {
            throw InputError(path + ".name",
                             "another job class or service is named " + v.name,
                             at(n["name"], file));
        }
        tenants.insert(v.tenant);
        YAML::Emitter text;
        text << n["workload"];
        v.workload_text = text.c_str();
        if (pools[k].first_entry < 0) {
            pools[k].first_entry = static_cast<std::ptrdiff_t>(entries.size());
        }
        entries.push_back(pool_entry(
            {v.name, path, "service",
             entry_document(pools[k].root, pools[k].cl, "fleet", v.name, 1, n),
             path + ".workload", " on one of the cluster's domains", at(n, file), {}},
            k, n));
        fs.services.push_back(std::move(v));
    }
    if (traced && fs.jobs.empty()) {
        throw InputError("fleet.trace", "a job trace needs the job classes it names (fleet.jobs)",
                         at(f["trace"], file));
    }
    if (traced) {
        const YAML::Node t = f["trace"];
        const std::string ref = is_scalar(t) ? t.Scalar() : std::string();
        std::filesystem::path path(ref);
        if (path.is_relative()) {
            path = base_dir / path;
        }
        std::error_code ec;
        if (ref.empty() || !std::filesystem::exists(path, ec)) {
            throw InputError("fleet.trace", "job trace file '" + ref + "' not found",
                             at(t, file));
        }
        const std::string text = read_input_file(path, "job trace", "fleet.trace", at(t, file));
        fs.trace_file = path.string();
        fs.trace = read_job_trace(path, text, fs.jobs);
    }
    for (const auto& [tenant, quota] : fs.quotas) {
        if (tenants.count(tenant) == 0) {
            throw InputError("fleet.quotas." + tenant,
                             "no job class or service belongs to this tenant",
                             at(f["quotas"], file));
        }
    }

    for (const PoolDraft& d : pools) {
        if (d.first_entry < 0) {
            throw InputError(d.path.empty() ? std::string("fleet") : d.path + ".name",
                             "no job class or service runs in pool " + d.name +
                                 (d.path.empty() ? " (the cluster's own)" : "") +
                                 ": give one `pool: " + d.name + "`",
                             d.path.empty() ? at(f, file) : at(d.node["name"], file));
        }
    }

    std::vector<ScenarioSpec> loaded;
    ScenarioSpec spec = load_entries(entries, file, base_dir, presets, options, loaded);
    if (pools[0].first_entry > 0) { // the shared sections are the cluster's pool's
        const ScenarioSpec& mine = loaded[static_cast<std::size_t>(pools[0].first_entry)];
        spec.hardware = mine.hardware;
        spec.cost = mine.cost;
    }
    if (!fs.trace_file.empty()) {
        spec.input_files.push_back(fs.trace_file);
    }
    // A class's reliability section sets its checkpoints and start time; that it has no
    // failure processes is the rule here (the fleet's own section draws the failures), except
    // that an auto interval then takes no checkpoint at all: say that instead.
    for (Warning& w : spec.warnings) {
        const bool ours = w.key_path.rfind("fleet.jobs[", 0) == 0 && w.key_path.size() > 12 &&
                          w.key_path.compare(w.key_path.size() - 12, 12, ".reliability") == 0 &&
                          w.message.find("no failure processes") != std::string::npos;
        if (ours) {
            w.message.clear(); // dropped below unless the interval is auto
        }
    }
    const std::size_t classes = fs.jobs.size();
    for (std::size_t i = 0; i < classes; ++i) {
        const reliability::ReliabilitySpec& r = loaded[i].reliability;
        const std::string key = "fleet.jobs[" + std::to_string(i) + "].reliability";
        if (!r.enabled) {
            continue;
        }
        if (r.checkpoint.mode != reliability::CheckpointMode::sync) {
            throw InputError(key + ".checkpoint.mode",
                             "a fleet's jobs checkpoint synchronously (mode: sync): their "
                             "background copies are not modelled",
                             loaded[i].sources.find("reliability.checkpoint.mode"));
        }
        if (r.failures.empty() && r.trace.failures.empty() &&
            r.checkpoint.interval == Duration::zero()) {
            for (Warning& w : spec.warnings) {
                if (w.key_path == key && w.message.empty()) {
                    w.message = "no failure processes: its auto checkpoint interval takes no "
                                "checkpoint (give checkpoint.interval, or failure rates for "
                                "Daly's interval)";
                }
            }
        }
    }
    std::erase_if(spec.warnings, [](const Warning& w) { return w.message.empty(); });
    const YAML::Node name = croot["name"];
    spec.name = is_scalar(name) ? name.Scalar() : default_name;
    spec.cluster = cluster::ClusterSpec::of_domains(cl.ultraservers, cl.domains);
    spec.source_file = file;
    const YAML::Node out = croot["output"];
    if (!(is_map(out) && out["file"].IsDefined())) {
        spec.output.file = "results/" + spec.name + ".h5";
    }
    for (std::size_t i = classes; i < loaded.size(); ++i) {
        loaded[i].output.file = spec.output.file;
        fs.services[i - classes].scenario = std::make_shared<ScenarioSpec>(std::move(loaded[i]));
    }
    for (std::size_t i = 0; i < classes; ++i) {
        if (loaded[i].reliability.enabled && loaded[i].reliability.spares.count() > 0) {
            spec.warnings.push_back(
                {"fleet.jobs[" + std::to_string(i) + "].reliability.spares",
                 "no effect: the fleet's spares are fleet.spares, shared by every job",
                 loaded[i].sources.find("reliability.spares")});
        }
        loaded[i].output.file = spec.output.file;
        fs.jobs[i].scenario = std::make_shared<ScenarioSpec>(std::move(loaded[i]));
    }
    for (std::size_t k = 0; k < pools.size(); ++k) {
        const PoolDraft& d = pools[k];
        FleetPool p;
        p.name = d.name;
        p.spares = d.spares;
        p.cluster = cluster::ClusterSpec::of_domains(d.cl.ultraservers, d.cl.domains);
        const auto first = static_cast<std::size_t>(d.first_entry);
        const ScenarioSpec& mine =
            first < classes ? *fs.jobs[first].scenario : *fs.services[first - classes].scenario;
        p.hardware = k == 0 ? spec.hardware : mine.hardware;
        p.cost = k == 0 ? spec.cost : mine.cost;
        fs.pools.push_back(std::move(p));
    }
    for (std::size_t i = 0; i < fs.jobs.size(); ++i) { // an elastic class's gangs, for its checks
        if (!fs.jobs[i].gangs.empty()) {
            const std::string key = "fleet.jobs[" + std::to_string(i) + "].gang";
            spec.sources.add(key, at(list[i]["gang"], file));
        }
    }
    spec.fleet = std::move(fs);
    spec.sources.add("fleet", at(f, file));
    // The fleet's failure process: its reliability section, read as a scenario's on the whole
    // cluster (the first class's workload beside it), its locations the section's own.
    spec.reliability = reliability::ReliabilitySpec{};
    spec.sources.replace_section("reliability", SourceMap{});
    std::string fleet_reliability_yaml;
    if (const YAML::Node r = croot["reliability"]; r.IsDefined()) {
        YAML::Node entry(YAML::NodeType::Map);
        const auto main_first = static_cast<std::size_t>(pools[0].first_entry);
        entry["workload"] =
            (main_first < classes ? list[main_first] : service_list[main_first - classes])
                ["workload"];
        entry["reliability"] = r;
        const ScenarioSpec probe =
            load_root(entry_document(croot, cl, "fleet", spec.name, cl.domains, entry), file,
                      base_dir, spec.name, {}, presets, options);
        spec.reliability = probe.reliability;
        spec.sources.replace_section("reliability", probe.sources);
        for (const std::string& in : probe.input_files) {
            if (std::find(spec.input_files.begin(), spec.input_files.end(), in) ==
                spec.input_files.end()) {
                spec.input_files.push_back(in);
            }
        }
        if (spec.reliability.spares.count() > 0) {
            throw InputError("reliability.spares",
                             "a fleet's spares are fleet.spares: the pool keeps them for every "
                             "job",
                             spec.sources.find("reliability.spares"));
        }
        // What the fleet's failure process does not use: each job class checkpoints as its
        // own section says, and a fleet restarts whole jobs (its restart time is the
        // outage's: a restart-only failure takes the domain out for detection + restart).
        for (const char* key : {"reliability.checkpoint", "reliability.recovery.scope",
                                "reliability.recovery.run_degraded"}) {
            if (probe.sources.contains(key)) {
                spec.warnings.push_back(
                    {key,
                     "no effect in a fleet's own reliability section: each job class's "
                     "section sets its checkpoints (fleet.jobs[i].reliability), and a failure "
                     "restarts the whole job",
                     probe.sources.find(key)});
            }
        }
        if (options.resolved_text) {
            fleet_reliability_yaml = probe.resolved_yaml;
        }
    }
    if (options.resolved_text) {
        spec.resolved_yaml =
            resolved_fleet_yaml(spec, pools, cl, entry_threads(entries), fleet_reliability_yaml);
    }
    return spec;
}

} // namespace trnsim::config::detail
