#include "trnsim/study/sweep.hpp"

#include "trnsim/core/format.hpp"
#include "trnsim/core/parallel.hpp"
#include "trnsim/engine/rng.hpp"
#include "trnsim/sim/run.hpp"
#include "trnsim/sim/serve_scenario.hpp"
#include "trnsim/sim/workload_kinds.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>

namespace trnsim::study {

namespace {

// A sweep's points and runs are bounded before anything is built (docs/user-guide.md,
// "Errors and guarantees"): each point is a scenario validated and kept in memory.
constexpr std::int64_t kMaxPoints = 100'000;
constexpr std::int64_t kMaxRuns = 1'000'000;
/// Stream kind of the random samples of a sweep (its own seed, so no clash with a run's).
constexpr engine::StreamKind kSampleStream = 0x5eed;

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    return h;
}

std::string identity(std::vector<config::Override> swept) {
    std::sort(swept.begin(), swept.end(),
              [](const config::Override& a, const config::Override& b) { return a.path < b.path; });
    std::string key;
    for (const auto& o : swept) {
        key += (key.empty() ? "" : "; ") + config::to_string(o);
    }
    return key;
}

/// Value `sample` of a random key (`slot`: the key's index in the random block).
config::Override draw(const config::RandomKey& k, std::int64_t seed, std::int64_t sample,
                      std::uint32_t slot) {
    const auto w = engine::philox_block(static_cast<std::uint64_t>(seed), kSampleStream, slot,
                                        static_cast<std::uint64_t>(sample));
    const double u = engine::uniform01(w[0], w[1]);
    using config::Distribution;
    if (k.distribution == Distribution::choice) {
        const auto& c = k.choices[engine::uniform_below(
            w[2], static_cast<std::uint32_t>(k.choices.size()))];
        return {k.path, c.yaml, c.origin};
    }
    const bool integral = k.kind == config::ValueKind::integer;
    double v = 0.0;
    if (k.distribution == Distribution::uniform) {
        // Integers: each of low..high equally likely.
        v = integral ? std::floor(k.low + u * (k.high - k.low + 1.0)) : k.low + u * (k.high - k.low);
    } else {
        v = std::exp(std::log(k.low) + u * (std::log(k.high) - std::log(k.low)));
        if (integral) {
            v = std::round(v);
        }
    }
    v = std::clamp(v, k.low, k.high);
    return {k.path, config::format_value(k.kind, v), k.origin};
}

bool overlapping(const std::string& a, const std::string& b) {
    const auto below = [](const std::string& x, const std::string& y) {
        return x.size() > y.size() && x.compare(0, y.size(), y) == 0 && x[y.size()] == '.';
    };
    return a == b || below(a, b) || below(b, a);
}

} // namespace

RunId Sweep::run(std::int64_t i) const {
    RunId r;
    r.point = i / replications;
    r.replicate = static_cast<int>(i % replications);
    r.seed = derive_seed(base_seed, points[static_cast<std::size_t>(r.point)].key, r.replicate);
    return r;
}

std::vector<config::Override> Sweep::overrides(const Point& p) const {
    std::vector<config::Override> o = spec.fixed;
    o.insert(o.end(), p.swept.begin(), p.swept.end());
    return o;
}

std::int64_t derive_seed(std::int64_t base_seed, const std::string& key, int replicate) {
    std::uint64_t h = splitmix64(static_cast<std::uint64_t>(base_seed));
    h = splitmix64(h ^ fnv1a(key));
    h = splitmix64(h ^ static_cast<std::uint64_t>(replicate));
    return static_cast<std::int64_t>(h & ((std::uint64_t{1} << 53) - 1));
}

Sweep expand(const config::SweepSpec& spec, std::int64_t base_seed, int base_replications) {
    Sweep s;
    s.spec = spec;
    s.replications = spec.replications.value_or(base_replications);
    s.base_seed = spec.seed.value_or(base_seed);
    std::vector<std::int64_t> sizes;
    for (const auto& axis : spec.axes) {
        for (const auto& k : axis.keys) {
            s.keys.push_back(k.path);
        }
        sizes.push_back(static_cast<std::int64_t>(axis.size()));
    }
    if (spec.random) {
        for (const auto& k : spec.random->keys) {
            s.keys.push_back(k.path);
        }
        sizes.push_back(spec.random->samples);
    }
    // The count from the axes alone (as a double: no overflow), before any point is built.
    double count = 1.0;
    std::string product;
    for (std::int64_t n : sizes) {
        count *= static_cast<double>(n);
        product += (product.empty() ? "" : " x ") + std::to_string(n);
    }
    if (count > static_cast<double>(kMaxPoints)) {
        throw InputError("sweep",
                         "has " + (count < 9e18 ? fmt::integer(std::llround(count)) : fmt::count(count)) + " points (" + product +
                             "); a sweep holds at most " + fmt::integer(kMaxPoints) +
                             " points: split it or narrow its axes",
                         {spec.file, 1, 1});
    }
    if (count * s.replications > static_cast<double>(kMaxRuns)) {
        throw InputError("replications",
                         fmt::integer(std::llround(count)) + " points x " + std::to_string(s.replications) +
                             " replications are more than the " + fmt::integer(kMaxRuns) +
                             " runs a sweep holds",
                         {spec.file, 1, 1});
    }
    const auto total = static_cast<std::int64_t>(count);
    s.points.reserve(static_cast<std::size_t>(total));
    for (std::int64_t i = 0; i < total; ++i) {
        // Mixed-radix digits of i, the last axis fastest.
        std::vector<std::int64_t> digit(sizes.size());
        std::int64_t rest = i;
        for (std::size_t a = sizes.size(); a-- > 0;) {
            digit[a] = rest % sizes[a];
            rest /= sizes[a];
        }
        Point p;
        p.index = i;
        for (std::size_t a = 0; a < spec.axes.size(); ++a) {
            for (const auto& k : spec.axes[a].keys) {
                const auto& v = k.values[static_cast<std::size_t>(digit[a])];
                p.swept.push_back({k.path, v.yaml, v.origin});
            }
        }
        if (spec.random) {
            const std::int64_t sample = digit.back();
            for (std::size_t j = 0; j < spec.random->keys.size(); ++j) {
                p.swept.push_back(draw(spec.random->keys[j], spec.random->seed, sample,
                                       static_cast<std::uint32_t>(j)));
            }
        }
        p.key = identity(p.swept);
        s.points.push_back(std::move(p));
    }
    return s;
}

