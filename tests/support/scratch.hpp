// Scratch paths for tests that write files.
//
// A name of the test's own, made unique to the process: two test runs at once (two checkouts,
// or a sanitizer build beside the Release one) never share or delete each other's files.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

namespace trnsim::test {

/// `<temp dir>/<name>-<pid>`: not created, not cleared (the caller does what it needs).
inline std::filesystem::path scratch_path(const std::string& name) {
    return std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
}

} // namespace trnsim::test
