// Bad input end to end: every malformed scenario makes `trnsim run` exit with code 2, print a
// message naming the key path (and where it is), and write no output file.
#include "run_cli.hpp"
#include "support/scratch.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kValid = R"(name: base
hardware: {chip: trn2}
cluster: {ultraservers: 4}
workload:
  model: llama3-8b
  sequence_length: 4096
  global_batch: 256
  tokens: 10B
  parallelism: {tp: 4, pp: 1, zero: 1}
)";

struct Case {
    const char* name;
    std::string yaml;                   ///< the scenario text
    std::vector<std::string> overrides; ///< --set arguments
    const char* key;                    ///< expected in the message
    const char* where;                  ///< expected location prefix ("" = scenario.yaml:LINE)
    std::vector<std::pair<std::string, std::string>> files = {}; ///< beside the scenario
};

std::string with(const std::string& from, const std::string& to) {
    std::string s = kValid;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
}

/// The valid scenario with a reliability section.
std::string reliable(const std::string& section) {
    return std::string(kValid) + "reliability:\n" + section;
}

/// A valid serving scenario (workload.type: inference), small enough to check in milliseconds.
constexpr const char* kServe = R"(name: serve
hardware: {chip: inf2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 8, max_batch: 4, max_context: 4096}
  requests:
    input_tokens: 1000
    output_tokens: 200
    arrival: {poisson: {rate: 2/s}}
    count: 20
  slo: {ttft: 1s, tpot: 50ms}
)";

std::string serve_with(const std::string& from, const std::string& to) {
    std::string s = kServe;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
}

/// The serving scenario replaying `trace.csv` (given beside it).
std::string serve_trace() {
    return serve_with("arrival: {poisson: {rate: 2/s}}\n    count: 20",
                      "arrival: {trace: trace.csv}");
}

constexpr const char* kTraceHeader = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

constexpr const char* kFailures = "  failures: [{component: chip, mtbf: 10y}]\n";

