#include "trnsim/study/batch.hpp"

#include "trnsim/core/parallel.hpp"
#include "trnsim/reliability/expectation.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/workload/plan.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>

namespace trnsim::study {

bool operator==(const RunRecord& a, const RunRecord& b) {
    if (a.point != b.point || a.replicate != b.replicate || a.seed != b.seed ||
        a.values.size() != b.values.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.values.size(); ++i) {
        const auto& x = a.values[i];
        const auto& y = b.values[i];
        if (x.name != y.name || x.value.index() != y.value.index()) {
            return false;
        }
        if (const auto* d = std::get_if<double>(&x.value)) {
            // Bit equality (NaN equals NaN).
            const double e = std::get<double>(y.value);
            if (std::memcmp(d, &e, sizeof e) != 0) {
                return false;
            }
        } else if (x.value != y.value) {
            return false;
        }
    }
    return true;
}

config::ScenarioSpec run_scenario(const config::ScenarioSpec& point, const RunId& id) {
    config::ScenarioSpec spec = point;
    spec.seed = id.seed;
    spec.simulation.replications = 1;
    spec.simulation.threads = 1;
    return spec;
}

RunRecord execute(const config::ScenarioSpec& point, const RunId& id, const Summarize& summarize) {
    const config::ScenarioSpec spec = run_scenario(point, id);
    // The point was checked when the sweep was prepared: its kind runs it directly, on one
    // thread, keeping no events.
    sim::RunSettings settings;
    settings.threads = 1;
    settings.record = false;
    RunRecord r;
    r.point = id.point;
    r.replicate = id.replicate;
    r.seed = id.seed;
    r.values = summarize(sim::workload_kind(spec.workload_type).run(spec, settings));
    return r;
}

ListSource::ListSource(std::vector<std::int64_t> runs) : runs_(std::move(runs)) {}

std::optional<std::int64_t> ListSource::next() {
    const std::int64_t i = std::atomic_ref<std::int64_t>(next_).fetch_add(1);
    if (i >= static_cast<std::int64_t>(runs_.size())) {
        return std::nullopt;
    }
    return runs_[static_cast<std::size_t>(i)];
}

void execute_all(const Sweep& sweep, const std::vector<config::ScenarioSpec>& points,
                 int threads, WorkSource& source, const Summarize& summarize,
                 const std::function<void(RunRecord&&)>& done) {
    std::mutex mutex;
    std::atomic<bool> stop{false};
    std::int64_t failed_run = -1;
    std::exception_ptr failure;
    // Each thread pulls the next run when it is free (dynamic scheduling): runs differ in cost
    // by orders of magnitude (cluster size, failures, duration). The source's length is not
    // known here (an MPI work queue hands out runs to several processes), so the loop is over
    // the threads, each pulling runs until the source is empty or a run has failed.
    const int team = std::max(1, threads);
    parallel_for(static_cast<std::size_t>(team), team, [&](std::size_t, int) {
        while (!stop.load()) {
            std::optional<std::int64_t> next;
            try {
                next = source.next();
            } catch (...) {
                const std::lock_guard<std::mutex> lock(mutex);
                if (!failure) {
                    failure = std::current_exception();
                }
                stop = true;
                break;
            }
            if (!next) {
                break;
            }
            const RunId id = sweep.run(*next);
            try {
                RunRecord r = execute(points.at(static_cast<std::size_t>(id.point)), id, summarize);
                const std::lock_guard<std::mutex> lock(mutex);
                done(std::move(r));
            } catch (...) {
                const std::lock_guard<std::mutex> lock(mutex);
                if (!failure || *next < failed_run) {
                    failure = std::current_exception();
                    failed_run = *next;
                }
                stop = true;
            }
        }
    });
    if (failure) {
        std::rethrow_exception(failure);
    }
}

std::vector<std::int64_t> pending_runs(const Sweep& sweep, const std::vector<RunRecord>& done) {
    std::vector<bool> have(static_cast<std::size_t>(sweep.runs()), false);
    for (const auto& r : done) {
        if (r.point >= 0 && r.point < static_cast<std::int64_t>(sweep.points.size()) &&
            r.replicate >= 0 && r.replicate < sweep.replications) {
            have[static_cast<std::size_t>(r.point * sweep.replications + r.replicate)] = true;
        }
    }
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < sweep.runs(); ++i) {
        if (!have[static_cast<std::size_t>(i)]) {
            out.push_back(i);
        }
    }
    return out;
}

std::vector<double> estimated_costs(const std::vector<config::ScenarioSpec>& points,
                                    int threads) {
    std::vector<double> cost(points.size(), 1.0);
    const std::size_t n = points.size();
    parallel_for(n, std::max(1, threads), [&](std::size_t i, int) {
        const config::ScenarioSpec& spec = points[i];
        if (!spec.reliability.enabled) {
            return;
        }
        try {
            const workload::Plan plan = sim::make_plan(spec);
            const reliability::RunInput in =
                sim::reliability_input(spec, plan, sim::estimate_step(plan));
            const reliability::Expectation x = reliability::expect(in);
            const double limit = spec.simulation.duration > Duration::zero()
                                     ? spec.simulation.duration.seconds()
                                     : spec.simulation.time_limit.seconds();
            const double chips = static_cast<double>(
                (x.facts.job_domains + x.facts.spare_domains) * x.facts.instances_per_domain *
                plan.cluster.chips_per_instance());
            cost[i] = chips * std::min(x.time_to_train.seconds(), limit);
        } catch (const std::exception&) {
            // An estimate only: the run itself reports any problem.
        }
    }, 8);
    return cost;
}

