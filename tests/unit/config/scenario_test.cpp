#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"
#include "trnsim/sim/run.hpp"

#include <gtest/gtest.h>

namespace trnsim::config {
namespace {

constexpr const char* kMinimal = R"(cluster: {ultraservers: 2}
workload:
  model: llama3-8b
  sequence_length: 4096
  global_batch: 64
  tokens: 1B
)";

/// Loads and expects an InputError; returns it.
InputError load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
    try {
        load_scenario_text(text, "test.yaml", overrides);
    } catch (const InputError& e) {
        return e;
    }
    ADD_FAILURE() << "expected an InputError for:\n" << text;
    return InputError("", "");
}

TEST(Scenario, MinimalScenarioGetsDocumentedDefaults) {
    const ScenarioSpec s = load_scenario_text(kMinimal, "minimal.yaml");
    EXPECT_EQ(s.name, "minimal");
    EXPECT_EQ(s.seed, 1);
    EXPECT_EQ(s.hardware.chip.name, "trn2");
    EXPECT_EQ(s.hardware.lnc, 2);
    EXPECT_EQ(s.hardware.hbm_reserve.count(), std::int64_t{2} * 1024 * 1024 * 1024);
    EXPECT_EQ(s.cluster.ultraservers, 2);
    EXPECT_EQ(s.cluster.instances, 0);
    EXPECT_EQ(s.training.model.name, "llama3-8b");
    EXPECT_EQ(s.training.sequence_length, 4096);
    EXPECT_EQ(s.training.global_batch, 64);
    EXPECT_EQ(s.training.tokens, 1'000'000'000);
    EXPECT_EQ(s.training.steps, 0);
    EXPECT_EQ(s.training.precision, compute::Precision::bf16);
    const auto& p = s.training.parallelism;
    EXPECT_EQ(p.tp, 1);
    EXPECT_EQ(p.pp, 1);
    EXPECT_EQ(p.dp, 0);
    EXPECT_EQ(p.zero, 1);
    EXPECT_EQ(p.recompute, workload::Recompute::selective);
    EXPECT_TRUE(p.sequence_parallel);
    EXPECT_EQ(s.simulation.threads, 0);
    EXPECT_DOUBLE_EQ(s.cost.instance_hour.usd(), 35.76);
    EXPECT_EQ(s.output.file, "results/minimal.h5");
}

TEST(Scenario, ResolvedScenarioRoundTrips) {
    const ScenarioSpec a = load_scenario_text(kMinimal, "minimal.yaml");
    for (const char* key : {"hardware:", "lnc: 2", "hbm_reserve:", "parallelism:", "zero: 1",
                            "fidelity: analytic", "instance_hour:", "file: results/minimal.h5"}) {
        EXPECT_NE(a.resolved_yaml.find(key), std::string::npos) << key << "\n" << a.resolved_yaml;
    }
    const ScenarioSpec b = load_scenario_text(a.resolved_yaml, "other.yaml");
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.resolved_yaml, a.resolved_yaml);
    EXPECT_EQ(b.hardware.hbm_reserve, a.hardware.hbm_reserve);
    EXPECT_EQ(b.cost.instance_hour, a.cost.instance_hour);
    EXPECT_EQ(b.training.tokens, a.training.tokens);
}

TEST(Scenario, UnknownKeySuggestsTheClosestWithLocation) {
    const InputError e = load_error(std::string(kMinimal) + "  paralelism: {tp: 2}\n");
    EXPECT_EQ(e.key_path(), "workload.paralelism");
    EXPECT_NE(e.message().find("did you mean 'parallelism'?"), std::string::npos) << e.what();
    EXPECT_EQ(e.location().file, "test.yaml");
    EXPECT_EQ(e.location().line, 7);
    EXPECT_EQ(e.location().column, 3);
}

