#include "support/serving_published.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

namespace trnsim::serving {

namespace {

std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, ',')) {
        out.push_back(cell);
    }
    if (!line.empty() && line.back() == ',') {
        out.emplace_back();
    }
    return out;
}

} // namespace

std::string PublishedRow::label() const {
    return key + " " + table + " " + model + " " + std::to_string(input) + "+" +
           std::to_string(output) + " @" + std::to_string(max_context) + " b" +
           std::to_string(batch) + (speculative_k > 0 ? " k" + std::to_string(speculative_k) : "");
}

bool PublishedRow::throughput_inconsistent() const {
    if (requests > 0 || output_tok_s <= 0.0) {
        return false;
    }
    const double implied = batch * static_cast<double>(output) /
                           ((ttft_p50_ms + static_cast<double>(output - 1) * tpot_p50_ms) * 1e-3);
    return std::fabs(output_tok_s / implied - 1.0) > 0.10;
}

std::vector<PublishedRow> read_published_rows(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) {
        throw InputError("published", "cannot read " + file.string());
    }
    std::string line;
    std::vector<std::string> header;
    std::vector<PublishedRow> rows;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const auto cells = split(line);
        if (header.empty()) {
            header = cells;
            continue;
        }
        if (cells.size() != header.size()) {
            throw InputError("published", file.string() + ":" + std::to_string(number) + ": " +
                                              std::to_string(cells.size()) + " cells, header has " +
                                              std::to_string(header.size()));
        }
        std::map<std::string, std::string> c;
        for (std::size_t i = 0; i < header.size(); ++i) {
            c[header[i]] = cells[i];
        }
        const auto num = [&](const char* k) {
            const std::string& v = c.at(k);
            return v.empty() ? 0.0 : std::stod(v);
        };
        const auto integer = [&](const char* k) { return static_cast<std::int64_t>(num(k)); };
        PublishedRow r;
        r.key = c.at("key");
        r.table = c.at("table");
        r.model = c.at("model");
        r.preset = c.at("preset");
        r.chip = c.at("chip");
        r.lnc = static_cast<int>(integer("lnc"));
        r.tp = static_cast<int>(integer("tp"));
        r.batch = static_cast<int>(integer("batch"));
        r.max_context = integer("max_context");
        r.input = integer("input");
        r.output = integer("output");
        r.weight_bytes = static_cast<int>(integer("weight_bytes"));
        r.stack = c.at("stack");
        r.requests = static_cast<int>(integer("requests"));
        r.draft = c.at("draft");
        r.speculative_k = static_cast<int>(integer("speculative_k"));
        r.acceptance_length = num("acceptance_length");
        r.ttft_p50_ms = num("ttft_p50_ms");
        r.ttft_p99_ms = num("ttft_p99_ms");
        r.tpot_p50_ms = num("tpot_p50_ms");
        r.tpot_p99_ms = num("tpot_p99_ms");
        r.output_tok_s = num("output_tok_s");
        const auto list = [&](const char* k) {
            std::vector<std::int64_t> out;
            std::stringstream cell(c.at(k));
            std::string item;
            while (std::getline(cell, item, ';')) {
                out.push_back(std::stoll(item));
            }
            return out;
        };
        r.buckets = list("buckets");
        r.prefill_buckets = list("prefill_buckets");
        r.collective_tiling = static_cast<int>(integer("collective_tiling"));
        r.fused_speculation = integer("fused_speculation") != 0;
        r.note = c.at("note");
        rows.push_back(r);
    }
    return rows;
}

