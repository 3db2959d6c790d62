#include "trnsim/serving/spec.hpp"

#include "trnsim/core/error.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace trnsim::serving {

void check_inference(const InferenceSpec& inference) {
    const ServingSpec& sv = inference.serving;
    if (sv.speculative) {
        const SpeculativeSpec& sp = *sv.speculative;
        const std::string base = "workload.serving.speculative";
        if (sp.acceptance.size() != static_cast<std::size_t>(sp.k)) {
            throw InputError(base + ".acceptance",
                             "needs one rate per draft position: k is " + std::to_string(sp.k) +
                                 ", the list has " + std::to_string(sp.acceptance.size()));
        }
        for (std::size_t i = 1; i < sp.acceptance.size(); ++i) {
            if (sp.acceptance[i] > sp.acceptance[i - 1]) {
                throw InputError(base + ".acceptance[" + std::to_string(i) + "]",
                                 "rates must not increase: a position is accepted only after "
                                 "every earlier one");
            }
        }
    }
    if (!sv.buckets.empty()) {
        for (std::size_t i = 0; i < sv.buckets.size(); ++i) {
            if ((i > 0 && sv.buckets[i] <= sv.buckets[i - 1]) || sv.buckets[i] > sv.max_context) {
                throw InputError("workload.serving.buckets",
                                 "must ascend strictly and end at max_context (" +
                                     std::to_string(sv.max_context) + ")");
            }
        }
        if (sv.buckets.back() != sv.max_context) {
            throw InputError("workload.serving.buckets",
                             "the last bucket must be max_context (" +
                                 std::to_string(sv.max_context) + "), got " +
                                 std::to_string(sv.buckets.back()));
        }
    }
    const RequestSpec& rq = inference.requests;
    using K = TokenDistribution::Kind;
    const bool trace_arrivals = rq.arrival.kind == ArrivalSpec::Kind::trace;
    for (const auto& [key, d] : {std::pair<const char*, const TokenDistribution*>{
                                     "workload.requests.input_tokens", &rq.input},
                                 {"workload.requests.output_tokens", &rq.output}}) {
        if (d->kind == K::trace && !trace_arrivals) {
            throw InputError(key,
                             "sizes from the trace need arrivals from it: workload.requests."
                             "arrival: {trace: FILE}");
        }
    }
    if (rq.input.kind == K::fixed && rq.output.kind == K::fixed) {
        const auto total = static_cast<std::int64_t>(rq.input.a + rq.output.a) +
                           (rq.prefix.groups > 0 ? rq.prefix.tokens : 0);
        if (total > sv.max_context) {
            throw InputError("workload.requests.output_tokens",
                             "input + output tokens (" + std::to_string(total) +
                                 ") exceed workload.serving.max_context (" +
                                 std::to_string(sv.max_context) + ")");
        }
    }
}

} // namespace trnsim::serving