TEST(Scenario, UnknownKeyWithoutCloseMatchListsTheAllowedKeys) {
    const InputError e = load_error(std::string(kMinimal) + "zebra: 1\n");
    EXPECT_EQ(e.key_path(), "zebra");
    EXPECT_NE(e.message().find("allowed at the top level: name, seed, hardware"),
              std::string::npos)
        << e.what();
}

TEST(Scenario, ValueErrorsPointAtTheValue) {
    const InputError e = load_error(std::string(kMinimal) + "  parallelism: {tp: eight}\n");
    EXPECT_EQ(e.key_path(), "workload.parallelism.tp");
    EXPECT_EQ(e.location().line, 7);
    EXPECT_EQ(e.location().column, 21);
    EXPECT_NE(e.message().find("whole number"), std::string::npos);
}

TEST(Scenario, RangeErrorsSayWhatIsAllowed) {
    const InputError e = load_error(std::string(kMinimal) + "  parallelism: {zero: 4}\n");
    EXPECT_EQ(e.key_path(), "workload.parallelism.zero");
    EXPECT_NE(e.message().find("must be 0 to 3"), std::string::npos) << e.what();
}

TEST(Scenario, RangesHoldAtTheirDocumentedBounds) {
    // seed: 0 to 2^53, exactly (2^53 + 1 was rounded to 2^53 and accepted).
    EXPECT_EQ(load_scenario_text(kMinimal, "t.yaml", {"seed=9007199254740992"}).seed,
              9'007'199'254'740'992);
    EXPECT_EQ(load_error(kMinimal, {"seed=9007199254740993"}).key_path(), "seed");
    // grad_bucket: > 0, so 1B is allowed (the bound was applied as > 1B).
    EXPECT_EQ(load_scenario_text(kMinimal, "t.yaml", {"workload.parallelism.grad_bucket=1B"})
                  .training.parallelism.grad_bucket,
              Bytes(1));
    EXPECT_EQ(load_error(kMinimal, {"workload.parallelism.grad_bucket=0B"}).key_path(),
              "workload.parallelism.grad_bucket");
    // An MTBF shorter than the engine's 1 ns tick.
    const std::string reliable = std::string(kMinimal) + "reliability: {}\n";
    const InputError mtbf =
        load_error(reliable, {"reliability.failures=[{component: chip, mtbf: 0.5ns}]"});
    EXPECT_EQ(mtbf.key_path(), "reliability.failures[0].mtbf");
    EXPECT_NE(mtbf.message().find("at least 1ns"), std::string::npos) << mtbf.what();
    EXPECT_NO_THROW(
        load_scenario_text(reliable, "t.yaml", {"reliability.failures=[{component: chip, mtbf: 1ns}]"}));
}

TEST(Scenario, StragglerChipsOutsideTheClusterAreRejectedAtEveryFidelity) {
    // 2 UltraServers = 128 chips; chip 128 does not exist. The analytic estimate does not use
    // the factors, and accepted it.
    for (const char* fidelity : {"analytic", "step"}) {
        const ScenarioSpec s = load_scenario_text(
            kMinimal, "t.yaml",
            {"hardware.speed.chips=[{chip: 128, speed: 0.5}]", "workload.parallelism.tp=8",
             std::string("simulation.fidelity=") + fidelity});
        try {
            sim::check_training(s);
            ADD_FAILURE() << fidelity << ": accepted chip 128 of 128";
        } catch (const InputError& e) {
            EXPECT_EQ(e.key_path(), "hardware.speed.chips[0].chip") << e.what();
        }
        EXPECT_THROW(sim::run_training(s), InputError) << fidelity;
    }
}

TEST(Scenario, ChoiceErrorsListTheChoices) {
    const InputError e = load_error(std::string(kMinimal) + "  precision: fp16\n");
    EXPECT_EQ(e.key_path(), "workload.precision");
    EXPECT_NE(e.message().find("bf16, fp8, fp32"), std::string::npos) << e.what();
}

TEST(Scenario, DuplicateKeysAreErrors) {
    const InputError e = load_error(std::string(kMinimal) + "  tokens: 2B\n");
    EXPECT_EQ(e.key_path(), "workload.tokens");
    EXPECT_NE(e.message().find("duplicate"), std::string::npos);
}

TEST(Scenario, ExactlyOneOfClusterSizes) {
    const InputError both = load_error(
        "cluster: {ultraservers: 2, instances: 8}\nworkload: {model: llama3-8b, "
        "sequence_length: 4096, global_batch: 64, steps: 10}\n");
    EXPECT_NE(std::string(both.what()).find("give only one of cluster.ultraservers or "
                                            "cluster.instances"),
              std::string::npos)
        << both.what();
    const InputError neither = load_error(
        "cluster: {}\nworkload: {model: llama3-8b, sequence_length: 4096, global_batch: 64, "
        "steps: 10}\n");
    EXPECT_EQ(neither.key_path(), "cluster");
    EXPECT_EQ(neither.location().line, 1);
}

TEST(Scenario, RequiredKeysAreReported) {
    const InputError e =
        load_error("cluster: {ultraservers: 1}\nworkload: {sequence_length: 4096, "
                   "global_batch: 64, steps: 10}\n");
    EXPECT_EQ(e.key_path(), "workload.model");
    EXPECT_NE(e.message().find("required"), std::string::npos);
    EXPECT_EQ(e.location().line, 2);
}

TEST(Scenario, EmptyAndNonMappingDocuments) {
    EXPECT_NE(std::string(load_error("").what()).find("empty"), std::string::npos);
    EXPECT_NE(std::string(load_error("- a\n- b\n").what()).find("mapping"), std::string::npos);
    EXPECT_NE(std::string(load_error("cluster: [1, 2]\n").what()).find("section"),
              std::string::npos);
}

TEST(Scenario, SyntaxErrorsCarryTheirPosition) {
    const InputError e = load_error("cluster: {ultraservers: 2\nworkload: x\n");
    EXPECT_NE(e.message().find("YAML syntax error"), std::string::npos);
    EXPECT_EQ(e.location().file, "test.yaml");
    EXPECT_GE(e.location().line, 1);
}

TEST(Scenario, OverridesAreValidatedLikeTheFile) {
    const ScenarioSpec s = load_scenario_text(
        kMinimal, "t.yaml",
        {"workload.parallelism.tp=8", "cluster.ultraservers=4", "hardware.hbm_reserve=1GiB"});
    EXPECT_EQ(s.training.parallelism.tp, 8);
    EXPECT_EQ(s.cluster.ultraservers, 4);
    EXPECT_EQ(s.hardware.hbm_reserve.count(), std::int64_t{1} << 30);
    EXPECT_NE(s.resolved_yaml.find("tp: 8"), std::string::npos);

    const InputError bad = load_error(kMinimal, {"workload.parallelism.tp=abc"});
    EXPECT_EQ(bad.key_path(), "workload.parallelism.tp");
    EXPECT_EQ(bad.location().file, "command line (--set workload.parallelism.tp=abc)");
    EXPECT_NE(std::string(bad.what()).find("command line (--set workload.parallelism.tp=abc): "
                                           "workload.parallelism.tp:"),
              std::string::npos)
        << bad.what();

    const InputError unknown = load_error(kMinimal, {"workload.parallelism.tpp=2"});
    EXPECT_NE(unknown.message().find("did you mean 'tp'"), std::string::npos) << unknown.what();
    EXPECT_EQ(unknown.location().file, "command line (--set workload.parallelism.tpp=2)");

    EXPECT_THROW(load_scenario_text(kMinimal, "t.yaml", {"no-equals-sign"}), InputError);
    EXPECT_THROW(load_scenario_text(kMinimal, "t.yaml", {"workload.sequence_length.x=1"}),
                 InputError);
}

TEST(Scenario, ControlCharactersOfAnOverrideKeyAreShownNotSent) {
    // Issue 28 UM5: a NUL in a key (from the Python module) ended the message where it stood.
    const InputError nul = load_error(kMinimal, {std::string("see\0d=3", 7)});
    EXPECT_EQ(nul.key_path(), "see\\x00d");
    EXPECT_EQ(nul.location().file, "command line (--set see\\x00d=3)");
    EXPECT_EQ(std::string(nul.what()),
              "command line (--set see\\x00d=3): see\\x00d: is not a key path such as "
              "workload.parallelism.tp (it holds control characters, shown as \\xNN)");
    const Override given =
        given_override(std::string("a\x01" "b", 3), "1", "trnsim.run() overrides");
    EXPECT_EQ(given.origin.file, "trnsim.run() overrides (--set a\\x01b=1)");
    EXPECT_EQ(given.path, std::string("a\x01" "b", 3));
}

TEST(Scenario, InlineModelStartsFromAPresetAndOverrides) {
    const std::string text = R"(cluster: {ultraservers: 1}
workload:
  model: {preset: llama3-8b, layers: 16, name: half-llama}
  sequence_length: 4096
  global_batch: 64
  steps: 10
)";
    const ScenarioSpec s = load_scenario_text(text, "t.yaml");
    EXPECT_EQ(s.training.model.layers, 16);
    EXPECT_EQ(s.training.model.hidden, 4096);
    EXPECT_EQ(s.training.model.kv_heads, 8);
    EXPECT_EQ(s.training.model.name, "half-llama");
    EXPECT_EQ(s.model_ref, "inline");
}

