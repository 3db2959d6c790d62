// Writing results files (HDF5). The layout is specified in docs/results-schema.md:
//
//   /meta            group; attributes schema_version, trnsim_version, name, seed, threads
//   /meta/scenario   the resolved scenario (YAML text, every default filled in)
//   /summary         compound dataset, one row per run
//   /<path>          further compound tables (for example /step/breakdown)
//   /<path>          text datasets (scalar UTF-8 strings, for example /batch/sweep)
//
// The file is written under a temporary name beside the target and renamed into place only
// when complete, so an error or a crash never leaves a partial results file. Object
// modification times are not recorded, so the same inputs give byte-identical files.
#pragma once

#include "trnsim/results/output_files.hpp"
#include "trnsim/results/table.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::results {

/// Version of the file layout; bumped on any incompatible change (docs/results-schema.md).
inline constexpr std::int64_t kSchemaVersion = 1;

struct Meta {
    std::string trnsim_version;
    std::string name;
    std::string scenario_yaml;
    std::int64_t seed = 0;
    std::int64_t threads = 1;
};

struct ResultsFile {
    Meta meta;
    Table summary;
    /// Additional tables by absolute dataset path ("/step/breakdown").
    std::vector<std::pair<std::string, Table>> tables;
    /// Text datasets by absolute path ("/batch/sweep").
    std::vector<std::pair<std::string, std::string>> texts;
};

/// Writes `file` under the temporary name of `path` (parent directories are created) and
/// returns it complete, to be committed (output_files.hpp). Throws std::runtime_error when it
/// cannot be written; the temporary is then removed and the target left untouched.
PendingFile stage_hdf5(const std::string& path, const ResultsFile& file);

/// stage_hdf5, then commit: `path` holds the new file, or (on an error) what it held before.
void write_hdf5(const std::string& path, const ResultsFile& file);

/// Reads back a table of a results file ("/summary", "/batch/points"); std::runtime_error
/// when the file or the dataset cannot be read, the file is not a regular file (a FIFO, a
/// device: refused before it is opened), or the dataset is not a one-dimensional table of
/// integer, float and string columns (fixed or variable length; any width is converted).
Table read_table(const std::string& path, const std::string& dataset);

/// read_table(path, "/summary").
Table read_summary(const std::string& path);

/// A text dataset, or nothing when the file has no dataset of that name (std::runtime_error
/// when the file cannot be read at all, or the dataset is not a single string).
std::optional<std::string> read_text(const std::string& path, const std::string& dataset);

} // namespace trnsim::results
