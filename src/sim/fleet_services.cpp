// A fleet's services measured before the fleet runs (docs/fleet.md, "Services"): each service's
// capacity at its SLO on one domain, found by request-level runs of its workload, and its
// throughput; services with the same workload share one measurement.
#include "fleet_services.hpp"

#include "entry_error.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/serving/trace.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace trnsim::sim::detail {

namespace {

/// NxD Inference loading Llama 3.1 405B (BF16, 811.8 GB) onto one trn2.48xlarge (tp 64, LNC 2)
/// in 187.4 s with shard on load, its default since Neuron 2.23 (107.8 s pre-sharded):
/// aws-neuron-sdk libraries/nxd-inference/developer_guides/weights-sharding-guide.rst at
/// 0521004 (NXDI-SHARD in docs/fleet.md). 811.8 GB / 187.4 s per instance.
const Bandwidth kModelLoadPerInstance = Bandwidth::bytes_per_s(405.9e9 * 2.0 / 187.4);

/// The largest rate ratio searched either way from a workload's own rate.
constexpr int kMaxDoublings = 16;
/// The bisection stops when the bracket is this narrow (ratio of its ends).
constexpr double kCapacityTolerance = 1.03;
/// A run whose finished requests per second of its span fall below this fraction of the
/// offered rate is saturated.
constexpr double kSaturated = 0.9;
/// The throughput's bisection stops when its bracket is this narrow.
constexpr double kThroughputTolerance = 1.1;

/// The service's workload with its knob (a Poisson or Gamma rate, or a trace's speed-up) at
/// `knob`.
config::ScenarioSpec at_knob(const config::ScenarioSpec& base, const serving::AzureTrace* trace,
                             double knob) {
    config::ScenarioSpec s = base;
    serving::ArrivalSpec& a = s.inference.requests.arrival;
    s.output.requests = false;
    if (a.kind == serving::ArrivalSpec::Kind::trace) {
        a.speedup = knob;
        auto scaled = std::make_shared<serving::AzureTrace>(*trace);
        for (Duration& d : scaled->arrival) {
            d = Duration::from_ns(std::llround(static_cast<double>(d.ns()) / knob));
        }
        s.trace = std::move(scaled);
    } else {
        a.rate_per_s = knob;
    }
    return s;
}

/// Requests per second the run of `s` offered.
double offered_rate(const config::ScenarioSpec& s, const serving::ServingSummary& m) {
    const serving::RequestSpec& r = s.inference.requests;
    const double issued = static_cast<double>(m.requests + m.unfinished);
    if (r.duration > Duration::zero()) {
        return issued / r.duration.seconds();
    }
    if (r.arrival.kind != serving::ArrivalSpec::Kind::trace) {
        return r.arrival.rate_per_s;
    }
    const auto n = static_cast<std::size_t>(std::min<double>(issued, static_cast<double>(
                                                                          s.trace->size())));
    const double span = n > 1 ? s.trace->arrival[n - 1].seconds() : 0.0;
    return span > 0.0 ? static_cast<double>(n - 1) / span : 0.0;
}

/// Requests finished per second over the second half of the arrivals' span: the rate a run
/// keeps up with, or, saturated, its service rate (its backlog keeps every replica full).
double served_rate(const std::vector<serving::RequestRecord>& records) {
    SimTime last = SimTime::zero();
    for (const serving::RequestRecord& q : records) {
        last = std::max(last, q.arrival);
    }
    const SimTime from = SimTime::from_ns(last.ns() / 2);
    std::int64_t n = 0;
    for (const serving::RequestRecord& q : records) {
        n += q.finished() && q.finish >= from && q.finish < last ? 1 : 0;
    }
    const double span = (last - from).seconds();
    return span > 0.0 ? static_cast<double>(n) / span : 0.0;
}

/// One domain's capacity at the SLO: the highest rate whose attainment reaches `attainment`,
/// found by doubling or halving from the workload's own rate, then bisecting (geometric
/// midpoints) to within kCapacityTolerance. Then its throughput: the highest rate whose run
/// keeps up (finishes at least kSaturated of the offered requests per second in the second
/// half of its arrivals), doubling from the first rate that missed the SLO and bisecting; or
/// a saturated run's finished requests per second there, when higher.
FleetServiceRun measure_service(const config::FleetService& v) {
    const config::ScenarioSpec& base = *v.scenario;
    const serving::InferenceSpec& inf = base.inference;
    const serving::ArrivalSpec& a = inf.requests.arrival;
    using Kind = serving::ArrivalSpec::Kind;
    const ServingLayout layout = check_service(v);
    FleetServiceRun r;
    r.name = v.name;
    r.tenant = v.tenant;
    r.priority = v.priority;
    r.borrow = v.borrow;
    r.tp = inf.serving.tp;
    r.replicas_per_domain = layout.replicas;
    const cluster::ClusterShape shape =
        cluster::Hierarchy::shape_of(base.hardware.chip, base.cluster);
    const double bytes_per_instance = layout.memory.weights_per_rank.as_double() *
                                      static_cast<double>(r.tp * r.replicas_per_domain) /
                                      static_cast<double>(shape.instances_per_domain());
    r.load_bandwidth = v.load_bandwidth.bytes_per_s() > 0.0 ? v.load_bandwidth
                                                             : kModelLoadPerInstance;
    r.model_load = Seconds::of(bytes_per_instance / r.load_bandwidth.bytes_per_s());

    std::optional<serving::AzureTrace> trace;
    if (a.kind == Kind::trace) {
        trace = serving::read_azure_trace(a.trace_file, 1.0);
    }
    struct Run {
        double knob = 0.0, rate = 0.0, attainment = 0.0, output_tokens = 0.0, served = 0.0;
        Seconds ttft_p50;
    };
    std::vector<Run> runs;
    const auto run = [&](double knob) {
        config::ScenarioSpec s = at_knob(base, trace ? &*trace : nullptr, knob);
        s.output.requests = true;
        const ServingScenarioRun x = run_serving(s, 1);
        const serving::ServingSummary& m = x.run.summary;
        Run out{knob, offered_rate(s, m), m.slo_attainment,
                m.requests > 0 ? static_cast<double>(m.output_tokens) /
                                     static_cast<double>(m.requests)
                               : 0.0,
                served_rate(x.run.requests), m.ttft_p50};
        runs.push_back(out);
        ++r.simulations;
        return out;
    };
    const auto meets = [&](const Run& x) { return x.attainment >= v.attainment; };
    const double own = a.kind == Kind::trace ? a.speedup : a.rate_per_s;
    Run low = run(own);
    Run high = low;
    if (meets(low)) {
        for (int i = 0; i < kMaxDoublings && meets(high); ++i) {
            low = high;
            high = run(high.knob * 2.0);
        }
        if (meets(high)) {
            throw InputError("workload.requests.arrival",
                             "one domain still meets the SLO at 65,536 times the workload's own "
                             "rate: raise its rate (or speed-up) nearer its capacity",
                             base.sources.find("workload.requests.arrival"));
        }
    } else {
        for (int i = 0; i < kMaxDoublings && !meets(low); ++i) {
            high = low;
            low = run(low.knob / 2.0);
        }
        if (!meets(low)) {
            throw InputError("workload.slo",
                             "one domain does not meet the SLO for " +
                                 std::to_string(static_cast<int>(v.attainment * 100.0)) +
                                 "% of its requests even at 1/65,536 of the workload's rate",
                             base.sources.find("workload.slo"));
        }
    }
    while (high.knob / low.knob > kCapacityTolerance) {
        const Run mid = run(std::sqrt(low.knob * high.knob));
        (meets(mid) ? low : high) = mid;
    }
    r.capacity = low.rate;
    // The throughput: the highest rate a run keeps up with, bracketed by doubling from the
    // first rate that missed the SLO, then bisected to within kThroughputTolerance.
    const auto kept_up = [](const Run& x) { return x.served >= kSaturated * x.rate; };
    Run fast = high;
    Run slow = high;
    for (int i = 0; i < kMaxDoublings && kept_up(slow); ++i) {
        fast = slow;
        slow = run(slow.knob * 2.0);
    }
    if (kept_up(fast)) {
        while (slow.knob / fast.knob > kThroughputTolerance) {
            const Run mid = run(std::sqrt(fast.knob * slow.knob));
            (kept_up(mid) ? fast : slow) = mid;
        }
    }
    r.throughput = std::max(r.capacity, kept_up(fast) ? fast.rate : 0.0);
    for (const Run& x : runs) {
        if (!kept_up(x)) {
            r.throughput = std::max(r.throughput, x.served);
        }
    }
    r.slack = Seconds::of(std::max(0.0, inf.slo.ttft.seconds() - low.ttft_p50.seconds()));
    r.output_tokens = low.output_tokens;
    std::sort(runs.begin(), runs.end(),
              [](const Run& x, const Run& y) { return x.rate < y.rate; });
    for (const Run& x : runs) {
        if (x.rate <= r.throughput && (r.points.empty() || x.rate > r.points.back().rate)) {
            r.points.push_back({x.rate, x.attainment, x.ttft_p50});
        }
    }
    return r;
}

} // namespace

