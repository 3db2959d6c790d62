// Background load for the thread benchmarks (issue 15, item 13): `processes` busy processes
// (`yes > /dev/null`) for the life of the object, killed by their pids when it goes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace trnsim::bench {

class BackgroundLoad {
public:
    /// Each child asks the kernel to kill it when this process dies (PR_SET_PDEATHSIG), so a
    /// benchmark killed by a signal (SIGPIPE from `| head`, ^C) leaves no busy process behind.
    explicit BackgroundLoad(int processes) {
        const pid_t parent = ::getpid();
        for (int i = 0; i < processes; ++i) {
            const pid_t pid = ::fork();
            if (pid == 0) {
                ::prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (::getppid() != parent) {
                    ::_exit(1); // the parent is already gone
                }
                const int fd = ::open("/dev/null", O_WRONLY);
                if (fd >= 0) {
                    ::dup2(fd, 1);
                }
                ::execlp("yes", "yes", static_cast<char*>(nullptr));
                ::_exit(127);
            }
            if (pid < 0) {
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
