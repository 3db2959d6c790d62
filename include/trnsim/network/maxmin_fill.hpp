// Progressive filling (maxmin.hpp explains the maths): the max-min rates of a set of flows,
// every other flow of the solver keeping its rate and its share of its links' `used`.
#pragma once

#include "trnsim/network/maxmin_flows.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::network {

namespace detail {
/// A candidate bottleneck of a fill: a shared link with its share when pushed, or (flow bit
/// set) one flow's tightest private link.
struct MaxMinShare {
    double share;
    std::uint64_t id; ///< link id, or (1 << 40) | flow id
};
} // namespace detail

class ProgressiveFill {
public:
    /// Raises the weighted rates of the flows of `set` (live flows of `flows`, each once, all
    /// at rate 0 with their rates out of their links' `used`) together, freezing each at the
    /// share of the first of its links to fill: sets their rates and bottlenecks and adds the
    /// rates to `used`. Takes two stamps from `stamps` for its marks. Ties between links are
    /// broken by link id, so the same call gives the same rates. Complexity O(I log I) for the
    /// I flow-link incidences of the set.
    void run(MaxMinFlows& flows, const std::vector<MaxMinFlowId>& set, MaxMinStamps& stamps);

private:
    using Share = detail::MaxMinShare;
    std::vector<Share> shares_; ///< heap of shared links (kept to avoid reallocation)
    std::vector<Share> caps_;   ///< flows by their tightest private link
};

} // namespace trnsim::network
