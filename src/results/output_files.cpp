#include "trnsim/results/output_files.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace trnsim::results {

namespace {

namespace fs = std::filesystem;

/// The absolute path with '.', '..' and symlinks of its existing part resolved.
fs::path resolved(const fs::path& p) {
    std::error_code ec;
    fs::path a = fs::absolute(p, ec);
    if (ec) {
        return p.lexically_normal();
    }
    fs::path w = fs::weakly_canonical(a, ec);
    return ec ? a.lexically_normal() : w;
}

/// The same file as `a` (a hard link or the same path), when both exist.
bool same_file(const fs::path& a, const fs::path& b) {
    std::error_code ec;
    const bool eq = fs::equivalent(a, b, ec);
    return !ec && eq;
}

std::string kind_of(mode_t mode) {
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "a special file";
}

/// The name of a kernel file system nothing can be written to, or nullptr.
const char* kernel_file_system(const fs::path& dir) {
    struct statfs s {};
    if (::statfs(dir.c_str(), &s) != 0) {
        return nullptr;
    }
    switch (static_cast<unsigned long>(s.f_type)) {
    case 0x9fa0UL:
        return "proc";
    case 0x62656572UL:
        return "sysfs";
    case 0x27e0ebUL:
    case 0x63677270UL:
        return "cgroup";
    case 0x64626720UL:
        return "debugfs";
    case 0x74726163UL:
        return "tracefs";
    case 0x73636673UL:
        return "securityfs";
    default:
        return nullptr;
    }
}

std::string hex_byte(unsigned char c) {
    const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

/// Problems visible in the name alone, or "".
std::string text_problem(const std::string& path) {
    if (path.empty()) {
        return "is empty: give a file name";
    }
    for (std::size_t i = 0; i < path.size(); ++i) {
        const auto c = static_cast<unsigned char>(path[i]);
        if (c < 0x20 || c == 0x7f) {
            return "contains a control character (byte " + hex_byte(c) + " at offset " +
                   std::to_string(i) + "): a file name must be printable";
        }
    }
    if (path.back() == '/') {
        return "ends with '/': give a file name, not a directory";
    }
    const std::string name = fs::path(path).filename().string();
    if (name == "." || name == "..") {
        return "names a directory: give a file name";
    }
    if (path.size() >= PATH_MAX) {
        return "is " + std::to_string(path.size()) + " bytes long; paths are limited to " +
               std::to_string(PATH_MAX - 1);
    }
    return "";
}

/// Problems of the file system at the output's place, or "". Reads only.
std::string place_problem(const std::string& path) {
    const fs::path target(path);
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            return "is a directory: give a file name";
        }
        if (!S_ISREG(st.st_mode)) {
            return "exists and is not a regular file (" + kind_of(st.st_mode) +
                   "): results replace their file, so only a regular file can be one";
        }
    }
    // The nearest directory that exists, and the names to create below it.
    fs::path dir = fs::absolute(target).lexically_normal().parent_path();
    std::vector<std::string> missing;
    while (true) {
        if (::stat(dir.c_str(), &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                return "is under '" + dir.string() + "', which is a file, not a directory";
            }
            break;
        }
        if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG) {
            return "cannot be created in '" + dir.string() + "': " + std::strerror(errno);
        }
        struct stat link {};
        if (::lstat(dir.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
            return "is under '" + dir.string() + "', a symbolic link to nothing";
        }
        if (dir == dir.root_path() || dir.empty()) {
            return "cannot be created: no directory of '" + path + "' exists";
        }
        missing.push_back(dir.filename().string());
        dir = dir.parent_path();
    }
    if (const char* fs_name = kernel_file_system(dir)) {
        return "is in '" + dir.string() + "' (" + fs_name +
               ", a kernel file system): results cannot be written there";
    }
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        if (errno == EROFS) {
            return "cannot be written: '" + dir.string() + "' is on a read-only file system";
        }
        return "cannot be written: this user may not create files in '" + dir.string() + "' (" +
               std::strerror(errno) + ")";
    }
    long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
    if (name_max <= 0) {
        name_max = NAME_MAX;
    }
    for (const auto& m : missing) {
        if (static_cast<long>(m.size()) > name_max) {
            return "has a directory name of " + std::to_string(m.size()) +
                   " bytes; the file system allows " + std::to_string(name_max);
        }
    }
    const std::string name = target.filename().string();
    const long room = name_max - static_cast<long>(kTemporarySuffixBytes);
    if (static_cast<long>(name.size()) > room) {
        return "has a file name of " + std::to_string(name.size()) +
               " bytes; the file system allows " + std::to_string(name_max) + ", of which " +
               std::to_string(kTemporarySuffixBytes) +
               " are kept for the temporary name (at most " + std::to_string(room) + ")";
    }
    return "";
}

} // namespace

