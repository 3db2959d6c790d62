// The run simulation's setup (what every replication shares: failure rates, checkpoint costs
// and intervals, step times by domains) and its engine model, RunModel (components, domains,
// power domains: their failures and repairs). The controller is in run_controller.cpp and
// run_failures.cpp.
#include "run_model.hpp"
#include "trnsim/reliability/outages.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::reliability::detail {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// now + d, saturating at "never".
std::int64_t later(std::int64_t now, Duration d) {
    return d.is_max() || d.ns() > engine::kNever - now ? engine::kNever : now + d.ns();
}

} // namespace

// ------------------------------------------------------------------------------------------
// Setup

Setup::Setup(const RunInput& in)
    : input(in), failures(in.spec.failures, in.spec.trace),
      layout(in.cluster, in.hardware, in.spec.fabric, in.spec.spares.count(),
             failures.present_classes()) {
    for (const Process& p : failures.processes()) {
        impact.push_back(layout.impact(p.cls, p.effect));
    }
    work_ns =
        Duration::from_seconds_ceil(static_cast<double>(in.job.steps) * in.job.step.seconds()).ns();
    step_ns = Duration::from_seconds_ceil(in.job.step.seconds()).ns();
    for (const TraceFailure& t : in.spec.trace.failures) {
        trace.push_back({t.time.ns(), layout.component(t.component, t.index),
                         failures.trace_process(t.component, t.cause)});
    }
}

double Setup::job_failure_rate(std::int64_t domains) const {
    double rate = 0.0;
    const auto& procs = failures.processes();
    for (std::size_t i = 0; i < procs.size(); ++i) {
        const Process& p = procs[i];
        const double r = p.population_rate();
        switch (impact[i]) {
        case Impact::replace_domain:
        case Impact::restart_only:
            rate += r * static_cast<double>(layout.per_domain(p.cls) * domains);
            break;
        case Impact::power:
            rate += r * static_cast<double>(ceil_div(domains, layout.domains_per_power()));
            break;
        case Impact::fabric_interrupt:
            // Only the switches the job's traffic crosses (not those of idle spares).
            rate += r * static_cast<double>(layout.switches_carrying(p.cls, domains));
            break;
        case Impact::fabric_degrade:
            break;
        }
    }
    return rate;
}

CheckpointCosts Setup::costs(std::int64_t domains) const {
    return checkpoint_costs(input.spec.checkpoint, input.job.checkpoint_size,
                            domains * layout.chips_per_domain(),
                            domains * layout.instances_per_domain(), domains,
                            input.hardware.efa_bandwidth_per_instance);
}

Duration Setup::interval(std::int64_t domains) const {
    return checkpoint_interval(input.spec.checkpoint, costs(domains), job_failure_rate(domains),
                               input.job.step.seconds())
        .every;
}

std::optional<double> Setup::step_time(std::int64_t domains, double f) const {
    if (domains == layout.job_domains() && f == 1.0) {
        return input.job.step.seconds();
    }
    if (!input.job.step_time) {
        // No step model: the step time does not depend on the configuration.
        return input.job.step.seconds();
    }
    const std::lock_guard<std::mutex> lock(step_mutex_);
    const auto key = std::make_pair(domains, f);
    auto it = step_cache_.find(key);
    if (it == step_cache_.end()) {
        it = step_cache_.emplace(key, input.job.step_time(domains, f)).first;
    }
    return it->second;
}

RunFacts Setup::facts() const {
    RunFacts f;
    const std::int64_t jobs = layout.job_domains();
    f.job_domains = jobs;
    f.spare_domains = layout.spare_domains();
    f.instances_per_domain = layout.instances_per_domain();
    f.entities = layout.entities();
    for (ComponentClass c : kAllClasses) {
        f.components[static_cast<std::size_t>(c)] = layout.present(c) ? layout.count(c) : 0;
    }
    f.job_failure_rate = job_failure_rate(jobs);
    const CheckpointCosts c = costs(jobs);
    const CheckpointInterval chosen = checkpoint_interval(
        input.spec.checkpoint, c, job_failure_rate(jobs), input.job.step.seconds());
    f.checkpoint_interval = Seconds::of(chosen.every.is_max()
                                            ? std::numeric_limits<double>::infinity()
                                            : chosen.every.seconds());
    f.checkpoint_interval_reason = chosen.reason;
    f.checkpoint_daly = Seconds::of(chosen.daly.seconds());
    f.checkpoint_stall = Seconds::of(c.stall.seconds());
    f.checkpoint_background = Seconds::of(c.background.seconds());
    f.restore = Seconds::of(c.restore.seconds());
    f.replica_restore = Seconds::of(c.replica_restore.seconds());
    f.checkpoint_size = input.job.checkpoint_size;
    f.work = Seconds::of(static_cast<double>(work_ns) * 1e-9);
    return f;
}