TEST(Scenario, InlineModelErrorsNameTheNestedKey) {
    const std::string text = R"(cluster: {ultraservers: 1}
workload:
  model:
    layers: 4
    hiden: 256
  sequence_length: 4096
  global_batch: 64
  steps: 10
)";
    const InputError e = load_error(text);
    EXPECT_EQ(e.key_path(), "workload.model.hiden");
    EXPECT_NE(e.message().find("did you mean 'hidden'"), std::string::npos);
    EXPECT_EQ(e.location().line, 5);

    const std::string missing = R"(cluster: {ultraservers: 1}
workload:
  model: {layers: 4, hidden: 256, heads: 4, vocab: 1000}
  sequence_length: 4096
  global_batch: 64
  steps: 10
)";
    EXPECT_EQ(load_error(missing).key_path(), "workload.model.ffn_hidden");
}

TEST(Scenario, UnknownPresetsSuggestAndList) {
    const InputError model = load_error(std::string(kMinimal) + "hardware: {chip: trn2}\n",
                                        {"workload.model=lama3-8b"});
    EXPECT_NE(model.message().find("did you mean 'llama3-8b'"), std::string::npos)
        << model.what();
    const InputError chip = load_error(std::string(kMinimal) + "hardware: {chip: trn4}\n");
    EXPECT_EQ(chip.key_path(), "hardware.chip");
    EXPECT_NE(chip.message().find("presets: inf2, trn1, trn2, trn3"), std::string::npos) << chip.what();
}

