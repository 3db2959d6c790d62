#include "trnsim/fleet/service.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace trnsim::fleet {

double LoadProfile::at_time(SimTime t) const {
    const auto it = std::upper_bound(at.begin(), at.end(), t);
    return it == at.begin() ? 0.0 : rate[static_cast<std::size_t>(it - at.begin() - 1)];
}

LoadProfile diurnal(double low, double peak, Duration peak_at, Duration period, Duration step,
                    SimTime end) {
    LoadProfile p;
    const double w = 2.0 * 3.14159265358979323846 / period.seconds();
    const double amp = low * (peak - 1.0) / 2.0;
    for (SimTime t = SimTime::zero(); t < end; t = t + step) {
        const double a = (t - SimTime::zero()).seconds() - peak_at.seconds();
        const double b = a + step.seconds();
        // The mean of cos(w u) over [a, b]: (sin(w b) - sin(w a)) / (w (b - a)).
        const double mean_cos = (std::sin(w * b) - std::sin(w * a)) / (w * (b - a));
        p.at.push_back(t);
        p.rate.push_back(low + amp * (1.0 + mean_cos));
    }
    if (p.at.empty()) {
        p.at.push_back(SimTime::zero());
        p.rate.push_back(low * peak);
    }
    return p;
}

FluidStep fluid_step(double load, double capacity, double backlog, double slack, double span) {
    FluidStep s;
    s.arrived = load * span;
    if (capacity <= 0.0) {
        s.backlog = backlog + s.arrived;
        return s; // nothing is served, every arrival waits without end
    }
    const double drift = load - capacity;
    const double bound = slack * capacity; // the backlog a request may find and still meet it
    double met_time = 0.0;
    if (drift > 0.0) { // the backlog grows: arrivals meet the SLO until it passes the bound
        if (backlog <= bound) {
            met_time = std::min(span, (bound - backlog) / drift);
        }
        s.backlog = backlog + drift * span;
    } else if (drift < 0.0) { // it shrinks: arrivals meet it once it is below the bound
        const double from = std::clamp((backlog - bound) / -drift, 0.0, span);
        met_time = span - from;
        s.backlog = std::max(0.0, backlog + drift * span);
    } else {
        met_time = backlog <= bound ? span : 0.0;
        s.backlog = backlog;
    }
    s.met = load * met_time;
    s.served = s.arrived + backlog - s.backlog;
    return s;
}

Service::Service(ServiceSpec spec) : spec_(std::move(spec)) {
    const LoadProfile& l = spec_.load;
    const AutoscalerSpec& a = spec_.scale;
    if (l.at.empty() || l.at.size() != l.rate.size() || l.at.front() != SimTime::zero() ||
        !std::is_sorted(l.at.begin(), l.at.end()) ||
        std::adjacent_find(l.at.begin(), l.at.end()) != l.at.end()) {
        throw std::invalid_argument("fleet: service '" + spec_.name +
                                    "': a load profile starts at 0 and increases");
    }
    for (const double r : l.rate) {
        if (!(r >= 0.0) || !std::isfinite(r)) {
            throw std::invalid_argument("fleet: service '" + spec_.name +
                                        "': a load is finite and not negative");
        }
    }
    if (spec_.curve_rate.size() != spec_.curve_attainment.size() ||
        !std::is_sorted(spec_.curve_rate.begin(), spec_.curve_rate.end())) {
        throw std::invalid_argument("fleet: service '" + spec_.name +
                                    "': an attainment curve by increasing rates");
    }
    if (!(spec_.capacity > 0.0) || !(spec_.throughput >= 0.0) || a.min < 0 || a.max < std::max<std::int64_t>(a.min, 1) ||
        a.interval <= Duration::zero() || a.lag < Duration::zero() || !(a.target > 0.0) ||
        (a.signal != Signal::queue && a.target > 1.0) || spec_.slack < Duration::zero()) {
        throw std::invalid_argument("fleet: service '" + spec_.name +
                                    "': needs a positive capacity and interval, 0 <= min <= "
                                    "max, max >= 1, a lag and slack >= 0 and a target in range");
    }
}

double Service::curve(double rate) const {
    const std::vector<double>& x = spec_.curve_rate;
    const std::vector<double>& y = spec_.curve_attainment;
    if (x.empty()) {
        return 1.0;
    }
    if (rate <= x.front()) {
        return y.front();
    }
    if (rate >= x.back()) {
        return y.back();
    }
    const auto i = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), rate) - x.begin());
    const double f = (rate - x[i - 1]) / (x[i] - x[i - 1]);
    return y[i - 1] + f * (y[i] - y[i - 1]);
}

void Service::advance(SimTime t) {
    TRNSIM_CHECK(t >= last_, "fleet: a service went back in time");
    const double slack = spec_.slack.seconds();
    const double per_domain_max = spec_.throughput > 0.0 ? spec_.throughput : spec_.capacity;
    const double capacity = static_cast<double>(ready_.size()) * per_domain_max;
    const LoadProfile& l = spec_.load;
    while (last_ < t) {
        while (load_index_ + 1 < l.at.size() && l.at[load_index_ + 1] <= last_) {
            ++load_index_;
        }
        SimTime to = load_index_ + 1 < l.at.size() ? std::min(t, l.at[load_index_ + 1]) : t;
        // No span straddles the window's edges.
        for (const SimTime edge : {spec_.window_from, spec_.window_to}) {
            if (edge > last_ && edge < to) {
                to = edge;
            }
        }
        const double span = (to - last_).seconds();
        const double load = l.rate[load_index_];
        const FluidStep s = fluid_step(load, capacity, backlog_, slack, span);
        const double per_domain = backlog_ > 0.0 || load >= capacity
                                      ? per_domain_max
                                      : load / static_cast<double>(ready_.size());
        const double met = s.met * (capacity > 0.0 ? curve(per_domain) : 1.0);
        record_.arrived += s.arrived;
        record_.met += met;
        if (last_ >= spec_.window_from && last_ < spec_.window_to) {
            record_.window_arrived += s.arrived;
            record_.window_met += met;
        }
        record_.served += s.served;
        backlog_ = s.backlog;
        record_.held += Seconds::of(static_cast<double>(held()) * span);
        record_.ready += Seconds::of(static_cast<double>(ready_.size()) * span);
        last_ = to;
    }
}

