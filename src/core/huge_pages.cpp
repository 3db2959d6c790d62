#include "trnsim/core/huge_pages.hpp"

#include <cstdlib>
#include <sys/mman.h>

namespace trnsim::detail {

namespace {
constexpr std::size_t kHuge = std::size_t{2} << 20;
}

void* huge_allocate(std::size_t bytes) {
    if (bytes < kHuge) {
        if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) {
            return p;
        }
        throw std::bad_alloc();
    }
    const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    // Advice only: failure (no THP support) leaves ordinary pages.
    (void)madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}

void huge_deallocate(void* p, std::size_t) noexcept {
    std::free(p);
}

} // namespace trnsim::detail