TEST(Scenario, ContextParallelDefaultsToOne) {
    EXPECT_EQ(load_scenario_text(kMinimal, "minimal.yaml").training.parallelism.cp, 1);
    const ScenarioSpec s =
        load_scenario_text(std::string(kMinimal) + "  parallelism: {tp: 4, cp: 2}\n", "cp.yaml");
    EXPECT_EQ(s.training.parallelism.cp, 2);
    EXPECT_EQ(load_error(std::string(kMinimal) + "  parallelism: {cp: 0}\n").key_path(),
              "workload.parallelism.cp");
}

/// The plan's error for a scenario text, located in the file as the CLI reports it.
InputError plan_error(const std::string& text) {
    const ScenarioSpec s = load_scenario_text(text, "test.yaml");
    try {
        sim::make_plan(s);
    } catch (const InputError& e) {
        return e.located(s.sources);
    }
    ADD_FAILURE() << "expected a plan error for:\n" << text;
    return InputError("", "");
}

TEST(Scenario, ContextParallelConstraintErrorsPointAtTheKey) {
    // 2 x cp = 6 does not divide the sequence length 4096.
    const InputError seq = plan_error(std::string(kMinimal) + "  parallelism: {tp: 4, cp: 3}\n");
    EXPECT_EQ(seq.key_path(), "workload.parallelism.cp");
    EXPECT_EQ(seq.location().line, 7);
    EXPECT_EQ(seq.location().column, 28);
    EXPECT_EQ(std::string(seq.what()).rfind("test.yaml:7:28: workload.parallelism.cp: ", 0), 0u)
        << seq.what();
    // 2 UltraServers = 512 ranks; tp 4 x cp 64 x pp 4 = 1024 does not divide them.
    const InputError ranks =
        plan_error(std::string(kMinimal) + "  parallelism: {tp: 4, cp: 64, pp: 4}\n");
    EXPECT_EQ(ranks.key_path(), "workload.parallelism");
    EXPECT_EQ(ranks.location().line, 7);
    EXPECT_NE(ranks.message().find("tp x cp x pp = 1024 does not divide the 512 ranks"),
              std::string::npos)
        << ranks.what();
}

