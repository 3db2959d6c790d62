// Reading the list forms of a scenario document by hand (private to the config module): the
// `tenants:` and `fleet:` forms, whose entries are loaded as scenarios of their own. Locations are
// the node's in `file`; key paths as the schema writes them (tenants[1].allocation).
#pragma once

#include "trnsim/core/error.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace trnsim::config::detail {

// Node kinds that are false for an absent key (yaml-cpp's IsMap() and friends throw on the
// node a const lookup of a missing key returns).
inline bool is_map(const YAML::Node& n) { return n.IsDefined() && n.IsMap(); }
inline bool is_scalar(const YAML::Node& n) { return n.IsDefined() && n.IsScalar(); }
inline bool is_sequence(const YAML::Node& n) { return n.IsDefined() && n.IsSequence(); }

inline SourceLocation at(const YAML::Node& n, const std::string& file) {
    const YAML::Mark m = n.Mark();
    if (m.line < 0) {
        return {file, 1, 1};
    }
    return {file, m.line + 1, m.column + 1};
}

/// A non-negative integer scalar.
inline std::int64_t integer(const YAML::Node& n, const std::string& path,
                            const std::string& file) {
    const std::string text = is_scalar(n) ? n.Scalar() : std::string();
    std::int64_t v = -1;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size() || v < 0) {
        throw InputError(path, "expected a whole number of 0 or more, got '" + text + "'",
                         at(n, file));
    }
    return v;
}

/// The keys of mapping `n` must be among `allowed`.
inline void known_keys(const YAML::Node& n, const std::string& path, const std::string& file,
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

inline bool valid_name(const std::string& s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
    });
}

/// The cluster a list form shares: exactly one of cluster.ultraservers or cluster.instances
/// (and optionally its fabric). `what` says who shares it ("a tenants scenario").
struct SharedCluster {
    YAML::Node node;
    bool ultraservers = true;
    const char* unit = "ultraservers";
    std::int64_t domains = 0;
};

inline SharedCluster shared_cluster(const YAML::Node& root, const std::string& file,
                                    const std::string& what) {
    SharedCluster c{root["cluster"]}; // copied: assigning an absent key's node throws
    if (!is_map(c.node)) {
        throw InputError("cluster", what + " needs the cluster they share (ultraservers or "
                                           "instances)",
                         c.node.IsDefined() ? at(c.node, file) : SourceLocation{file, 1, 1});
    }
    known_keys(c.node, "cluster", file, {"ultraservers", "instances", "fabric"});
    if (c.node["ultraservers"].IsDefined() == c.node["instances"].IsDefined()) {
        throw InputError("cluster", "give exactly one of cluster.ultraservers or "
                                    "cluster.instances",
                         at(c.node, file));
    }
    c.ultraservers = c.node["ultraservers"].IsDefined();
    c.unit = c.ultraservers ? "ultraservers" : "instances";
    c.domains = integer(c.node[c.unit], std::string("cluster.") + c.unit, file);
    return c;
}

/// The document of one entry of a list form, a single-workload scenario: the root's shared
/// sections (all but `skip`, the cluster, the name, a workload and a reliability section),
/// `name`, a cluster of `domains` of the shared cluster's unit (with its fabric), and the
/// entry's workload and reliability sections.
inline YAML::Node entry_document(const YAML::Node& root, const SharedCluster& cluster,
                                 const std::string& skip, const std::string& name,
                                 std::int64_t domains, const YAML::Node& entry) {
    YAML::Node doc(YAML::NodeType::Map);
    for (const auto& kv : root) {
        const std::string key = kv.first.Scalar();
        if (key != skip && key != "cluster" && key != "name" && key != "workload" &&
            key != "reliability") {
            doc[key] = YAML::Clone(kv.second); // a copy: loading may write into its nodes
        }
    }
    doc["name"] = name;
    YAML::Node c(YAML::NodeType::Map);
    c[cluster.unit] = domains;
    if (cluster.node["fabric"].IsDefined()) {
        c["fabric"] = YAML::Clone(cluster.node["fabric"]);
    }
    doc["cluster"] = c;
    doc["workload"] = YAML::Clone(entry["workload"]);
    if (entry["reliability"].IsDefined()) {
        doc["reliability"] = YAML::Clone(entry["reliability"]);
    }
    return doc;
}

/// Records where every key under `n` (maps' keys, sequences' items) is in the file, under
/// `prefix`; nodes without a place (made by an override) are left out.
inline void record_places(const YAML::Node& n, const std::string& prefix, const std::string& file,
                          SourceMap& out) {
    if (n.Mark().line >= 0 && !prefix.empty()) {
        out.add(prefix, at(n, file));
    }
    if (n.IsMap()) {
        for (const auto& kv : n) {
            const std::string key = kv.first.Scalar();
            record_places(kv.second, prefix.empty() ? key : prefix + "." + key, file, out);
        }
    } else if (n.IsSequence()) {
        for (std::size_t i = 0; i < n.size(); ++i) {
            record_places(n[i], prefix + "[" + std::to_string(i) + "]", file, out);
        }
    }
}

/// Records the places in the file of the keys entry_document copies (its copies have none).
inline void entry_places(const YAML::Node& root, const std::string& skip,
                         const YAML::Node& entry, const std::string& file, SourceMap& out) {
    for (const auto& kv : root) {
        const std::string key = kv.first.Scalar();
        if (key != skip && key != "cluster" && key != "name" && key != "workload" &&
            key != "reliability") {
            record_places(kv.second, key, file, out);
        }
    }
    for (const char* key : {"workload", "reliability"}) {
        if (entry[key].IsDefined()) {
            record_places(entry[key], key, file, out);
        }
    }
}

} // namespace trnsim::config::detail
