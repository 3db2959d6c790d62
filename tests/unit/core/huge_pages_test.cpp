#include "trnsim/core/huge_pages.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace trnsim {
namespace {

TEST(HugePageAllocator, LargeBlocksAreAlignedToTwoMiB) {
    std::vector<double, HugePageAllocator<double>> v(1'000'000); // 8 MB
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % (std::uintptr_t{2} << 20), 0u);
    std::iota(v.begin(), v.end(), 0.0);
    EXPECT_EQ(v[999'999], 999'999.0);
}

TEST(HugePageAllocator, SmallBlocksAndGrowthKeepTheirContents) {
    std::vector<std::uint32_t, HugePageAllocator<std::uint32_t>> v;
    for (std::uint32_t i = 0; i < 2'000'000; ++i) { // crosses the 2 MiB threshold while growing
        v.push_back(i * 3);
    }
    for (std::uint32_t i = 0; i < 2'000'000; i += 99'991) {
        EXPECT_EQ(v[i], i * 3);
    }
    v.clear();
    v.shrink_to_fit();
    EXPECT_TRUE(v.empty());
}

} // namespace
} // namespace trnsim
