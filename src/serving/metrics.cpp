#include "trnsim/serving/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>

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

namespace {

/// Type 7 percentiles of unsorted `v` (reordered) for ascending fractions `ps`: the two order
/// statistics around each rank are selected with nth_element on the part of the array not
/// yet fixed, O(n) per percentile instead of a sort; the same values as sorting.
std::vector<double> percentiles(std::vector<double>& v, std::initializer_list<double> ps) {
    std::vector<double> out;
    if (v.empty()) {
        out.assign(ps.size(), 0.0);
        return out;
    }
    auto from = v.begin();
    for (double p : ps) {
        const double h = static_cast<double>(v.size() - 1) * std::clamp(p, 0.0, 1.0);
        const auto lo = static_cast<std::size_t>(std::floor(h));
        const auto at = v.begin() + static_cast<std::ptrdiff_t>(lo);
        if (at >= from) {
            std::nth_element(from, at, v.end());
        }
        const double x_lo = *at;
        double x_hi = x_lo;
        if (lo + 1 < v.size()) {
            x_hi = *std::min_element(at + 1, v.end());
        }
        out.push_back(x_lo + (h - static_cast<double>(lo)) * (x_hi - x_lo));
        from = at + 1;
    }
    return out;
}

} // namespace

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
        s.input_tokens += static_cast<std::uint64_t>(r.input_tokens);
        s.preempted_requests += r.preemptions > 0 ? 1 : 0;
        s.retried_requests += r.retries > 0 ? 1 : 0;
        first = std::min(first, r.arrival.ns());
        last = std::max(last, r.finish.ns());
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
        } else {
            ++s.one_token; // no TPOT to judge
        }
        s.met_slo += ok ? 1 : 0;
    }
    if (s.requests == 0) {
        return s;
    }
    const std::vector<double> t1 = percentiles(ttft, {0.50, 0.90, 0.99});
    const std::vector<double> tp = percentiles(tpot, {0.50, 0.90, 0.99});
    const std::vector<double> e = percentiles(e2e, {0.50, 0.99});
    s.ttft_p50 = Seconds::of(t1[0]);
    s.ttft_p90 = Seconds::of(t1[1]);
    s.ttft_p99 = Seconds::of(t1[2]);
    // Undefined when every request had one output token (not zero, which would meet any
    // TPOT objective).
    const double none = std::numeric_limits<double>::quiet_NaN();
    s.tpot_p50 = Seconds::of(tpot.empty() ? none : tp[0]);
    s.tpot_p90 = Seconds::of(tpot.empty() ? none : tp[1]);
    s.tpot_p99 = Seconds::of(tpot.empty() ? none : tp[2]);
    s.e2e_p50 = Seconds::of(e[0]);
    s.e2e_p99 = Seconds::of(e[1]);
    s.ttft_mean = Seconds::of(ttft_sum / static_cast<double>(s.requests));
    s.tpot_mean = Seconds::of(tpot.empty() ? none : tpot_sum / static_cast<double>(tpot.size()));
    s.span = Seconds::of(static_cast<double>(last - first) * 1e-9);
    if (s.span.seconds() > 0.0) {
        s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.span.seconds();
        s.goodput_requests_per_s = static_cast<double>(s.met_slo) / s.span.seconds();
    }
    s.slo_attainment = static_cast<double>(s.met_slo) / static_cast<double>(s.requests);
    return s;
}

void compact_gaps(std::vector<TokenGap>& gaps) {
    std::sort(gaps.begin(), gaps.end(),
              [](const TokenGap& a, const TokenGap& b) { return a.ns < b.ns; });
    std::size_t out = 0;
    for (const TokenGap& g : gaps) {
        if (g.count <= 0) {
            continue;
        }
        if (out > 0 && gaps[out - 1].ns == g.ns) {
            gaps[out - 1].count += g.count;
        } else {
            gaps[out++] = g;
        }
    }
    gaps.resize(out);
}