ServingSpec serving_spec_for(const PublishedRow& row,
                             const std::optional<workload::ModelSpec>& draft,
                             ContextBuckets buckets) {
    ServingSpec s;
    s.tp = row.tp;
    s.max_batch = row.batch;
    s.max_context = row.max_context;
    s.weight_bytes = row.weight_bytes;
    s.precision = compute::Precision::bf16;
    const bool tnx = row.stack.rfind("tnx", 0) == 0;
    s.prefill_batch = tnx ? 0 : 1;
    s.materialized_attention = tnx;
    // TNx 2.18 repeats a grouped-query model's key/value heads up to its query heads whenever
    // kv_heads is not a multiple of tp (decoder.py check_gqa_fallback, to_neuron), as on every
    // grouped-query row here; the Llama-3 samples also ask for it (GQA.REPLICATED_HEADS).
    s.gqa = tnx ? GqaLayout::convert_to_mha : GqaLayout::replicate_to_tp;
    s.collective_tiling = row.collective_tiling; // as the row's source compiled it
    s.buckets = row.buckets;
    if (!row.prefill_buckets.empty()) {
        s.prefill_buckets = row.prefill_buckets; // as the row's source compiled them
    } else if (tnx && buckets == ContextBuckets::full) {
        s.prefill_buckets = {row.max_context};
    } else if (tnx) {
        // TNx 0.10 (SDK 2.18) without context_length_estimate: context buckets are half of
        // the token-generation buckets (transformers_neuronx/bucket.py, context_sizes).
        for (const std::int64_t b : default_buckets(row.max_context)) {
            s.prefill_buckets.push_back(b / 2);
        }
    }
    if (draft && row.speculative_k > 0) {
        SpeculativeSpec spec;
        spec.draft_ref = row.draft;
        spec.draft = *draft;
        spec.k = row.speculative_k;
        spec.fused = row.fused_speculation;
        s.speculative = spec;
    }
    return s;
}

BenchmarkResult run_published_row(const PublishedRow& row, const IterationCostModel& model) {
    if (row.requests > 0) {
        // An unpublished acceptance (0) runs one token a step: its TPOT is the step's time.
        return closed_loop_benchmark(model, row.batch, row.requests, row.input, row.output,
                                     std::max(row.acceptance_length, 1.0));
    }
    return static_batch_benchmark(model, row.batch, row.input, row.output);
}

double implied_acceptance_length(const PublishedRow& row, const IterationCostModel& model) {
    TRNSIM_CHECK(row.speculative_k > 0 && row.tpot_p50_ms > 0.0,
                 "an implied acceptance needs a speculative row with a published TPOT");
    IterationShape step;
    step.decode_sequences = row.batch;
    const std::int64_t median = row.input + row.output / 2;
    step.decode_context_tokens = std::int64_t{row.batch} * median;
    step.decode_max_context = median;
    step.speculative_k = row.speculative_k;
    return model.seconds(step) / (row.tpot_p50_ms * 1e-3);
}

