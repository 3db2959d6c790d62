// A serving service of a fleet, at rate level: its load (requests per second, piecewise
// constant over time), the domains it holds, and an autoscaler that asks the scheduler for more
// or gives some back.
//
// Capacity. One ready domain serves `capacity` requests per second within the SLO, and at most
// `throughput` requests per second at all (the caller measures both once with the
// request-level simulation, sim/fleet_run.hpp); the autoscaler sizes by the first, the queue
// drains at the second. A domain the
// autoscaler obtains is not ready at once: it is provisioned (`provisioning`) and the model is
// loaded into its HBM (`load`: compiled graphs and weights from storage) first. A domain taken
// away by a scale-in stops taking new requests at once and is given back after `drain` (its
// requests in flight finish).
//
// The fluid queue. Between two changes the load L and the capacity C = ready x throughput are
// constant, and the backlog B (requests waiting) moves as dB/dt = L - C while it is positive:
//   B(u) = max(0, B0 + (L - C) u).
// A request arriving at u waits B(u) / C before its service starts, and meets the SLO when
// that wait is at most the SLO's `slack` (the time left of its TTFT bound at capacity; with no
// ready domain, no request meets it). The requests arriving in the interval, those meeting the
// SLO (L times the part of the interval where B(u) <= slack C: B is linear, so it is one
// interval) and those served (arrivals + B0 - B(end)) are counted in closed form. Of the
// arrivals the queue lets through, the measured share meets the SLO: the attainment curve at
// the load per ready domain (at the throughput when the queue is not empty or the load above
// it).
//
// The autoscaler. Every `interval` (from time 0) it reads its signal as the service's metrics
// showed it `lag` earlier (the last sample at or before t - lag; samples are taken at every
// decision; at time 0, the load then: the service was deployed before the run for the load it
// starts with) and sets the domains it wants, within [min, max]:
//   utilisation  ceil(L_obs / (target x capacity)): L_obs the mean load over the sample's
//                interval, `target` the utilisation to hold
//   queue        ceil((L_obs + B_obs / target) / capacity): enough to serve the load and clear
//                the backlog it saw in `target` seconds
//   slo          one more when the attainment over the sample's interval was below `target`;
//                one fewer when it was met and the load fits in one domain fewer
// The domains it has are the ready and the provisioning ones. To grow it asks the scheduler
// (which may grant fewer: none are idle, or its tenant's quota); to shrink it cancels
// provisioning domains first (the newest), then drains ready ones (the newest first).
#pragma once

#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/units.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::fleet {

enum class Signal : std::uint8_t { utilisation, queue, slo };

constexpr std::array<EnumName<Signal>, 3> enum_names(Signal) {
    return {{
        {Signal::utilisation, "utilisation"},
        {Signal::queue, "queue"},
        {Signal::slo, "slo"},
    }};
}
inline const char* to_string(Signal v) { return enum_name(v); }

/// A load in requests per second: `rate[i]` from `at[i]` until `at[i + 1]` (the last one to the
/// end of the run). `at` starts at zero and increases.
struct LoadProfile {
    std::vector<SimTime> at;
    std::vector<double> rate;
    /// The rate at `t`.
    double at_time(SimTime t) const;
};

struct AutoscalerSpec {
    Signal signal = Signal::utilisation;
    /// utilisation: the fraction of capacity to hold (0, 1]; queue: seconds of backlog to
    /// clear the backlog in (> 0); slo: the attainment to reach (0, 1].
    double target = 0.7;
    std::int64_t min = 1;
    std::int64_t max = 1;
    Duration interval = Duration::from_seconds_ceil(60.0);
    Duration lag = Duration::from_seconds_ceil(60.0);
    Duration provisioning;
    Duration load;
    Duration drain;
};

struct ServiceSpec {
    std::string name;
    std::int64_t tenant = 0;
    /// With `borrow`, the service may preempt training jobs of lower priority for domains.
    int priority = 0;
    bool borrow = false;
    double capacity = 1.0;             ///< requests per second one ready domain serves in the SLO
    double throughput = 0.0;           ///< requests per second it serves at most (0: capacity)
    Duration slack;                    ///< the wait a request may take and still meet the SLO
    /// The attainment of a domain's requests at a rate per domain (measured; increasing
    /// rates; empty: 1), linear between the points, the end points' values beyond.
    std::vector<double> curve_rate;
    std::vector<double> curve_attainment;
    LoadProfile load;
    AutoscalerSpec scale;
    /// A window [window_from, window_to) replayed at request level after the run
    /// (sim::run_fleet): the service keeps its domains' changes until its end, and its rate
    /// level's figures inside it. SimTime::max(): none.
    SimTime window_from = SimTime::max();
    SimTime window_to = SimTime::max();
};

/// A change of one of a service's ready domains (kept when the service has a window): it
/// became ready (up), began to drain, or left (down: given back after its drain or lost to a
/// failure).
struct ServiceChange {
    enum class Kind : std::uint8_t { up, drain, down };
    SimTime at;
    std::int64_t domain = 0;
    Kind kind = Kind::up;
};

