// Forces the window driver's sharing mode for the life of an object, through the
// TRNSIM_WINDOW_SHARING environment variable (engine/window_driver.hpp): a test of "the same
// results on 1 and 2 threads" on a small case would otherwise run most windows inline on the
// leader alone and never exercise the helper threads.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace trnsim::test {

class ScopedSharing {
public:
    explicit ScopedSharing(const char* mode) {
        if (const char* old = std::getenv(kName)) {
            old_ = old;
        }
        ::setenv(kName, mode, 1);
    }
    ScopedSharing(const ScopedSharing&) = delete;
    ScopedSharing& operator=(const ScopedSharing&) = delete;
    ~ScopedSharing() {
        if (old_) {
            ::setenv(kName, old_->c_str(), 1);
        } else {
            ::unsetenv(kName);
        }
    }

private:
    static constexpr const char* kName = "TRNSIM_WINDOW_SHARING";
    std::optional<std::string> old_;
};

} // namespace trnsim::test
