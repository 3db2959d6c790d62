// Reading the files a user names (scenarios, sweeps, plans, presets, failure traces).
//
// Only regular files are read: a directory, a FIFO, a device or a socket is refused before it
// is opened for reading (a FIFO would block, /dev/zero never ends), and so is a file larger
// than the limit, so a wrong path fails at once with a message instead of hanging or filling
// memory. The same checks hold for every kind of input; docs/user-guide.md ("Errors and
// guarantees") documents the limit.
#pragma once

#include "trnsim/core/error.hpp"

#include <cstdint>
#include <filesystem>
#include <string>

namespace trnsim {

/// The largest text file trnsim reads: 64 MiB (the largest shipped input is a few KiB; a
/// failure trace of a year of a 100,000-chip cluster is about 2 MB).
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{64} << 20;

/// Why `file` cannot be read as an input ("is a directory", "is not a regular file (a FIFO)",
/// "is too large: 65 MiB, the limit is 64 MiB", "not found", "cannot be read: Permission
/// denied"), or an empty string when it can. Never opens anything but a regular file.
std::string input_file_problem(const std::filesystem::path& file,
                               std::uintmax_t max_bytes = kMaxInputFileBytes);

/// The whole content of the regular file `file`. On any problem throws
/// InputError(key_path, "<what> file 'FILE' <problem>", where), `where` being the place that
/// named the file (or the file itself when unknown). The size is checked again while reading,
/// so a file that grows past the limit is refused too. Thread-safe.
std::string read_input_file(const std::filesystem::path& file, const std::string& what,
                            const std::string& key_path = "", SourceLocation where = {},
                            std::uintmax_t max_bytes = kMaxInputFileBytes);

} // namespace trnsim
