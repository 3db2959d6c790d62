// Background load for the thread benchmarks (issue 15, item 13): `processes` busy processes
// (`yes > /dev/null`) for the life of the object, killed by their pids when it goes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace trnsim::bench {

class BackgroundLoad {
public:
    explicit BackgroundLoad(int processes) {
        for (int i = 0; i < processes; ++i) {
            posix_spawn_file_actions_t actions;
            posix_spawn_file_actions_init(&actions);
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
            char prog[] = "yes";
            char* argv[] = {prog, nullptr};
            pid_t pid = 0;
            const int rc = posix_spawnp(&pid, "yes", &actions, nullptr, argv, environ);
            posix_spawn_file_actions_destroy(&actions);
            if (rc != 0) {
                stop();
                throw std::runtime_error("cannot start the background load (yes)");
            }
            pids_.push_back(pid);
        }
        if (processes > 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200)); // let them get going
        }
    }
    BackgroundLoad(const BackgroundLoad&) = delete;
    BackgroundLoad& operator=(const BackgroundLoad&) = delete;
    ~BackgroundLoad() { stop(); }

private:
    void stop() {
        for (pid_t pid : pids_) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        pids_.clear();
    }
    std::vector<pid_t> pids_;
};

} // namespace trnsim::bench
