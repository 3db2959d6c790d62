#include "trnsim/reliability/run_tenant.hpp"

#include "run_model.hpp"

#include <stdexcept>
#include <vector>

namespace trnsim::reliability {

namespace {

/// Events of a tenant put into the shared engine between runs.
class InjectorSink final : public detail::Sink {
public:
    explicit InjectorSink(engine::Injector<RunTenant::Queue>& in) : in_(in) {}
    void at(engine::EntityId target, std::int64_t time, engine::EventType type,
            std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) override {
        in_.at(target, time, type, payload, aux, priority);
    }

private:
    engine::Injector<RunTenant::Queue>& in_;
};

} // namespace

struct RunTenant::Impl {
    Impl(const RunInput& in, const RunControl& control)
        : input(in), setup(input), replication(setup, control, 0, detail::run_end(control)),
          handled(setup.layout.partition_starts().size(), 0) {}

    RunInput input;
    detail::Setup setup; // refers to `input`
    detail::Replication replication;
    /// Events handled per partition (a partition is handled by one thread at a time).
    std::vector<std::uint64_t> handled;
    bool done = false;
};

RunTenant::RunTenant(const RunInput& input, const RunControl& control) {
    validate(input);
    if (input.job.steps <= 0 || !(input.job.step.seconds() > 0.0)) {
        throw std::invalid_argument("reliability: a run needs steps and a step time");
    }
    impl_ = std::make_unique<Impl>(input, control);
}

RunTenant::~RunTenant() = default;

engine::PartitionMap RunTenant::partition_map() const {
    const Layout& layout = impl_->setup.layout;
    return engine::PartitionMap::from_starts(layout.entities(), layout.partition_starts());
}

Duration RunTenant::lookahead() const { return Duration::from_ns(detail::kReportLatencyNs); }

void RunTenant::start(engine::Injector<Queue>& in) {
    InjectorSink sink(in);
    impl_->replication.prime(sink);
}

void RunTenant::handle(engine::Context<Queue>& ctx, const engine::Event& e) {
    ++impl_->handled[ctx.partition()];
    impl_->replication.model.handle(ctx, e);
}

void RunTenant::prefetch(engine::EntityId e) const { impl_->replication.model.prefetch(e); }

std::int64_t RunTenant::pause_at() const { return impl_->replication.pause(); }

void RunTenant::resume(engine::Injector<Queue>& in) {
    InjectorSink sink(in);
    impl_->done = !impl_->replication.advance(sink);
}

bool RunTenant::done() const { return impl_->done; }

RunSummary RunTenant::take_summary() {
    if (!impl_->done) {
        throw std::logic_error("reliability: a tenant's summary before its run ended");
    }
    RunSummary out;
    out.processes = impl_->setup.failures.processes();
    out.impacts = impl_->setup.impact;
    out.facts = impl_->setup.facts();
    std::uint64_t events = 0;
    for (const std::uint64_t n : impl_->handled) {
        events += n;
    }
    out.replications.push_back(impl_->replication.result(events));
    detail::summarize(out, impl_->input);
    return out;
}

} // namespace trnsim::reliability
