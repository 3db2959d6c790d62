// Runs the trnsim executable as a child process and captures its exit code and output.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern char** environ;

namespace trnsim::test {

struct CliResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

/// Runs `program args...` in `cwd` (default: the source tree).
inline CliResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::string& cwd = TRNSIM_SOURCE_DIR) {
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
    if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
        int status = 0;
        waitpid(pid, &status, 0);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    posix_spawn_file_actions_destroy(&actions);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    fs::remove_all(dir);
    return r;
}

/// Runs `trnsim args...` in `cwd` (default: the source tree).
inline CliResult run_cli(const std::vector<std::string>& args,
                         const std::string& cwd = TRNSIM_SOURCE_DIR) {
    return run_program(TRNSIM_CLI_PATH, args, cwd);
}

} // namespace trnsim::test
