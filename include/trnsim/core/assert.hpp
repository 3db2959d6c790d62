// Invariant checks. A failed check is a bug in trnsim, not a user mistake: it prints the
// condition, the source position and a message to stderr and aborts (exit code 1 through the
// CLI's terminate handler is not attempted: abort keeps the core for debugging).
//
// TRNSIM_CHECK stays on in every build (cheap checks); TRNSIM_DCHECK only in debug builds
// (hot paths).
#pragma once

#include <string_view>

namespace trnsim::detail {
[[noreturn]] void check_failed(const char* expr, const char* file, int line, std::string_view msg);
} // namespace trnsim::detail

#define TRNSIM_CHECK(cond, msg)                                                                    \
    do {                                                                                           \
        if (!(cond)) [[unlikely]] {                                                                \
            ::trnsim::detail::check_failed(#cond, __FILE__, __LINE__, (msg));                      \
        }                                                                                          \
    } while (false)

#ifdef NDEBUG
#define TRNSIM_DCHECK(cond, msg)                                                                   \
    do {                                                                                           \
    } while (false)
#else
#define TRNSIM_DCHECK(cond, msg) TRNSIM_CHECK(cond, msg)
#endif
