// One iteration of a replica and what it costs: the contract between the per-replica
// scheduler (which decides what each iteration computes) and the iteration cost model (which
// turns that into time on the replica's chips).
//
// An iteration is one forward pass of the model over a batch: the new tokens of sequences in
// prefill (a whole prompt, or a chunk of it with chunked prefill) and one token (or 1 + k with
// speculative decoding) of each sequence in decode. The scheduler describes the real work,
// unpadded; the cost model applies what the compiled graphs impose (padding to the compiled
// sequence buckets and to the compiled decode batch, as the Neuron serving stack does).
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>

namespace trnsim::serving {

struct IterationShape {
    // Prefill (context encoding) part.
    std::int64_t prefill_sequences = 0;
    std::int64_t prefill_tokens = 0;       ///< new tokens over all prefill sequences
    std::int64_t prefill_max_tokens = 0;   ///< the longest sequence's new tokens
    std::int64_t prefill_max_context = 0;  ///< the longest cached + new span a prefill attends to
    // Decode (token generation) part.
    std::int64_t decode_sequences = 0;
    std::int64_t decode_context_tokens = 0; ///< sum over decode sequences of their context
    std::int64_t decode_max_context = 0;    ///< the longest decode context
    int speculative_k = 0;                  ///< draft tokens per decode sequence (0: none)

    bool empty() const { return prefill_sequences == 0 && decode_sequences == 0; }
};

/// The cost of iterations on one replica. Implementations are immutable after construction
/// and safe to share between threads.
///
/// Static shapes: a decode-only iteration's time depends on decode_sequences, speculative_k
/// and the compiled bucket holding decode_max_context only, so it is constant while the
/// longest context stays at or below bucket_end(decode_max_context). The scheduler uses this
/// to run many identical decode iterations as one step.
class IterationCost {
public:
    virtual ~IterationCost() = default;
    /// Wall time of one iteration of this shape (shape must not be empty).
    virtual Duration time(const IterationShape& shape) const = 0;
    /// The largest context of the compiled bucket that holds `context` tokens.
    virtual std::int64_t bucket_end(std::int64_t context) const = 0;
};

} // namespace trnsim::serving
