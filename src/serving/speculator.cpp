// Speculator: the acceptance checks and draws (speculator.hpp).
#include "trnsim/serving/speculator.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/engine/rng.hpp"
#include "trnsim/serving/request.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace trnsim::serving {

Speculator::Speculator(const ServingSpec& spec, std::uint64_t seed) : seed_(seed) {
    if (!spec.speculative || spec.speculative->k <= 0) {
        return;
    }
    const SpeculativeSpec& sp = *spec.speculative;
    if (sp.acceptance.size() != static_cast<std::size_t>(sp.k)) {
        throw InputError("workload.serving.speculative.acceptance",
                         "needs one value per draft token (k = " + std::to_string(sp.k) + ")");
    }
    for (std::size_t i = 0; i < sp.acceptance.size(); ++i) {
        const double a = sp.acceptance[i];
        if (!(a >= 0.0 && a <= 1.0)) {
            throw InputError("workload.serving.speculative.acceptance",
                             "values must be in [0, 1]");
        }
        if (i > 0 && a > sp.acceptance[i - 1]) {
            throw InputError("workload.serving.speculative.acceptance",
                             "position " + std::to_string(i) + " cannot be accepted more "
                             "often than position " + std::to_string(i - 1) +
                             " (a draft is only accepted after every earlier one): the "
                             "values must not increase");
        }
    }
    k_ = sp.k;
    acceptance_ = sp.acceptance;
}

std::int64_t Speculator::accepted(std::uint64_t request, std::uint32_t iteration) const {
    // The drafts accepted are the positions whose (non-increasing) acceptance rate exceeds u,
    // so position i is accepted with probability acceptance[i] and only after every earlier
    // position.
    const std::array<std::uint32_t, 4> w =
        engine::philox_block(seed_, stream_kind(ServingStream::speculation),
                             static_cast<std::uint32_t>(request), iteration);
    const double u = static_cast<double>(w[0]) * 0x1.0p-32;
    std::int64_t n = 0;
    while (n < k_ && u < acceptance_[static_cast<std::size_t>(n)]) {
        ++n;
    }
    return n;
}

std::int64_t Speculator::gain(Seq& q) {
    const std::int64_t n = accepted(q.req.id, q.spec_iterations);
    ++q.spec_iterations;
    ++steps_;
    accepted_ += static_cast<std::uint64_t>(n);
    return std::min(n + 1, q.req.output_tokens - q.generated);
}

} // namespace trnsim::serving
