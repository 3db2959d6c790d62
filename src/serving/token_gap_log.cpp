// TokenGapLog: the inter-token gaps (token_gap_log.hpp).
#include "trnsim/serving/token_gap_log.hpp"

namespace trnsim::serving {

void TokenGapLog::record(std::int64_t ns, std::int64_t count) {
    if (count <= 0) {
        return;
    }
    if (!gaps_.empty() && gaps_.back().ns == ns) {
        gaps_.back().count += count;
        return;
    }
    gaps_.push_back({ns, count});
    if (gaps_.size() >= 4096) {
        compact_gaps(gaps_); // a few distinct iteration times, and first gaps
    }
}

std::vector<TokenGap> TokenGapLog::gaps() const {
    std::vector<TokenGap> g = gaps_;
    compact_gaps(g);
    return g;
}

} // namespace trnsim::serving