InputError pool_keyed(const InputError& e, const config::ScenarioSpec& entry,
                      const config::FleetSpec& fs, std::size_t k) {
    if (k == 0) {
        return e;
    }
    const InputError located = e.located(entry.sources);
    const std::string& key = located.key_path();
    const std::string path = "fleet.pools[" + std::to_string(k - 1) + "]";
    const config::FleetPool& p = fs.pools[k];
    if (key == "cluster" || key.rfind("cluster.", 0) == 0) {
        const std::string to =
            path + (p.cluster.counts_ultraservers() ? ".ultraservers" : ".instances");
        return InputError(to, located.message() + " (pool " + p.name + ")",
                          entry.sources.find(to));
    }
    for (const std::string section : {"hardware", "cost"}) {
        if (key == section || key.rfind(section + ".", 0) == 0) {
            return InputError(path + "." + key, located.message(), located.location());
        }
    }
    return e;
}

InputError service_error(const InputError& e, const config::ScenarioSpec& c, std::size_t i) {
    return detail::entry_error(e, c, "fleet.services[" + std::to_string(i) + "]", "service");
}

ServingLayout check_service(const config::FleetService& v) {
    const config::ScenarioSpec& base = *v.scenario;
    const serving::InferenceSpec& inf = base.inference;
    if (inf.requests.arrival.kind == serving::ArrivalSpec::Kind::closed_loop) {
        throw InputError("workload.requests.arrival",
                         "a service's requests arrive open loop (poisson, gamma or a trace): "
                         "its load sets their rate",
                         base.sources.find("workload.requests.arrival"));
    }
    if (inf.slo.ttft <= Duration::zero() || inf.slo.tpot <= Duration::zero()) {
        throw InputError("workload.slo",
                         "a service needs its SLO (ttft and tpot): a domain's capacity is the "
                         "rate it serves within it",
                         base.sources.find("workload.slo"));
    }
    return check_serving(base);
}

