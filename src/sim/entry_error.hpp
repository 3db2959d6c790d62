// An error of one entry of a list form (a tenant, a fleet's job class), private to sim: the
// entry's own keys (workload, reliability) under its prefix, others with the entry named.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/core/error.hpp"

#include <string>

namespace trnsim::sim::detail {

/// `e`, thrown by entry `spec`'s checks, located in the file: a key of the entry's own sections
/// as `prefix.key` ("tenants[1].workload.serving.tp"), any other with "(in WHAT NAME)".
inline InputError entry_error(const InputError& e, const config::ScenarioSpec& spec,
                              const std::string& prefix, const std::string& what) {
    const InputError located = e.located(spec.sources);
    const std::string& key = located.key_path();
    if (config::tenant_owns_key(key)) {
        return InputError(prefix + "." + key, located.message(), located.location());
    }
    return InputError(key, located.message() + " (in " + what + " " + spec.name + ")",
                      located.location());
}

} // namespace trnsim::sim::detail
