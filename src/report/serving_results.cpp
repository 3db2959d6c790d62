// The results file of a serving scenario (docs/results-schema.md, "Serving").
#include "trnsim/report/run_results.hpp"

#include <optional>

namespace trnsim::report {

std::vector<results::NamedValue> serving_summary_values(const sim::ServingScenarioRun& run) {
    const serving::ServingSummary& s = run.run.summary;
    const sim::ServingRunStats& st = run.run.stats;
    const auto i64 = [](auto v) { return static_cast<std::int64_t>(v); };
    // The slowest replica (serving::slowest_replica); replica -1 when no request finished.
    const std::optional<serving::SlowestReplica> slow =
        run.run.slowest;
    const serving::SlowestReplica none{};
    const serving::SlowestReplica& sr = slow ? *slow : none;
    std::vector<results::NamedValue> values = {
        {"requests", i64(s.requests)},
        {"ttft_p50_s", s.ttft_p50.seconds()},
        {"ttft_p90_s", s.ttft_p90.seconds()},
        {"ttft_p99_s", s.ttft_p99.seconds()},
        {"tpot_p50_s", s.tpot_p50.seconds()},
        {"tpot_p90_s", s.tpot_p90.seconds()},
        {"tpot_p99_s", s.tpot_p99.seconds()},
        {"e2e_p50_s", s.e2e_p50.seconds()},
        {"e2e_p99_s", s.e2e_p99.seconds()},
        {"itl_p50_s", s.itl_p50.seconds()},
        {"itl_p99_s", s.itl_p99.seconds()},
        {"ttft_mean_s", s.ttft_mean.seconds()},
        {"tpot_mean_s", s.tpot_mean.seconds()},
        {"output_tokens_per_s", s.output_tokens_per_s},
        {"goodput_requests_per_s", s.goodput_requests_per_s},
        {"slo_attainment", s.slo_attainment},
        {"mbu", run.mbu},
        {"mbu_busy", run.mbu_busy},
        {"mfu", run.mfu},
        {"decode_mbu", run.decode_mbu},
        {"prefix_hits", i64(st.prefix_hits)},
        {"prefix_hit_tokens", i64(st.prefix_hit_tokens)},
        {"kv_cache_peak_fraction", run.run.kv_cache_peak_fraction},
        {"chips", run.chips},
        {"instances", run.instances},
        {"ultraservers", run.ultraservers},
        {"replicas", i64(st.replicas)},
        {"prefill_replicas", i64(st.prefill_replicas)},
        {"tp", i64(run.tp)},
        {"input_tokens", i64(s.input_tokens)},
        {"output_tokens", i64(s.output_tokens)},
        {"preempted_requests", i64(s.preempted_requests)},
        {"retried_requests", i64(s.retried_requests)},
        {"outages", i64(st.outages)},
        {"availability", st.availability},
        {"spare_instances", i64(st.spare_instances)},
        {"span_s", s.span.seconds()},
        {"simulated_s", st.end.seconds()},
        {"kv_capacity_tokens_per_replica", run.memory.kv_capacity_tokens},
        {"weights_per_rank_bytes", run.memory.weights_per_rank.count()},
        {"decode_iteration_s", run.decode_iteration.seconds()},
        {"instance_hours", run.instance_hours},
        {"cost_usd", run.cost_usd},
        {"cost_per_million_output_tokens_usd", run.cost_per_million_output_tokens_usd},
        {"slowest_replica", slow ? i64(sr.replica) : std::int64_t{-1}},
        {"slowest_replica_requests", i64(sr.requests)},
        {"slowest_replica_e2e_mean_s", sr.mean_e2e.seconds()},
        {"replica_e2e_mean_median_s", sr.median_e2e.seconds()},
        {"slowest_replica_tpot_p50_s", sr.tpot_p50.seconds()},
        {"replica_tpot_p50_median_s", sr.fleet_tpot_p50.seconds()},
        {"slowest_replica_slowdown", sr.slowdown},
    };
    if (s.unfinished > 0) {
        // Partial results: failures left requests unfinished (docs/serving.md "Failures").
        values.push_back({"unfinished_requests", i64(s.unfinished)});
    }
    return values;
}

results::ResultsFile serving_results(const config::ScenarioSpec& spec,
                                     const sim::ServingScenarioRun& run, const Writer& writer) {
    results::ResultsFile f;
    f.meta = meta(spec, writer);
    add_warnings(f, spec);
    f.summary = results::table_from_rows({serving_summary_values(run)});

    if (!run.run.requests.empty()) {
        results::Table t;
        for (const char* c : {"id"}) {
            t.add_int(c);
        }
        for (const char* c : {"arrival_s", "first_token_s", "finish_s"}) {
            t.add_float(c);
        }
        for (const char* c : {"input_tokens", "output_tokens", "replica", "prefill_replica",
                              "preemptions", "retries"}) {
            t.add_int(c);
        }
        for (const char* c : {"ttft_s", "tpot_s", "e2e_s"}) {
            t.add_float(c);
        }
        t.add_int("met_slo");
        const double ttft = spec.inference.slo.ttft.seconds();
        const double tpot = spec.inference.slo.tpot.seconds();
        for (const serving::RequestRecord& r : run.run.requests) {
            const bool met = r.ttft_s() <= ttft && (r.output_tokens <= 1 || r.tpot_s() <= tpot);
            t.add_row({static_cast<std::int64_t>(r.id), r.arrival.seconds(),
                       r.first_token.seconds(),
                       r.finish.seconds(), std::int64_t{r.input_tokens},
                       std::int64_t{r.output_tokens}, std::int64_t{r.replica},
                       std::int64_t{r.prefill_replica}, std::int64_t{r.preemptions},
                       std::int64_t{r.retries}, r.ttft_s(),
                       r.tpot_s(), r.e2e_s(), std::int64_t{met ? 1 : 0}});
        }
        f.tables.emplace_back("/serving/requests", std::move(t));
    }

    results::Table rep;
    for (const char* c : {"replica", "unit", "domain", "first_chip", "chips", "prefill"}) {
        rep.add_int(c);
    }
    rep.add_float("kv_peak_fraction");
    for (std::size_t i = 0; i < run.run.placement.size(); ++i) {
        const sim::ReplicaPlacement& p = run.run.placement[i];
        const double peak = i < run.run.replica_kv_peak_fraction.size()
                                ? run.run.replica_kv_peak_fraction[i]
                                : 0.0;
        rep.add_row({static_cast<std::int64_t>(i), std::int64_t{p.unit}, std::int64_t{p.domain},
                     std::int64_t{p.first_chip}, std::int64_t{p.chips},
                     std::int64_t{p.prefill ? 1 : 0}, peak});
    }
    f.tables.emplace_back("/serving/replicas", std::move(rep));

    results::Table kv;
    kv.add_float("time_s");
    kv.add_float("used_fraction");
    for (const sim::KvSample& k : run.run.kv_series) {
        kv.add_row({k.time.seconds(), k.used_fraction});
    }
    f.tables.emplace_back("/serving/kv", std::move(kv));
    return f;
}

} // namespace trnsim::report
