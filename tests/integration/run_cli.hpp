// Runs the trnsim executable as a child process and captures its exit code and output.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace trnsim::test {

struct CliResult {
    int exit_code = -1;
    std::string out;
    std::string err;
    bool timed_out = false; ///< killed after the time limit (exit_code is then 128 + 9)
    double wall_s = 0.0;
    long max_rss_kib = 0;   ///< the child's peak resident memory
};

/// How long a child may run before it is killed: a hang fails its test instead of the suite.
inline constexpr double kDefaultTimeLimitS = 120.0;

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

/// Runs `program args...` in `cwd` (default: the source tree), killing it after
/// `time_limit_s` seconds.
inline CliResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::string& cwd = TRNSIM_SOURCE_DIR,
                             double time_limit_s = kDefaultTimeLimitS) {
    namespace fs = std::filesystem;
    static int counter = 0;
    const fs::path dir = fs::temp_directory_path() /
                         ("trnsim-cli-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter++));
    fs::create_directories(dir);
    const std::string out_path = (dir / "stdout").string();
    const std::string err_path = (dir / "stderr").string();

    std::vector<std::string> argv_s{program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) {
        argv.push_back(a.data());
    }
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    pid_t pid = 0;
    CliResult r;
    const auto start = std::chrono::steady_clock::now();
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
        int status = 0;
        struct rusage usage {};
        // Poll, sleeping a little longer each time (0.1 ms up to 10 ms), so short runs
        // return at once and a hung child is killed at the limit.
        auto nap = std::chrono::microseconds(100);
        while (true) {
            const pid_t done = wait4(pid, &status, WNOHANG, &usage);
            if (done == pid || (done < 0 && errno != EINTR)) {
                break;
            }
            const double elapsed =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (elapsed > time_limit_s) {
                r.timed_out = true;
                kill(pid, SIGKILL);
                wait4(pid, &status, 0, &usage);
                break;
            }
            std::this_thread::sleep_for(nap);
            nap = std::min(nap * 2, std::chrono::microseconds(10000));
        }
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r.max_rss_kib = usage.ru_maxrss;
    }
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    posix_spawn_file_actions_destroy(&actions);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    fs::remove_all(dir);
    return r;
}

/// The trnsim under test: this build's, or $TRNSIM_TEST_CLI (to show that a test fails on
/// another build).
inline std::string cli_path() {
    const char* other = std::getenv("TRNSIM_TEST_CLI");
    return other != nullptr && *other != '\0' ? other : TRNSIM_CLI_PATH;
}

/// Runs `trnsim args...` in `cwd` (default: the source tree).
inline CliResult run_cli(const std::vector<std::string>& args,
                         const std::string& cwd = TRNSIM_SOURCE_DIR,
                         double time_limit_s = kDefaultTimeLimitS) {
    return run_program(cli_path(), args, cwd, time_limit_s);
}

} // namespace trnsim::test
