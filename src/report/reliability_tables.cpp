#include "tables.hpp"
#include "trnsim/reliability/run.hpp"

#include <cstddef>
#include <string>

namespace trnsim::report {

namespace {

std::string state_column(reliability::JobState s) {
    return std::string(reliability::to_string(s)) + "_s";
}

} // namespace

void add_reliability_tables(results::ResultsFile& file, const sim::TrainingRun& run,
                            bool timeline_tables) {
    const reliability::RunSummary& r = *run.reliability;
    using reliability::JobState;
    constexpr JobState kStates[] = {JobState::running,       JobState::running_degraded,
                                    JobState::checkpointing, JobState::detecting,
                                    JobState::restarting,    JobState::loading,
                                    JobState::waiting_for_spare};

    results::Table reps;
    reps.add_int("replication");
    for (const auto& [name, member] : reliability::metric_fields()) {
        reps.add_float(name);
    }
    for (JobState s : kStates) {
        reps.add_float(state_column(s));
    }
    for (const char* c : {"kept_run_s", "lost_run_s"}) {
        reps.add_float(c);
    }
    for (const char* c : {"checkpoints_lost", "spares_assigned", "engine_events"}) {
        reps.add_int(c);
    }
    for (std::size_t i = 0; i < r.replications.size(); ++i) {
        const auto& x = r.replications[i];
        std::vector<results::Table::Value> row{static_cast<std::int64_t>(i)};
        for (const auto& [name, member] : reliability::metric_fields()) {
            row.emplace_back(member(r.metrics[i]));
        }
        for (JobState s : kStates) {
            row.emplace_back(x.time_in_state[static_cast<std::size_t>(s)].seconds());
        }
        row.emplace_back(x.kept_run.seconds());
        row.emplace_back(x.lost_run.seconds());
        row.emplace_back(x.checkpoints_lost);
        row.emplace_back(x.spares_assigned);
        row.emplace_back(static_cast<std::int64_t>(x.engine_events));
        reps.add_row(row);
    }
    file.tables.emplace_back("/run/replications", std::move(reps));

    results::Table causes;
    causes.add_string("cause", 32);
    causes.add_string("component", 12);
    causes.add_string("distribution", 12);
    causes.add_string("effect", 16);
    causes.add_float("mtbf_s");
    causes.add_float("failures");
    causes.add_float("interruptions");
    for (std::size_t i = 0; i < r.processes.size(); ++i) {
        const auto& p = r.processes[i];
        causes.add_row({p.cause.substr(0, 32), std::string(reliability::to_string(p.cls)),
                        std::string(p.random ? reliability::to_string(p.kind) : "trace"),
                        std::string(reliability::to_string(r.impacts[i])),
                        p.random ? p.mean.seconds() : 0.0, r.mean_failures_by_process[i],
                        r.mean_interruptions_by_process[i]});
    }
    file.tables.emplace_back("/run/causes", std::move(causes));
    if (!timeline_tables) {
        return;
    }

    const auto& first = r.replications.front();
    results::Table events;
    events.add_float("time_s");
    events.add_string("kind", 16);
    events.add_string("component", 12);
    events.add_int("component_id");
    events.add_int("domain");
    events.add_string("cause", 32);
    for (const auto& e : first.events) {
        events.add_row({e.time.seconds(), std::string(to_string(e.kind)),
                        std::string(e.component ? reliability::to_string(*e.component) : ""),
                        e.component_index, e.domain,
                        e.process >= 0 ? r.processes[static_cast<std::size_t>(e.process)]
                                             .cause.substr(0, 32)
                                       : std::string()});
    }
    file.tables.emplace_back("/run/events", std::move(events));

    results::Table timeline;
    timeline.add_float("time_s");
    timeline.add_string("state", 20);
    timeline.add_float("progress_s");
    timeline.add_float("committed_s");
    timeline.add_float("rate");
    for (const auto& p : first.timeline) {
        timeline.add_row({p.time.seconds(), std::string(to_string(p.state)),
                          p.progress.seconds(), p.committed.seconds(), p.rate});
    }
    file.tables.emplace_back("/run/timeline", std::move(timeline));
}

} // namespace trnsim::report
