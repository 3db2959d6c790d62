// The `fleet:` form of a scenario (docs/fleet.md): training jobs sharing the cluster's domains
// under one scheduler. Each job class is loaded as a single-workload scenario of its own: the
// document's shared sections with the class's workload and reliability sections, on a cluster
// of its gang's domains (where its plan and step time are estimated). Its errors keep their
// location in the file and name the class's key (fleet.jobs[1].workload.parallelism.tp).
#include "csv_lines.hpp"
#include "document.hpp"
#include "load_root.hpp"

#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/core/input_file.hpp"
#include "trnsim/core/parallel.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <cmath>
#include <map>
#include <set>

namespace trnsim::config::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxJobsPerClass = 1'000'000;
constexpr std::int64_t kMaxPriority = 1'000'000;
constexpr std::int64_t kMaxTraceSteps = std::int64_t{1} << 40; // as workload.steps

Duration duration(const YAML::Node& n, const std::string& path, const std::string& file) {
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

/// The job trace: a header line naming the columns (submit and class required; steps, duration
/// and priority optional, in any order), then one job a line; `#` starts a comment. Every
/// problem is located at its line and column in the trace file.
std::vector<FleetTraceJob> read_job_trace(const fs::path& file, const std::string& text,
                                          const std::vector<FleetJobClass>& classes) {
    const std::string key = "fleet.trace";
    const std::string name = file.string();
    std::map<std::string, std::size_t> class_index;
    std::string class_list;
    for (std::size_t c = 0; c < classes.size(); ++c) {
        class_index[classes[c].name] = c;
        class_list += (class_list.empty() ? "" : ", ") + classes[c].name;
    }
    enum Column { submit, job_class, steps, duration, priority };
    const std::map<std::string, Column> known = {{"submit", submit},
                                                 {"class", job_class},
                                                 {"steps", steps},
                                                 {"duration", duration},
                                                 {"priority", priority}};
    std::vector<Column> columns;
    std::vector<FleetTraceJob> jobs;
    for (const CsvLine& l : csv_lines(text)) {
        const int number = l.number;
        const auto& fields = l.fields;
        const auto at = [&](int column) { return SourceLocation{name, number, column}; };
        if (columns.empty()) {
            bool has_submit = false, has_class = false;
            for (const auto& [field, column] : fields) {
                const auto k = known.find(field);
                if (k == known.end()) {
                    throw InputError(key, "unknown column " + quote_visible(field) +
                                              " (expected submit, class, steps, duration, priority)",
                                     at(column));
                }
                if (std::find(columns.begin(), columns.end(), k->second) != columns.end()) {
                    throw InputError(key, "column " + field + " appears twice", at(column));
                }
                has_submit = has_submit || k->second == submit;
                has_class = has_class || k->second == job_class;
                columns.push_back(k->second);
            }
            if (!has_submit || !has_class) {
                throw InputError(key, "the header line must name the submit and class columns",
                                 at(1));
            }
            continue;
        }
        if (fields.size() != columns.size()) {
            throw InputError(key, "expected " + std::to_string(columns.size()) +
                                      " fields as the header names, got " +
                                      std::to_string(fields.size()),
                             at(1));
        }
        FleetTraceJob j;
        j.line = number;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            const auto& [value, column] = fields[i];
            try {
                switch (columns[i]) {
                case submit:
                    j.submit = parse_duration(value);
                    if (j.submit < Duration::zero()) {
                        throw InputError(key, "a submission time cannot be negative",
                                         at(column));
                    }
                    if (!jobs.empty() && j.submit < jobs.back().submit) {
                        throw InputError(key, "submission times must not decrease (the line "
                                              "before submits later)",
                                         at(column));
                    }
                    break;
                case job_class: {
                    const auto c = class_index.find(value);
                    if (c == class_index.end()) {
                        throw InputError(key, quote_visible(value) + " is not a job class (" +
                                                  class_list + ")",
                                         at(column));
                    }
                    j.job_class = c->second;
                    break;
                }
                case steps:
                    if (!value.empty()) {
                        j.steps = parse_count(value);
                        if (j.steps < 1 || j.steps > kMaxTraceSteps) {
                            throw InputError(key, "a job runs 1 to 2^40 steps", at(column));
                        }
                    }
                    break;
                case duration:
                    if (!value.empty()) {
                        j.duration = parse_duration(value);
                        if (j.duration <= Duration::zero()) {
                            throw InputError(key, "a job's duration must be positive",
                                             at(column));
                        }
                    }
                    break;
                case priority:
                    if (!value.empty()) {
                        const std::int64_t p = parse_count(value);
                        if (p < 0 || p > kMaxPriority) {
                            throw InputError(key, "a priority is 0 to " +
                                                      std::to_string(kMaxPriority),
                                             at(column));
                        }
                        j.priority = static_cast<int>(p);
                    }
                    break;
                }
            } catch (const UnitError& e) {
                throw InputError(key, e.what(), at(column));
            }
        }
        if (j.steps > 0 && j.duration > Duration::zero()) {
            throw InputError(key, "a job's length is its steps or its duration, not both",
                             at(1));
        }
        jobs.push_back(j);
    }
    if (columns.empty()) {
        throw InputError(key, "the job trace has no header line (submit,class[,steps]"
                              "[,duration][,priority])",
                         SourceLocation{name, 1, 1});
    }
    return jobs;
}

