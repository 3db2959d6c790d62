// Bad input end to end: every malformed scenario makes `trnsim run` exit with code 2, print a
// message naming the key path (and where it is), and write no output file.
#include "run_cli.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
};

std::string with(const std::string& from, const std::string& to) {
    std::string s = kValid;
    const auto pos = s.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    return s.replace(pos, from.size(), to);
}

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
        {"unknown_chip", with("chip: trn2", "chip: trn3"), {}, "hardware.chip", ""},
        {"bad_choice", with("zero: 1}", "zero: 1, schedule: gpipe}"), {},
         "workload.parallelism.schedule", ""},
        {"tp_not_dividing_heads", with("tp: 4", "tp: 12"), {}, "workload.parallelism.tp", ""},
        {"pp_not_dividing_layers", with("pp: 1", "pp: 3"), {}, "workload.parallelism.pp", ""},
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
        {"cluster_too_big_for_fabric",
         "cluster: {ultraservers: 9000}\nworkload: {type: collective}\n", {},
         "cluster", ""},
    };
}

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class Malformed : public ::testing::TestWithParam<Case> {};

TEST_P(Malformed, ExitsTwoNamesTheKeyAndWritesNothing) {
    const Case& c = GetParam();
    const fs::path dir = fs::temp_directory_path() / ("trnsim-malformed-" + std::string(c.name));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "scenario.yaml") << c.yaml;

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
        EXPECT_EQ(entry.path().filename(), "scenario.yaml") << "unexpected " << entry.path();
    }
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Malformed, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                             return std::string(param.param.name);
                         });

TEST(MalformedCount, AtLeastTwentyFiveCases) { EXPECT_GE(cases().size(), 25u); }

} // namespace
} // namespace trnsim::test