std::int64_t Setup::runnable_domains(std::int64_t domains) const {
    for (std::int64_t n = domains; n > 0; --n) {
        if (step_time(n, 1.0)) {
            return n;
        }
    }
    return 0;
}

// ------------------------------------------------------------------------------------------
// RunModel: components, domains, power domains

RunModel::RunModel(const Setup& setup, std::uint64_t seed, std::uint32_t replication, bool record,
                   bool record_checkpoints)
    : setup_(setup), seed_(seed), replication_(replication),
      comps_(setup.layout.entities()),
      domains_(static_cast<std::size_t>(setup.layout.domains())),
      controller_(setup, record, record_checkpoints) {
    const Layout& l = setup.layout;
    for (ComponentClass c : kAllClasses) {
        if (!l.present(c)) {
            continue;
        }
        const std::int64_t per = l.per_domain(c);
        for (std::int64_t i = 0; i < l.count(c); ++i) {
            Component& comp = comps_[l.component(c, i)];
            comp.cls = c;
            comp.flags = kIsComponent;
            comp.domain = Layout::domain_class(c) ? static_cast<std::uint32_t>(i / per)
                                                  : static_cast<std::uint32_t>(i);
        }
    }
    for (std::int64_t d = 0; d < l.domains(); ++d) {
        comps_[l.domain_entity(d)].domain = static_cast<std::uint32_t>(d);
    }
}

void RunModel::report(Sink& s, std::int64_t now, engine::EventType type, std::uint64_t payload,
                      std::uint16_t aux) {
    s.at(setup_.layout.controller(), now + kReportLatencyNs, type, payload, aux, 0);
}

void RunModel::queue(Sink& s, engine::EntityId id) {
    Component& c = comps_[id];
    if (c.next_ns < horizon_) {
        s.at(id, c.next_ns, kFail, c.generation, 0, 0);
        c.flags |= kQueued;
    }
}

void RunModel::arm(Sink& s, engine::EntityId id, std::int64_t now) {
    Component& c = comps_[id];
    const FailureModel::Draw d =
        setup_.failures.draw(c.cls, id, seed_, replication_, c.blocks);
    c.flags &= static_cast<std::uint8_t>(~kFailed);
    c.process = d.process;
    c.next_ns = later(now, Duration::from_seconds_ceil(d.lifetime.seconds()));
    queue(s, id);
}

Duration RunModel::repair_time(engine::RandomStream& stream) const {
    return draw_repair_time(setup_.input.spec.repair, stream);
}

void RunModel::fail(Sink& s, engine::EntityId self, std::int64_t now, std::uint16_t process) {
    Component& c = comps_[self];
    c.flags = static_cast<std::uint8_t>((c.flags | kFailed) & ~kQueued);
    ++c.generation;
    c.next_ns = engine::kNever;
    c.process = process;
    const Layout& l = setup_.layout;
    const std::uint64_t no_domain = std::uint64_t{kNoDomain} << 32;
    switch (setup_.impact[process]) {
    case Impact::replace_domain:
        s.at(l.domain_entity(c.domain), now, kDomainHit, self, process, 0);
        break;
    case Impact::restart_only:
        report(s, now, kReportFailure, (std::uint64_t{c.domain} << 32) | self, process);
        arm(s, self, now);
        break;
    case Impact::power: {
        report(s, now, kReportFailure, no_domain | self, process);
        const std::int64_t first = std::int64_t{c.domain} * l.domains_per_power();
        const std::int64_t last = std::min(first + l.domains_per_power(), l.domains());
        for (std::int64_t d = first; d < last; ++d) {
            s.at(l.domain_entity(d), now, kDomainHit, self,
                 static_cast<std::uint16_t>(process | kSecondary), 0);
        }
        arm(s, self, now);
        break;
    }
    case Impact::fabric_interrupt:
    case Impact::fabric_degrade: {
        report(s, now, kReportFailure, no_domain | self, process);
        engine::RandomStream stream(seed_, stream_kind(StreamPurpose::lifetime, replication_),
                                    self, c.blocks);
        const Duration t = repair_time(stream);
        c.blocks = static_cast<std::uint32_t>(stream.blocks_used());
        s.at(self, later(now, t), kElementRepaired, c.generation, 0, 0);
        break;
    }
    }
}

