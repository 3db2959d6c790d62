#pragma once
// An allocator for large arrays that are read at random (link records of a fabric, flow-link
// incidences): blocks of 2 MiB or more are 2 MiB-aligned and advised to the kernel as
// transparent huge pages, so that a random access costs one TLB entry per 2 MiB instead of
// one per 4 KiB. Where the kernel says no (THP "never"), it is an ordinary aligned allocation.

#include <cstddef>
#include <new>

namespace trnsim {

namespace detail {
void* huge_allocate(std::size_t bytes);
void huge_deallocate(void* p, std::size_t bytes) noexcept;
} // namespace detail

template <class T>
struct HugePageAllocator {
    using value_type = T;
    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) { return static_cast<T*>(detail::huge_allocate(n * sizeof(T))); }
    void deallocate(T* p, std::size_t n) noexcept { detail::huge_deallocate(p, n * sizeof(T)); }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const noexcept {
        return true;
    }
};

} // namespace trnsim