double gap_percentile_s(std::span<const TokenGap> gaps, double p) {
    std::int64_t n = 0;
    for (const TokenGap& g : gaps) {
        n += g.count;
    }
    if (n == 0) {
        return std::numeric_limits<double>::quiet_NaN(); // no gap between tokens: undefined
    }
    const double h = static_cast<double>(n - 1) * std::clamp(p, 0.0, 1.0);
    const auto lo = static_cast<std::int64_t>(std::floor(h));
    const std::int64_t hi = std::min(lo + 1, n - 1);
    // The values at ranks lo and hi (0-based) of the expanded multiset.
    double x_lo = 0.0, x_hi = 0.0;
    std::int64_t seen = 0;
    bool have_lo = false;
    for (const TokenGap& g : gaps) {
        seen += g.count;
        if (!have_lo && lo < seen) {
            x_lo = static_cast<double>(g.ns);
            have_lo = true;
        }
        if (hi < seen) {
            x_hi = static_cast<double>(g.ns);
            break;
        }
    }
    return (x_lo + (h - static_cast<double>(lo)) * (x_hi - x_lo)) * 1e-9;
}

void add_itl(ServingSummary& summary, std::vector<TokenGap> gaps) {
    compact_gaps(gaps);
    summary.itl_p50 = Seconds::of(gap_percentile_s(gaps, 0.5));
    summary.itl_p90 = Seconds::of(gap_percentile_s(gaps, 0.9));
    summary.itl_p99 = Seconds::of(gap_percentile_s(gaps, 0.99));
    double sum = 0.0;
    std::int64_t n = 0;
    for (const TokenGap& g : gaps) {
        sum += static_cast<double>(g.ns) * static_cast<double>(g.count);
        n += g.count;
    }
    summary.itl_count = static_cast<std::uint64_t>(n);
    summary.itl_mean = Seconds::of(n > 0 ? sum / static_cast<double>(n) * 1e-9 : 0.0);
}

} // namespace trnsim::serving

namespace trnsim::serving {

std::optional<SlowestReplica> slowest_replica(std::span<const RequestRecord> records) {
    struct Acc {
        std::uint64_t n = 0;
        double e2e_sum = 0.0;
        std::vector<double> tpot;
    };
    std::map<std::uint32_t, Acc> by_replica; // ordered: the lowest index wins ties
    for (const RequestRecord& r : records) {
        if (!r.finished()) {
            continue;
        }
        Acc& a = by_replica[r.replica];
        ++a.n;
        a.e2e_sum += r.e2e_s();
        if (r.output_tokens > 1) {
            a.tpot.push_back(r.tpot_s());
        }
    }
    if (by_replica.empty()) {
        return std::nullopt;
    }
    std::vector<double> means, tpots;
    SlowestReplica best;
    bool found = false;
    for (auto& [replica, a] : by_replica) {
        const double mean = a.e2e_sum / static_cast<double>(a.n);
        std::sort(a.tpot.begin(), a.tpot.end());
        const double tpot = percentile_sorted(a.tpot, 0.5);
        means.push_back(mean);
        tpots.push_back(tpot);
        if (!found || mean > best.mean_e2e.seconds()) {
            best.replica = replica;
            best.requests = a.n;
            best.mean_e2e = Seconds::of(mean);
            best.tpot_p50 = Seconds::of(tpot);
            found = true;
        }
    }
    std::sort(means.begin(), means.end());
    std::sort(tpots.begin(), tpots.end());
    best.median_e2e = Seconds::of(percentile_sorted(means, 0.5));
    best.fleet_tpot_p50 = Seconds::of(percentile_sorted(tpots, 0.5));
    best.slowdown =
        best.median_e2e.seconds() > 0.0 ? best.mean_e2e.seconds() / best.median_e2e.seconds() : 1.0;
    best.replicas = static_cast<std::uint32_t>(by_replica.size());
    return best;
}

} // namespace trnsim::serving