void RunModel::domain_hit(Sink& s, std::int64_t now, std::int64_t domain,
                          engine::EntityId source, std::uint16_t aux) {
    DomainState& d = domains_[static_cast<std::size_t>(domain)];
    const bool secondary = (aux & kSecondary) != 0;
    if (!secondary) {
        d.failed.push_back(source);
    }
    bool went_down = false;
    if (d.in_service) {
        d.in_service = false;
        went_down = true;
        const engine::EntityId self = setup_.layout.domain_entity(domain);
        engine::RandomStream stream(seed_, stream_kind(StreamPurpose::repair, replication_), self,
                                    d.repair_blocks);
        const Duration t = repair_time(stream);
        d.repair_blocks = static_cast<std::uint32_t>(stream.blocks_used());
        s.at(self, later(now, t), kRepairDone, 0, 0, 0);
    }
    report(s, now, kReportFailure, (static_cast<std::uint64_t>(domain) << 32) | source,
           static_cast<std::uint16_t>(aux | (went_down ? kWentDown : 0)));
}

void RunModel::dispatch(Sink& s, engine::EntityId self, std::int64_t now,
                        const engine::Event& e) {
    switch (e.type) {
    case kFail: {
        Component& c = comps_[self];
        if (e.payload != c.generation) {
            return; // superseded by a trace failure
        }
        c.flags &= static_cast<std::uint8_t>(~kQueued);
        if ((c.flags & kFailed) == 0) {
            fail(s, self, now, c.process);
        }
        break;
    }
    case kTraceFail:
        if ((comps_[self].flags & kFailed) == 0) {
            fail(s, self, now, static_cast<std::uint16_t>(e.payload));
        }
        break;
    case kDomainHit:
        domain_hit(s, now, comps_[self].domain, static_cast<engine::EntityId>(e.payload), e.aux);
        break;
    case kRepairDone: {
        DomainState& d = domains_[comps_[self].domain];
        d.in_service = true;
        for (engine::EntityId id : d.failed) {
            arm(s, id, now);
        }
        d.failed.clear();
        report(s, now, kReportRepaired, comps_[self].domain, 0);
        break;
    }
    case kElementRepaired: {
        Component& c = comps_[self];
        if (e.payload == c.generation) {
            report(s, now, kReportRestored, self, c.process);
            arm(s, self, now);
        }
        break;
    }
    default:
        controller_.handle(s, e);
        break;
    }
}

void RunModel::prime(Sink& sink, std::int64_t end) {
    for (engine::EntityId id = 0; id < comps_.size(); ++id) {
        if (comps_[id].flags & kIsComponent) {
            arm(sink, id, 0);
        }
    }
    for (const Setup::TraceEvent& t : setup_.trace) {
        if (t.time_ns < end) {
            sink.at(t.entity, t.time_ns, kTraceFail, t.process, 0, 0);
        }
    }
    controller_.start(sink);
}

void RunModel::queue_due(Sink& sink) {
    for (engine::EntityId id = 0; id < comps_.size(); ++id) {
        const Component& c = comps_[id];
        if ((c.flags & (kIsComponent | kFailed | kQueued)) == kIsComponent &&
            c.next_ns < horizon_) {
            queue(sink, id);
        }
    }
}

} // namespace trnsim::reliability::detail
