#include "trnsim/serving/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnsim::serving {

double percentile_sorted(std::span<const double> sorted, double p) {
    if (sorted.empty()) {
        return 0.0;
    }
    const double h = static_cast<double>(sorted.size() - 1) * std::clamp(p, 0.0, 1.0);
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

ServingSummary summarize(std::span<const RequestRecord> records, const SloSpec& slo) {
    ServingSummary s;
    std::vector<double> ttft, tpot, e2e;
    ttft.reserve(records.size());
    e2e.reserve(records.size());
    tpot.reserve(records.size());
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    std::int64_t last = std::numeric_limits<std::int64_t>::min();
    const double ttft_bound = slo.ttft > Duration::zero() ? slo.ttft.seconds()
                                                           : std::numeric_limits<double>::infinity();
    const double tpot_bound = slo.tpot > Duration::zero() ? slo.tpot.seconds()
                                                           : std::numeric_limits<double>::infinity();
    double ttft_sum = 0.0, tpot_sum = 0.0;
    for (const RequestRecord& r : records) {
        if (!r.finished()) {
            ++s.unfinished;
            continue;
        }
        ++s.requests;
        s.output_tokens += static_cast<std::uint64_t>(r.output_tokens);
        s.preempted_requests += r.preemptions > 0 ? 1 : 0;
        first = std::min(first, r.arrival_ns);
        last = std::max(last, r.finish_ns);
        const double t1 = r.ttft_s();
        ttft.push_back(t1);
        ttft_sum += t1;
        e2e.push_back(r.e2e_s());
        bool ok = t1 <= ttft_bound;
        if (r.output_tokens > 1) {
            const double tp = r.tpot_s();
            tpot.push_back(tp);
            tpot_sum += tp;
            ok = ok && tp <= tpot_bound;
        }
        s.met_slo += ok ? 1 : 0;
    }
    if (s.requests == 0) {
        return s;
    }
    std::sort(ttft.begin(), ttft.end());
    std::sort(tpot.begin(), tpot.end());
    std::sort(e2e.begin(), e2e.end());
    s.ttft_p50_s = percentile_sorted(ttft, 0.50);
    s.ttft_p90_s = percentile_sorted(ttft, 0.90);
    s.ttft_p99_s = percentile_sorted(ttft, 0.99);
    s.tpot_p50_s = percentile_sorted(tpot, 0.50);
    s.tpot_p90_s = percentile_sorted(tpot, 0.90);
    s.tpot_p99_s = percentile_sorted(tpot, 0.99);
    s.e2e_p50_s = percentile_sorted(e2e, 0.50);
    s.e2e_p99_s = percentile_sorted(e2e, 0.99);
    s.ttft_mean_s = ttft_sum / static_cast<double>(s.requests);
    s.tpot_mean_s = tpot.empty() ? 0.0 : tpot_sum / static_cast<double>(tpot.size());
    s.span_s = static_cast<double>(last - first) * 1e-9;
    if (s.span_s > 0.0) {
        s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.span_s;
        s.goodput_requests_per_s = static_cast<double>(s.met_slo) / s.span_s;
    }
    s.slo_attainment = static_cast<double>(s.met_slo) / static_cast<double>(s.requests);
    return s;
}

} // namespace trnsim::serving