void Service::sample(SimTime t, std::int64_t wanted) {
    ServiceSample s;
    s.at = t;
    const double since = samples_.empty() ? 0.0 : (t - samples_.back().at).seconds();
    const double arrived = record_.arrived - arrived_at_sample_;
    const double met = record_.met - met_at_sample_;
    s.load = since > 0.0 ? arrived / since : spec_.load.at_time(t);
    s.attainment = arrived > 0.0 ? met / arrived : 1.0;
    s.ready = static_cast<std::int64_t>(ready_.size());
    s.pending = static_cast<std::int64_t>(pending_.size());
    s.draining = static_cast<std::int64_t>(draining_.size());
    s.wanted = wanted;
    s.backlog = backlog_;
    samples_.push_back(s);
    arrived_at_sample_ = record_.arrived;
    met_at_sample_ = record_.met;
}

std::int64_t Service::decide(SimTime t) {
    const AutoscalerSpec& a = spec_.scale;
    const std::int64_t have = active();
    sample(t, have);
    // What the metrics showed `lag` ago: the last sample at or before then.
    const ServiceSample* seen = nullptr;
    if (t == SimTime::zero()) {
        seen = &samples_.back(); // deployed before the run, for the load it starts with
    } else if (t - SimTime::zero() >= a.lag) {
        const SimTime when = t - a.lag;
        const auto it = std::upper_bound(
            samples_.begin(), samples_.end(), when,
            [](SimTime x, const ServiceSample& s) { return x < s.at; });
        if (it != samples_.begin()) {
            seen = &*(it - 1);
        }
    }
    std::int64_t want = have;
    if (seen == nullptr) {
        want = have; // nothing observed yet
    } else {
        const double cap = spec_.capacity;
        switch (a.signal) {
        case Signal::utilisation:
            want = static_cast<std::int64_t>(std::ceil(seen->load / (a.target * cap) - 1e-9));
            break;
        case Signal::queue:
            want = static_cast<std::int64_t>(
                std::ceil((seen->load + seen->backlog / a.target) / cap - 1e-9));
            break;
        case Signal::slo:
            if (seen->attainment < a.target) {
                want = have + 1;
            } else if (have > 0 && seen->load <= static_cast<double>(have - 1) * cap) {
                want = have - 1;
            }
            break;
        }
    }
    want = std::clamp(want, a.min, a.max);
    samples_.back().wanted = want;
    return want;
}

SimTime Service::grant(SimTime t, std::int64_t domain, Duration extra) {
    ++record_.grants;
    pending_.push_back(domain);
    record_.peak_domains = std::max(record_.peak_domains, held());
    return t + extra + spec_.scale.provisioning + spec_.scale.load;
}

bool Service::ready(SimTime t, std::int64_t domain) {
    const auto it = std::find(pending_.begin(), pending_.end(), domain);
    if (it == pending_.end()) {
        return false;
    }
    pending_.erase(it);
    ready_.push_back(domain);
    change(t, domain, ServiceChange::Kind::up);
    return true;
}

void Service::change(SimTime t, std::int64_t domain, ServiceChange::Kind kind) {
    if (spec_.window_to != SimTime::max() && t < spec_.window_to) {
        changes_.push_back({t, domain, kind});
    }
}

Service::Shrink Service::shrink(SimTime t, std::int64_t n) {
    Shrink out;
    out.drain_end = t + spec_.scale.drain;
    while (n > 0 && !pending_.empty()) {
        out.now.push_back(pending_.back());
        pending_.pop_back();
        --n;
    }
    while (n > 0 && !ready_.empty()) {
        out.draining.push_back(ready_.back());
        ready_.pop_back();
        --n;
    }
    for (const std::int64_t d : out.draining) {
        change(t, d, spec_.scale.drain == Duration::zero() ? ServiceChange::Kind::down
                                                           : ServiceChange::Kind::drain);
    }
    if (spec_.scale.drain == Duration::zero()) {
        out.now.insert(out.now.end(), out.draining.begin(), out.draining.end());
        out.draining.clear();
    }
    draining_.insert(draining_.end(), out.draining.begin(), out.draining.end());
    record_.releases += static_cast<std::int64_t>(out.now.size());
    return out;
}

bool Service::drained(SimTime t, std::int64_t domain) {
    const auto it = std::find(draining_.begin(), draining_.end(), domain);
    if (it == draining_.end()) {
        return false;
    }
    draining_.erase(it);
    change(t, domain, ServiceChange::Kind::down);
    ++record_.releases;
    return true;
}

void Service::lost(SimTime t, std::int64_t domain) {
    for (std::vector<std::int64_t>* v : {&ready_, &pending_, &draining_}) {
        const auto it = std::find(v->begin(), v->end(), domain);
        if (it != v->end()) {
            if (v != &pending_) {
                change(t, domain, ServiceChange::Kind::down);
            }
            v->erase(it);
            ++record_.failures;
            return;
        }
    }
    TRNSIM_CHECK(false, "fleet: a service lost a domain it does not hold");
}

void Service::close(SimTime t) {
    advance(t);
    sample(t, active());
    record_.backlog_end = backlog_;
}

} // namespace trnsim::fleet