std::vector<Case> cases() {
    const std::string v = kValid;
    return {
        {"yaml_syntax", with("cluster: {ultraservers: 4}", "cluster: {ultraservers: 4"), {}, "",
         "scenario.yaml:"},
        {"empty_file", "", {}, "empty", "scenario.yaml:1:1"},
        {"only_a_comment", "# nothing here\n", {}, "empty", "scenario.yaml:1:1"},
        {"top_level_list", "- 1\n- 2\n", {}, "mapping", "scenario.yaml:1:1"},
        {"unknown_top_key", v + "clustr: {}\n", {}, "clustr", "scenario.yaml:10:1"},
        {"unknown_nested_key", with("zero: 1", "zer0: 1"), {}, "workload.parallelism.zer0", ""},
        {"section_is_scalar", with("cluster: {ultraservers: 4}", "cluster: 4"), {}, "cluster",
         ""},
        {"int_is_text", with("tp: 4", "tp: four"), {}, "workload.parallelism.tp", ""},
        {"int_is_list", with("tp: 4", "tp: [4, 8]"), {}, "workload.parallelism.tp", ""},
        {"int_is_fraction", with("tp: 4", "tp: 2.5"), {}, "workload.parallelism.tp", ""},
        {"negative_size", with("sequence_length: 4096", "sequence_length: -4096"), {},
         "workload.sequence_length", ""},
        {"zero_batch", with("global_batch: 256", "global_batch: 0"), {}, "workload.global_batch",
         ""},
        {"zero_tokens", with("tokens: 10B", "tokens: 0"), {}, "workload.tokens", ""},
        {"bad_unit", v + "hardware_extra: 1\n", {}, "hardware_extra", ""},
        {"unknown_unit", with("hardware: {chip: trn2}", "hardware: {chip: trn2, hbm_reserve: 2GX}"),
         {}, "hardware.hbm_reserve", ""},
        {"missing_unit", with("hardware: {chip: trn2}", "hardware: {chip: trn2, hbm_reserve: 2048}"),
         {}, "hardware.hbm_reserve", ""},
        {"bad_money", v + "cost: {instance_hour: 35.76EUR}\n", {}, "cost.instance_hour", ""},
        {"both_cluster_sizes", with("{ultraservers: 4}", "{ultraservers: 4, instances: 16}"), {},
         "cluster.instances", ""},
        {"no_cluster_size", with("{ultraservers: 4}", "{}"), {}, "cluster", ""},
        {"tokens_and_steps", with("tokens: 10B", "tokens: 10B\n  steps: 100"), {},
         "workload.steps", ""},
        {"missing_model", with("  model: llama3-8b\n", ""), {}, "workload.model", ""},
        {"unknown_model", with("model: llama3-8b", "model: llama3-9b"), {}, "workload.model", ""},
        {"missing_model_file", with("model: llama3-8b", "model: ./models/none.yaml"), {},
         "workload.model", ""},
        {"unknown_chip", with("chip: trn2", "chip: trn9"), {}, "hardware.chip", ""},
        {"bad_choice", with("zero: 1}", "zero: 1, schedule: gpipe}"), {},
         "workload.parallelism.schedule", ""},
        {"tp_not_dividing_heads", with("tp: 4", "tp: 12"), {}, "workload.parallelism.tp", ""},
        {"pp_exceeding_layers", with("pp: 1", "pp: 33"), {},
         "workload.parallelism.pp: pp = 33 exceeds the model's 32 layers", "scenario.yaml:9:"},
        // Uneven pipeline stages (workload.parallelism.stage_layers, balance).
        {"stage_layers_wrong_length", with("pp: 1", "pp: 2, stage_layers: [32]"), {},
         "workload.parallelism.stage_layers: lists 1 stages but pp = 2", "scenario.yaml:9:"},
        {"stage_layers_wrong_sum", with("pp: 1", "pp: 2, stage_layers: [16, 15]"), {},
         "workload.parallelism.stage_layers: the stages hold 31 layers but the model has 32",
         "scenario.yaml:9:"},
        {"stage_layers_zero_entry", with("pp: 1", "pp: 2, stage_layers: [32, 0]"), {},
         "workload.parallelism.stage_layers[1]: out of range", "scenario.yaml:9:"},
        {"stage_layers_not_a_list", with("pp: 1", "pp: 2, stage_layers: 16"), {},
         "workload.parallelism.stage_layers: expected a non-empty list", "scenario.yaml:9:"},
        {"stage_layers_and_balance",
         with("pp: 1", "pp: 2, stage_layers: [16, 16], balance: even"), {},
         "workload.parallelism.balance: give only one of", "scenario.yaml:9:"},
        {"balance_unknown", with("pp: 1", "pp: 2, balance: llama4"), {},
         "workload.parallelism.balance", "scenario.yaml:9:"},
        {"balance_llama3_two_stages", with("pp: 1", "pp: 2, balance: llama3"), {},
         "workload.parallelism.balance: balance: llama3", "scenario.yaml:9:"},
        {"stage_layers_set_wrong_sum", v,
         {"workload.parallelism.pp=2", "workload.parallelism.stage_layers=[30, 1]"},
         "workload.parallelism.stage_layers: the stages hold 31 layers",
         "command line (--set workload.parallelism.stage_layers=[30, 1])"},
        {"plan_not_dividing_ranks", with("{tp: 4, pp: 1,", "{tp: 32, pp: 32,"),
         {"cluster.ultraservers=3"}, "tp x pp = 1024 does not divide the 768 ranks", ""},
        {"dp_mismatch", with("zero: 1}", "zero: 1, dp: 7}"), {}, "workload.parallelism.dp", ""},
        {"batch_not_divisible", with("global_batch: 256", "global_batch: 100"), {},
         "workload.global_batch", ""},
        {"absurd_tp", with("tp: 4", "tp: 1e30"), {}, "workload.parallelism.tp", ""},
        {"absurd_tokens", with("tokens: 10B", "tokens: 999999999999999999999999999"), {},
         "workload.tokens", ""},
        {"absurd_cluster", with("{ultraservers: 4}", "{ultraservers: 5000000}"), {},
         "cluster.ultraservers", ""},
        {"does_not_fit_hbm",
         with("model: llama3-8b", "model: llama3-405b") ,
         {"workload.parallelism.tp=1", "workload.parallelism.zero=0",
          "workload.global_batch=1024"},
         "workload.parallelism: the plan does not fit in HBM",
         ""},
        {"trn1_has_no_ultraservers", with("chip: trn2", "chip: trn1"), {}, "cluster.ultraservers",
         ""},
        {"bad_lnc", with("chip: trn2}", "chip: trn2, lnc: 3}"), {}, "hardware.lnc", ""},
        {"duplicate_key", v + "name: again\n", {}, "name", "scenario.yaml:10:1"},
        {"ep_on_dense", with("zero: 1}", "zero: 1, ep: 2}"), {}, "workload.parallelism.ep", ""},
        {"inline_model_typo", with("model: llama3-8b", "model: {preset: llama3-8b, layerz: 2}"),
         {}, "workload.model.layerz", ""},
        {"learned_positions_too_short", with("model: llama3-8b", "model: gpt3-175b"),
         {"workload.parallelism.tp=16", "cluster.ultraservers=8"}, "workload.sequence_length",
         ""},
        {"negative_seed", v + "seed: -1\n", {}, "seed", ""},
        {"set_bad_value", v, {"workload.parallelism.tp=x"}, "workload.parallelism.tp",
         "command line (--set workload.parallelism.tp=x)"},
        {"set_unknown_key", v, {"workload.paralelism.tp=2"}, "workload.paralelism",
         "command line (--set workload.paralelism.tp=2)"},
        {"set_not_a_path", v, {"=3"}, "--set", "command line"},
        // The reliability section and the run simulation.
        {"reliability_unknown_key", reliable(std::string(kFailures) + "  chekpoint: {}\n"), {},
         "reliability.chekpoint: unknown key 'chekpoint'; did you mean 'checkpoint'?",
         "scenario.yaml:12:3"},
        {"failures_not_a_list", reliable("  failures: {component: chip}\n"), {},
         "reliability.failures: expected a list of mappings", ""},
        {"failure_not_a_mapping", reliable("  failures: [chip]\n"), {},
         "reliability.failures[0]: expected a mapping", "scenario.yaml:11:14"},
        {"failure_unknown_component", reliable("  failures: [{component: gpu, mtbf: 10y}]\n"), {},
         "reliability.failures[0].component: 'gpu' is not one of", "scenario.yaml:11:26"},
        {"failure_missing_mtbf", reliable("  failures: [{component: chip}]\n"), {},
         "reliability.failures[0].mtbf: required key is missing", "scenario.yaml:11:"},
        {"failure_key_typo",
         reliable("  failures:\n    - {component: chip, mtbf: 10y}\n    - {component: hbm, mtbff: 20y}\n"),
         {}, "reliability.failures[1].mtbff: unknown key 'mtbff'; did you mean 'mtbf'?",
         "scenario.yaml:13:24"},
        {"failure_mtbf_bad_unit", reliable("  failures: [{component: chip, mtbf: 10yr}]\n"), {},
         "reliability.failures[0].mtbf", ""},
        {"failure_mtbf_zero", reliable("  failures: [{component: chip, mtbf: 0y}]\n"), {},
         "reliability.failures[0].mtbf: out of range", ""},
        {"failure_bad_distribution",
         reliable("  failures: [{component: chip, mtbf: 10y, distribution: {weibul: {shape: 0.8}}}]\n"),
         {}, "reliability.failures[0].distribution.weibul: unknown distribution 'weibul'", ""},
        {"failure_weibull_without_shape",
         reliable("  failures: [{component: chip, mtbf: 10y, distribution: weibull}]\n"), {},
         "reliability.failures[0].distribution: weibull needs its parameter", ""},
        {"failure_weibull_shape_zero",
         reliable("  failures: [{component: chip, mtbf: 10y, distribution: {weibull: {shape: 0}}}]\n"),
         {}, "reliability.failures[0].distribution.weibull.shape: out of range", ""},
        {"failure_bad_fraction",
         reliable("  failures: [{component: chip, mtbf: 10y, bad_fraction: 1.5}]\n"), {},
         "reliability.failures[0].bad_fraction: out of range", ""},
        {"chip_cannot_degrade",
         reliable("  failures: [{component: chip, mtbf: 10y, effect: degrade}]\n"), {},
         "reliability.failures[0].effect: only nic, leaf, spine and core failures can degrade",
         "scenario.yaml:11:"},
        {"unknown_reliability_preset", reliable("  preset: llama3-16k-h10\n"), {},
         "reliability.preset: unknown reliability preset 'llama3-16k-h10'; did you mean "
         "'llama3-16k-h100'?",
         "scenario.yaml:11:11"},
        {"error_inside_a_preset_file", reliable("  preset: ./lemons.yaml\n"), {},
         "reliability.failures[0].mtbf: expected a duration", "./lemons.yaml:2:29",
         {{"lemons.yaml", "failures:\n  - {component: chip, mtbf: 10yr}\n"}}},
        {"spare_instances_for_ultraservers",
         reliable(std::string(kFailures) + "  spares: {instances: 4}\n"), {},
         "reliability.spares.instances: the cluster is made of UltraServers", ""},
        {"bad_recovery_scope", reliable(std::string(kFailures) + "  recovery: {scope: replicas}\n"),
         {}, "reliability.recovery.scope: 'replicas' is not one of: job, replica; did you mean "
             "'replica'?",
         ""},
        {"negative_detection",
         reliable(std::string(kFailures) + "  recovery: {detection: -2min}\n"), {},
         "reliability.recovery.detection: out of range", ""},
        {"zero_checkpoint_interval",
         reliable(std::string(kFailures) + "  checkpoint: {interval: 0s}\n"), {},
         "reliability.checkpoint.interval: out of range: must be auto or a duration > 0", ""},
        {"bad_checkpoint_size", reliable(std::string(kFailures) + "  checkpoint: {size: huge}\n"),
         {}, "reliability.checkpoint.size", ""},
        {"bad_duration", reliable(kFailures) + "simulation: {duration: forever}\n", {},
         "simulation.duration", ""},
        {"zero_replications", reliable(kFailures) + "simulation: {replications: 0}\n", {},
         "simulation.replications: out of range", ""},
        {"set_bad_scope", reliable(kFailures), {"reliability.recovery.scope=replicas"},
         "reliability.recovery.scope", "command line (--set reliability.recovery.scope=replicas)"},
        {"missing_trace_file", reliable("  trace: failures.csv\n"), {},
         "reliability.trace: trace file 'failures.csv' not found", "scenario.yaml:11:10"},
        {"trace_unknown_component", reliable("  trace: failures.csv\n"), {},
         "reliability.trace: 'gpu' is not a component class", "failures.csv:3:5",
         {{"failures.csv", "time,component,index\n1h,chip,3\n2h, gpu,4\n"}}},
        {"trace_bad_time", reliable("  trace: failures.csv\n"), {},
         "reliability.trace: expected a duration", "failures.csv:2:1",
         {{"failures.csv", "# replayed incident\n2hours,chip,4\n"}}},
        {"trace_component_out_of_range", reliable("  trace: failures.csv\n"), {},
         "reliability.trace: line 1: there is no chip 256", "failures.csv:1:1",
         {{"failures.csv", "1h,chip,256\n"}}},
        {"trace_too_few_fields", reliable("  trace: failures.csv\n"), {},
         "reliability.trace: expected time,component,index[,cause]", "failures.csv:1:1",
         {{"failures.csv", "1h,chip\n"}}},
        {"collective_with_training_keys", with("workload:\n", "workload:\n  type: collective\n"),
         {}, "workload.model", ""},
        {"collective_bad_sizes",
         "cluster: {ultraservers: 1}\nworkload: {type: collective, collective: {sizes: 1MB:1KB}}\n",
         {}, "workload.collective.sizes", ""},
        {"collective_too_many_ranks",
         "cluster: {ultraservers: 1}\nworkload: {type: collective, collective: {ranks: 100000}}\n",
         {}, "workload.collective.ranks", ""},
        {"unknown_fabric", with("cluster: {ultraservers: 4}", "cluster: {ultraservers: 4, fabric: trn9-cloud}"),
         {}, "cluster.fabric", ""},
        {"fabric_of_another_chip",
         "hardware: {chip: trn1}\ncluster: {instances: 2, fabric: trn2-ultracluster}\n"
         "workload: {type: collective}\n",
         {}, "cluster.fabric", ""},
        {"reliability_on_collective",
         "cluster: {ultraservers: 1}\nworkload: {type: collective}\nreliability: {}\n", {},
         "reliability: is for workload.type: training, not collective", "scenario.yaml:3:"},
        {"cluster_too_big_for_fabric",
         "cluster: {ultraservers: 9000}\nworkload: {type: collective}\n", {},
         "cluster", ""},
        // Issue 15: inputs that ran (or validated) before.
        {"seed_above_2_53", v + "seed: 9007199254740993\n", {},
         "seed: out of range: must be 0 to 2^53", "scenario.yaml:10:7"},
        {"two_documents", v + "---\nname: second\n", {}, "more than one YAML document",
         "scenario.yaml:10:1"},
        {"dotted_key_beside_nested", v + "workload.parallelism.tp: 8\n", {},
         "workload.parallelism.tp: a key is one name", "scenario.yaml:10:1"},
        {"mtbf_below_the_tick", reliable("  failures: [{component: chip, mtbf: 0.5ns}]\n"), {},
         "reliability.failures[0].mtbf: out of range: must be at least 1ns", ""},
        {"straggler_outside_the_cluster",
         with("hardware: {chip: trn2}",
              "hardware: {chip: trn2, speed: {chips: [{chip: 256, speed: 0.5}]}}"),
         {}, "hardware.speed.chips[0].chip: selects chip 256, which is not in the cluster (256 chips", ""},
        {"step_fabric_smaller_than_the_cluster",
         with("cluster: {ultraservers: 4}", "cluster: {instances: 1}") +
             "simulation: {fidelity: step}\n",
         {}, "cluster.fabric: fabric trn2-ultracluster holds 64 chips for this cluster", ""},
        {"trace_rank_outside_the_job",
         v + "simulation: {fidelity: step}\noutput: {trace: t.json, trace_ranks: [5000]}\n", {},
         "output.trace_ranks[0]: rank 5000 is not in the job", ""},
        // workload.type: inference (issue 16's bad inputs).
        {"serve_tp_not_a_multiple_of_kv_heads",
         serve_with("tp: 8,", "tp: 12,"), {}, "workload.serving.tp", ""},
        {"serve_gqa_unknown_layout", serve_with("tp: 8,", "tp: 8, gqa: replicate,"), {},
         "workload.serving.gqa", ""},
        {"serve_tp_not_whole_chips", serve_with("tp: 8,", "tp: 3,"), {}, "workload.serving.tp",
         ""},
        {"serve_tp_beyond_an_instance", serve_with("tp: 8,", "tp: 32,"), {},
         "workload.serving.tp", ""},
        {"serve_model_does_not_fit", serve_with("tp: 8,", "tp: 2,") , {"workload.model=llama3-70b"},
         "workload.serving", ""},
        {"serve_max_batch_zero", serve_with("max_batch: 4", "max_batch: 0"), {},
         "workload.serving.max_batch", ""},
        {"serve_max_context_missing", serve_with(", max_context: 4096", ""), {},
         "workload.serving.max_context", ""},
        {"serve_kv_block_zero", serve_with("max_batch: 4", "max_batch: 4, kv_block: 0"), {},
         "workload.serving.kv_block", ""},
        {"serve_weights_unknown", serve_with("max_batch: 4", "max_batch: 4, weights: int4"), {},
         "workload.serving.weights", ""},
        {"serve_buckets_not_ending_at_max_context",
         serve_with("max_batch: 4", "max_batch: 4, buckets: [512, 2048]"), {},
         "workload.serving.buckets", ""},
        {"serve_router_shards_zero",
         serve_with("max_batch: 4", "max_batch: 4, router_shards: 0"), {},
         "workload.serving.router_shards", ""},
        {"serve_router_shards_beyond_the_domains", // one instance: one domain
         serve_with("max_batch: 4", "max_batch: 4, router_shards: 2"), {},
         "workload.serving.router_shards", ""},
        {"serve_too_many_replicas", serve_with("max_batch: 4", "max_batch: 4, replicas: 4"), {},
         "workload.serving.replicas", ""},
        {"serve_input_plus_output_beyond_max_context",
         serve_with("output_tokens: 200", "output_tokens: 3500"), {},
         "workload.requests.output_tokens", ""},
        {"serve_acceptance_above_one",
         serve_with("max_batch: 4", "max_batch: 4, speculative: {draft: llama3.2-1b, k: 1, "
                                    "acceptance: [1.2]}"),
         {}, "workload.serving.speculative.acceptance[0]", ""},
        {"serve_acceptance_negative",
         serve_with("max_batch: 4", "max_batch: 4, speculative: {draft: llama3.2-1b, k: 1, "
                                    "acceptance: [-0.1]}"),
         {}, "workload.serving.speculative.acceptance[0]", ""},
        {"serve_acceptance_increasing",
         serve_with("max_batch: 4", "max_batch: 4, speculative: {draft: llama3.2-1b, k: 2, "
                                    "acceptance: [0.5, 0.7]}"),
         {}, "workload.serving.speculative.acceptance[1]", ""},
        {"serve_acceptance_one_per_position",
         serve_with("max_batch: 4", "max_batch: 4, speculative: {draft: llama3.2-1b, k: 3, "
                                    "acceptance: [0.8, 0.7]}"),
         {}, "workload.serving.speculative.acceptance", ""},
        {"serve_draft_missing",
         serve_with("max_batch: 4", "max_batch: 4, speculative: {k: 1, acceptance: [0.5]}"), {},
         "workload.serving.speculative.draft", ""},
        {"serve_slo_ttft_zero", serve_with("ttft: 1s", "ttft: 0s"), {}, "workload.slo.ttft", ""},
        {"serve_slo_tpot_missing", serve_with(", tpot: 50ms", ""), {}, "workload.slo.tpot", ""},
        {"serve_arrival_unknown", serve_with("{poisson: {rate: 2/s}}", "{burst: {rate: 2/s}}"),
         {}, "workload.requests.arrival.burst", ""},
        {"serve_rate_zero", serve_with("rate: 2/s", "rate: 0/s"), {},
         "workload.requests.arrival.poisson.rate", ""},
        {"serve_rate_unit_unknown", serve_with("rate: 2/s", "rate: 2/day"), {},
         "workload.requests.arrival.poisson.rate", ""},
        {"serve_gamma_without_cv", serve_with("{poisson: {rate: 2/s}}", "{gamma: {rate: 2/s}}"),
         {}, "workload.requests.arrival.gamma.cv", ""},
        {"serve_closed_loop_fractional",
         serve_with("{poisson: {rate: 2/s}}", "{closed_loop: {concurrency: 1.5}}"), {},
         "workload.requests.arrival.closed_loop.concurrency", ""},
        {"serve_count_and_duration", serve_with("count: 20", "count: 20\n    duration: 1h"), {},
         "workload.requests.duration", ""},
        {"serve_neither_count_nor_duration", serve_with("\n    count: 20", ""), {},
         "workload.requests", ""},
        {"serve_sizes_from_trace_without_a_trace",
         serve_with("input_tokens: 1000", "input_tokens: trace"), {},
         "workload.requests.input_tokens", ""},
        {"serve_uniform_reversed",
         serve_with("input_tokens: 1000", "input_tokens: {uniform: [500, 100]}"), {},
         "workload.requests.input_tokens.uniform", ""},
        {"serve_empirical_empty",
         serve_with("input_tokens: 1000", "input_tokens: {empirical: []}"), {},
         "workload.requests.input_tokens.empirical", ""},
        {"serve_two_distributions",
         serve_with("input_tokens: 1000",
                    "input_tokens: {normal: {mean: 100, sd: 10}, uniform: [1, 2]}"),
         {}, "workload.requests.input_tokens", ""},
        {"serve_training_key", serve_with("  slo:", "  global_batch: 8\n  slo:"), {},
         "workload.global_batch", ""},
        // One inf2.48xlarge has 12 chips (0 .. 11): the trace's line 1 names a 13th.
        {"serve_failure_trace_no_such_chip",
         std::string(kServe) + "reliability:\n  trace: failures.csv\n", {},
         "reliability.trace: line 1: there is no chip 12", "failures.csv:1:1",
         {{"failures.csv", "36h,chip,12\n"}}},
        {"serve_spares_of_the_wrong_kind",
         std::string(kServe) + "reliability:\n" + kFailures + "  spares: {ultraservers: 1}\n",
         {}, "reliability.spares.ultraservers", ""},
        {"training_with_serving_keys", v.substr(0, v.size()) + "  serving: {tp: 8}\n", {},
         "workload.serving", ""},
        {"serve_trace_missing", serve_trace(), {}, "workload.requests.arrival.trace", ""},
        {"serve_trace_empty", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", ""}}},
        {"serve_trace_bad_header", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", "time,in,out\n2023-11-16 18:15:46.6805900,374,44\n"}}},
        {"serve_trace_bad_columns", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", std::string(kTraceHeader) + "2023-11-16 18:15:46.6805900,374\n"}}},
        {"serve_trace_negative_tokens", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", std::string(kTraceHeader) + "2023-11-16 18:15:46.6805900,-374,44\n"}}},
        {"serve_trace_non_numeric_tokens", serve_trace(), {}, "workload.requests.arrival.trace",
         "", {{"trace.csv", std::string(kTraceHeader) + "2023-11-16 18:15:46.6805900,many,44\n"}}},
        {"serve_trace_time_backwards", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", std::string(kTraceHeader) + "2023-11-16 18:15:47.0,374,44\n"
                                                    "2023-11-16 18:15:46.0,100,10\n"}}},
        {"serve_trace_bad_timestamp", serve_trace(), {}, "workload.requests.arrival.trace", "",
         {{"trace.csv", std::string(kTraceHeader) + "2023-13-16 18:15:46.0,374,44\n"}}},
        // A Gen2 UltraServer holds 144 chips = 576 ranks: tp 128 groups would straddle two.
        {"tp_straddling_a_switched_domain",
         "hardware: {chip: trn3-gen2}\n" +
             with("model: llama3-8b", "model: llama3-405b").substr(std::strlen("name: base\n") +
                                                                    std::strlen("hardware: {chip: trn2}\n")),
         {"workload.parallelism.tp=128"}, "workload.parallelism.tp", "command line"},
        // Racks that do not share the UltraServer's 36 servers equally, in an extending chip.
        {"racks_not_filling_an_ultraserver", with("hardware: {chip: trn2}",
                                                   "hardware: {chip: ./odd.yaml}"),
         {}, "ultraserver.racks", "./odd.yaml:3:",
         {{"odd.yaml", "extends: trn3-gen2\nname: odd\nultraserver: {racks: 5}\n"}}},
        {"serve_trace_speedup_zero",
         serve_with("arrival: {poisson: {rate: 2/s}}\n    count: 20",
                    "arrival: {trace: trace.csv, speedup: 0}"),
         {}, "workload.requests.arrival.speedup", "",
         {{"trace.csv", std::string(kTraceHeader) + "2023-11-16 18:15:46.0,374,44\n"}}},
    };
}

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Malformed : public ::testing::TestWithParam<Case> {};

TEST_P(Malformed, ExitsTwoNamesTheKeyAndWritesNothing) {
    const Case& c = GetParam();
    const fs::path dir = test::scratch_path("trnsim-malformed-" + std::string(c.name));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "scenario.yaml") << c.yaml;
    for (const auto& [name, content] : c.files) {
        std::ofstream(dir / name) << content;
    }

    std::vector<std::string> args{"run", "scenario.yaml", "-o", (dir / "out.h5").string()};
    for (const auto& o : c.overrides) {
        args.push_back("--set");
        args.push_back(o);
    }
    const CliResult r = run_cli(args, dir.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << "expected '" << c.key << "' in: " << r.err;
    const std::string where = *c.where ? c.where : "scenario.yaml:";
    EXPECT_EQ(r.err.rfind(where, 0), 0u) << "expected the message to start with '" << where
                                          << "': " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    // No output anywhere: not the requested file, no temporary, no default results directory.
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        bool given = name == "scenario.yaml";
        for (const auto& file : c.files) {
            given = given || name == file.first;
        }
        EXPECT_TRUE(given) << "unexpected " << entry.path();
    }
    // validate agrees with run: whatever run refuses before simulating, validate refuses
    // with the same message.
    std::vector<std::string> check{"validate", "scenario.yaml"};
    for (const auto& o : c.overrides) {
        check.push_back("--set");
        check.push_back(o);
    }
    const CliResult v = run_cli(check, dir.string());
    EXPECT_EQ(v.exit_code, 2) << "validate accepted what run refuses:\n" << v.out;
    EXPECT_NE(v.err.find(c.key), std::string::npos) << "validate: expected '" << c.key
                                                      << "' in: " << v.err;
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Malformed, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                             return std::string(param.param.name);
                         });

