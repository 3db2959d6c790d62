// The published Neuron serving measurements through the full simulator: every row of
// tests/data/inference/neuron-published.csv is a scenario in scenarios/validation/inference/
// (written by scripts/gen-inference-validation.py), loaded by config and run by
// sim::run_serving (the fleet on the engine, one replica's ReplicaScheduler). The test
//   1. checks that each scenario describes the replica the accuracy test's closed-form driver
//      builds for the row (serving::serving_spec_for), so both paths model the same thing;
//   2. checks that the fleet reproduces the closed-form driver
//      (support/serving_benchmark.hpp) on the same cost model within kFleetTolerance (below,
//      with what differs);
//   3. prints published vs simulated TTFT p50, TPOT p50 and output tokens/s with the errors,
//      and fails when a held-out set's mean absolute error is worse than the figures
//      documented in docs/validation.md ("Serving").
// Fitted rows (marked *): the batch-1 INF-T1 and INF-I1 latency rows of Llama-2-70b and
// Llama-2-7b and INF-T2b's BF16 run, on which the chips' serving coefficients were fitted
// (accuracy_test.cpp); all others are held out. Nothing here fits anything.
//
// TPOT is compared as each benchmark reports it: Transformers NeuronX's per-token latency
// percentiles (the fleet's ITL, metrics.hpp) for the static-batch rows, vLLM's per-request
// TPOT for the closed-loop rows.
#include "support/serving_published.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/serving/iteration_cost.hpp"
#include "trnsim/sim/serve_scenario.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

