#include "trnsim/core/units.hpp"

namespace trnsim {

Duration Duration::from_seconds_ceil(double seconds) {
    const double ns = std::ceil(seconds * 1e9);
    if (!(ns < 9.2e18)) { // also catches NaN and +inf
        return max();
    }
    if (ns <= -9.2e18) {
        return Duration(std::numeric_limits<std::int64_t>::min());
    }
    return Duration(static_cast<std::int64_t>(ns));
}

} // namespace trnsim
