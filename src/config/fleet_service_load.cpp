// The `fleet:` form's services (docs/fleet.md, "Services"): a name and tenant, a load over
// time, an SLO attainment and an autoscaler; its workload is loaded by the caller.
#include "fleet_load_parts.hpp"

#include "trnsim/config/units.hpp"
#include "trnsim/core/error.hpp"

#include <cmath>

namespace trnsim::config::detail {

namespace {

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

} // namespace

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
        v.load.period = fleet_duration(l["period"], path + ".load.period", file);
    }
    if (l["step"].IsDefined()) {
        v.load.step = fleet_duration(l["step"], path + ".load.step", file);
    }
    if (v.load.step < Duration::from_seconds_ceil(1.0) || v.load.step > v.load.period) {
        throw InputError(path + ".load.step", "at least 1 s and at most the period",
                         at(l["step"].IsDefined() ? l["step"] : l, file));
    }
    if (l["peak_at"].IsDefined()) {
        v.load.peak_at = fleet_duration(l["peak_at"], path + ".load.peak_at", file);
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
        x.interval = fleet_duration(a["interval"], ap + ".interval", file);
        if (x.interval < Duration::from_seconds_ceil(1.0)) {
            throw InputError(ap + ".interval", "at least 1 s", at(a["interval"], file));
        }
    }
    if (a["lag"].IsDefined()) {
        x.lag = fleet_duration(a["lag"], ap + ".lag", file);
    }
    if (a["provisioning"].IsDefined()) {
        x.provisioning = fleet_duration(a["provisioning"], ap + ".provisioning", file);
    }
    if (a["drain"].IsDefined()) {
        x.drain = fleet_duration(a["drain"], ap + ".drain", file);
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

} // namespace trnsim::config::detail