namespace trnsim {
namespace {

namespace fs = std::filesystem;
using serving::PublishedRow;

fs::path source(const char* p) { return fs::path(TRNSIM_SOURCE_DIR) / p; }

/// The scenario file of a row (scripts/gen-inference-validation.py, file_name).
std::string file_name(const PublishedRow& r) {
    std::string s = r.key + "-" + r.table + "-" + r.preset + "-" + std::to_string(r.input) +
                    "+" + std::to_string(r.output) + "-c" + std::to_string(r.max_context) +
                    "-b" + std::to_string(r.batch) +
                    (r.speculative_k > 0 ? "-k" + std::to_string(r.speculative_k) : "");
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s + ".yaml";
}

/// The rows a chip's serving coefficients were fitted on: trn1's the INF-T1 batch-1 Llama-2
/// latency rows, inf2's host costs the same rows of INF-I1, trn2's the INF-T2b run
/// (accuracy_test.cpp).
bool fitted(const PublishedRow& r) {
    return ((r.key == "INF-T1" || r.key == "INF-I1") && r.table == "latency" &&
            (r.model == "Llama-2-70b" || r.model == "Llama-2-7b")) ||
           (r.key == "INF-T2b" && r.speculative_k == 0);
}

struct Errors {
    double sum = 0.0;
    int n = 0;
    void add(double e) {
        sum += std::fabs(e);
        ++n;
    }
    double mae() const { return n > 0 ? sum / n : 0.0; }
};

// The fleet against the closed-form driver on the same cost model. What differs:
//   - the router hop (1 us, the scenarios' router_latency) adds to TTFT and to the span of the
//     tokens/s; for a static batch the fleet's ITL p50 interpolates between the two middle
//     tokens (type 7) where the driver takes the lower (nearest rank), which matters only
//     when they fall in different buckets. Together below 0.1% on every row without
//     speculation (the closed-loop baseline included: its two clients stay in step).
//   - with speculation the driver gains the mean acceptance length (3.22) every iteration,
//     so its two clients finish together and their next prompts are prefilled together in a
//     prefill-only iteration (two context graphs); the scheduler draws each sequence's
//     acceptances, the clients drift apart, and a new prompt waits for the verification in
//     progress, then is prefilled alone beside the other's next one (one context graph in a
//     mixed iteration): TTFT about a third higher (104 ms against the driver's 79 ms: a
//     32 ms verification, then the mixed iteration), TPOT within 1%, tokens/s 4% lower.
//     With every draft accepted (acceptance 1, 1, 1: exactly 4 tokens a step, no draws) the
//     two agree to kTolerance (SpeculativeLockstepMatchesTheDriver below).
constexpr double kTolerance = 0.001;
constexpr double kDrawnTtftTolerance = 0.40;
constexpr double kDrawnTolerance = 0.10;

TEST(ServingValidation, PublishedRowsThroughTheFleet) {
    const auto rows =
        serving::read_published_rows(source("tests/data/inference/neuron-published.csv"));
    const fs::path dir = source("scenarios/validation/inference");
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        files += e.path().extension() == ".yaml" ? 1 : 0;
    }
    // A speculative row whose acceptance is not published has no scenario (a run draws each
    // position's acceptance); accuracy_test.cpp reports what it implies.
    const auto simulated = [](const PublishedRow& r) {
        return r.speculative_k == 0 || r.acceptance_length > 0.0;
    };
    EXPECT_EQ(files, static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), simulated)))
        << "one scenario per row: run scripts/gen-inference-validation.py";

    struct Set {
        Errors ttft, ttft_repro, tpot, tps;
    };
    std::map<std::string, Set> sets;
    std::printf("\n%-3s %-58s %19s %19s %21s\n", "", "row (input+output @compiled, batch)",
                "TTFT p50 ms", "TPOT p50 ms", "output tok/s");
    std::printf("%-3s %-58s %6s %6s %5s  %6s %6s %5s  %7s %7s %5s  %s\n", "", "", "pub", "sim",
                "err", "pub", "sim", "err", "pub", "sim", "err", "sim vs closed form");
    double worst = 0.0; // fleet vs driver, rows without speculation
    for (const PublishedRow& row : rows) {
        if (!simulated(row)) {
            continue;
        }
        const fs::path file = dir / file_name(row);
        ASSERT_TRUE(fs::exists(file)) << file;
        const config::ScenarioSpec spec = config::load_scenario(file.string());
        const serving::ServingSpec& got = spec.inference.serving;

        // 1. The scenario is the accuracy test's replica of the row.
        std::optional<workload::ModelSpec> draft;
        if (!row.draft.empty()) {
            draft = config::load_model(row.draft);
        }
        const serving::ServingSpec want = serving::serving_spec_for(row, draft);
        const workload::ModelSpec model = config::load_model(row.preset);
        EXPECT_EQ(spec.hardware.chip.name, config::load_chip(row.chip).name) << file;
        EXPECT_EQ(spec.hardware.lnc, row.lnc) << file;
        EXPECT_EQ(spec.inference.model.layers, model.layers) << file;
        EXPECT_EQ(spec.inference.model.hidden, model.hidden) << file;
        EXPECT_EQ(got.tp, want.tp) << file;
        EXPECT_EQ(got.max_batch, want.max_batch) << file;
        EXPECT_EQ(got.max_context, want.max_context) << file;
        EXPECT_EQ(got.weight_bytes, want.weight_bytes) << file;
        EXPECT_EQ(got.precision, want.precision) << file;
        EXPECT_EQ(got.prefill_batch, want.prefill_batch) << file;
        EXPECT_EQ(got.materialized_attention, want.materialized_attention) << file;
        EXPECT_EQ(got.collective_tiling, want.collective_tiling) << file;
        EXPECT_EQ(got.buckets, want.buckets) << file;
        EXPECT_EQ(got.prefill_buckets, want.prefill_buckets) << file;
        EXPECT_EQ(got.speculative.has_value(), want.speculative.has_value()) << file;
        if (got.speculative && want.speculative) {
            EXPECT_EQ(got.speculative->k, want.speculative->k) << file;
            EXPECT_EQ(got.speculative->fused, want.speculative->fused) << file;
            double length = 1.0;
            for (double a : got.speculative->acceptance) {
                length += a;
            }
            EXPECT_NEAR(length, row.acceptance_length, 0.005) << file;
        }
        EXPECT_EQ(got.replicas, 1) << file;
        const bool closed_loop = row.requests > 0;
        EXPECT_EQ(spec.inference.requests.count, closed_loop ? row.requests : row.batch) << file;
        EXPECT_EQ(spec.inference.requests.arrival.concurrency, row.batch) << file;

        // 2. The closed-form driver on the scenario's own cost model, and the fleet.
        const int lnc = spec.hardware.lnc;
        const serving::IterationCostModel cost(
            spec.inference.model, spec.hardware.chip, lnc, got,
            serving::ReplicaPlacement::single(spec.hardware.chip, lnc, got.tp),
            spec.hardware.hbm_reserve);
        const serving::BenchmarkResult cf = serving::run_published_row(row, cost);
        const sim::ServingScenarioRun run = sim::run_serving(spec, 1);
        const serving::ServingSummary& s = run.run.summary;
        ASSERT_EQ(run.run.stats.replicas, 1u) << file;
        const double ttft = s.ttft_p50.seconds();
        const double tpot = closed_loop ? s.tpot_p50.seconds() : s.itl_p50.seconds();
        const double tps = s.output_tokens_per_s;
        const double d_ttft = ttft / cf.ttft_p50.seconds() - 1.0;
        const double d_tpot = tpot / cf.tpot_p50.seconds() - 1.0;
        const double d_tps = tps / cf.output_tokens_per_s - 1.0;
        if (row.speculative_k > 0) {
            EXPECT_LT(std::fabs(d_ttft), kDrawnTtftTolerance) << file;
            EXPECT_LT(std::fabs(d_tpot), kDrawnTolerance) << file;
            EXPECT_LT(std::fabs(d_tps), kDrawnTolerance) << file;
        } else {
            EXPECT_LT(std::fabs(d_ttft), kTolerance) << file;
            EXPECT_LT(std::fabs(d_tpot), kTolerance) << file;
            EXPECT_LT(std::fabs(d_tps), kTolerance) << file;
            worst = std::max({worst, std::fabs(d_ttft), std::fabs(d_tpot), std::fabs(d_tps)});
        }

        // 3. Against the published figures.
        const double e_ttft = ttft * 1e3 / row.ttft_p50_ms - 1.0;
        const double e_tpot = tpot * 1e3 / row.tpot_p50_ms - 1.0;
        const double e_tps = tps / row.output_tok_s - 1.0;
        char ttft_err[16] = "    -";
        if (row.ttft_published()) {
            std::snprintf(ttft_err, sizeof ttft_err, "%+4.0f%%", 100.0 * e_ttft);
        }
        std::printf("%-3s %-58s %6.1f %6.1f %5s  %6.2f %6.2f %+4.0f%%  %7.1f %7.1f "
                    "%+4.0f%%  %+.2f/%+.2f/%+.2f%%%s%s\n",
                    fitted(row) ? "*" : "", row.label().c_str(), row.ttft_p50_ms, ttft * 1e3,
                    ttft_err, row.tpot_p50_ms, tpot * 1e3, 100.0 * e_tpot,
                    row.output_tok_s, tps, 100.0 * e_tps, 100.0 * d_ttft, 100.0 * d_tpot,
                    100.0 * d_tps, row.ttft_unreproducible() ? "  (u)" : "",
                    row.throughput_inconsistent() ? "  (t)" : "");
        if (!fitted(row)) {
            Set& set = sets[row.key];
            if (row.ttft_published()) {
                set.ttft.add(e_ttft);
                if (!row.ttft_unreproducible()) {
                    set.ttft_repro.add(e_ttft);
                }
            }
            set.tpot.add(e_tpot);
            if (!row.throughput_inconsistent() && !row.ttft_unreproducible()) {
                set.tps.add(e_tps);
            }
        }
    }
    std::printf("(u) TTFT marked unreproducible in the data file; (t) published tok/s disagrees "
                "with its own TTFT and TPOT; last column: the fleet vs the closed-form driver "
                "(TTFT/TPOT/tok/s %%), at most %.3f%% on the rows without speculation\n",
                100.0 * worst);
    for (const auto& [key, set] : sets) {
        std::printf("held-out %s rows (%d): TTFT p50 MAE %.1f%%, over the %d reproducible rows "
                    "%.1f%%; TPOT p50 MAE %.1f%%; output tok/s MAE %.1f%% over %d rows\n",
                    key.c_str(), set.tpot.n, 100.0 * set.ttft.mae(), set.ttft_repro.n,
                    100.0 * set.ttft_repro.mae(), 100.0 * set.tpot.mae(), 100.0 * set.tps.mae(),
                    set.tps.n);
    }
    // docs/validation.md ("Serving"), held out, as documented (to its 0.1%): a regression in
    // the cost model, the scheduler or the fleet shows here.
    const Set& t1 = sets["INF-T1"];
    const Set& i1 = sets["INF-I1"];
    EXPECT_EQ(t1.ttft.n, 29);
    EXPECT_EQ(i1.ttft.n, 34);
    EXPECT_EQ(sets["INF-T2"].ttft.n, 2);
    EXPECT_EQ(sets["INF-T2c"].tpot.n, 2);
    EXPECT_EQ(sets["INF-T2d"].tpot.n, 1);
    EXPECT_EQ(sets["INF-T2c"].ttft.n, 1); // the Qwen3 page publishes no TTFT
    EXPECT_LE(t1.tpot.mae(), 0.0635);
    EXPECT_LE(i1.tpot.mae(), 0.0605);
    EXPECT_LE(t1.ttft.mae(), 0.3090);
    EXPECT_LE(i1.ttft.mae(), 0.2095);
    EXPECT_LE(t1.ttft_repro.mae(), 0.1540);
    EXPECT_LE(i1.ttft_repro.mae(), 0.1275);
    EXPECT_LE(t1.tps.mae(), 0.0750);
    EXPECT_LE(i1.tps.mae(), 0.0695);
}