std::vector<FleetServiceRun> prepare_services(const config::ScenarioSpec& spec, int threads,
                                              const std::function<void()>& alongside) {
    const auto& services = spec.fleet->services;
    std::vector<FleetServiceRun> out(services.size());
    std::vector<std::size_t> todo;
    std::map<std::string, std::size_t> first;
    for (std::size_t i = 0; i < services.size(); ++i) {
        const auto [it, fresh] = first.emplace(services[i].workload_text, i);
        if (fresh || services[it->second].attainment != services[i].attainment ||
            services[it->second].load_bandwidth != services[i].load_bandwidth) {
            todo.push_back(i);
        } else {
            out[i].shares_with = static_cast<std::int64_t>(it->second);
        }
    }
    const std::size_t first_item = alongside ? 1 : 0;
    parallel_for(first_item + todo.size(), threads, [&](std::size_t k, int) {
        if (k < first_item) {
            alongside();
            return;
        }
        const std::size_t i = todo[k - first_item];
        try {
            out[i] = measure_service(services[i]);
        } catch (const InputError& e) {
            throw service_error(pool_keyed(e, *services[i].scenario, *spec.fleet, services[i].pool),
                                *services[i].scenario, i);
        }
    });
    for (std::size_t i = 0; i < services.size(); ++i) {
        if (out[i].shares_with >= 0) {
            const std::int64_t from = out[i].shares_with;
            out[i] = out[static_cast<std::size_t>(from)];
            out[i].simulations = 0;
            out[i].shares_with = from;
            out[i].name = services[i].name;
            out[i].tenant = services[i].tenant;
            out[i].priority = services[i].priority;
            out[i].borrow = services[i].borrow;
        }
    }
    return out;
}

} // namespace trnsim::sim::detail
