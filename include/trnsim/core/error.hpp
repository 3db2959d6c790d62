// Error types. trnsim keeps three kinds of failure apart (see docs/architecture.md):
//
//  1. Bad input from the user (a scenario, a preset, a command-line value): InputError. It names
//     the key path that is wrong and, once the config module has attached it, the file, line and
//     column. It is raised before any simulation starts; the CLI turns it into exit code 2.
//  2. A broken invariant inside trnsim: TRNSIM_CHECK (assert.hpp) aborts with context; exit 1.
//  3. Simulated faults (a chip failing) are model events, never exceptions.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace trnsim {

/// Where a value came from: a file (or "--set key=value" for command-line overrides), a 1-based
/// line and a 1-based column. A default-constructed location is "unknown".
struct SourceLocation {
    std::string file;
    int line = 0;
    int column = 0;

    bool known() const { return !file.empty(); }
    /// "FILE:LINE:COL", or just "FILE" when line is unknown.
    std::string str() const;
};

/// Maps dotted key paths ("workload.parallelism.tp") to the location of their value, so modules
/// that validate meaning (a plan that does not divide the ranks) can report a key path and the
/// CLI can still point at the line. Lookup falls back to the earliest of the key's own keys (a
/// mapping whose place was not recorded), else to the longest known prefix.
class SourceMap {
public:
    void add(const std::string& key_path, SourceLocation loc);
    /// Location of key_path, else the earliest of its keys', else of its nearest ancestor, else
    /// unknown.
    SourceLocation find(const std::string& key_path) const;
    /// Whether key_path itself was recorded (given in the file or on the command line).
    bool contains(const std::string& key_path) const { return map_.count(key_path) > 0; }
    bool empty() const { return map_.empty(); }
    /// The locations of `section` and the keys below it (section.x, section[i]) become
    /// those `from` records.
    void replace_section(const std::string& section, const SourceMap& from);

private:
    std::map<std::string, SourceLocation> map_;
};

/// A user mistake. what() reads "FILE:LINE:COL: key.path: message" when the location is known,
/// "key.path: message" otherwise.
class InputError : public std::runtime_error {
public:
    InputError(std::string key_path, std::string message, SourceLocation loc = {});

    const std::string& key_path() const { return key_path_; }
    const std::string& message() const { return message_; }
    const SourceLocation& location() const { return location_; }

    /// The same error with a location attached (kept if this one already has one).
    InputError located(const SourceMap& sources) const;

private:
    std::string key_path_;
    std::string message_;
    SourceLocation location_;
};

/// A misuse of the command line (unknown option, missing argument). Exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace trnsim