std::vector<std::int64_t> longest_first(const Sweep& sweep, std::vector<std::int64_t> runs,
                                        const std::vector<double>& costs) {
    std::stable_sort(runs.begin(), runs.end(), [&](std::int64_t a, std::int64_t b) {
        return costs[static_cast<std::size_t>(a / sweep.replications)] >
               costs[static_cast<std::size_t>(b / sweep.replications)];
    });
    return runs;
}

void sort_records(std::vector<RunRecord>& records) {
    std::sort(records.begin(), records.end(), [](const RunRecord& a, const RunRecord& b) {
        return a.point != b.point ? a.point < b.point : a.replicate < b.replicate;
    });
}

namespace {

reliability::Estimate combine(const std::vector<double>& xs) {
    bool finite = true;
    bool same = true;
    for (double x : xs) {
        finite = finite && std::isfinite(x);
        same = same && (x == xs.front() || (std::isnan(x) && std::isnan(xs.front())));
    }
    if (finite) {
        return reliability::estimate(xs);
    }
    reliability::Estimate e;
    e.n = static_cast<int>(xs.size());
    if (same) {
        e.mean = xs.front();
        return e;
    }
    double sum = 0.0;
    for (double x : xs) {
        sum += x;
    }
    e.mean = sum / static_cast<double>(xs.size());
    e.half_width = std::nan("");
    e.sd = std::nan("");
    return e;
}

} // namespace

std::vector<PointStatistics> point_statistics(const std::vector<RunRecord>& records) {
    std::vector<PointStatistics> out;
    std::size_t i = 0;
    while (i < records.size()) {
        std::size_t j = i;
        while (j < records.size() && records[j].point == records[i].point) {
            ++j;
        }
        PointStatistics s;
        s.point = records[i].point;
        s.replicates = static_cast<int>(j - i);
        // Float values in first-seen order over the point's records.
        std::map<std::string, std::vector<double>> values;
        for (std::size_t k = i; k < j; ++k) {
            for (const auto& v : records[k].values) {
                double x = 0.0;
                if (const auto* d = std::get_if<double>(&v.value)) {
                    x = *d;
                } else if (const auto* n = std::get_if<std::int64_t>(&v.value)) {
                    x = static_cast<double>(*n);
                } else {
                    continue; // text
                }
                auto [it, added] = values.try_emplace(v.name);
                if (added) {
                    s.names.push_back(v.name);
                }
                it->second.push_back(x);
            }
        }
        for (const auto& name : s.names) {
            s.estimates.push_back(combine(values[name]));
        }
        out.push_back(std::move(s));
        i = j;
    }
    return out;
}

namespace {

void put(std::string& out, const void* p, std::size_t n) {
    out.append(static_cast<const char*>(p), n);
}

template <class T>
T get(std::string_view& in) {
    if (in.size() < sizeof(T)) {
        throw std::runtime_error("batch: truncated run record");
    }
    T v;
    std::memcpy(&v, in.data(), sizeof(T));
    in.remove_prefix(sizeof(T));
    return v;
}

} // namespace

std::string encode(const RunRecord& r) {
    std::string out;
    put(out, &r.point, 8);
    const std::int64_t rep = r.replicate;
    put(out, &rep, 8);
    put(out, &r.seed, 8);
    const std::uint64_t n = r.values.size();
    put(out, &n, 8);
    for (const auto& v : r.values) {
        const std::uint64_t len = v.name.size();
        put(out, &len, 8);
        out += v.name;
        const std::uint8_t tag = static_cast<std::uint8_t>(v.value.index());
        put(out, &tag, 1);
        if (const auto* d = std::get_if<double>(&v.value)) {
            put(out, d, 8);
        } else if (const auto* i = std::get_if<std::int64_t>(&v.value)) {
            put(out, i, 8);
        } else {
            const auto& text = std::get<std::string>(v.value);
            const std::uint64_t size = text.size();
            put(out, &size, 8);
            out += text;
        }
    }
    return out;
}

RunRecord decode(std::string_view in) {
    RunRecord r;
    r.point = get<std::int64_t>(in);
    r.replicate = static_cast<int>(get<std::int64_t>(in));
    r.seed = get<std::int64_t>(in);
    const auto n = get<std::uint64_t>(in);
    for (std::uint64_t i = 0; i < n; ++i) {
        const auto len = get<std::uint64_t>(in);
        if (in.size() < len) {
            throw std::runtime_error("batch: truncated run record");
        }
        results::NamedValue v;
        v.name = std::string(in.substr(0, len));
        in.remove_prefix(len);
        const auto tag = get<std::uint8_t>(in);
        if (tag == 0) {
            v.value = get<std::int64_t>(in);
        } else if (tag == 1) {
            v.value = get<double>(in);
        } else if (tag == 2) {
            const auto size = get<std::uint64_t>(in);
            if (in.size() < size) {
                throw std::runtime_error("batch: truncated run record");
            }
            v.value = std::string(in.substr(0, size));
            in.remove_prefix(size);
        } else {
            throw std::runtime_error("batch: bad value tag in a run record");
        }
        r.values.push_back(std::move(v));
    }
    if (!in.empty()) {
        throw std::runtime_error("batch: trailing bytes after a run record");
    }
    return r;
}

} // namespace trnsim::study