// The speculative row with every draft accepted: each verification yields exactly 4 tokens
// (127 after the first: 31 steps of 4 and one of 3, 32 steps, as the driver's 1 + 32 x 4 >=
// 128), nothing is drawn, the clients stay in step, and the fleet equals the closed-form
// driver at tokens_per_step 4.
TEST(ServingValidation, SpeculativeLockstepMatchesTheDriver) {
    config::ScenarioSpec spec = config::load_scenario(
        source("scenarios/validation/inference/inf-t2-vllm-llama3-8b-512+128-c2048-b2-k3.yaml")
            .string());
    spec.inference.serving.speculative->acceptance = {1.0, 1.0, 1.0};
    const serving::ServingSpec& sv = spec.inference.serving;
    const int lnc = spec.hardware.lnc;
    const serving::IterationCostModel cost(
        spec.inference.model, spec.hardware.chip, lnc, sv,
        serving::ReplicaPlacement::single(spec.hardware.chip, lnc, sv.tp),
        spec.hardware.hbm_reserve);
    const serving::BenchmarkResult cf =
        serving::closed_loop_benchmark(cost, 2, 50, 512, 128, 4.0);
    const sim::ServingScenarioRun run = sim::run_serving(spec, 1);
    const serving::ServingSummary& s = run.run.summary;
    EXPECT_NEAR(s.ttft_p50.seconds() / cf.ttft_p50.seconds(), 1.0, kTolerance);
    EXPECT_NEAR(s.tpot_p50.seconds() / cf.tpot_p50.seconds(), 1.0, kTolerance);
    EXPECT_NEAR(s.output_tokens_per_s / cf.output_tokens_per_s, 1.0, kTolerance);
}

} // namespace
} // namespace trnsim