namespace {

/// One figure's equation in the three linear coefficients (kernel, graph and prefill-graph
/// overheads), each term divided by the published time t.
struct Eq {
    std::array<double, 3> a{}; ///< kernels / t, graphs / t, prefill graphs / t
    double y = 0.0;            ///< (t - fixed) / t
};

using Coef = std::array<double, 3>;

std::vector<Eq> equations(const std::vector<FitPoint>& points) {
    std::vector<Eq> eqs;
    const auto add = [&](const IterationBreakdown& b, double t) {
        if (t <= 0.0) {
            return;
        }
        const double fixed =
            b.decode_kernel.seconds() + b.prefill_kernel.seconds() + b.collective_time.seconds();
        eqs.push_back({{b.kernels / t, b.graphs / t, b.prefill_graphs / t}, (t - fixed) / t});
    };
    for (const FitPoint& p : points) {
        add(p.ttft, p.ttft_s);
        add(p.tpot, p.tpot_s);
    }
    return eqs;
}

double cost_of(const std::vector<Eq>& eqs, const Coef& x) {
    double c = 0.0;
    for (const Eq& e : eqs) {
        const double r = e.a[0] * x[0] + e.a[1] * x[1] + e.a[2] * x[2] - e.y;
        c += r * r;
    }
    return c;
}

/// Exact NNLS of three unknowns: the least-squares solution on every subset of free unknowns
/// (the others held at zero) by Gaussian elimination of the normal equations with partial
/// pivoting; the best of the non-negative ones (the empty subset, all zero, is always one).
Coef nnls3(const std::vector<Eq>& eqs) {
    double ata[3][3] = {};
    double aty[3] = {};
    for (const Eq& e : eqs) {
        for (int i = 0; i < 3; ++i) {
            aty[i] += e.a[i] * e.y;
            for (int j = 0; j < 3; ++j) {
                ata[i][j] += e.a[i] * e.a[j];
            }
        }
    }
    Coef best{};
    double best_cost = cost_of(eqs, best);
    for (int mask = 1; mask < 8; ++mask) {
        int idx[3];
        int n = 0;
        for (int i = 0; i < 3; ++i) {
            if (mask & (1 << i)) {
                idx[n++] = i;
            }
        }
        double m[3][4] = {};
        for (int r = 0; r < n; ++r) {
            for (int c = 0; c < n; ++c) {
                m[r][c] = ata[idx[r]][idx[c]];
            }
            m[r][n] = aty[idx[r]];
        }
        bool singular = false;
        for (int c = 0; c < n && !singular; ++c) {
            int piv = c;
            for (int r = c + 1; r < n; ++r) {
                if (std::fabs(m[r][c]) > std::fabs(m[piv][c])) {
                    piv = r;
                }
            }
            if (std::fabs(m[piv][c]) <= 1e-300) {
                singular = true;
                break;
            }
            for (int k = 0; k <= n; ++k) {
                std::swap(m[c][k], m[piv][k]);
            }
            for (int r = 0; r < n; ++r) {
                if (r != c) {
                    const double f = m[r][c] / m[c][c];
                    for (int k = c; k <= n; ++k) {
                        m[r][k] -= f * m[c][k];
                    }
                }
            }
        }
        if (singular) {
            continue;
        }
        Coef x{};
        bool feasible = true;
        for (int r = 0; r < n; ++r) {
            x[static_cast<std::size_t>(idx[r])] = m[r][n] / m[r][r];
            feasible = feasible && x[static_cast<std::size_t>(idx[r])] >= 0.0;
        }
        if (feasible) {
            const double c = cost_of(eqs, x);
            if (c < best_cost) {
                best_cost = c;
                best = x;
            }
        }
    }
    return best;
}

Duration rounded_duration(double seconds) {
    return Duration::from_ns(std::llround(seconds * 1e8) * 10);
}

compute::ServingCosts rounded(double efficiency, const Coef& x) {
    compute::ServingCosts c;
    c.prefill_efficiency = std::round(efficiency * 1000.0) / 1000.0;
    c.kernel_overhead = rounded_duration(x[0]);
    c.iteration_overhead = rounded_duration(x[1]);
    c.prefill_graph_overhead = rounded_duration(x[2]);
    return c;
}

} // namespace

double fit_residual(const std::vector<FitPoint>& points, const compute::ServingCosts& c) {
    return cost_of(equations(points),
                   Coef{c.kernel_overhead.seconds(), c.iteration_overhead.seconds(),
                        c.prefill_graph_overhead.seconds()});
}

compute::ServingCosts fit_serving_costs(
    const std::function<std::vector<FitPoint>(double)>& points) {
    struct Trial {
        double cost;
        double efficiency;
        Coef x;
    };
    const auto trial = [&](double eff) {
        const auto eqs = equations(points(eff));
        if (eqs.empty()) {
            throw std::invalid_argument("fit_serving_costs: no points");
        }
        const Coef x = nnls3(eqs);
        return Trial{cost_of(eqs, x), eff, x};
    };
    // Grid from 0.05 to 1 in steps of 0.05, then 0.005, then 0.001 around the best.
    Trial best = trial(1.0);
    for (int i = 1; i < 20; ++i) {
        const Trial t = trial(0.05 * i);
        if (t.cost < best.cost) {
            best = t;
        }
    }
    for (const double step : {0.005, 0.001}) {
        const double centre = best.efficiency;
        for (int i = -10; i <= 10; ++i) {
            const double eff = std::round((centre + step * i) * 1000.0) / 1000.0;
            if (eff < 0.01 || eff > 1.0 || i == 0) {
                continue;
            }
            const Trial t = trial(eff);
            if (t.cost < best.cost) {
                best = t;
            }
        }
    }
    return rounded(best.efficiency, best.x);
}

} // namespace trnsim::serving
