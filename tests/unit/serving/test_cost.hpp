// A small iteration cost for hand-derived tests (not a model of any hardware):
//
//     time = fixed + per_token x (prefill_tokens + decode_sequences x (1 + speculative_k))
//                  + per_bucket x bucket_end(c) / bucket,   c = the longest context
//     bucket_end(c) = the next multiple of `bucket` at or above c
//
// With per_bucket = 0 (the default) an iteration costs 1 ms plus 10 us per token it computes.
// A decode-only iteration depends on decode_sequences, speculative_k and the bucket of the
// longest context only, as IterationCost requires.
#pragma once

#include "trnsim/serving/iteration.hpp"

#include <algorithm>

namespace trnsim::serving::test {

class TestCost final : public IterationCost {
public:
    Duration fixed = Duration::from_ns(1'000'000);
    Duration per_token = Duration::from_ns(10'000);
    Duration per_bucket = Duration::zero();
    std::int64_t bucket = 128;

    Duration time(const IterationShape& s) const override {
        const std::int64_t tokens =
            s.prefill_tokens + s.decode_sequences * (1 + s.speculative_k);
        const std::int64_t c = std::max(s.prefill_max_context, s.decode_max_context);
        return fixed + per_token * tokens + per_bucket * (bucket_end(c) / bucket);
    }
    std::int64_t bucket_end(std::int64_t context) const override {
        return std::max<std::int64_t>(1, (context + bucket - 1) / bucket) * bucket;
    }
};

} // namespace trnsim::serving::test
