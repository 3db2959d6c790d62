// A sweep's points and runs: the expansion of a sweep file (config/study.hpp) into points, the
// seed of every run, and the validation of every point before anything runs.
//
// Points. Each grid key, each zip group and the random block is an axis; the points are every
// combination of the axes, the last axis varying fastest. Random samples are drawn from
// Philox streams keyed by (sweep.random.seed, sample, key), so a sample's values do not
// depend on the other keys or on the number of samples.
//
// Identity and seeds. A point is identified by its key: its swept values as "path=value"
// sorted by key path. Run r of a point gets the seed
//     seed = mix(base seed, FNV-1a(key), r) mod 2^53
// (mix: splitmix64 steps), so the same point gets the same seeds whatever its position in the
// sweep, the thread count or the number of MPI ranks; adding values to a grid keeps the
// results of the points already run (what --resume relies on). The base seed is the sweep's
// `seed` or the base scenario's.
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/config/study.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::study {

struct Point {
    std::int64_t index = 0;
    /// One override per swept key, in Sweep::keys order.
    std::vector<config::Override> swept;
    std::string key; ///< identity: "path=value; ..." sorted by path ("" with no swept key)
};

/// One run: a replicate of a point.
struct RunId {
    std::int64_t point = 0;
    int replicate = 0;
    std::int64_t seed = 0;
};

struct Sweep {
    config::SweepSpec spec;
    /// The base scenario, read once (load() sets it; prepare() reads it when it is empty).
    config::ScenarioBase base;
    std::vector<std::string> keys; ///< swept key paths: grid keys, zip keys, random keys
    std::vector<Point> points;
    int replications = 1;
    std::int64_t base_seed = 1;

    std::int64_t runs() const {
        return static_cast<std::int64_t>(points.size()) * replications;
    }
    /// Run i in (point, replicate) order: point i / replications, replicate i % replications.
    RunId run(std::int64_t i) const;
    /// The overrides of a point: the sweep's `set`, then its swept values.
    std::vector<config::Override> overrides(const Point& p) const;
};

/// The seed of replicate `replicate` of the point with identity `key`.
std::int64_t derive_seed(std::int64_t base_seed, const std::string& key, int replicate);

/// Expands `spec` (base_seed and base_replications are the base scenario's, used when the
/// sweep gives none). The point count follows from the axes before any point is built: more
/// than 100,000 points, or 1,000,000 runs with the replications, are refused (InputError).
Sweep expand(const config::SweepSpec& spec, std::int64_t base_seed, int base_replications);

/// Reads the base scenario, then expands the sweep (the base scenario's errors are located
/// in its file).
Sweep load(const config::SweepSpec& spec);

/// Builds every point's scenario and checks it the way `trnsim validate` does (schema, plan,
/// memory, reliability), on `threads` threads. Throws the InputError of the first bad point
/// in point order, located at the sweep value it comes from when the error concerns a swept
/// key, with the point named in the message; nothing has run then.
std::vector<config::ScenarioSpec> prepare(const Sweep& sweep, int threads);

/// The checks of prepare, keeping nothing of the points (memory does not grow with them):
/// `trnsim validate` of a sweep. Returns every file the points read (sorted, unique), for the
/// output checks.
std::vector<std::string> validate(const Sweep& sweep, int threads);

/// "sweep point 3 of 12 (cluster.ultraservers=16, ...)".
std::string describe(const Sweep& sweep, const Point& p);

} // namespace trnsim::study