double real(const YAML::Node& n, const std::string& path, const std::string& file) {
    try {
        const double v = parse_real(is_scalar(n) ? n.Scalar() : std::string());
        if (!std::isfinite(v)) {
            throw UnitError("expected a finite number");
        }
        return v;
    } catch (const UnitError& e) {
        throw InputError(path, e.what(), at(n, file));
    }
}

fleet::Signal signal(const YAML::Node& n, const std::string& path, const std::string& file) {
    const std::string text = is_scalar(n) ? n.Scalar() : std::string();
    std::string names;
    for (const auto& [value, name] : enum_names(fleet::Signal{})) {
        if (text == name) {
            return value;
        }
        names += (names.empty() ? "" : ", ") + std::string(name);
    }
    throw InputError(path, "expected one of " + names + ", got '" + text + "'", at(n, file));
}

/// fleet.services[i] without its scenario (the caller loads its workload on one domain).
FleetService read_service(const YAML::Node& n, const std::string& path, const std::string& file,
                          std::int64_t grantable, const char* unit,
                          const std::map<std::string, std::int64_t>& quota_of) {
    known_keys(n, path, file,
               {"name", "tenant", "priority", "borrow", "attainment", "workload", "load",
                "autoscale", "pool"});
    FleetService v;
    const YAML::Node name = n["name"];
    v.name = is_scalar(name) ? name.Scalar() : std::string();
    if (!valid_name(v.name)) {
        throw InputError(path + ".name",
                         "a service's name is 1 to 64 letters, digits, '_', '-' or '.'",
                         name.IsDefined() ? at(name, file) : at(n, file));
    }
    v.tenant = v.name;
    if (const YAML::Node t = n["tenant"]; t.IsDefined()) {
        v.tenant = is_scalar(t) ? t.Scalar() : std::string();
        if (!valid_name(v.tenant)) {
            throw InputError(path + ".tenant",
                             "a tenant's name is 1 to 64 letters, digits, '_', '-' or '.'",
                             at(t, file));
        }
    }
    if (n["priority"].IsDefined()) {
        const std::int64_t p = integer(n["priority"], path + ".priority", file);
        if (p > kMaxPriority) {
            throw InputError(path + ".priority", "at most " + std::to_string(kMaxPriority),
                             at(n["priority"], file));
        }
        v.priority = static_cast<int>(p);
    }
    if (const YAML::Node b = n["borrow"]; b.IsDefined()) {
        try {
            v.borrow = parse_bool(is_scalar(b) ? b.Scalar() : std::string());
        } catch (const UnitError& e) {
            throw InputError(path + ".borrow", e.what(), at(b, file));
        }
    }
    if (const YAML::Node a = n["attainment"]; a.IsDefined()) {
        v.attainment = real(a, path + ".attainment", file);
        if (!(v.attainment > 0.0 && v.attainment < 1.0)) {
            throw InputError(path + ".attainment", "a fraction between 0 and 1 (exclusive)",
                             at(a, file));
        }
    }
    if (!is_map(n["workload"])) {
        throw InputError(path + ".workload",
                         "each service needs its replicas' inference workload",
                         n["workload"].IsDefined() ? at(n["workload"], file) : at(n, file));
    }
    const YAML::Node type = n["workload"]["type"];
    if (!(is_scalar(type) && type.Scalar() == "inference")) {
        throw InputError(path + ".workload.type",
                         "a service serves an inference workload (workload.type: inference)",
                         type.IsDefined() ? at(type, file) : at(n["workload"], file));
    }
    // The load.
    const YAML::Node l = n["load"];
    if (!is_map(l)) {
        throw InputError(path + ".load",
                         "expected a mapping: rate (requests per second at the daily low), "
                         "peak, peak_at, period, step",
                         l.IsDefined() ? at(l, file) : at(n, file));
    }
    known_keys(l, path + ".load", file, {"rate", "peak", "peak_at", "period", "step"});
    if (!l["rate"].IsDefined()) {
        throw InputError(path + ".load.rate", "give the requests per second (at the daily low)",
                         at(l, file));
    }
    try {
        v.load.rate = parse_request_rate(is_scalar(l["rate"]) ? l["rate"].Scalar() : "");
    } catch (const UnitError& e) {
        throw InputError(path + ".load.rate", e.what(), at(l["rate"], file));
    }
    if (l["peak"].IsDefined()) {
        v.load.peak = real(l["peak"], path + ".load.peak", file);
        if (!(v.load.peak >= 1.0) || v.load.peak > 1000.0) {
            throw InputError(path + ".load.peak",
                             "the peak is 1 to 1,000 times the low rate", at(l["peak"], file));
        }
    }
    v.load.period = Duration::from_seconds_ceil(24.0 * 3600.0);
    v.load.step = Duration::from_seconds_ceil(300.0);
    if (l["period"].IsDefined()) {
        v.load.period = duration(l["period"], path + ".load.period", file);
    }
    if (l["step"].IsDefined()) {
        v.load.step = duration(l["step"], path + ".load.step", file);
    }
    if (v.load.step < Duration::from_seconds_ceil(1.0) || v.load.step > v.load.period) {
        throw InputError(path + ".load.step", "at least 1 s and at most the period",
                         at(l["step"].IsDefined() ? l["step"] : l, file));
    }
    if (l["peak_at"].IsDefined()) {
        v.load.peak_at = duration(l["peak_at"], path + ".load.peak_at", file);
        if (v.load.peak_at >= v.load.period) {
            throw InputError(path + ".load.peak_at", "must fall within the period",
                             at(l["peak_at"], file));
        }
    }
    // The autoscaler.
    const YAML::Node a = n["autoscale"];
    if (!is_map(a)) {
        throw InputError(path + ".autoscale",
                         "expected a mapping: signal, target, min, max, interval, lag, "
                         "provisioning, drain, load_bandwidth",
                         a.IsDefined() ? at(a, file) : at(n, file));
    }
    known_keys(a, path + ".autoscale", file,
               {"signal", "target", "min", "max", "interval", "lag", "provisioning", "drain",
                "load_bandwidth"});
    fleet::AutoscalerSpec& x = v.autoscale;
    const std::string ap = path + ".autoscale";
    if (a["signal"].IsDefined()) {
        x.signal = signal(a["signal"], ap + ".signal", file);
    }
    x.target = x.signal == fleet::Signal::queue ? 30.0 : x.signal == fleet::Signal::slo ? 0.99 : 0.7;
    if (a["target"].IsDefined()) {
        x.target = real(a["target"], ap + ".target", file);
        const bool fraction = x.signal != fleet::Signal::queue;
        if (!(x.target > 0.0) || (fraction && x.target > 1.0) || x.target > 1e6) {
            throw InputError(ap + ".target",
                             fraction ? "a fraction above 0 and at most 1"
                                      : "seconds of backlog, above 0",
                             at(a["target"], file));
        }
    }
    for (const char* key : {"min", "max"}) {
        if (!a[key].IsDefined()) {
            throw InputError(ap + "." + key,
                             std::string("give the ") + key + "imum " + unit +
                                 " the service holds",
                             at(a, file));
        }
    }
    x.min = integer(a["min"], ap + ".min", file);
    x.max = integer(a["max"], ap + ".max", file);
    if (x.max < 1 || x.max > grantable) {
        throw InputError(ap + ".max",
                         "a service holds at most 1 to " + std::to_string(grantable) + " " +
                             unit + " (the cluster's less its spares)",
                         at(a["max"], file));
    }
    if (x.min < 0 || x.min > x.max) {
        throw InputError(ap + ".min",
                         "the minimum (" + std::to_string(x.min) + ") must be 0 to the maximum (" +
                             std::to_string(x.max) + ")",
                         at(a["min"], file));
    }
    if (const auto q = quota_of.find(v.tenant); q != quota_of.end() && x.min > q->second) {
        throw InputError(ap + ".min",
                         std::to_string(x.min) + " " + unit + " exceed tenant " + v.tenant +
                             "'s quota of " + std::to_string(q->second),
                         at(a["min"], file));
    }
    x.interval = Duration::from_seconds_ceil(60.0);
    x.lag = Duration::from_seconds_ceil(60.0);
    x.provisioning = Duration::from_seconds_ceil(300.0);
    x.drain = Duration::from_seconds_ceil(60.0);
    if (a["interval"].IsDefined()) {
        x.interval = duration(a["interval"], ap + ".interval", file);
        if (x.interval < Duration::from_seconds_ceil(1.0)) {
            throw InputError(ap + ".interval", "at least 1 s", at(a["interval"], file));
        }
    }
    if (a["lag"].IsDefined()) {
        x.lag = duration(a["lag"], ap + ".lag", file);
    }
    if (a["provisioning"].IsDefined()) {
        x.provisioning = duration(a["provisioning"], ap + ".provisioning", file);
    }
    if (a["drain"].IsDefined()) {
        x.drain = duration(a["drain"], ap + ".drain", file);
    }
    if (const YAML::Node b = a["load_bandwidth"]; b.IsDefined()) {
        try {
            v.load_bandwidth = parse_bandwidth(is_scalar(b) ? b.Scalar() : std::string());
        } catch (const UnitError& e) {
            throw InputError(ap + ".load_bandwidth", e.what(), at(b, file));
        }
        if (!(v.load_bandwidth.bytes_per_s() > 0.0)) {
            throw InputError(ap + ".load_bandwidth", "must be positive", at(b, file));
        }
    }
    return v;
}

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
        fs.horizon = duration(f["horizon"], "fleet.horizon", file);
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

    // The pools: the scenario's own cluster (`main`), then fleet.pools. Each has a document
    // root of its own for its entries: the scenario's, with the pool's hardware and cost
    // (the nodes as written, so their places are the pool's).
    struct PoolDraft {
        std::string name;
        SharedCluster cl;
        std::int64_t spares = 0;
        YAML::Node root;
        std::string path; ///< fleet.pools[k]; empty for main
        YAML::Node node;
        std::vector<std::pair<std::string, std::string>> sections_at;
        std::ptrdiff_t first_entry = -1; ///< its first class or service (classes first)
    };
    std::vector<PoolDraft> pools;
    pools.push_back({"main", cl, fs.spares, croot, "", YAML::Node(), {}, -1});
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
        fs.window_from = duration(w["from"], "fleet.request_level.from", file);
        fs.window_to = duration(w["to"], "fleet.request_level.to", file);
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
            c.submit = duration(n["submit"], path + ".submit", file);
        }
        if (n["every"].IsDefined()) {
            c.every = duration(n["every"], path + ".every", file);
        }
        if (n["deadline"].IsDefined()) {
            c.deadline = duration(n["deadline"], path + ".deadline", file);
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
        // The first class's resolved shared sections, the whole cluster, the fleet's settings
        // and each class's resolved workload and reliability sections.
        const FleetSpec& fl = *spec.fleet;
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
        parallel_for(mines.size(), entry_threads(entries), [&](std::size_t i, int) {
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
        spec.resolved_yaml = std::string(emitter.c_str()) + "\n";
    }
    return spec;
}

} // namespace trnsim::config::detail
