#include "trnsim/serving/published.hpp"

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
        r.note = c.at("note");
        rows.push_back(r);
    }
    return rows;
}

ServingSpec serving_spec_for(const PublishedRow& row,
                             const std::optional<workload::ModelSpec>& draft) {
    ServingSpec s;
    s.tp = row.tp;
    s.max_batch = row.batch;
    s.max_context = row.max_context;
    s.weight_bytes = row.weight_bytes;
    s.precision = compute::Precision::bf16;
    const bool tnx = row.stack.rfind("tnx", 0) == 0;
    s.prefill_batch = tnx ? 0 : 1;
    s.materialized_attention = tnx;
    if (draft && row.speculative_k > 0) {
        SpeculativeSpec spec;
        spec.draft_ref = row.draft;
        spec.draft = *draft;
        spec.k = row.speculative_k;
        s.speculative = spec;
    }
    return s;
}

BenchmarkResult run_published_row(const PublishedRow& row, const IterationCostModel& model) {
    if (row.requests > 0) {
        return closed_loop_benchmark(model, row.batch, row.requests, row.input, row.output,
                                     row.acceptance_length);
    }
    return static_batch_benchmark(model, row.batch, row.input, row.output);
}

namespace {

struct Eq {
    double k = 0.0; ///< kernels / t
    double g = 0.0; ///< graphs / t
    double y = 0.0; ///< (t - fixed) / t
};

std::vector<Eq> equations(const std::vector<FitPoint>& points) {
    std::vector<Eq> eqs;
    const auto add = [&](const IterationBreakdown& b, double t) {
        if (t <= 0.0) {
            return;
        }
        const double fixed = b.decode_kernel_s + b.prefill_kernel_s + b.collective_s;
        eqs.push_back({b.kernels / t, b.graphs / t, (t - fixed) / t});
    };
    for (const FitPoint& p : points) {
        add(p.ttft, p.ttft_s);
        add(p.tpot, p.tpot_s);
    }
    return eqs;
}

double cost_of(const std::vector<Eq>& eqs, double kappa, double iota) {
    double c = 0.0;
    for (const Eq& e : eqs) {
        const double r = e.k * kappa + e.g * iota - e.y;
        c += r * r;
    }
    return c;
}

/// Exact NNLS of two unknowns: the unconstrained solution if non-negative, else the best of
/// the two one-variable solutions clipped at zero.
std::pair<double, double> nnls2(const std::vector<Eq>& eqs) {
    double kk = 0, kg = 0, gg = 0, ky = 0, gy = 0;
    for (const Eq& e : eqs) {
        kk += e.k * e.k;
        kg += e.k * e.g;
        gg += e.g * e.g;
        ky += e.k * e.y;
        gy += e.g * e.y;
    }
    const double det = kk * gg - kg * kg;
    if (det > 1e-300 * (kk * gg)) {
        const double a = (ky * gg - gy * kg) / det;
        const double b = (gy * kk - ky * kg) / det;
        if (a >= 0.0 && b >= 0.0) {
            return {a, b};
        }
    }
    const double a = kk > 0.0 ? std::max(0.0, ky / kk) : 0.0;
    const double b = gg > 0.0 ? std::max(0.0, gy / gg) : 0.0;
    return cost_of(eqs, a, 0.0) <= cost_of(eqs, 0.0, b) ? std::pair{a, 0.0}
                                                          : std::pair{0.0, b};
}

compute::ServingCosts rounded(double efficiency, double kappa, double iota) {
    compute::ServingCosts c;
    c.prefill_efficiency = std::round(efficiency * 1000.0) / 1000.0;
    c.kernel_overhead = Duration::from_ns(std::llround(kappa * 1e8) * 10);
    c.iteration_overhead = Duration::from_ns(std::llround(iota * 1e8) * 10);
    return c;
}

} // namespace

double fit_residual(const std::vector<FitPoint>& points, const compute::ServingCosts& c) {
    return cost_of(equations(points), c.kernel_overhead.seconds(),
                   c.iteration_overhead.seconds());
}

compute::ServingCosts fit_serving_costs(
    const std::function<std::vector<FitPoint>(double)>& points) {
    struct Trial {
        double cost;
        double efficiency;
        double kappa;
        double iota;
    };
    const auto trial = [&](double eff) {
        const auto eqs = equations(points(eff));
        if (eqs.empty()) {
            throw std::invalid_argument("fit_serving_costs: no points");
        }
        const auto [a, b] = nnls2(eqs);
        return Trial{cost_of(eqs, a, b), eff, a, b};
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
    return rounded(best.efficiency, best.kappa, best.iota);
}

} // namespace trnsim::serving
