#include "serving_report.hpp"

#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/workload/model.hpp"

#include <cstdio>

#include <string>

namespace trnsim::cli {

namespace {

void line(std::ostream& out, const std::string& label, const std::string& text) {
    out << "  " << label << std::string(label.size() < 11 ? 11 - label.size() : 1, ' ') << text
        << "\n";
}

std::string tokens_text(const serving::TokenDistribution& d) {
    using K = serving::TokenDistribution::Kind;
    std::string s;
    switch (d.kind) {
    case K::fixed: return fmt::integer(static_cast<std::int64_t>(d.a));
    case K::normal: s = "normal(" + fmt::count(d.a) + ", sd " + fmt::count(d.b) + ")"; break;
    case K::lognormal:
        s = "lognormal(" + fmt::count(d.a) + ", sd " + fmt::count(d.b) + ")";
        break;
    case K::uniform: s = "uniform(" + fmt::count(d.a) + ".." + fmt::count(d.b) + ")"; break;
    case K::empirical: s = "empirical(" + std::to_string(d.values.size()) + " values)"; break;
    case K::trace: return "from the trace";
    }
    return s;
}

std::string arrival_text(const serving::ArrivalSpec& a) {
    using K = serving::ArrivalSpec::Kind;
    switch (a.kind) {
    case K::closed_loop:
        return "closed loop, " + fmt::integer(a.concurrency) + " in flight";
    case K::poisson: return "Poisson at " + fmt::count(a.rate_per_s) + "/s";
    case K::gamma:
        return "Gamma at " + fmt::count(a.rate_per_s) + "/s, cv " + fmt::fixed(a.gamma_cv, 2);
    case K::trace:
        return "trace " + a.trace_file + (a.speedup != 1.0 ? " x" + fmt::count(a.speedup) : "");
    }
    return "";
}

std::string cluster_text(const config::ScenarioSpec& spec) {
    const compute::ChipSpec& chip = spec.hardware.chip;
    const std::int64_t instances = cluster::Hierarchy::shape_of(chip, spec.cluster).instances;
    std::string s;
    if (spec.cluster.counts_ultraservers()) {
        s += fmt::integer(spec.cluster.ultraservers) + " UltraServer" +
             (spec.cluster.ultraservers > 1 ? "s" : "") + " = ";
    }
    return s + fmt::integer(instances) + " x " + chip.instance.name + " = " +
           fmt::integer(instances * chip.instance.chips) + " " + chip.name + " chips";
}

} // namespace

void print_serving_layout(std::ostream& out, const config::ScenarioSpec& spec,
                          const sim::ServingLayout& layout) {
    const serving::InferenceSpec& inf = spec.inference;
    const serving::ServingSpec& sv = inf.serving;
    const workload::ModelStats stats = workload::compute_stats(inf.model);
    line(out, "cluster", cluster_text(spec));
    line(out, "model", spec.model_ref + ": " + fmt::count(static_cast<double>(stats.total)) +
                           " parameters, weights " +
                           // int8 and fp8 storage cost the same: "8-bit" says both.
                           (sv.mx == serving::MxFormat::none && sv.weight_bytes == 1
                                ? std::string("8-bit")
                                : sv.weights_name()) +
                           (sv.speculative ? "; draft " + spec.draft_ref + ", k " +
                                                 std::to_string(sv.speculative->k)
                                           : ""));
    std::string replicas = fmt::integer(layout.replicas) + " x tp " + std::to_string(sv.tp) +
                           " (LNC " + std::to_string(layout.lnc) + ")";
    if (layout.prefill_replicas > 0) {
        replicas += ", " + fmt::integer(layout.prefill_replicas) + " of them prefill only";
    }
    replicas += "; max_batch " + std::to_string(sv.max_batch) + ", max_context " +
                fmt::integer(sv.max_context) + ", " + std::to_string(layout.buckets.size()) +
                " buckets; router " + serving::to_string(sv.router);
    if (layout.router_shards > 1) {
        replicas += " (" + std::to_string(layout.router_shards) + " router shards" +
                    (sv.router_shards == 0 ? ", auto" : "") + ")";
    }
    line(out, "replicas", replicas);
    const serving::ReplicaMemory& m = layout.memory;
    line(out, "memory",
         "per rank " + fmt::bytes(m.capacity_per_rank) + ": weights " +
             fmt::bytes(m.weights_per_rank) + ", reserve " + fmt::bytes(m.reserve_per_rank) +
             ", workspace " + fmt::bytes(m.workspace_per_rank) + ", KV cache " +
             fmt::bytes(m.kv_free_per_rank) + " = " + fmt::integer(m.kv_capacity_tokens) +
             " tokens per replica (" + fmt::integer(layout.kv_blocks_per_replica) +
             " blocks of " + std::to_string(sv.kv_block) + ")");
    const serving::RequestSpec& r = inf.requests;
    std::string req = r.count > 0 ? fmt::integer(r.count) + " requests"
                                  : (r.duration > Duration::zero()
                                         ? "requests for " + fmt::duration(r.duration)
                                         : std::string("every trace row"));
    using K = serving::TokenDistribution::Kind;
    req += r.input.kind == K::trace && r.output.kind == K::trace
               ? " of the trace's sizes; "
               : " of " + tokens_text(r.input) + " + " + tokens_text(r.output) + " tokens; ";
    req += arrival_text(r.arrival);
    line(out, "requests", req);
}

void print_serving(std::ostream& out, const config::ScenarioSpec& spec,
                   const sim::ServingScenarioRun& run) {
    sim::ServingLayout layout;
    layout.lnc = run.lnc;
    layout.replicas = run.run.stats.replicas;
    layout.prefill_replicas = run.run.stats.prefill_replicas;
    layout.kv_blocks_per_replica = run.kv_blocks_per_replica;
    layout.memory = run.memory;
    layout.buckets = run.buckets;
    layout.router_shards = run.run.stats.router_shards;
    print_serving_layout(out, spec, layout);
    const serving::ServingSummary& s = run.run.summary;
    const serving::SloSpec& slo = spec.inference.slo;
    // TPOT is undefined for one-token outputs (serving::RequestRecord::tpot_s).
    const bool no_tpot = s.requests > 0 && s.one_token == s.requests;
    const std::string tpot = no_tpot ? "TPOT undefined (every output is one token)"
                                     : "TPOT p50 " + fmt::seconds(s.tpot_p50.seconds()) + ", p90 " +
                                           fmt::seconds(s.tpot_p90.seconds()) + ", p99 " +
                                           fmt::seconds(s.tpot_p99.seconds());
    std::string slo_text = "TTFT <= " + fmt::duration(slo.ttft) + ", TPOT <= " +
                           fmt::duration(slo.tpot);
    if (s.one_token > 0) {
        slo_text += no_tpot ? "; judged on TTFT alone: no output has a TPOT"
                            : "; " + fmt::integer(static_cast<std::int64_t>(s.one_token)) +
                                  " one-token requests judged on TTFT alone";
    }
    line(out, "latency",
         "TTFT p50 " + fmt::seconds(s.ttft_p50.seconds()) + ", p90 " +
             fmt::seconds(s.ttft_p90.seconds()) + ", p99 " + fmt::seconds(s.ttft_p99.seconds()) +
             "; " + tpot + "; " +
             (no_tpot ? std::string("ITL undefined")
                      : "ITL p50 " + fmt::seconds(s.itl_p50.seconds()) + ", p99 " +
                            fmt::seconds(s.itl_p99.seconds())) +
             "; E2E p50 " + fmt::seconds(s.e2e_p50.seconds()) + ", p99 " +
             fmt::seconds(s.e2e_p99.seconds()));
    line(out, "throughput",
         fmt::integer(static_cast<std::int64_t>(s.requests)) + " requests in " +
             fmt::seconds(s.span.seconds()) + ": " + fmt::count(s.output_tokens_per_s) +
             " output tokens/s; goodput " + fmt::count(s.goodput_requests_per_s) +
             " requests/s; SLO (" + slo_text + ") met by " + fmt::percent(s.slo_attainment));
    if (s.unfinished > 0) {
        line(out, "partial",
             fmt::integer(static_cast<std::int64_t>(s.unfinished)) + " of " +
                 fmt::integer(static_cast<std::int64_t>(s.unfinished + s.requests)) +
                 " requests did not finish: failures outpaced the fleet; the figures above "
                 "are of the finished requests");
    }
    const sim::ServingRunStats& rs = run.run.stats;
    line(out, "hardware",
         "MBU " + fmt::percent(run.mbu) + " of the replicas' time, " + fmt::percent(run.mbu_busy) +
             " while busy; MFU " + fmt::percent(run.mfu) + "; decode at batch " +
             std::to_string(spec.inference.serving.max_batch) + ", context " +
             fmt::count(run.mean_decode_context) + ": " +
             fmt::seconds(run.decode_iteration.seconds()) + " per iteration, MBU " +
             fmt::percent(run.decode_mbu));
    line(out, "kv cache",
         "peak " + fmt::percent(run.run.kv_cache_peak_fraction) + "; " +
             fmt::integer(static_cast<std::int64_t>(s.preempted_requests)) +
             " requests preempted; prefix cache " +
             fmt::integer(static_cast<std::int64_t>(rs.prefix_hits)) + " hits, " +
             fmt::integer(static_cast<std::int64_t>(rs.prefix_hit_tokens)) +
             " prompt tokens not computed");
    if (const auto slow = run.run.slowest;
        slow && slow->replicas > 1) {
        char times[32];
        std::snprintf(times, sizeof times, "%.3fx", slow->slowdown);
        line(out, "slowest",
             "replica " + std::to_string(slow->replica) + " (" +
                 fmt::integer(static_cast<std::int64_t>(slow->requests)) + " requests): mean E2E " +
                 fmt::seconds(slow->mean_e2e.seconds()) + ", " + times + " the median replica's " +
                 fmt::seconds(slow->median_e2e.seconds()) + "; TPOT p50 " +
                 fmt::seconds(slow->tpot_p50.seconds()) + " (median replica " +
                 fmt::seconds(slow->fleet_tpot_p50.seconds()) + ")");
    }
    if (spec.reliability.enabled) {
        const sim::ServingRunStats& fs = run.run.stats;
        line(out, "failures",
             fmt::integer(static_cast<std::int64_t>(fs.outages)) + " domain outage" +
                 (fs.outages == 1 ? "" : "s") + "; replicas in service " +
                 fmt::percent(fs.availability) + " of the time (" +
                 fmt::seconds(fs.replica_down.seconds()) + " replica-time down); " +
                 fmt::integer(static_cast<std::int64_t>(s.retried_requests)) +
                 " requests retried (" + fmt::integer(static_cast<std::int64_t>(fs.retries)) +
                 " retries); " +
                 (spec.inference.serving.disaggregated.prefill_replicas > 0
                      ? fmt::integer(static_cast<std::int64_t>(fs.kv_transfers_cancelled)) +
                            (fs.kv_transfers_cancelled == 1 ? " KV transfer" : " KV transfers") +
                            " stopped on the fabric; "
                      : std::string()) +
                 fmt::integer(fs.spare_instances) + " spare instance" +
                 (fs.spare_instances == 1 ? "" : "s"));
    }
    line(out, "cost",
         fmt::count(run.instance_hours) + " instance-hours x " +
             fmt::money(spec.cost.instance_hour) + " (" + spec.cost.origin + ") = " +
             fmt::money(Money::usd(run.cost_usd)) + "; " +
             fmt::money(Money::usd(run.cost_per_million_output_tokens_usd)) +
             " per million output tokens");
    const sim::ServingRunStats& st = run.run.stats;
    line(out, "engine",
         fmt::integer(static_cast<std::int64_t>(st.events)) + " events, " +
             fmt::integer(static_cast<std::int64_t>(st.iterations)) + " iterations in " +
             fmt::integer(static_cast<std::int64_t>(st.steps)) + " steps, " +
             std::to_string(st.threads) + " thread" + (st.threads > 1 ? "s" : "") + ", " +
             fmt::seconds(run.wall.seconds()) + " wall");
}

} // namespace trnsim::cli
