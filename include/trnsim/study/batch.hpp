// Running a sweep: every (point, replicate) is one run of the point's scenario through
// sim::run_training, with one replication and its derived seed; runs execute in parallel on
// threads (trnsim::parallel_for) that pull them from a work source, and their /summary values
// come back as records. Records depend only on (sweep, point, replicate): sorted by (point, replicate),
// they are the same whatever the thread count, the order in which runs finished or the
// number of processes that shared the work (tests/unit/study/batch_test.cpp).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/reliability/statistics.hpp"
#include "trnsim/results/table.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/workload_kinds.hpp"
#include "trnsim/study/sweep.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::study {

/// The outcome of one run: the values a Summarize function kept of it (a batch keeps the
/// /summary values of `trnsim run` with one replication: report::batch_run_values).
struct RunRecord {
    std::int64_t point = 0;
    int replicate = 0;
    std::int64_t seed = 0;
    std::vector<results::NamedValue> values;
};

/// What a run's record keeps of the finished run. Called from several threads at once.
using Summarize =
    std::function<std::vector<results::NamedValue>(const sim::ScenarioOutcome&)>;

bool operator==(const RunRecord& a, const RunRecord& b);

/// The scenario of one run: the point's scenario with the run's seed, one replication and
/// one thread (runs are the unit of parallelism).
config::ScenarioSpec run_scenario(const config::ScenarioSpec& point, const RunId& id);

/// Runs one run of a point whose scenario `point` was built by prepare().
RunRecord execute(const config::ScenarioSpec& point, const RunId& id, const Summarize& summarize);

/// Hands out run indices (Sweep::run). Called from several threads at once.
class WorkSource {
public:
    virtual ~WorkSource() = default;
    /// The next run to do, or nothing when there is none left.
    virtual std::optional<std::int64_t> next() = 0;
};

/// Hands out a fixed list of runs in order.
class ListSource final : public WorkSource {
public:
    explicit ListSource(std::vector<std::int64_t> runs);
    std::optional<std::int64_t> next() override;

private:
    std::vector<std::int64_t> runs_;
    std::int64_t next_ = 0; // guarded by an atomic fetch in next()
};

/// Runs what `source` hands out on `threads` threads until it is empty. `done` is called
/// once per finished run, never concurrently (calls are serialised). An exception in a run
/// stops the others from taking new work and is rethrown here (the lowest run index first).
void execute_all(const Sweep& sweep, const std::vector<config::ScenarioSpec>& points,
                 int threads, WorkSource& source, const Summarize& summarize,
                 const std::function<void(RunRecord&&)>& done);

/// Every run not in `done`, in run order.
std::vector<std::int64_t> pending_runs(const Sweep& sweep, const std::vector<RunRecord>& done);

/// A relative estimate of the host time each point's runs take: the components that fail
/// (job and spare chips) times the simulated time (the closed-form expected time to train of
/// reliability/expectation.hpp, at most the run's duration or time limit); a constant for
/// scenarios without a run simulation. Computed on `threads` threads.
std::vector<double> estimated_costs(const std::vector<config::ScenarioSpec>& points, int threads);

/// `runs` reordered so the runs of the costliest points come first (stable otherwise): with
/// threads pulling runs as they finish, the long runs do not end up alone at the end.
std::vector<std::int64_t> longest_first(const Sweep& sweep, std::vector<std::int64_t> runs,
                                        const std::vector<double>& costs);

/// Records sorted by (point, replicate).
void sort_records(std::vector<RunRecord>& records);

/// Mean and 95% interval of each number of a point over its replicates (Student t,
/// reliability/statistics.hpp). A value that is not finite in some replicate gives the mean
/// of IEEE arithmetic (inf when one is inf) and a NaN interval, unless every replicate has
/// the same value (then that value and 0).
struct PointStatistics {
    std::int64_t point = 0;
    int replicates = 0;
    std::vector<std::string> names; ///< numeric values (integers too), in record order
    std::vector<reliability::Estimate> estimates;
};

/// Per point with at least one record, in point order (`records` sorted).
std::vector<PointStatistics> point_statistics(const std::vector<RunRecord>& records);

/// A record as bytes and back (used to move records between processes).
std::string encode(const RunRecord& r);
RunRecord decode(std::string_view bytes);

} // namespace trnsim::study
