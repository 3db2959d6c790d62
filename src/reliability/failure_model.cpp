#include "trnsim/reliability/failure_model.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace trnsim::reliability {

FailureModel::FailureModel(const std::vector<FailureSpec>& failures, const TraceSpec& trace) {
    for (const FailureSpec& f : failures) {
        Process p;
        p.cls = f.component;
        p.cause = f.cause.empty() ? to_string(f.component) : f.cause;
        p.effect = f.effect;
        p.kind = f.distribution.kind;
        p.mean = f.mtbf;
        p.shape = f.distribution.shape;
        p.sigma = f.distribution.sigma;
        p.bad_fraction = f.bad_fraction;
        p.bad_multiplier = f.bad_multiplier;
        p.weibull_scale = 1.0 / std::tgamma(1.0 + 1.0 / p.shape);
        if (!(p.mean.seconds() > 0.0)) {
            throw std::invalid_argument("reliability: a failure process needs a positive mtbf");
        }
        any_bad_ = any_bad_ || (p.bad_fraction > 0.0 && p.bad_multiplier != 1.0);
        random_[static_cast<std::size_t>(p.cls)].push_back(
            static_cast<std::uint16_t>(processes_.size()));
        present_[static_cast<std::size_t>(p.cls)] = true;
        processes_.push_back(std::move(p));
    }
    for (const TraceFailure& t : trace.failures) {
        bool known = false;
        for (const Process& p : processes_) {
            known = known || (p.cls == t.component && p.cause == t.cause);
        }
        if (!known) {
            Process p;
            p.cls = t.component;
            p.cause = t.cause;
            p.random = false;
            present_[static_cast<std::size_t>(p.cls)] = true;
            processes_.push_back(std::move(p));
        }
    }
    if (processes_.size() > 4096) {
        throw std::invalid_argument("reliability: at most 4096 failure processes");
    }
}

std::uint16_t FailureModel::trace_process(ComponentClass c, const std::string& cause) const {
    for (std::size_t i = 0; i < processes_.size(); ++i) {
        if (processes_[i].cls == c && processes_[i].cause == cause) {
            return static_cast<std::uint16_t>(i);
        }
    }
    throw std::logic_error("reliability: no process for a trace cause");
}

double FailureModel::sample(const Process& p, bool bad, engine::RandomStream& stream) const {
    const double mean = bad ? p.mean.seconds() / p.bad_multiplier : p.mean.seconds();
    switch (p.kind) {
    case LifetimeKind::exponential:
        return stream.exponential(mean);
    case LifetimeKind::weibull:
        return stream.weibull(p.shape, mean * p.weibull_scale);
    case LifetimeKind::lognormal:
        return stream.lognormal(std::log(mean) - p.sigma * p.sigma / 2.0, p.sigma);
    }
    return std::numeric_limits<double>::infinity();
}

FailureModel::Draw FailureModel::draw(ComponentClass c, engine::EntityId entity,
                                      std::uint64_t seed, std::uint32_t replication,
                                      std::uint32_t& blocks) const {
    Draw d;
    d.lifetime = Seconds::of(std::numeric_limits<double>::infinity());
    const auto& list = random_processes(c);
    if (list.empty()) {
        return d;
    }
    double u_bad = 1.0;
    if (any_bad_) {
        const auto b = engine::philox_block(seed, stream_kind(StreamPurpose::badness, replication),
                                            entity, 0);
        u_bad = engine::uniform01(b[0], b[1]);
    }
    engine::RandomStream stream(seed, stream_kind(StreamPurpose::lifetime, replication), entity,
                                blocks);
    for (std::uint16_t i : list) {
        const Process& p = processes_[i];
        const double t = sample(p, u_bad < p.bad_fraction, stream);
        if (t < d.lifetime.seconds()) {
            d.lifetime = Seconds::of(t);
            d.process = i;
        }
    }
    blocks = static_cast<std::uint32_t>(stream.blocks_used());
    return d;
}

} // namespace trnsim::reliability