Sweep load(const config::SweepSpec& spec) {
    config::ScenarioBase file = config::ScenarioBase::read(spec.base);
    const config::ScenarioSpec base = config::load_scenario_with(file, spec.fixed);
    Sweep s = expand(spec, base.seed, base.simulation.replications);
    s.base = std::move(file);
    return s;
}

std::string describe(const Sweep& sweep, const Point& p) {
    std::string values;
    for (const auto& o : p.swept) {
        values += (values.empty() ? "" : ", ") + config::to_string(o);
    }
    return "sweep point " + std::to_string(p.index) + " of " +
           std::to_string(sweep.points.size()) + (values.empty() ? "" : " (" + values + ")");
}

namespace {

/// The error of a point, located at the sweep value of the swept key it concerns (when it
/// concerns one) and naming the point.
InputError point_error(const Sweep& sweep, const Point& p, const InputError& e,
                       const config::ScenarioSpec* spec) {
    SourceLocation loc = e.location();
    for (const auto& o : p.swept) {
        if (!e.key_path().empty() && overlapping(o.path, e.key_path()) && o.origin.known()) {
            loc = o.origin;
            break;
        }
    }
    if (!loc.known() && spec != nullptr) {
        loc = spec->sources.find(e.key_path());
    }
    return InputError(e.key_path(), e.message() + " [" + describe(sweep, p) + "]", loc);
}

} // namespace

namespace {

/// Builds and checks every point (what prepare and validate share): `keep` stores each
/// point's scenario in `specs`, else it is dropped once checked. Returns the files the points
/// read, sorted and unique.
std::vector<std::string> check_points(const Sweep& sweep, int threads, bool keep,
                                      std::vector<config::ScenarioSpec>& specs) {
    const std::int64_t n = static_cast<std::int64_t>(sweep.points.size());
    if (keep) {
        specs.assign(static_cast<std::size_t>(n), config::ScenarioSpec{});
    }
    std::vector<std::optional<InputError>> errors(static_cast<std::size_t>(n));
    std::vector<std::exception_ptr> crashes(static_cast<std::size_t>(n));
    std::vector<std::vector<std::string>> files(static_cast<std::size_t>(std::max(1, threads)));
    const config::ScenarioBase base =
        sweep.base ? sweep.base : config::ScenarioBase::read(sweep.spec.base);
    parallel_for(static_cast<std::size_t>(n), std::max(1, threads), [&](std::size_t u, int worker) {
        const Point& p = sweep.points[u];
        config::ScenarioSpec local;
        config::ScenarioSpec& spec = keep ? specs[u] : local;
        bool loaded = false;
        try {
            spec = config::load_scenario_with(base, sweep.overrides(p), {false});
            loaded = true;
            if (!spec.tenants.empty()) {
                throw InputError("tenants", "trnsim batch runs single-workload scenarios; run a "
                                            "tenants scenario with trnsim run");
            }
            if (spec.fleet) {
                throw InputError("fleet", "trnsim batch runs single-workload scenarios; run a "
                                          "fleet scenario with trnsim run");
            }
            const sim::WorkloadKind& kind = sim::workload_kind(spec.workload_type);
            if (!kind.in_studies) {
                throw InputError("workload.type", "trnsim batch runs training and inference "
                                                  "scenarios, not collectives");
            }
            kind.check(spec);
            auto& mine = files[static_cast<std::size_t>(worker)];
            for (const auto& f : spec.input_files) {
                if (std::find(mine.begin(), mine.end(), f) == mine.end()) {
                    mine.push_back(f);
                }
            }
        } catch (const InputError& e) {
            errors[u] = point_error(sweep, p, e, loaded ? &spec : nullptr);
        } catch (...) {
            crashes[u] = std::current_exception();
        }
    }, 4);
    for (std::size_t i = 0; i < errors.size(); ++i) {
        if (crashes[i]) {
            std::rethrow_exception(crashes[i]);
        }
        if (errors[i]) {
            throw *errors[i];
        }
    }
    std::vector<std::string> all;
    for (const auto& f : files) {
        all.insert(all.end(), f.begin(), f.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
}

} // namespace

std::vector<config::ScenarioSpec> prepare(const Sweep& sweep, int threads) {
    std::vector<config::ScenarioSpec> specs;
    (void)check_points(sweep, threads, true, specs);
    return specs;
}

std::vector<std::string> validate(const Sweep& sweep, int threads) {
    std::vector<config::ScenarioSpec> none;
    return check_points(sweep, threads, false, none);
}

} // namespace trnsim::study