void check_outputs(const std::vector<PlannedOutput>& outputs,
                   const std::vector<std::string>& inputs) {
    std::vector<fs::path> input_paths;
    input_paths.reserve(inputs.size());
    for (const auto& in : inputs) {
        input_paths.push_back(resolved(in));
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const PlannedOutput& o = outputs[i];
        const auto fail = [&](const std::string& problem) {
            throw InputError(o.key, "'" + o.path + "' " + problem, o.origin);
        };
        if (const std::string p = text_problem(o.path); !p.empty()) {
            fail(p);
        }
        const fs::path me = resolved(o.path);
        for (std::size_t k = 0; k < inputs.size(); ++k) {
            if (me == input_paths[k] || same_file(o.path, inputs[k])) {
                fail((o.path == inputs[k] ? std::string("is a file")
                                          : "is the same file as '" + inputs[k] + "', which") +
                     " this command reads: writing there would destroy it; choose another "
                     "file");
            }
        }
        for (std::size_t k = 0; k < i; ++k) {
            if (me == resolved(outputs[k].path) || same_file(o.path, outputs[k].path)) {
                fail("is also the " + outputs[k].key + " ('" + outputs[k].path +
                     "'): each output needs a file of its own");
            }
        }
        if (const std::string p = place_problem(o.path); !p.empty()) {
            fail(p);
        }
    }
}

std::string temporary_name(const std::string& target) {
    return target + ".tmp-" + std::to_string(::getpid());
}

int remove_stale_temporaries(const std::string& target) {
    const fs::path t(target);
    const fs::path dir = t.has_parent_path() ? t.parent_path() : fs::path(".");
    const std::string prefix = t.filename().string() + ".tmp-";
    int removed = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.size() <= prefix.size() || name.size() > prefix.size() + 10 ||
            name.compare(0, prefix.size(), prefix) != 0) {
            continue;
        }
        const std::string digits = name.substr(prefix.size());
        if (digits.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const long long pid = std::stoll(digits);
        if (pid <= 0 || pid > INT_MAX || pid == ::getpid()) {
            continue;
        }
        // ESRCH: no such process (EPERM means it runs under another user: keep its file).
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            std::error_code rm;
            if (fs::remove(it->path(), rm)) {
                ++removed;
            }
        }
    }
    return removed;
}

PendingFile::PendingFile(std::string target)
    : target_(std::move(target)), temporary_(temporary_name(target_)) {
    const fs::path t(target_);
    if (t.has_parent_path()) {
        std::error_code ec;
        fs::create_directories(t.parent_path(), ec);
        if (ec) {
            throw std::runtime_error("cannot create directory '" + t.parent_path().string() +
                                     "': " + ec.message());
        }
    }
    remove_stale_temporaries(target_);
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : target_(std::move(other.target_)), temporary_(std::move(other.temporary_)),
      complete_(other.complete_), committed_(other.committed_) {
    other.temporary_.clear();
}

PendingFile& PendingFile::operator=(PendingFile&& other) noexcept {
    if (this != &other) {
        discard();
        target_ = std::move(other.target_);
        temporary_ = std::move(other.temporary_);
        complete_ = other.complete_;
        committed_ = other.committed_;
        other.temporary_.clear();
    }
    return *this;
}

PendingFile::~PendingFile() { discard(); }

void PendingFile::discard() noexcept {
    if (!committed_ && !temporary_.empty()) {
        std::error_code ec;
        fs::remove(temporary_, ec);
    }
}

void PendingFile::commit() {
    if (!complete_) {
        throw std::logic_error("results: '" + target_ + "' committed before it was complete");
    }
    if (committed_) {
        return;
    }
    fs::rename(temporary_, target_);
    committed_ = true;
}

void commit_all(std::vector<PendingFile>& files) {
    for (const auto& f : files) {
        if (!f.is_complete()) {
            throw std::logic_error("results: '" + f.target() + "' is not complete");
        }
    }
    for (auto& f : files) {
        f.commit();
    }
}

} // namespace trnsim::results
