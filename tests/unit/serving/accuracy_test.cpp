// The serving cost model against the published Neuron serving measurements (INF-T1: 36
// trn1.32xlarge rows of Transformers NeuronX, SDK 2.18; INF-I1: the 42 inf2.48xlarge rows of
// the same release; INF-T2, INF-T2b, INF-T2c, INF-T2d: Trainium2 runs under vLLM and NxD
// Inference), through the closed-form benchmark drivers (support/serving_benchmark.hpp).
//
// trn1's serving coefficients were fitted to the batch-1 latency rows of Llama-2-70b and
// Llama-2-7b (7 INF-T1 rows, marked * below), inf2's host costs to the same rows of INF-I1 (8),
// trn2's two to INF-T2b's BF16 run; every other row is held out. RefitReproduces refits them
// from the chips' hardware data and checks the chip files; PublishedRows prints the table of
// docs/validation.md ("Serving") and fails beyond the tolerances below.
#include "support/serving_published.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

namespace trnsim::serving {
namespace {

std::filesystem::path source(const char* p) {
    return std::filesystem::path(TRNSIM_SOURCE_DIR) / p;
}

std::vector<PublishedRow> rows() {
    return read_published_rows(source("tests/data/inference/neuron-published.csv"));
}

/// The rows the trn1 coefficients were fitted on (topologies/chips/trn1.yaml, serving).
bool fitted(const PublishedRow& r) {
    return r.key == "INF-T1" && r.table == "latency" &&
           (r.model == "Llama-2-70b" || r.model == "Llama-2-7b");
}

/// The replica of a row, on its chip preset with `costs` as the serving coefficients.
std::unique_ptr<IterationCostModel> replica(const PublishedRow& row,
                                            const compute::ServingCosts& costs,
                                            ContextBuckets buckets = ContextBuckets::half) {
    compute::ChipSpec chip = config::load_chip(row.chip);
    chip.serving = costs;
    const workload::ModelSpec model = config::load_model(row.preset);
    std::optional<workload::ModelSpec> draft;
    if (!row.draft.empty()) {
        draft = config::load_model(row.draft);
    }
    return std::make_unique<IterationCostModel>(
        model, chip, row.lnc, serving_spec_for(row, draft, buckets),
        ReplicaPlacement::single(chip, row.lnc, row.tp), chip.hbm_runtime_reserve);
}

/// The rows inf2's host costs are fitted on (topologies/chips/inf2.yaml, serving): INF-I1's
/// batch-1 latency rows of the models trn1's were fitted on.
bool fitted_inf2(const PublishedRow& r) {
    return r.key == "INF-I1" && r.table == "latency" &&
           (r.model == "Llama-2-70b" || r.model == "Llama-2-7b");
}

/// The rows the trn2 coefficients are fitted on: the INF-T2b BF16 run without speculation.
bool fitted_trn2(const PublishedRow& r) { return r.key == "INF-T2b" && r.speculative_k == 0; }

/// Trainium2 on its own runs, at most two coefficients: the prefill efficiency and the cost
/// per graph (iteration_overhead), the minimiser of the squared relative errors of TTFT p50
/// and TPOT p50 over the INF-T2b fit rows. The per-kernel and per-context-graph costs stay
/// trn1's. For a given efficiency every figure is linear in the cost per graph (f + g x c,
/// IterationBreakdown), so c has a closed form; the efficiency is searched on grids of 0.01,
/// then 0.001 around the best. Rounded as the chip file stores it.
compute::ServingCosts refit_trn2() {
    const compute::ServingCosts trn1 = config::load_chip("trn1").serving;
    const auto all = rows();
    struct Best {
        double residual = std::numeric_limits<double>::infinity();
        compute::ServingCosts costs;
    } best;
    const auto try_efficiency = [&](double eff) {
        compute::ServingCosts c = trn1;
        c.prefill_efficiency = eff;
        c.iteration_overhead = Duration::zero();
        std::vector<std::array<double, 3>> figures; // fixed s, graphs, published s
        for (const PublishedRow& row : all) {
            if (!fitted_trn2(row)) {
                continue;
            }
            const BenchmarkResult r = run_published_row(row, *replica(row, c));
            figures.push_back({r.ttft_terms.seconds(c), r.ttft_terms.graphs, row.ttft_p50_ms * 1e-3});
            figures.push_back({r.tpot_terms.seconds(c), r.tpot_terms.graphs, row.tpot_p50_ms * 1e-3});
        }
        double num = 0.0, den = 0.0;
        for (const auto& [f, g, p] : figures) {
            num += g / p * (p - f) / p;
            den += (g / p) * (g / p);
        }
        const double per_graph = den > 0.0 ? std::max(0.0, num / den) : 0.0;
        c.iteration_overhead = Duration::from_ns(std::llround(per_graph * 1e8) * 10);
        double residual = 0.0;
        for (const auto& [f, g, p] : figures) {
            const double e = (f + g * c.iteration_overhead.seconds() - p) / p;
            residual += e * e;
        }
        if (residual < best.residual) {
            best = {residual, c};
        }
    };
    for (int i = 5; i <= 100; ++i) {
        try_efficiency(i * 0.01);
    }
    const double coarse = best.costs.prefill_efficiency;
    for (int i = -10; i <= 10; ++i) {
        const double eff = std::round((coarse + i * 0.001) * 1000.0) / 1000.0;
        if (eff > 0.0 && eff <= 1.0) {
            try_efficiency(eff);
        }
    }
    return best.costs;
}

/// The fit points of the rows `in_fit` selects, each replica built with `c`.
std::vector<FitPoint> fit_points(const std::vector<PublishedRow>& all,
                                 bool (*in_fit)(const PublishedRow&),
                                 const compute::ServingCosts& c) {
    std::vector<FitPoint> points;
    for (const PublishedRow& row : all) {
        if (in_fit(row)) {
            const BenchmarkResult r = run_published_row(row, *replica(row, c));
            points.push_back(
                {r.ttft_terms, r.tpot_terms, row.ttft_p50_ms * 1e-3, row.tpot_p50_ms * 1e-3});
        }
    }
    return points;
}

/// Inferentia2's host costs on its own rows: the per-kernel, per-graph and per-context-graph
/// costs by the same non-negative least squares as trn1's, the prefill efficiency held at
/// trn1's (the same NeuronCore-v2), rounded as the chip file stores them.
compute::ServingCosts refit_inf2() {
    const double efficiency = config::load_chip("trn1").serving.prefill_efficiency;
    const auto all = rows();
    compute::ServingCosts c;
    c.prefill_efficiency = efficiency;
    const std::vector<FitPoint> points = fit_points(all, fitted_inf2, c);
    compute::ServingCosts fit = fit_serving_costs([&](double) { return points; });
    fit.prefill_efficiency = efficiency;
    return fit;
}

compute::ServingCosts refit() {
    const auto all = rows();
    return fit_serving_costs([&](double efficiency) {
        compute::ServingCosts c;
        c.prefill_efficiency = efficiency;
        return fit_points(all, fitted, c);
    });
}

TEST(ServingFit, RefitReproducesTheChipFiles) {
    const compute::ServingCosts fit = refit();
    std::printf("refit on the batch-1 latency rows of Llama-2-70b and Llama-2-7b (INF-T1): "
                "kernel_overhead %.0f ns, iteration_overhead %.0f ns, prefill_graph_overhead "
                "%.0f ns, prefill_efficiency %.3f\n",
                fit.kernel_overhead.seconds() * 1e9, fit.iteration_overhead.seconds() * 1e9,
                fit.prefill_graph_overhead.seconds() * 1e9, fit.prefill_efficiency);
    const compute::ChipSpec trn1 = config::load_chip("trn1");
    EXPECT_EQ(trn1.serving.kernel_overhead, fit.kernel_overhead);
    EXPECT_EQ(trn1.serving.iteration_overhead, fit.iteration_overhead);
    EXPECT_DOUBLE_EQ(trn1.serving.prefill_efficiency, fit.prefill_efficiency);
    EXPECT_EQ(trn1.serving.prefill_graph_overhead, fit.prefill_graph_overhead);
    // Inferentia2: its host costs on its own rows, the efficiency trn1's (docs/serving.md).
    const compute::ServingCosts i2 = refit_inf2();
    std::printf("refit inf2 on the batch-1 latency rows of Llama-2-70b and Llama-2-7b (INF-I1): "
                "kernel_overhead %.0f ns, iteration_overhead %.0f ns, prefill_graph_overhead "
                "%.0f ns (prefill_efficiency trn1's)\n",
                i2.kernel_overhead.seconds() * 1e9, i2.iteration_overhead.seconds() * 1e9,
                i2.prefill_graph_overhead.seconds() * 1e9);
    const compute::ChipSpec inf2 = config::load_chip("inf2");
    EXPECT_EQ(inf2.serving.kernel_overhead, i2.kernel_overhead);
    EXPECT_EQ(inf2.serving.iteration_overhead, i2.iteration_overhead);
    EXPECT_DOUBLE_EQ(inf2.serving.prefill_efficiency, trn1.serving.prefill_efficiency);
    EXPECT_EQ(inf2.serving.prefill_graph_overhead, i2.prefill_graph_overhead);
    // Trainium2 on its own runs (INF-T2b): two coefficients; the other two are trn1's.
    const compute::ServingCosts t2 = refit_trn2();
    std::printf("refit trn2 on the INF-T2b BF16 run: iteration_overhead %.0f ns, "
                "prefill_efficiency %.3f\n",
                t2.iteration_overhead.seconds() * 1e9, t2.prefill_efficiency);
    const compute::ChipSpec trn2 = config::load_chip("trn2");
    EXPECT_EQ(trn2.serving.iteration_overhead, t2.iteration_overhead);
    EXPECT_DOUBLE_EQ(trn2.serving.prefill_efficiency, t2.prefill_efficiency);
    EXPECT_EQ(trn2.serving.kernel_overhead, trn1.serving.kernel_overhead);
    EXPECT_EQ(trn2.serving.prefill_graph_overhead, trn1.serving.prefill_graph_overhead);
}

TEST(ServingFit, TheFitMinimisesItsObjective) {
    // Moving any coefficient away from the fit (within its constraints) does not lower the
    // squared relative error on the fit rows.
    const compute::ServingCosts fit = refit();
    const auto all = rows();
    const auto points_at = [&](const compute::ServingCosts& c) {
        return fit_points(all, fitted, c);
    };
    const double best = fit_residual(points_at(fit), fit);
    for (const double eff : {fit.prefill_efficiency - 0.01, fit.prefill_efficiency + 0.01}) {
        compute::ServingCosts c = fit;
        c.prefill_efficiency = eff;
        EXPECT_GE(fit_residual(points_at(c), c), best * (1.0 - 1e-9)) << eff;
    }
    for (const std::int64_t d : {-100000, 100000}) {
        compute::ServingCosts c = fit;
        c.iteration_overhead = fit.iteration_overhead + Duration::from_ns(d);
        EXPECT_GE(fit_residual(points_at(c), c), best * (1.0 - 1e-9)) << d;
    }
    for (const std::int64_t d : {-100000, 100000}) {
        compute::ServingCosts c = fit;
        c.prefill_graph_overhead = fit.prefill_graph_overhead + Duration::from_ns(d);
        EXPECT_GE(fit_residual(points_at(c), c), best * (1.0 - 1e-9)) << d;
    }
    compute::ServingCosts c = fit;
    c.kernel_overhead = fit.kernel_overhead + Duration::from_ns(200);
    EXPECT_GE(fit_residual(points_at(c), c), best * (1.0 - 1e-9));
}

struct Errors {
    double sum = 0.0;
    double worst = 0.0;
    std::string worst_row;
    int n = 0;
    void add(double e, const std::string& row) {
        sum += std::fabs(e);
        ++n;
        if (std::fabs(e) > std::fabs(worst)) {
            worst = e;
            worst_row = row;
        }
    }
    double mae() const { return n > 0 ? sum / n : 0.0; }
};

/// TTFT p50 of a TNx row compiled with one full-length context bucket, ms (NaN when that
/// replica does not fit in HBM: its largest graph's workspace grows with the bucket).
double full_ttft_ms(const PublishedRow& row, const compute::ChipSpec& chip) {
    try {
        const auto model = replica(row, chip.serving, ContextBuckets::full);
        return run_published_row(row, *model).ttft_p50.seconds() * 1e3;
    } catch (const InputError&) {
        return std::nan("");
    }
}

struct Band {
    PublishedRow row;
    double half_ms = 0.0;
    double full_ms = 0.0;
};

/// How far outside its band a (u) row may lie and still count as explained.
constexpr double kBandTolerance = 0.20;
/// (u) rows the band explains at the level reached: a regression guard (more may fall inside).
constexpr int kBandRowsExplained = 15;

TEST(ServingAccuracy, PublishedRows) {
    std::vector<Band> bands;
    // Held-out errors per data set: every row, and the rows whose TTFT is reproducible.
    struct Set {
        Errors ttft, ttft_repro, tpot, tps;
    };
    std::map<std::string, Set> sets;
    std::printf("\n%-3s %-58s %19s %19s %21s\n", "", "row (input+output @compiled, batch)",
                "TTFT p50 ms", "TPOT p50 ms", "output tok/s");
    std::printf("%-3s %-58s %6s %6s %5s  %6s %6s %5s  %7s %7s %5s\n", "", "", "pub", "model",
                "err", "pub", "model", "err", "pub", "model", "err");
    std::vector<std::string> unpublished_acceptance;
    for (const PublishedRow& row : rows()) {
        const compute::ChipSpec chip = config::load_chip(row.chip);
        const auto model = replica(row, chip.serving);
        const BenchmarkResult r = run_published_row(row, *model);
        if (row.speculative_k > 0 && row.acceptance_length <= 0.0) {
            // Held out, acceptance not published (INF-T2b's fused speculation): TTFT against
            // the published p50, and the acceptance length the TPOT implies must be one a
            // draft of k tokens can reach.
            const double e_ttft = r.ttft_p50.seconds() * 1e3 / row.ttft_p50_ms - 1.0;
            const double length = implied_acceptance_length(row, *model);
            // The same run with the draft compiled as graphs of its own, for docs/serving.md.
            PublishedRow apart = row;
            apart.fused_speculation = !row.fused_speculation;
            const double other = implied_acceptance_length(apart, *replica(apart, chip.serving));
            char line[320];
            std::snprintf(line, sizeof line,
                          "    %-58s TTFT %6.1f ms against %6.1f (%+.0f%%); TPOT %.2f ms "
                          "needs %.2f tokens a step (at most %d; %s: %.2f)",
                          row.label().c_str(), r.ttft_p50.seconds() * 1e3, row.ttft_p50_ms,
                          100.0 * e_ttft, row.tpot_p50_ms, length, 1 + row.speculative_k,
                          row.fused_speculation ? "as separate graphs" : "fused", other);
            unpublished_acceptance.emplace_back(line);
            EXPECT_LT(std::fabs(e_ttft), 0.15) << row.label();
            EXPECT_GE(length, 1.0) << row.label();
            EXPECT_LE(length, 1.0 + row.speculative_k) << row.label();
            continue;
        }
        const double e_ttft = r.ttft_p50.seconds() * 1e3 / row.ttft_p50_ms - 1.0;
        const double e_tpot = r.tpot_p50.seconds() * 1e3 / row.tpot_p50_ms - 1.0;
        const double e_tps = r.output_tokens_per_s / row.output_tok_s - 1.0;
        const bool held_out = !fitted(row) && !fitted_trn2(row) && !fitted_inf2(row);
        char ttft_err[16] = "    -";
        if (row.ttft_published()) {
            std::snprintf(ttft_err, sizeof ttft_err, "%+4.0f%%", 100.0 * e_ttft);
        }
        std::printf("%-3s %-58s %6.1f %6.1f %5s  %6.2f %6.2f %+4.0f%%  %7.1f %7.1f "
                    "%+4.0f%%%s%s\n",
                    held_out ? "" : "*", row.label().c_str(), row.ttft_p50_ms,
                    r.ttft_p50.seconds() * 1e3, ttft_err, row.tpot_p50_ms,
                    r.tpot_p50.seconds() * 1e3, 100.0 * e_tpot, row.output_tok_s,
                    r.output_tokens_per_s, 100.0 * e_tps, row.ttft_unreproducible() ? "  (u)" : "",
                    row.throughput_inconsistent() ? "  (t)" : "");
        if (row.key == "INF-T2b") {
            // The Trn2 fit set (fitted_trn2): two coefficients on its two figures.
            EXPECT_LT(std::fabs(e_ttft), 0.15) << row.label();
            EXPECT_LT(std::fabs(e_tpot), 0.15) << row.label();
            continue;
        }
        if (row.key == "INF-T2") {
            // Held out entirely; AWS calls the figures representative (+-10%). The Trn2 cost per
            // graph is fitted on one 70B run at tp 64 (INF-T2b), where it also carries the
            // per-layer costs of 80 layers; the 8B rows run 1 graph a step (baseline: TPOT
            // +17%) or 4 with EAGLE-3 (+59%): guards at the level reached, both directions.
            EXPECT_LT(std::fabs(e_ttft), 0.35) << row.label();
            EXPECT_LT(std::fabs(e_tpot), row.speculative_k > 0 ? 0.65 : 0.25) << row.label();
            continue;
        }
        if (row.key == "INF-T2d") {
            // Held out: gpt-oss-120b under vLLM Neuron 2.32 on a trn2.48xlarge, buckets pinned
            // to the benchmark's shape. Its 7.00 ms TPOT is what the model's kernels and
            // collectives alone give (with trn1's 0.377 ms a graph: -5%); Trn2's 6.4 ms a
            // graph, fitted under NxD Inference 2.21, puts it +81%: guards at the level
            // reached, both directions.
            EXPECT_LT(std::fabs(e_ttft), 0.60) << row.label();
            EXPECT_LT(std::fabs(e_tpot), 0.90) << row.label();
            continue;
        }
        if (row.key == "INF-T2c") {
            // Held out: vLLM Neuron with synchronous scheduling on one trn2 chip (trn2.3xlarge).
            // Its step is mostly a cost per step: Qwen3-4B's TPOT (24.7 ms) is within 4% of
            // Llama-3.1-8B's (25.6 ms) with half the weights, against the model's 6.4 ms a
            // graph fitted under NxD Inference on a trn2.48xlarge: guards at the level
            // reached (TPOT -43% and -50%), both directions.
            if (row.ttft_published()) {
                EXPECT_LT(std::fabs(e_ttft), 0.50) << row.label();
            }
            EXPECT_LT(std::fabs(e_tpot), 0.55) << row.label();
            continue;
        }
        // Transformers NeuronX 2.18 on trn1 (INF-T1) and inf2 (INF-I1): TPOT within +-25% on
        // every trn1 row and every inf2 row but one (Mistral-7B b8 at 16,384: +47%).
        EXPECT_LT(std::fabs(e_tpot), row.key == "INF-T1" ? 0.25 : 0.50) << row.label();
        if (row.ttft_unreproducible()) {
            // The compiled context buckets are not published: the band between the samples'
            // half-size buckets and one full-length bucket (below).
            bands.push_back({row, r.ttft_p50.seconds() * 1e3, full_ttft_ms(row, chip)});
        } else if (row.key == "INF-I1" && held_out) {
            // The bound for every reproducible row, met on inf2 since its host costs
            // are its own (refit_inf2).
            EXPECT_LT(std::fabs(e_ttft), 0.30) << row.label();
        } else {
            // Regression guards at the level reached (short prompts: docs/validation.md).
            EXPECT_LT(std::fabs(e_ttft), 0.50) << row.label();
        }
        if (held_out) {
            Set& set = sets[row.key];
            set.ttft.add(e_ttft, row.label());
            if (!row.ttft_unreproducible()) {
                set.ttft_repro.add(e_ttft, row.label());
            }
            set.tpot.add(e_tpot, row.label());
            if (!row.throughput_inconsistent() && !row.ttft_unreproducible()) {
                set.tps.add(e_tps, row.label());
            }
        }
    }
    std::printf("(u) TTFT marked unreproducible in the data file; (t) published tok/s disagrees "
                "with its own TTFT and TPOT\n");
    std::printf("\nspeculative rows without a published acceptance (held out):\n");
    for (const std::string& line : unpublished_acceptance) {
        std::printf("%s\n", line.c_str());
    }
    EXPECT_EQ(unpublished_acceptance.size(), 1u);
    // The (u) rows against the band of their two plausible compilations: the published TTFT
    // inside [half, full] (each end widened by kBandTolerance) is explained by the bucket
    // configuration the benchmark does not publish.
    std::printf("\n(u) rows: TTFT p50 ms published, with half-size context buckets (the samples) "
                "and with one full-length bucket (prompts padded to it)\n");
    int inside = 0;
    Errors band_err;
    for (const Band& b : bands) {
        const double lo = std::min(b.half_ms, std::isnan(b.full_ms) ? b.half_ms : b.full_ms);
        const double hi = std::max(b.half_ms, std::isnan(b.full_ms) ? b.half_ms : b.full_ms);
        const double pub = b.row.ttft_p50_ms;
        // The error to the nearer end of the band (0 inside).
        const double e = pub < lo ? lo / pub - 1.0 : pub > hi ? hi / pub - 1.0 : 0.0;
        const bool in = pub >= lo * (1.0 - kBandTolerance) && pub <= hi * (1.0 + kBandTolerance);
        inside += in ? 1 : 0;
        band_err.add(e, b.row.label());
        char full[32];
        if (std::isnan(b.full_ms)) {
            std::snprintf(full, sizeof full, "%s", "does not fit");
        } else {
            std::snprintf(full, sizeof full, "%.1f", b.full_ms);
        }
        std::printf("    %-58s %8.1f  half %8.1f  full %12s  %s\n", b.row.label().c_str(), pub,
                    b.half_ms, full, in ? "in the band" : "outside");
    }
    std::printf("(u) rows within their band (+-%.0f%%): %d of %zu; error to the band MAE %.1f%% "
                "(worst %+.1f%%, %s)\n",
                100.0 * kBandTolerance, inside, bands.size(), 100.0 * band_err.mae(),
                100.0 * band_err.worst, band_err.worst_row.c_str());
    EXPECT_EQ(bands.size(), 17u);
    EXPECT_GE(inside, kBandRowsExplained);
    for (const auto& [key, set] : sets) {
        std::printf("held-out %s rows (%d): TTFT p50 MAE %.1f%% (worst %+.1f%%, %s); over the %d "
                    "reproducible rows %.1f%% (worst %+.1f%%, %s); TPOT p50 MAE %.1f%% (worst "
                    "%+.1f%%, %s); output tok/s MAE %.1f%% over %d rows\n",
                    key.c_str(), set.ttft.n, 100.0 * set.ttft.mae(), 100.0 * set.ttft.worst,
                    set.ttft.worst_row.c_str(), set.ttft_repro.n, 100.0 * set.ttft_repro.mae(),
                    100.0 * set.ttft_repro.worst, set.ttft_repro.worst_row.c_str(),
                    100.0 * set.tpot.mae(), 100.0 * set.tpot.worst, set.tpot.worst_row.c_str(),
                    100.0 * set.tps.mae(), set.tps.n);
    }
    // Issue 29's targets on the reproducible rows (TPOT MAE <= 8%, TTFT MAE <= 15%, every row
    // within +-30%) hold on inf2 (the per-row bound above); on trn1 TPOT's does, TTFT's guards
    // are the levels reached (15.4%).
    const Set& t1 = sets["INF-T1"];
    const Set& i1 = sets["INF-I1"];
    EXPECT_EQ(t1.ttft.n, 29);
    EXPECT_EQ(i1.ttft.n, 34);
    EXPECT_LE(t1.tpot.mae(), 0.07);
    EXPECT_LE(i1.tpot.mae(), 0.07);
    EXPECT_LE(t1.ttft_repro.mae(), 0.17);
    EXPECT_LE(i1.ttft_repro.mae(), 0.15);
    EXPECT_LE(t1.ttft.mae(), 0.32);
    EXPECT_LE(i1.ttft.mae(), 0.22);
}

} // namespace
} // namespace trnsim::serving
