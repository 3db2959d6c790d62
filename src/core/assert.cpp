#include "trnsim/core/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace trnsim::detail {

void check_failed(const char* expr, const char* file, int line, std::string_view msg) {
    std::fprintf(stderr, "trnsim: internal error: check failed: %s\n  at %s:%d\n  %.*s\n", expr,
                 file, line, static_cast<int>(msg.size()), msg.data());
    std::fflush(stderr);
    std::abort();
}

} // namespace trnsim::detail
