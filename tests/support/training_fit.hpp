// The published Trainium training runs (tests/data/training/published-runs.csv) against the
// training step model (sim::run_training on the scenarios of scenarios/validation/), and the
// fit of a chip's compiled-graph coefficients (compute::TrainingCosts) to the rows marked
// `fitted`.
//
// The fit is the reproducible procedure behind the `training` sections of the chip files: it
// minimises the largest |ln(simulated / published throughput)| over the fitted rows of the
// chip, at step fidelity (what the validation reports), over engine_sync in [0, 1] by a
// golden-section search to a width of 0.002 (the largest error only grows away from its
// minimum: every row's throughput falls as engine_sync grows), then rounds it to 2 significant
// digits. The result depends only on the chip file and the scenarios.
#pragma once

#include "support/csv_rows.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/sim/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::test {

struct TrainingRow {
    std::string run, chip, source, scenario;
    double sequences_per_s = 0.0; ///< 0: none published
    std::string use;              ///< fitted, held_out or predicted
};

inline std::vector<TrainingRow> read_training_rows(
    const std::string& path = std::string(TRNSIM_SOURCE_DIR) +
                              "/tests/data/training/published-runs.csv") {
    std::vector<TrainingRow> rows;
    for (const std::vector<std::string>& f : read_csv_rows(path, 6, "training")) {
        TrainingRow r{f[0], f[1], f[2], f[3], f[4].empty() ? 0.0 : std::stod(f[4]), f[5]};
        rows.push_back(r);
    }
    return rows;
}

inline config::ScenarioSpec training_scenario(const TrainingRow& r,
                                              const std::vector<std::string>& overrides = {}) {
    return config::load_scenario(
        std::string(TRNSIM_SOURCE_DIR) + "/scenarios/validation/" + r.scenario, overrides);
}

/// Sequences per second of a scenario's step.
inline double sequences_per_s(const sim::TrainingRun& run) {
    return static_cast<double>(run.plan.training.global_batch) / run.step.step_time.seconds();
}

/// Simulated sequences per second of `r` with the chip's training section replaced.
inline double simulate_training_row(const TrainingRow& r, const compute::TrainingCosts& costs) {
    config::ScenarioSpec spec = training_scenario(r);
    spec.hardware.chip.training = costs;
    return sequences_per_s(sim::run_training(spec));
}

/// The largest |ln(simulated / published)| over `rows` with `costs`.
inline double training_misfit(const std::vector<TrainingRow>& rows,
                              const compute::TrainingCosts& costs) {
    double worst = 0.0;
    for (const TrainingRow& r : rows) {
        worst = std::max(worst, std::abs(std::log(simulate_training_row(r, costs) /
                                                  r.sequences_per_s)));
    }
    return worst;
}

/// Fits the training section of `chip_name` to its `fitted` rows (see the header); the
/// chip's own values when it has none.
inline compute::TrainingCosts fit_training_costs(const std::string& chip_name,
                                                 const std::vector<TrainingRow>& all) {
    std::vector<TrainingRow> rows;
    for (const TrainingRow& r : all) {
        if (r.chip == chip_name && r.use == "fitted") {
            rows.push_back(r);
        }
    }
    compute::TrainingCosts costs = config::load_chip(chip_name).training;
    if (rows.empty()) {
        return costs;
    }
    const auto f = [&](double s) {
        compute::TrainingCosts c = costs;
        c.engine_sync = s;
        return training_misfit(rows, c);
    };
    const double best = golden_section_min(f, 0.0, 1.0, [](double a, double b, int) {
        return b - a > 0.002;
    });
    costs.engine_sync = round_significant(best, 2);
    return costs;
}

} // namespace trnsim::test
