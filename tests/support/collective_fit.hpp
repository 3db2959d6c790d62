// The published nccom-test tables (tests/data/collectives/nccom-published.csv) against the
// collective benchmark (sim::run_collective_bench, what `trnsim collective` prints), and the fit
// of a chip's collective engine (compute::CollectiveEngineSpec) to the rows marked `fitted`.
//
// The fit is the reproducible procedure behind the `collectives` sections of the chip files:
// it minimises the sum over the fitted rows of ln(simulated time / published time)^2, which is
// the same as ln of the bus bandwidth ratio, over
//   launch             0 to 2 ms,
//   rank_bandwidth     10 GB/s to 1 TB/s (searched in ln),
//   efa_step_overhead  0 to 1 ms (only when a fitted table spans several instances),
// by coordinate descent: four rounds of a 32-step golden-section search on each parameter in
// turn from (launch 0, 100 GB/s, 0), then each value rounded to 3 significant digits. The
// result depends only on the chip's data, the fabric and the table.
#pragma once

#include "support/csv_rows.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/network/collective_spec.hpp"
#include "trnsim/sim/collective_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

namespace trnsim::test {

struct NccomRow {
    std::string table, source, chip;
    std::int64_t instances = 1, ranks = 2;
    network::CollectiveOp op = network::CollectiveOp::all_reduce;
    std::string dtype;
    double bytes = 0.0;
    double time_us = 0.0;
    double busbw_printed = 0.0; ///< in busbw_unit
    std::string busbw_unit;     ///< GiB/s (the 2023 tables) or GB/s (decimal: the 2026 ones)
    std::string use; ///< fitted, held_out or context

    /// The printed bus bandwidth in GiB/s.
    double busbw_gibps() const {
        return busbw_unit == "GB/s" ? busbw_printed * 1e9 / (1024.0 * 1024.0 * 1024.0)
                                    : busbw_printed;
    }
};

inline std::vector<NccomRow> read_nccom_rows(const std::string& path) {
    std::vector<NccomRow> rows;
    for (const std::vector<std::string>& f : read_csv_rows(path, 12, "nccom")) {
        NccomRow r;
        r.table = f[0];
        r.source = f[1];
        r.chip = f[2];
        r.instances = std::stoll(f[3]);
        r.ranks = std::stoll(f[4]);
        r.op = f[5] == "all_gather" ? network::CollectiveOp::all_gather
                                    : network::CollectiveOp::all_reduce;
        r.dtype = f[6];
        r.bytes = std::stod(f[7]);
        r.time_us = std::stod(f[8]);
        r.busbw_printed = std::stod(f[9]);
        r.busbw_unit = f[10];
        if (r.busbw_unit != "GiB/s" && r.busbw_unit != "GB/s") {
            throw std::runtime_error(path + ": busbw_unit must be GiB/s or GB/s, not " +
                                     r.busbw_unit);
        }
        r.use = f[11];
        rows.push_back(r);
    }
    return rows;
}

/// The fabric of a chip's nccom-test tables: its UltraCluster.
inline topology::FabricSpec nccom_fabric(const compute::ChipSpec& chip) {
    return config::load_fabric(chip.name + "-ultracluster");
}

/// Simulated seconds of every row of `rows` (rows of one chip) with `chip` on `fabric`
/// (nccom_fabric of the chip).
inline std::vector<double> simulate_nccom_rows(const compute::ChipSpec& chip,
                                               const std::vector<NccomRow>& rows,
                                               const topology::FabricSpec& fabric) {
    std::vector<double> out(rows.size(), 0.0);
    // One benchmark per table (its sizes in one run).
    std::map<std::string, std::vector<std::size_t>> tables;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        tables[rows[i].table].push_back(i);
    }
    for (const auto& [name, index] : tables) {
        const NccomRow& first = rows[index.front()];
        sim::CollectiveBenchSpec spec;
        spec.chip = chip;
        spec.fabric = fabric;
        spec.cluster.instances = first.instances;
        spec.op = first.op;
        spec.ranks = first.ranks;
        for (std::size_t i : index) {
            spec.sizes.push_back(rows[i].bytes);
        }
        const sim::CollectiveBenchResult r = sim::run_collective_bench(spec);
        for (std::size_t k = 0; k < index.size(); ++k) {
            out[index[k]] = r.rows[k].seconds;
        }
    }
    return out;
}

inline std::vector<double> simulate_nccom_rows(const compute::ChipSpec& chip,
                                               const std::vector<NccomRow>& rows) {
    return simulate_nccom_rows(chip, rows, nccom_fabric(chip));
}

/// Sum of ln(simulated / published time)^2 over `rows` on `fabric`.
inline double nccom_misfit(const compute::ChipSpec& chip, const std::vector<NccomRow>& rows,
                           const topology::FabricSpec& fabric) {
    const std::vector<double> t = simulate_nccom_rows(chip, rows, fabric);
    double sum = 0.0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const double e = std::log(t[i] / (rows[i].time_us * 1e-6));
        sum += e * e;
    }
    return sum;
}

/// Fits chip.collectives to the `fitted` rows of `chip_name` (see the header).
inline compute::CollectiveEngineSpec fit_collective_engine(const compute::ChipSpec& base,
                                                           const std::vector<NccomRow>& all) {
    std::vector<NccomRow> rows;
    bool several_instances = false;
    for (const NccomRow& r : all) {
        if (r.chip == base.name && r.use == "fitted") {
            rows.push_back(r);
            several_instances = several_instances || r.instances > 1;
        }
    }
    if (rows.empty()) {
        return base.collectives;
    }
    // The fabric is read once: every evaluation below only changes the collective engine.
    const topology::FabricSpec fabric = nccom_fabric(base);
    // Parameters: launch seconds, ln(bytes/s), EFA step overhead seconds.
    double x[3] = {0.0, std::log(100e9), 0.0};
    const double lo[3] = {0.0, std::log(10e9), 0.0};
    const double hi[3] = {2e-3, std::log(1e12), several_instances ? 1e-3 : 0.0};
    const auto chip_of = [&](const double* p) {
        compute::ChipSpec c = base;
        c.collectives.launch = Duration::from_seconds_ceil(p[0]);
        c.collectives.rank_bandwidth = Bandwidth::bytes_per_s(std::exp(p[1]));
        c.collectives.efa_step_overhead = Duration::from_seconds_ceil(p[2]);
        return c;
    };
    for (int round = 0; round < 4; ++round) {
        for (int k = 0; k < 3; ++k) {
            if (hi[k] <= lo[k]) {
                continue;
            }
            const auto f = [&](double v) {
                double p[3] = {x[0], x[1], x[2]};
                p[k] = v;
                return nccom_misfit(chip_of(p), rows, fabric);
            };
            x[k] = golden_section_min(f, lo[k], hi[k], [](double, double, int it) {
                return it < 32;
            });
        }
    }
    compute::CollectiveEngineSpec e;
    e.launch = Duration::from_ns(static_cast<std::int64_t>(round_significant(x[0] * 1e9, 3)));
    e.rank_bandwidth = Bandwidth::bytes_per_s(round_significant(std::exp(x[1]), 3));
    e.efa_step_overhead =
        Duration::from_ns(static_cast<std::int64_t>(round_significant(x[2] * 1e9, 3)));
    return e;
}

} // namespace trnsim::test
