#include "trnsim/reliability/run.hpp"

#include "run_model.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/core/parallel.hpp"

#include <chrono>
#include <optional>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace trnsim::reliability {

const std::vector<std::pair<const char*, MetricValue>>& metric_fields() {
    static const std::vector<std::pair<const char*, MetricValue>> fields = {
        {"wall_time_s", [](const Metrics& m) { return m.wall_time.seconds(); }},
        {"time_to_train_s", [](const Metrics& m) { return m.time_to_train.seconds(); }},
        {"ettr", [](const Metrics& m) { return m.ettr; }},
        {"goodput", [](const Metrics& m) { return m.goodput; }},
        {"interruptions", [](const Metrics& m) { return m.interruptions; }},
        {"failures", [](const Metrics& m) { return m.failures; }},
        {"lost_work_s", [](const Metrics& m) { return m.lost_work.seconds(); }},
        {"downtime_s", [](const Metrics& m) { return m.downtime.seconds(); }},
        {"checkpoint_overhead_s", [](const Metrics& m) { return m.checkpoint_overhead.seconds(); }},
        {"checkpoints", [](const Metrics& m) { return m.checkpoints; }},
        {"cost_usd", [](const Metrics& m) { return m.cost_usd; }},
        {"done", [](const Metrics& m) { return m.done; }},
    };
    return fields;
}

const Estimate& RunSummary::estimate(const std::string& metric) const {
    const auto& fields = metric_fields();
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (metric == fields[i].first) {
            return estimates.at(i);
        }
    }
    throw std::out_of_range("no run metric " + metric);
}

void validate(const RunInput& in) {
    validate_fleet(in.spec, in.cluster, in.hardware);
    const ReliabilitySpec& sp = in.spec;
    const Bytes host =
        checkpoint_host_bytes(sp.checkpoint, in.job.checkpoint_size, in.cluster.instances);
    if (in.hardware.host_memory > Bytes(0) && host > in.hardware.host_memory) {
        throw InputError("reliability.checkpoint.mode",
                         std::string(to_string(sp.checkpoint.mode)) + " checkpoints keep " +
                             fmt::bytes(host) + " per instance in host memory (" +
                             (sp.checkpoint.mode == CheckpointMode::memory
                                  ? "its share of the checkpoint and a peer's"
                                  : "its share of the checkpoint") +
                             "), more than the instance's " +
                             fmt::bytes(in.hardware.host_memory) + ": use sync, more instances or a smaller checkpoint.size");
    }
}

void validate_fleet(const ReliabilitySpec& sp, const cluster::ClusterShape& cluster,
                    const HardwareFacts& hardware) {
    if (cluster.ultraserver_domains() && sp.spares.instances > 0) {
        throw InputError("reliability.spares.instances",
                         "the cluster is made of UltraServers, so spares are UltraServers: give "
                         "reliability.spares.ultraservers");
    }
    if (!cluster.ultraserver_domains() && sp.spares.ultraservers > 0) {
        throw InputError("reliability.spares.ultraservers",
                         "the cluster is made of plain instances: give "
                         "reliability.spares.instances");
    }
    const FailureModel failures(sp.failures, sp.trace);
    std::optional<Layout> built;
    try {
        built.emplace(cluster, hardware, sp.fabric, sp.spares.count(),
                      failures.present_classes());
    } catch (const std::invalid_argument& e) {
        throw InputError("reliability", std::string(e.what()) + " (fewer spares or processes)");
    }
    const Layout& layout = *built;
    for (std::size_t i = 0; i < sp.failures.size(); ++i) {
        const std::string problem =
            layout.effect_problem(sp.failures[i].component, sp.failures[i].effect);
        if (!problem.empty()) {
            throw InputError("reliability.failures[" + std::to_string(i) + "].effect", problem);
        }
    }
    for (const TraceFailure& t : sp.trace.failures) {
        const std::int64_t n = layout.count(t.component);
        if (t.index >= n) {
            throw InputError("reliability.trace",
                             "line " + std::to_string(t.line) + ": there is no " +
                                 to_string(t.component) + " " + std::to_string(t.index) +
                                 " (the cluster, spares included, has " + std::to_string(n) +
                                 ", numbered from 0)",
                             {sp.trace.file, t.line, 1});
        }
    }
}

