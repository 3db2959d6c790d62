// The serving fleet's request records (serve_records.hpp).
#include "serve_records.hpp"

#include <algorithm>

#include "trnsim/core/assert.hpp"

namespace trnsim::sim::detail {

using serving::Request;
using serving::RequestRecord;

Request request_of(const Slot& s, std::int64_t prefix_tokens) {
    Request r;
    r.id = s.rec.id;
    r.arrival = s.rec.arrival;
    r.input_tokens = s.rec.input_tokens;
    r.output_tokens = s.rec.output_tokens;
    r.prefix_id = s.prefix_id;
    r.prefix_tokens = s.prefix_id != 0 ? prefix_tokens : 0;
    return r;
}

std::vector<RequestRecord> RecordTable::take(std::uint64_t n) {
    std::vector<RequestRecord> out;
    out.reserve(n);
    for (std::uint64_t id = 0; id < n; ++id) {
        out.push_back(at(id).rec);
        if ((id & (kChunk - 1)) == kChunk - 1) {
            chunks_[id >> kShift].reset();
        }
    }
    chunks_.clear();
    return out;
}

std::vector<RequestRecord> FleetRecords::take(bool closed_loop) {
    if (shard_count_ == 1) {
        return tables_[0].take(issued_[0]);
    }
    std::uint64_t total = 0, longest = 0;
    for (const std::uint64_t issued : issued_) {
        total += issued;
        longest = std::max(longest, issued);
    }
    std::vector<RequestRecord> out;
    out.reserve(total);
    for (std::uint64_t n = 0; n < longest; ++n) {
        for (std::uint32_t k = 0; k < shard_count_; ++k) {
            if (n < issued_[k]) {
                out.push_back(tables_[k].at(n).rec);
                if ((n & (RecordTable::kChunk - 1)) == RecordTable::kChunk - 1) {
                    tables_[k].release(n);
                }
            }
        }
    }
    if (closed_loop) {
        // Each router's clients issue its ids k, k + K, ... until the count or duration
        // ends; under a duration the routers stop at different ids: the records (gathered
        // above in id order) are numbered again without gaps.
        std::uint64_t previous = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            TRNSIM_CHECK(i == 0 || out[i].id > previous,
                         "serve: the router shards' records are out of id order");
            previous = out[i].id;
            out[i].id = i;
        }
        return out;
    }
    // Open-loop arrivals do not decrease with the id, so the shards' requests are ids
    // 0 .. total - 1.
    for (std::size_t i = 0; i < out.size(); ++i) {
        TRNSIM_CHECK(out[i].id == i, "serve: the router shards' request ids have a gap");
    }
    return out;
}

} // namespace trnsim::sim::detail
