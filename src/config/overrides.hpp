// Overrides of a scenario's keys (--set key.path=value, sweep and plan values) applied to its
// YAML tree before the schema walk (private to the config module).
#pragma once

#include "trnsim/config/study.hpp"

#include "schema.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace trnsim::config::detail {

/// An override with its value parsed.
struct ParsedOverride {
    std::string path;
    YAML::Node value;
    SourceLocation origin;
};

/// The override's key path checked and its value parsed (one YAML document), or an InputError
/// at its origin.
ParsedOverride parse_override(const Override& o);

/// Sets `path` in `node`, creating mappings on the way (a null value removes the key).
void apply_override(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
                    const ParsedOverride& o);

/// The "key.path=value" texts of --set, located on the command line.
std::vector<Override> command_line_overrides(const std::vector<std::string>& texts);

} // namespace trnsim::config::detail