TEST(Scenario, ChipDefaultsFollowTheChip) {
    const std::string text = R"(hardware: {chip: trn1}
cluster: {instances: 4}
workload: {model: llama3-8b, sequence_length: 4096, global_batch: 64, steps: 10}
)";
    const ScenarioSpec s = load_scenario_text(text, "t.yaml");
    EXPECT_EQ(s.hardware.lnc, 1);
    EXPECT_DOUBLE_EQ(s.cost.instance_hour.usd(), 21.5);
    EXPECT_EQ(s.hardware.hbm_reserve.count(), std::int64_t{1} << 30);
}

TEST(Scenario, PricesComeFromTheChipFileWithTheirOrigin) {
    const std::string text = R"(hardware: {chip: trn1}
cluster: {instances: 4}
workload: {model: llama3-8b, sequence_length: 4096, global_batch: 64, steps: 10}
)";
    // trn1.yaml: on-demand $21.50, 1-year reservation $13.23, Capacity Block $15.49.
    const ScenarioSpec od = load_scenario_text(text, "t.yaml");
    EXPECT_EQ(od.cost.origin, "trn1.32xlarge on_demand, chip file trn1");
    const ScenarioSpec ri = load_scenario_text(text, "t.yaml", {"cost.pricing=reserved_1y"});
    EXPECT_DOUBLE_EQ(ri.cost.instance_hour.usd(), 13.23);
    const ScenarioSpec cb = load_scenario_text(text, "t.yaml", {"cost.pricing=capacity_block"});
    EXPECT_DOUBLE_EQ(cb.cost.instance_hour.usd(), 15.49);
    // A price the scenario gives wins, and says so.
    const ScenarioSpec given = load_scenario_text(
        text, "t.yaml", {"cost.pricing=reserved_1y", "cost.instance_hour=10USD"});
    EXPECT_DOUBLE_EQ(given.cost.instance_hour.usd(), 10.0);
    EXPECT_EQ(given.cost.origin, "cost.instance_hour");
    // Switching the chip switches the price (no price written in the scenario).
    const ScenarioSpec trn2 = load_scenario_text(
        "hardware: {chip: trn2}\ncluster: {ultraservers: 1}\n"
        "workload: {model: llama3-8b, sequence_length: 4096, global_batch: 64, steps: 10}\n",
        "t.yaml");
    EXPECT_DOUBLE_EQ(trn2.cost.instance_hour.usd(), 35.76);
    // A pricing the chip file has no source for is an error at its key.
    try {
        (void)load_scenario_text(text, "t.yaml", {"cost.pricing=reserved_3y"});
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), "cost.pricing");
        EXPECT_NE(e.message().find("no reserved_3y price"), std::string::npos);
    }
}

} // namespace
} // namespace trnsim::config
