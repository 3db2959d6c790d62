// Every value of a chip or fabric file with the source its comment gives (describe chip and
// describe topology print them): the files cite a source key of shared/reference/trainium.md
// beside each value, and this reads them back as written, following a chip file's `extends`.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace trnsim::cli {

struct SourcedValue {
    std::string path;   ///< dotted key path, "interconnect.neuronlink_hop_latency"
    std::string value;  ///< as written
    std::string source; ///< the comment beside it and its continuation lines ("" when none)
    std::filesystem::path file; ///< the file that gave it (a base file when inherited)
};

/// The values of `file` in file order; with `follow_extends`, a chip file's `extends: NAME`
/// first gives the values of the file it names (found as the chip loader finds it:
/// config::preset_file beside `file`), which this file's own keys replace in place.
std::vector<SourcedValue> sourced_values(const std::filesystem::path& file, bool follow_extends);

/// Prints "  key = value  [source]" for each value except those under a `skip` section,
/// naming the file of a value that `main` did not give.
void print_sourced_values(std::ostream& out, const std::vector<SourcedValue>& values,
                          const std::filesystem::path& main,
                          const std::vector<std::string>& skip);

} // namespace trnsim::cli
