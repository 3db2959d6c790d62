// A serving run's bounds before it starts (serve_bounds.hpp).
#include "serve_bounds.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/reliability/failure_model.hpp"
#include "trnsim/reliability/layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>

#include "serve_placement.hpp"

namespace trnsim::sim::detail {

namespace {

using serving::TokenDistribution;

double mean_of(const TokenDistribution& d, const serving::AzureTrace* trace, bool input) {
    using K = TokenDistribution::Kind;
    switch (d.kind) {
    case K::fixed:
    case K::normal:
    case K::lognormal:
        return d.a;
    case K::uniform:
        return 0.5 * (d.a + d.b);
    case K::empirical:
        return d.values.empty() ? 1.0
                                : static_cast<double>(std::accumulate(
                                      d.values.begin(), d.values.end(), std::int64_t{0})) /
                                      static_cast<double>(d.values.size());
    case K::trace: {
        if (trace == nullptr || trace->size() == 0) {
            return 1.0;
        }
        const std::vector<std::int64_t>& v = input ? trace->input_tokens : trace->output_tokens;
        return static_cast<double>(std::accumulate(v.begin(), v.end(), std::int64_t{0})) /
               static_cast<double>(v.size());
    }
    }
    return 1.0;
}

/// The mean lifetime the check uses: a good component's, a bad one's when all are bad.
double mean_lifetime(const reliability::Process& p) {
    return p.mean.seconds() / (p.bad_fraction >= 1.0 ? p.bad_multiplier : 1.0);
}

/// -ln S_p(t) of one component (serve_bounds.hpp), +inf when it cannot survive t.
double hazard(const reliability::Process& p, double t) {
    const double m = mean_lifetime(p);
    if (!(m > 0.0)) {
        return std::numeric_limits<double>::infinity();
    }
    using L = reliability::LifetimeKind;
    switch (p.kind) {
    case L::exponential:
        return t / m;
    case L::weibull:
        return std::pow(t / (m * p.weibull_scale), p.shape);
    case L::lognormal: {
        const double mu = std::log(m) - 0.5 * p.sigma * p.sigma;
        const double s = 0.5 * std::erfc((std::log(t) - mu) / (p.sigma * std::sqrt(2.0)));
        return s > 0.0 ? -std::log(s) : std::numeric_limits<double>::infinity();
    }
    }
    return t / m;
}

} // namespace

double alone_seconds(const serving::IterationCostModel& cost, std::int64_t input,
                     std::int64_t output) {
    serving::IterationShape prefill;
    prefill.prefill_sequences = 1;
    prefill.prefill_tokens = input;
    prefill.prefill_max_tokens = input;
    prefill.prefill_max_context = input;
    double s = cost.seconds(prefill);
    if (output > 1) {
        serving::IterationShape decode;
        decode.decode_sequences = 1;
        decode.decode_context_tokens = input + output / 2;
        decode.decode_max_context = input + output / 2;
        s += static_cast<double>(output - 1) * cost.seconds(decode);
    }
    return s;
}

std::pair<std::int64_t, std::int64_t> mean_request(const ServeInput& in) {
    const serving::RequestSpec& r = in.spec.requests;
    const serving::AzureTrace* trace = in.trace.get();
    const std::int64_t ceiling = std::max<std::int64_t>(in.spec.serving.max_context, 2);
    double input = mean_of(r.input, trace, true);
    if (r.prefix.groups > 0) {
        input += r.prefix.fraction * static_cast<double>(r.prefix.tokens);
    }
    const auto in_tokens =
        std::clamp<std::int64_t>(std::llround(std::min(input, 1e12)), 1, ceiling - 1);
    const auto out_tokens = std::clamp<std::int64_t>(
        std::llround(std::min(mean_of(r.output, trace, false), 1e12)), 1, ceiling - in_tokens);
    return {in_tokens, out_tokens};
}

void check_progress(const ServeInput& in, const serving::IterationCostModel& cost) {
    if (!in.reliability.enabled) {
        return;
    }
    const reliability::ReliabilitySpec& rs = in.reliability;
    const reliability::FailureModel model(rs.failures, rs.trace);
    // Spares do not change a domain's components: a layout without them (cheap whatever the
    // spares) gives the counts per domain.
    const reliability::Layout layout(fleet_shape(in), fleet_hardware(in), rs.fabric, 0,
                                     model.present_classes());
    const auto [input, output] = mean_request(in);
    const double t = alone_seconds(cost, input, output);
    // After a failure the domain (or its spare) must also outlast its return.
    const double w = rs.recovery.detection.seconds() + rs.recovery.restart.seconds();
    double total = 0.0;
    double worst = 0.0;
    std::size_t worst_process = 0;
    const std::vector<reliability::Process>& processes = model.processes();
    for (std::size_t i = 0; i < processes.size(); ++i) {
        const reliability::Process& p = processes[i];
        if (!p.random || reliability::is_switch(p.cls)) {
            continue;
        }
        const reliability::Impact impact = layout.impact(p.cls, p.effect);
        if (impact == reliability::Impact::fabric_interrupt ||
            impact == reliability::Impact::fabric_degrade) {
            continue;
        }
        const double count = p.cls == reliability::ComponentClass::power
                                 ? 1.0
                                 : static_cast<double>(layout.per_domain(p.cls));
        const double h = count * hazard(p, t + w);
        total += h;
        if (h > worst) {
            worst = h;
            worst_process = i;
        }
    }
    if (!(total > std::log(static_cast<double>(kMaxAttempts)))) {
        return;
    }
    const bool from_entry = worst_process < rs.failures.size();
    const std::string key = from_entry ? "reliability.failures[" +
                                             std::to_string(worst_process) + "].mtbf"
                                       : std::string("reliability.failures");
    const double decades = total / std::log(10.0);
    const std::string attempts =
        decades >= 6.0 ? "about 10^" + std::to_string(static_cast<std::int64_t>(decades))
                       : fmt::integer(static_cast<std::int64_t>(std::exp(total)));
    throw InputError(
        key, "failures outpace recovery: a request of " + fmt::integer(input) + " + " +
                 fmt::integer(output) + " tokens takes " + fmt::seconds(t) +
                 " alone on a replica, after a failure its domain returns in " +
                 fmt::seconds(w) + " (detection + restart), and the domain (" +
                 processes[worst_process].cause + " mtbf " +
                 fmt::seconds(mean_lifetime(processes[worst_process])) +
                 " per component) fails so often that it would need " + attempts +
                 " attempts on average (at most " +
                 fmt::integer(kMaxAttempts) +
                 "): the run would not finish; raise the mtbf or shorten the requests");
}

MemoryEstimate estimate_memory(const config::ScenarioSpec& spec, const ServeInput& in,
                               const serving::IterationCostModel& cost) {
    MemoryEstimate m;
    const serving::RequestSpec& r = in.spec.requests;
    const int lnc = in.lnc > 0 ? in.lnc : in.chip.lnc_default;
    const Placement pl = place(in, lnc);
    const auto replicas = static_cast<double>(pl.replicas.size());
    const auto [input, output] = mean_request(in);
    const double t = alone_seconds(cost, input, output);
    using A = serving::ArrivalSpec::Kind;
    const double duration_s = r.duration.seconds();
    const serving::AzureTrace* trace = in.trace.get();
    double period_s = 0.0; // a trace's repeat
    if (trace != nullptr && trace->size() > 0) {
        const double n = static_cast<double>(trace->size());
        const double span = static_cast<double>(trace->span_ns()) * 1e-9;
        period_s = span + std::max(n > 1 ? span / (n - 1) : 1.0, 1e-9);
    }
    const double clients = static_cast<double>(std::max(r.arrival.concurrency, 1));
    const double concurrent =
        std::min(clients, replicas * static_cast<double>(in.spec.serving.max_batch));
    double span_s = 0.0;
    if (r.count > 0) {
        m.requests = static_cast<double>(r.count);
        if (r.arrival.kind == A::poisson || r.arrival.kind == A::gamma) {
            span_s = (m.requests - 1.0) / r.arrival.rate_per_s;
        } else if (r.arrival.kind == A::trace && trace != nullptr && trace->size() > 0) {
            span_s = std::floor((m.requests - 1.0) / static_cast<double>(trace->size())) *
                     period_s;
        } else if (r.arrival.kind == A::closed_loop) {
            span_s = m.requests * t / std::max(concurrent, 1.0);
        }
    } else if (duration_s > 0.0) {
        span_s = duration_s;
        if (r.arrival.kind == A::poisson || r.arrival.kind == A::gamma) {
            m.requests = r.arrival.rate_per_s * duration_s * 1.1 + 10.0;
        } else if (r.arrival.kind == A::trace && period_s > 0.0) {
            m.requests = std::ceil(duration_s / period_s) * static_cast<double>(trace->size());
        } else {
            m.requests = clients * duration_s / std::max(t, 1e-9) + clients;
        }
    } else if (trace != nullptr) {
        m.requests = static_cast<double>(trace->size());
        span_s = static_cast<double>(trace->span_ns()) * 1e-9;
    }
    span_s += t;
    m.request_bytes = m.requests * kRequestBytes;

    std::vector<std::uint32_t> domains;
    for (const ReplicaPlacement& p : pl.replicas) {
        domains.push_back(p.domain);
    }
    std::sort(domains.begin(), domains.end());
    domains.erase(std::unique(domains.begin(), domains.end()), domains.end());
    const double partitions =
        pl.shards > 1 ? static_cast<double>(pl.shards) : 1.0 + static_cast<double>(domains.size());
    m.replica_bytes = replicas * kReplicaBytes + partitions * partitions * kPartitionPairBytes;

    const double sample_s = spec.simulation.kv_sample.seconds();
    if (sample_s > 0.0) {
        m.samples = span_s / sample_s + 1.0;
        m.sample_bytes = m.samples * (4.0 * replicas + 16.0);
    }

    if (in.reliability.enabled) {
        const reliability::ReliabilitySpec& rs = in.reliability;
        const reliability::FailureModel model(rs.failures, rs.trace);
        const cluster::ClusterShape shape = fleet_shape(in);
        const reliability::Layout layout(shape, fleet_hardware(in), rs.fabric, 0,
                                         model.present_classes());
        double per_domain = 0.0;
        for (reliability::ComponentClass c : reliability::kAllClasses) {
            if (!model.random_processes(c).empty() && !reliability::is_switch(c) &&
                c != reliability::ComponentClass::power) {
                per_domain += static_cast<double>(layout.per_domain(c));
            }
        }
        const double all_domains =
            static_cast<double>(layout.job_domains()) + static_cast<double>(rs.spares.count());
        m.failure_bytes = (per_domain * all_domains + static_cast<double>(layout.power_domains())) *
                          kComponentBytes * static_cast<double>(pl.shards);
    }
    return m;
}

void check_memory(const config::ScenarioSpec& spec, const ServeInput& in,
                  const serving::IterationCostModel& cost) {
    const MemoryEstimate m = estimate_memory(spec, in, cost);
    const auto limit = static_cast<double>(spec.simulation.max_memory.count());
    if (!(m.total() > limit)) {
        return;
    }
    const serving::RequestSpec& r = in.spec.requests;
    // The key that drives the largest term.
    std::string key;
    double largest = m.request_bytes;
    key = r.count > 0                 ? "workload.requests.count"
          : r.duration.ns() > 0       ? "workload.requests.duration"
                                      : "workload.requests.arrival.trace";
    if (m.replica_bytes > largest) {
        largest = m.replica_bytes;
        key = spec.cluster.counts_ultraservers() ? "cluster.ultraservers" : "cluster.instances";
    }
    if (m.sample_bytes > largest) {
        largest = m.sample_bytes;
        key = "simulation.kv_sample";
    }
    if (m.failure_bytes > largest) {
        key = in.reliability.spares.count() > 0
                  ? (spec.cluster.counts_ultraservers() ? "reliability.spares.ultraservers"
                                                        : "reliability.spares.instances")
                  : (spec.cluster.counts_ultraservers() ? "cluster.ultraservers"
                                                        : "cluster.instances");
    }
    throw InputError(
        key, "the run would need about " + fmt::bytes(m.total()) + " of memory (" +
                 fmt::count(m.requests) + " requests " + fmt::bytes(m.request_bytes) +
                 ", replicas " + fmt::bytes(m.replica_bytes) + ", " + fmt::count(m.samples) +
                 " KV samples per replica " + fmt::bytes(m.sample_bytes) + ", failure layout " +
                 fmt::bytes(m.failure_bytes) + "), more than simulation.max_memory " +
                 fmt::bytes(spec.simulation.max_memory) + ": lower " + key +
                 " or raise simulation.max_memory");
}

} // namespace trnsim::sim::detail