namespace {

Metrics metrics_of(const ReplicationResult& r, const RunFacts& f, const JobModel& job) {
    Metrics m;
    m.wall_time = Seconds::of(r.wall.seconds());
    m.ettr = m.wall_time.seconds() > 0.0 ? r.work.seconds() / m.wall_time.seconds() : 0.0;
    m.goodput = m.ettr * static_cast<double>(job.tokens_per_step) / job.step.seconds();
    m.time_to_train = r.done ? m.wall_time
                             : Seconds::of(m.ettr > 0.0 ? f.work.seconds() / m.ettr
                                                        : std::numeric_limits<double>::infinity());
    m.interruptions = static_cast<double>(r.interruptions);
    m.failures = static_cast<double>(r.failures);
    m.lost_work = Seconds::of(r.lost_work.seconds());
    const auto state = [&](JobState s) {
        return Seconds::of(r.time_in_state[static_cast<std::size_t>(s)].seconds());
    };
    m.downtime = state(JobState::detecting) + state(JobState::restarting) +
                 state(JobState::loading) + state(JobState::waiting_for_spare);
    m.checkpoint_overhead = state(JobState::checkpointing);
    m.checkpoints = static_cast<double>(r.checkpoints);
    const double instances =
        static_cast<double>((f.job_domains + f.spare_domains) * f.instances_per_domain);
    m.cost_usd =
        instances * m.time_to_train.seconds() / units::kSecondsPerHour * job.instance_hour_usd;
    m.done = r.done ? 1.0 : 0.0;
    return m;
}

} // namespace

RunSummary simulate(const RunInput& input, const RunControl& control) {
    validate(input);
    if (input.job.steps <= 0 || !(input.job.step.seconds() > 0.0) || control.replications < 1) {
        throw std::invalid_argument("reliability: a run needs steps, a step time and at least "
                                    "one replication");
    }
    const auto started = std::chrono::steady_clock::now();
    const detail::Setup setup(input);
    const Layout& layout = setup.layout;

    RunSummary out;
    out.processes = setup.failures.processes();
    out.impacts = setup.impact;
    out.facts = setup.facts();

    const std::int64_t end = detail::run_end(control);
    const engine::PartitionMap partitions =
        engine::PartitionMap::from_starts(layout.entities(), layout.partition_starts());
    const auto replicate = [&](int rep, int threads) {
        detail::Replication replication(setup, control, static_cast<std::uint32_t>(rep), end);
        // A partition holds few pending events (one per component due in the current chunk),
        // spread over hours: a plain 4-ary heap serves them well.
        using Sim = engine::Simulator<detail::RunModel, engine::QuaternaryHeap>;
        Sim sim(replication.model, partitions, Duration::from_ns(detail::kReportLatencyNs));
        detail::SimulatorSink<Sim> sink(sim);
        replication.prime(sink);
        engine::RunStats stats;
        do {
            stats = sim.run(SimTime::from_ns(replication.pause()), threads);
        } while (replication.advance(sink));
        return replication.result(stats.events);
    };

    // Replications are independent: min(threads, replications) of them run at once, each
    // engine getting an equal share of the threads. Each result lands in its own slot, so the
    // outcome does not depend on which thread ran what.
    const int reps = control.replications;
    const int concurrent = std::max(1, std::min(control.threads, reps));
    const int engine_threads = std::max(1, control.threads / concurrent);
    out.replications.resize(static_cast<std::size_t>(reps));
    parallel_for(static_cast<std::size_t>(reps), concurrent, [&](std::size_t rep, int) {
        out.replications[rep] = replicate(static_cast<int>(rep), engine_threads);
    });
    detail::summarize(out, input);
    out.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
}

void detail::summarize(RunSummary& out, const RunInput& input) {
    const RunFacts& f = out.facts;
    for (const ReplicationResult& r : out.replications) {
        out.engine_events += r.engine_events;
        out.metrics.push_back(metrics_of(r, f, input.job));
    }

    for (const auto& [name, member] : metric_fields()) {
        std::vector<double> values;
        for (const Metrics& m : out.metrics) {
            values.push_back(member(m));
        }
        out.estimates.push_back(estimate(values));
    }
    const std::size_t processes = out.processes.size();
    out.mean_failures_by_process.assign(processes, 0.0);
    out.mean_interruptions_by_process.assign(processes, 0.0);
    const double n = static_cast<double>(out.replications.size());
    for (const ReplicationResult& r : out.replications) {
        for (std::size_t i = 0; i < processes; ++i) {
            out.mean_failures_by_process[i] += static_cast<double>(r.failures_by_process[i]) / n;
            out.mean_interruptions_by_process[i] +=
                static_cast<double>(r.interruptions_by_process[i]) / n;
        }
    }
}

} // namespace trnsim::reliability
