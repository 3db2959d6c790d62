// The files a command writes (results, traces): checked before anything runs, written under
// temporary names, and moved into place together.
//
// The contract (docs/user-guide.md, "Errors and guarantees"):
//   - check_outputs, called before any simulation, refuses an output that cannot be written
//     (an empty name, control characters, a name ending in '/', an existing directory or
//     special file, a path under a regular file, in /proc or /sys, in a directory this user
//     cannot write, a name longer than the file system allows) and an output that would
//     replace an input of the run or another output (after symlinks, '.', '..' and hard
//     links). Each is an InputError (exit 2) naming the key and where it was given.
//   - Each file is first written as "<target>.tmp-<pid>" beside its target (PendingFile);
//     commit_all renames them into place only once every one of them is complete, so an error
//     (a trace that cannot be written, a full disk) leaves neither a partial file nor a new
//     results file without its trace.
//   - A temporary left by a process that no longer exists (kill -9) is removed the next time a
//     file is written to the same target.
#pragma once

#include "trnsim/core/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::results {

/// A file a command is about to write.
struct PlannedOutput {
    std::string path;      ///< as the user gave it (relative to the working directory)
    std::string key;       ///< the key or option that named it: "output.file", "output.trace"
    SourceLocation origin; ///< where it was given (a file position or "command line (-o X)")
};

/// Extra bytes the temporary name adds to a target's file name: ".tmp-" and up to 10 digits.
inline constexpr std::size_t kTemporarySuffixBytes = 15;

/// Throws InputError(output.key, "'PATH' ...", output.origin) for the first output that cannot
/// be written or would replace one of `inputs` (files the command read) or another output.
/// Reads the file system only; writes nothing.
void check_outputs(const std::vector<PlannedOutput>& outputs,
                   const std::vector<std::string>& inputs);

/// "<target>.tmp-<pid>" of this process.
std::string temporary_name(const std::string& target);

/// Removes the temporaries "<target>.tmp-<pid>" whose process no longer runs (left by a
/// killed run); those of running processes stay. Returns how many were removed.
int remove_stale_temporaries(const std::string& target);

/// A file being written under its temporary name. The writer creates the target's directory,
/// writes `temporary()` and calls complete(); commit() (or commit_all) renames it onto the
/// target. Destroyed before that, it removes the temporary. Move-only; not thread-safe.
class PendingFile {
public:
    PendingFile() = default;
    /// Prepares to write `target`: creates its parent directories and removes stale
    /// temporaries of it. std::runtime_error when the directory cannot be created.
    explicit PendingFile(std::string target);
    PendingFile(PendingFile&& other) noexcept;
    PendingFile& operator=(PendingFile&& other) noexcept;
    PendingFile(const PendingFile&) = delete;
    PendingFile& operator=(const PendingFile&) = delete;
    ~PendingFile();

    const std::string& target() const { return target_; }
    const std::string& temporary() const { return temporary_; }
    /// The writer finished the temporary.
    void complete() { complete_ = true; }
    bool is_complete() const { return complete_; }
    /// Renames the complete temporary onto the target (std::runtime_error if it cannot).
    void commit();

private:
    void discard() noexcept;

    std::string target_;
    std::string temporary_;
    bool complete_ = false;
    bool committed_ = false;
};

/// Commits every file, only if every one is complete (else std::logic_error and none moves).
void commit_all(std::vector<PendingFile>& files);

} // namespace trnsim::results