TEST(MalformedCount, AtLeastTwentyFiveCases) { EXPECT_GE(cases().size(), 25u); }

} // namespace
} // namespace trnsim::test

namespace trnsim::test {
namespace {

// Bad serving plans (trnsim plan with a workload.type: inference base): exit 2, the key path
// and the plan file's line, nothing written, before any candidate is simulated; `validate`
// refuses the same file.
struct PlanCase {
    const char* name;
    std::string plan;      ///< the plan text (its base is scenario.yaml beside it)
    const char* key;       ///< expected in the message
    std::string scenario = kServe;
};

std::vector<PlanCase> plan_cases() {
    const std::string b = "base: scenario.yaml\n";
    const std::string trace =
        serve_with("arrival: {poisson: {rate: 2/s}}\n    count: 20",
                   "arrival: {trace: trace.csv, speedup: 1}\n    count: 2");
    return {
        {"plan_rate_zero", b + "objective: {type: min_cost, rate: 0/s}\n", "objective.rate"},
        {"plan_rate_negative", b + "objective: {type: min_cost, rate: -2/s}\n",
         "objective.rate"},
        {"plan_attainment_zero", b + "objective: {type: min_cost, slo_attainment: 0}\n",
         "objective.slo_attainment"},
        {"plan_attainment_above_one", b + "objective: {type: min_cost, slo_attainment: 1.5}\n",
         "objective.slo_attainment"},
        {"plan_objective_unknown_key", b + "objective: {type: min_cost, rates: 2/s}\n",
         "objective.rates"},
        {"plan_objective_without_type", b + "objective: {rate: 2/s}\n", "objective.type"},
        {"plan_objective_training_type", b + "objective: {type: min_time}\n", "objective.type"},
        {"plan_max_rate_with_rate", b + "objective: {type: max_rate, rate: 2/s}\n",
         "objective.rate"},
        {"plan_rate_range_reversed",
         b + "objective: {type: max_rate, rate_range: [10/s, 1/s]}\n", "objective.rate_range"},
        {"plan_tolerance_zero", b + "objective: {type: max_rate, tolerance: 0}\n",
         "objective.tolerance"},
        {"plan_speedup_without_trace", b + "objective: {type: min_cost, speedup: 2}\n",
         "objective.speedup"},
        {"plan_rate_with_trace", b + "objective: {type: min_cost, rate: 2/s}\n",
         "objective.rate", trace},
        {"plan_training_key", b + "search: {pp: [1, 2]}\n", "search.pp"},
        {"plan_training_objective", b + "objective: max_goodput\n", "objective"},
        {"plan_training_constraint", b + "constraints: {deadline: 30d}\n",
         "constraints.deadline"},
        {"plan_max_batch_zero", b + "search: {max_batch: [0, 4]}\n", "search.max_batch"},
        {"plan_tp_zero", b + "search: {tp: [0]}\n", "search.tp"},
        {"plan_chip_unknown", b + "search: {chip: [trn9]}\n", "search.chip"},
        {"plan_chip_with_price",
         b + "search: {chip: [trn2, inf2]}\n", "search.chip",
         std::string(kServe) + "cost: {instance_hour: 10USD}\n"},
        {"plan_requests_zero", b + "requests: 0\n", "requests"},
        {"plan_closed_loop_without_rate", b + "objective: min_cost\n", "objective.rate",
         serve_with("{poisson: {rate: 2/s}}", "{closed_loop: {concurrency: 2}}")},
    };
}

void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

class MalformedPlan : public ::testing::TestWithParam<PlanCase> {};

TEST_P(MalformedPlan, ExitsTwoNamesTheKeyAndWritesNothing) {
    const PlanCase& c = GetParam();
    const fs::path dir = test::scratch_path("trnsim-malformed-" + std::string(c.name));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "scenario.yaml") << c.scenario;
    std::ofstream(dir / "plan.yaml") << c.plan;
    std::ofstream(dir / "trace.csv")
        << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.0,374,44\n"
           "2023-11-16 18:15:47.0,100,10\n";
    const CliResult r = run_cli({"plan", "plan.yaml", "-o", (dir / "out.h5").string()},
                                dir.string());
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << "expected '" << c.key << "' in: " << r.err;
    EXPECT_EQ(r.err.rfind("plan.yaml:", 0), 0u) << "expected the plan file's line: " << r.err;
    EXPECT_EQ(r.err.find("evaluating"), std::string::npos) << "simulated before refusing";
    EXPECT_TRUE(r.out.empty()) << r.out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        EXPECT_TRUE(name == "scenario.yaml" || name == "plan.yaml" || name == "trace.csv")
            << "unexpected " << entry.path();
    }
    const CliResult v = run_cli({"validate", "plan.yaml"}, dir.string());
    EXPECT_EQ(v.exit_code, 2) << "validate accepted what plan refuses:\n" << v.out;
    EXPECT_NE(v.err.find(c.key), std::string::npos) << "validate: " << v.err;
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ServingPlans, MalformedPlan, ::testing::ValuesIn(plan_cases()),
                         [](const ::testing::TestParamInfo<PlanCase>& param) {
                             return std::string(param.param.name);
                         });

} // namespace
} // namespace trnsim::test
