// What goes into the results file of one scenario (docs/results-schema.md): the /summary
// columns of a training run, its /step, /plan and /run tables, the collective benchmark's
// tables, a serving run's /serving tables and the step simulation's timeline. This module is the one owner of results-file
// content; `results` writes the files (HDF5, trace JSON) and `cli` only prints and decides
// where files go.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/results/hdf5_writer.hpp"
#include "trnsim/results/table.hpp"
#include "trnsim/results/trace.hpp"
#include "trnsim/sim/collective_bench.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/workload_kinds.hpp"
#include "trnsim/sim/step_sim.hpp"

#include <string>
#include <optional>
#include <vector>

namespace trnsim::report {

/// What /meta records about the program that wrote a file.
struct Writer {
    std::string version; ///< trnsim's version string
    int threads = 1;     ///< threads the run used
};

/// Every /summary column of `run` in order (docs/results-schema.md defines each): the plan
/// and step figures, then with a run simulation its figures (means over the replications)
/// and, when `intervals`, the ci95_ half-widths. `trnsim run` writes them as one row;
/// `trnsim batch` and `trnsim plan` write one row per run.
std::vector<results::NamedValue> summary_values(const sim::TrainingRun& run,
                                                bool intervals = true);

/// The entity of a step simulation whose kernels ran slowest against the others of its
/// pipeline stage (stages differ in work): its compute time over the median compute time of its
/// stage's entities. A straggler chip (hardware.speed 0.8) makes its TP group's or rank's
/// kernels 1.25x slower. Ties go to the first entity (lowest rank).
struct SlowestEntity {
    std::int32_t stage = 0;
    std::int64_t replica = 0;    ///< data-parallel index
    std::int64_t first_rank = 0; ///< its ranks: first_rank .. first_rank + ranks - 1
    std::int32_t ranks = 0;
    double speed = 1.0;    ///< its speed factor (its slowest chip's)
    double slowdown = 1.0; ///< compute / the stage's median compute (EntityTimes)
};
std::optional<SlowestEntity> slowest_entity(const sim::StepSimResult& r);

/// /meta of a file written for `spec`.
results::Meta meta(const config::ScenarioSpec& spec, const Writer& writer);

/// /meta/warnings: the scenario's warnings, one `FILE:LINE:COL: warning: key: message` line
/// each (no dataset when there are none).
void add_warnings(results::ResultsFile& f, const config::ScenarioSpec& spec);

/// The results file of a training run: /summary, /step/..., /plan/memory and, with a
/// reliability section, /run/....
results::ResultsFile run_results(const config::ScenarioSpec& spec, const sim::TrainingRun& run,
                                 const Writer& writer);

/// The results file of a collective scenario: /summary (one row) and /collective (per size).
results::ResultsFile collective_results(const config::ScenarioSpec& spec,
                                        const sim::CollectiveBenchResult& result,
                                        const Writer& writer);

/// Every /summary column of a serving run in order (docs/results-schema.md).
std::vector<results::NamedValue> serving_summary_values(const sim::ServingScenarioRun& run);

/// The results file of a serving scenario: /summary (one row), /serving/requests (one row per
/// request, unless output.requests is false), /serving/replicas and /serving/kv.
results::ResultsFile serving_results(const config::ScenarioSpec& spec,
                                     const sim::ServingScenarioRun& run, const Writer& writer);

/// The results file of a `fleet:` scenario: /summary (one row: the pool and its use, the jobs'
/// means), /fleet/classes, /fleet/jobs and /fleet/pool (docs/results-schema.md, "Fleet").
results::ResultsFile fleet_results(const config::ScenarioSpec& spec, const sim::FleetRun& run,
                                   const Writer& writer);
/// The results file of a `tenants:` scenario: /summary with one row per tenant (its name,
/// workload, allocation and engine events) and each tenant's own file under
/// /tenants/<name>/ (its /summary and tables as run_results or serving_results write them,
/// and its resolved scenario as the text /tenants/<name>/scenario).
results::ResultsFile tenants_results(const config::ScenarioSpec& spec, const sim::TenantsRun& run,
                                     const Writer& writer);

/// The results file of any scenario's outcome (run_results, collective_results,
/// serving_results or tenants_results).
results::ResultsFile scenario_results(const config::ScenarioSpec& spec,
                                      const sim::ScenarioOutcome& outcome, const Writer& writer);

/// The timeline of a step simulation, for results::write_chrome_trace.
results::TraceData step_trace(const config::ScenarioSpec& spec, const sim::StepSimResult& step);

} // namespace trnsim::report
