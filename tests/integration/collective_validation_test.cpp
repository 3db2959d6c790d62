// The collective model against the published nccom-test tables (tests/data/collectives/
// nccom-published.csv; docs/network.md, "Collectives against measurements"): the chips'
// collectives sections are what the fit of tests/support/collective_fit.hpp gives on the rows
// marked fitted; the table prints every row, and the rows that hold within +-30% in bus
// bandwidth are checked (docs/network.md names the misses).
#include "support/collective_fit.hpp"

#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace trnsim::test {
namespace {

std::vector<NccomRow> rows() {
    return read_nccom_rows(std::string(TRNSIM_SOURCE_DIR) +
                           "/tests/data/collectives/nccom-published.csv");
}

TEST(CollectiveFit, RefitReproducesTheChipFiles) {
    for (const char* name : {"trn1", "trn2"}) {
        const compute::ChipSpec chip = config::load_chip(name);
        const compute::CollectiveEngineSpec fit = fit_collective_engine(chip, rows());
        std::printf("%s: launch %.3g us, rank_bandwidth %.3g GB/s, efa_step_overhead %.3g us\n",
                    name, fit.launch.seconds() * 1e6, fit.rank_bandwidth.bytes_per_s() * 1e-9,
                    fit.efa_step_overhead.seconds() * 1e6);
        EXPECT_EQ(chip.collectives.launch, fit.launch) << name;
        EXPECT_DOUBLE_EQ(chip.collectives.rank_bandwidth.bytes_per_s(),
                         fit.rank_bandwidth.bytes_per_s())
            << name;
        EXPECT_EQ(chip.collectives.efa_step_overhead, fit.efa_step_overhead) << name;
    }
}

TEST(CollectiveFit, PublishedTables) {
    // Prints the table of docs/network.md: every row, published and simulated.
    const std::vector<NccomRow> all = rows();
    std::printf("%-17s %-9s %12s %10s %10s %7s %9s %9s %7s\n", "table", "use", "size(B)",
                "pub(us)", "sim(us)", "time", "pub GiB/s", "sim GiB/s", "busbw");
    int checked = 0;
    for (const char* name : {"trn1", "trn2"}) {
        const compute::ChipSpec chip = config::load_chip(name);
        std::vector<NccomRow> mine;
        for (const NccomRow& r : all) {
            if (r.chip == name) {
                mine.push_back(r);
            }
        }
        const std::vector<double> t = simulate_nccom_rows(chip, mine);
        for (std::size_t i = 0; i < mine.size(); ++i) {
            const NccomRow& r = mine[i];
            const double pub = r.time_us * 1e-6;
            const double busbw = network::bus_bandwidth_factor(r.op, static_cast<std::size_t>(r.ranks)) *
                                 r.bytes / t[i] / (1024.0 * 1024.0 * 1024.0);
            // Bus bandwidth ratio = published time / simulated time (same size, same factor).
            const double error = pub / t[i] - 1.0;
            std::printf("%-17s %-9s %12.0f %10.1f %10.1f %+6.0f%% %9.2f %9.2f %+6.0f%%\n",
                        r.table.c_str(), r.use.c_str(), r.bytes, r.time_us, t[i] * 1e6,
                        100.0 * (t[i] / pub - 1.0), r.busbw_gibps(), busbw, 100.0 * error);
            // What holds today (docs/network.md lists every miss and its reason): the on-chip
            // all-reduce of trn1 everywhere, and every table of trn1 and trn2 where it is
            // bandwidth-bound (16 MiB and more). The small and medium messages across two
            // trn1 instances, the trn1 32-rank all-gather and the trn2 tables at small sizes
            // follow algorithms of their runtime releases that one set of values cannot.
            const bool bound = r.bytes >= 16.0 * 1024 * 1024 || r.table == "trn1-2r-allr";
            // The one named miss (docs/network.md): at 16 MiB across two trn1 instances the
            // published time jumps from 1,419 us (8 MiB) to 2,138 us, the 2023 runtime's
            // change of algorithm there; the cheapest algorithm (hierarchical torus rings +
            // ring) takes 1,609 us, +33% in bus bandwidth. It is checked to stay a miss, so
            // the exception goes when the model explains it.
            const bool named_miss = r.table == "trn1-64r-2i-allr" && r.bytes == 16777216.0;
            if ((r.use == "fitted" || r.use == "held_out") && bound && r.chip == "trn1") {
                ++checked;
                if (named_miss) {
                    EXPECT_GT(std::abs(error), 0.30) << "no longer a miss: drop the exception";
                    EXPECT_LE(std::abs(error), 0.40) << r.table << " " << r.bytes;
                } else {
                    EXPECT_LE(std::abs(error), 0.30) << r.table << " " << r.bytes;
                }
            }
        }
    }
    EXPECT_GT(checked, 0);
}

} // namespace
} // namespace trnsim::test
