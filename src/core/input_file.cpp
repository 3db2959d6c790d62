#include "trnsim/core/input_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trnsim {

namespace {

std::string mib(std::uintmax_t bytes) {
    return std::to_string((bytes + (std::uintmax_t{1} << 20) - 1) >> 20) + " MiB";
}

/// The problem with a file of status `st`, or "".
std::string status_problem(const struct stat& st, std::uintmax_t max_bytes) {
    if (S_ISDIR(st.st_mode)) {
        return "is a directory";
    }
    if (!S_ISREG(st.st_mode)) {
        const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "a special file";
        return std::string("is not a regular file (") + kind + ")";
    }
    if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
        return "is too large: " + mib(static_cast<std::uintmax_t>(st.st_size)) +
               ", the limit is " + mib(max_bytes);
    }
    return "";
}

std::string errno_problem(int err) {
    if (err == ENOENT) {
        return "not found";
    }
    if (err == ENOTDIR) {
        return "not found (a part of the path is not a directory)";
    }
    return std::string("cannot be read: ") + std::strerror(err);
}

/// Closes a descriptor on scope exit.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

} // namespace

std::string input_file_problem(const std::filesystem::path& file, std::uintmax_t max_bytes) {
    if (file.empty()) {
        return "is an empty path";
    }
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        return errno_problem(errno);
    }
    return status_problem(st, max_bytes);
}

std::string read_input_file(const std::filesystem::path& file, const std::string& what,
                            const std::string& key_path, SourceLocation where,
                            std::uintmax_t max_bytes) {
    const auto fail = [&](const std::string& problem) -> InputError {
        SourceLocation loc = where;
        if (!loc.known()) {
            loc = SourceLocation{file.string(), 0, 0};
        }
        return InputError(key_path, what + " file '" + file.string() + "' " + problem, loc);
    };
    if (const std::string p = input_file_problem(file, max_bytes); !p.empty()) {
        throw fail(p);
    }
    // Opened without blocking (the path may have become a FIFO since the check), then checked
    // again on the descriptor itself: what is read is what was checked.
    Fd in;
    in.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (in.fd < 0) {
        throw fail(errno_problem(errno));
    }
    struct stat st {};
    if (::fstat(in.fd, &st) != 0) {
        throw fail(errno_problem(errno));
    }
    if (const std::string p = status_problem(st, max_bytes); !p.empty()) {
        throw fail(p);
    }
    std::string text;
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buffer[1 << 16];
    while (true) {
        const ssize_t n = ::read(in.fd, buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw fail(errno_problem(errno));
        }
        if (n == 0) {
            break;
        }
        if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
            throw fail("is too large: it grew past the limit of " + mib(max_bytes) +
                       " while being read");
        }
        text.append(buffer, static_cast<std::size_t>(n));
    }
    return text;
}

} // namespace trnsim
