// The serving fleet's engine model (serve_model.hpp).
#include "serve_model.hpp"

namespace trnsim::sim::detail {

namespace {

/// Whether replicas report each finish to their router: its policy counts them, closed-loop
/// clients wait for them, a disaggregated router frees its pools with them, and with failures
/// the router must know when every request has finished.
bool needs_reports(const ServeInput& in, const serving::RequestSource& source) {
    const serving::ServingSpec& sv = in.spec.serving;
    return sv.router != serving::RouterPolicy::round_robin || source.closed_loop() ||
           sv.disaggregated.prefill_replicas > 0 || in.reliability.enabled;
}

} // namespace

ServeModel::ServeModel(const ServeInput& in, const Placement& pl,
                       const serving::RequestSource& source, const topology::Fabric* fabric,
                       std::uint32_t partitions)
    : source_(source), records_(pl.shards), failures_(in, pl),
      transfers_(in.spec.serving.disaggregated.prefill_replicas > 0
                     ? std::make_unique<KvTransfers>(in, *fabric, partitions, pl.replicas.size())
                     : nullptr),
      router_(in, pl, source, records_, failures_),
      replicas_(in, pl, records_, transfers_.get(), needs_reports(in, source)) {}

void ServeModel::handle(ServeContext& ctx, const engine::Event& e) {
    const engine::EntityId self = ctx.self();
    if (self >= kFirstReplica) {
        const std::uint32_t r = self - kFirstReplica;
        if (r < replicas_.size()) {
            replicas_.handle(ctx, r, e);
        } else {
            router_.handle(ctx, static_cast<std::uint32_t>(r - replicas_.size() + 1), e);
        }
    } else if (self == kRouter) {
        router_.handle(ctx, 0, e);
    }
}

} // namespace trnsim::sim::detail
