// Speculative decoding's draws: how many of its k drafts a sequence's decode iteration
// accepts. One of the parts of ReplicaScheduler (scheduler.hpp describes the model); public so
// that it can be tested alone.
//
// acceptance[i] is the fraction of iterations in which draft position i is accepted (vLLM's
// per-position rate; not increasing, since a position is only accepted after every earlier
// one). One uniform u per sequence-iteration accepts the positions with u < acceptance[i]. u
// is the first word of the Philox block (seed, speculation, request id, iteration of that
// sequence) times 2^-32, so draws do not depend on the replica or on the batch.
//
// Not thread-safe (the counters).
#pragma once

#include "trnsim/serving/sequence_table.hpp"
#include "trnsim/serving/spec.hpp"

#include <cstdint>
#include <vector>

namespace trnsim::serving {

class Speculator {
public:
    /// Off when spec.speculative is absent or has k = 0. Throws InputError
    /// (workload.serving.speculative.acceptance) for acceptance of the wrong length, outside
    /// [0, 1] or increasing.
    Speculator(const ServingSpec& spec, std::uint64_t seed);

    /// Drafts verified per iteration (0: off).
    int k() const { return k_; }
    /// The drafts accepted in iteration `iteration` of request `request`.
    std::int64_t accepted(std::uint64_t request, std::uint32_t iteration) const;
    /// q's next decode iteration: its draw (counted), and the tokens it gains, its accepted
    /// drafts plus one, at most the tokens it has left.
    std::int64_t gain(Seq& q);

    std::uint64_t steps() const { return steps_; }
    std::uint64_t accepted_total() const { return accepted_; }

private:
    std::uint64_t seed_ = 0;
    int k_ = 0;
    std::vector<double> acceptance_;
    std::uint64_t steps_ = 0;    ///< sequence-iterations with speculation
    std::uint64_t accepted_ = 0; ///< drafts accepted over them (before the cap)
};

} // namespace trnsim::serving
