// The checks of a replica's serving spec against its model and chip, before its cost model is
// built (IterationCostModel's constructor calls them).
#include "replica_checks.hpp"

#include "trnsim/core/error.hpp"

#include <algorithm>
#include <string>

namespace trnsim::serving {

namespace {

constexpr const char* kServing = "workload.serving";

std::string str(std::int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw InputError(path, message);
}

} // namespace

void check_replica(const workload::ModelSpec& model, const compute::ChipSpec& chip, int lnc,
                   const ServingSpec& s) {
    if (std::find(chip.lnc_allowed.begin(), chip.lnc_allowed.end(), lnc) ==
        chip.lnc_allowed.end()) {
        fail("hardware.lnc", "lnc = " + str(lnc) + " is not supported by " + chip.name);
    }
    const int rpc = chip.ranks_per_chip(lnc);
    if (s.tp < 1 || (s.tp % rpc != 0 && rpc % s.tp != 0)) {
        fail(std::string(kServing) + ".tp",
             "tp = " + str(s.tp) + " must divide the " + str(rpc) + " ranks of a " + chip.name +
                 " chip at lnc = " + str(lnc) + " or be a multiple of them");
    }
    if (s.ep < 1 || s.tp % s.ep != 0) {
        fail(std::string(kServing) + ".ep", "ep = " + str(s.ep) + " must divide tp = " +
                                                 str(s.tp));
    }
    if (s.ep > 1 && !model.is_moe()) {
        fail(std::string(kServing) + ".ep",
             "ep = " + str(s.ep) + " needs a mixture-of-experts model; " + model.name +
                 " is dense");
    }
    if (s.ep > 1 && model.moe.experts % s.ep != 0) {
        fail(std::string(kServing) + ".ep", "ep = " + str(s.ep) + " must divide the " +
                                                 str(model.moe.experts) + " experts of " +
                                                 model.name);
    }
    if (s.max_batch < 1) {
        fail(std::string(kServing) + ".max_batch", "max_batch must be at least 1");
    }
    if (s.max_context < 1) {
        fail(std::string(kServing) + ".max_context", "max_context must be at least 1");
    }
    if (s.prefill_batch < 0 || s.prefill_batch > s.max_batch) {
        fail(std::string(kServing) + ".prefill_batch",
             "prefill_batch = " + str(s.prefill_batch) + " must be 0 (max_batch) to max_batch = " +
                 str(s.max_batch));
    }
    const int e = compute::element_bytes(s.precision);
    if (s.sparse() && chip.peak_sparse.per_s() <= 0.0) {
        fail(std::string(kServing) + ".sparsity",
             "chip " + chip.name + " has no structured-sparse matmul (peak.sparse): Trainium2 "
             "and Trainium3 have one");
    }
    if (s.sparse() && s.mx != MxFormat::none) {
        fail(std::string(kServing) + ".sparsity",
             "structured sparsity is published for BF16, FP16, TF32 and FP8 weights, not "
             "microscaling ones");
    }
    if (s.mx != MxFormat::none && !chip.core.tensor.mx_matmul) {
        fail(std::string(kServing) + ".weights",
             "chip " + chip.name + " has no microscaling (MX) matmul: mxfp8 and mxfp4 weights "
             "need NeuronCore-v4 (Trainium3); use fp8 or int8 for 1-byte weights");
    }
    if (s.weight_bytes < 1 || s.weight_bytes > e ||
        (s.weight_bytes != 1 && s.weight_bytes != e)) {
        fail(std::string(kServing) + ".weight_bytes",
             "weight storage of " + str(s.weight_bytes) + " bytes under " +
                 compute::to_string(s.precision) +
                 " compute: use the precision's own size or 1 (int8/fp8 weights)");
    }
}

} // namespace trnsim::serving