/// A daily load: `low` requests per second at the trough, `peak` times that at `peak_at` into
/// each `period`, a raised cosine between,
///   rate(t) = low (1 + (peak - 1) (1 + cos(2 pi (t - peak_at) / period)) / 2),
/// held over each `step` from 0 to `end` at its exact mean over the step.
LoadProfile diurnal(double low, double peak, Duration peak_at, Duration period, Duration step,
                    SimTime end);

/// One sample of a service's state (at every autoscaler decision, and at the end).
struct ServiceSample {
    SimTime at;
    double load = 0.0;        ///< mean requests per second since the previous sample
    std::int64_t ready = 0;   ///< domains serving
    std::int64_t pending = 0; ///< domains provisioning or loading the model
    std::int64_t draining = 0;
    std::int64_t wanted = 0;  ///< the autoscaler's decision at this sample
    double backlog = 0.0;     ///< requests waiting
    double attainment = 1.0;  ///< of the requests arriving since the previous sample
};

/// What a service did over the run.
struct ServiceRecord {
    double arrived = 0.0;     ///< requests
    double met = 0.0;         ///< of them, meeting the SLO
    double served = 0.0;      ///< requests whose service started
    double backlog_end = 0.0; ///< requests waiting at the end
    Seconds held;             ///< domain time held (provisioning, ready and draining)
    Seconds ready;            ///< domain time ready
    std::int64_t grants = 0;      ///< domains granted (scale-outs and replacements)
    std::int64_t releases = 0;    ///< domains given back
    std::int64_t failures = 0;    ///< domains lost to failures
    std::int64_t peak_domains = 0;
    /// Inside the window (ServiceSpec::window_from, window_to): its arrivals and those meeting
    /// the SLO, at rate level.
    double window_arrived = 0.0, window_met = 0.0;
    double attainment() const { return arrived > 0.0 ? met / arrived : 1.0; }
};

/// The fluid queue over one interval of constant load and capacity (see the header comment).
struct FluidStep {
    double arrived = 0.0, met = 0.0, served = 0.0, backlog = 0.0;
};
/// `load` and `capacity` in requests per second, `backlog` requests, `slack` and `span` seconds.
FluidStep fluid_step(double load, double capacity, double backlog, double slack, double span);

/// A service's state as the fleet runs it. The fleet model (fleet.hpp) calls advance() before
/// every change, so the fluid queue sees each interval of constant load and capacity.
class Service {
public:
    explicit Service(ServiceSpec spec);

    const ServiceSpec& spec() const { return spec_; }
    /// Integrates the fluid queue to `t` (t no earlier than the last call).
    void advance(SimTime t);
    /// The autoscaler's decision at `t` (after advance(t)): the domains it wants. Takes a
    /// sample.
    std::int64_t decide(SimTime t);
    /// Domains it has that count against `decide`: ready and provisioning.
    std::int64_t active() const {
        return static_cast<std::int64_t>(ready_.size() + pending_.size());
    }
    /// A domain granted at `t`: ready at the returned time (provisioning, then model load).
    SimTime grant(SimTime t, std::int64_t domain, Duration extra = Duration::zero());
    /// A provisioning domain whose time has come (false: it was cancelled or lost since).
    bool ready(SimTime t, std::int64_t domain);
    /// Shrinks by `n` at `t` (see the header comment): the domains to give back now (cancelled
    /// provisioning), and the ones draining (given back at `drain_end`).
    struct Shrink {
        std::vector<std::int64_t> now;
        std::vector<std::int64_t> draining;
        SimTime drain_end;
    };
    Shrink shrink(SimTime t, std::int64_t n);
    /// A draining domain is given back at `t` (false: lost to a failure since).
    bool drained(SimTime t, std::int64_t domain);
    /// A domain it holds fails at `t` (after advance(t)); it is given up.
    void lost(SimTime t, std::int64_t domain);
    /// Closes the account at `t`: a last sample, the backlog left.
    void close(SimTime t);

    const ServiceRecord& record() const { return record_; }
    const std::vector<ServiceSample>& samples() const { return samples_; }
    /// Its ready domains' changes up to the window's end (empty without a window).
    const std::vector<ServiceChange>& changes() const { return changes_; }
    std::int64_t held() const {
        return static_cast<std::int64_t>(ready_.size() + pending_.size() + draining_.size());
    }

private:
    void sample(SimTime t, std::int64_t wanted);
    void change(SimTime t, std::int64_t domain, ServiceChange::Kind kind);
    /// The measured attainment at `rate` requests per second per domain.
    double curve(double rate) const;

    ServiceSpec spec_;
    std::vector<std::int64_t> ready_;    ///< in the order they became ready
    std::vector<std::int64_t> pending_;  ///< in the order they were granted
    std::vector<std::int64_t> draining_;
    SimTime last_;
    std::size_t load_index_ = 0;
    double backlog_ = 0.0;
    ServiceRecord record_;
    std::vector<ServiceSample> samples_;
    std::vector<ServiceChange> changes_;
    double arrived_at_sample_ = 0.0, met_at_sample_ = 0.0;
};

} // namespace trnsim::fleet
