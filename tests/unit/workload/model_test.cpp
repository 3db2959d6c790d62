#include "trnsim/config/load.hpp"
#include "trnsim/workload/model.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trnsim::workload {
namespace {

ModelStats stats(const char* preset) { return compute_stats(config::load_model(preset)); }

double rel(std::int64_t a, double b) { return std::fabs(static_cast<double>(a) - b) / b; }

TEST(ModelStats, LlamaCountsAreExact) {
    // The parameter counts of the released checkpoints (safetensors metadata).
    EXPECT_EQ(stats("llama3-8b").total, 8'030'261'248);
    EXPECT_EQ(stats("llama3-70b").total, 70'553'706'496);
    EXPECT_EQ(stats("llama3-405b").total, 405'853'388'800);
    EXPECT_EQ(stats("llama2-7b").total, 6'738'415'616);
    // The serving presets (safetensors metadata of the released checkpoints).
    EXPECT_EQ(stats("llama2-13b").total, 13'015'864'320);
    EXPECT_EQ(stats("llama2-70b").total, 68'976'648'192);
    EXPECT_EQ(stats("codellama-13b").total, 13'016'028'160);
    EXPECT_EQ(stats("mistral-7b").total, 7'241'732'096);
    EXPECT_EQ(stats("llama3.2-1b").total, 1'235'814'400);
    EXPECT_EQ(stats("llama3.3-70b").total, 70'553'706'496);
    // Qwen3-32B: 32,762,123,264 with its QK-norm weights (64 layers x 2 x 128), not modelled.
    EXPECT_EQ(stats("qwen3-32b").total, 32'762'123'264 - 64 * 2 * 128);
}

TEST(ModelStats, MatchesPublishedTotals) {
    EXPECT_LT(rel(stats("llama3-8b").total, 8.03e9), 0.005);
    EXPECT_LT(rel(stats("llama3-70b").total, 70.6e9), 0.005);
    EXPECT_LT(rel(stats("llama3-405b").total, 405.9e9), 0.005);
    EXPECT_LT(rel(stats("gpt3-175b").total, 175e9), 0.005);
    const ModelStats mixtral = stats("mixtral-8x7b");
    EXPECT_EQ(mixtral.total, 46'702'792'704);
    EXPECT_LT(rel(mixtral.active, 12.9e9), 0.005);
    const ModelStats ds = stats("deepseek-v3");
    EXPECT_LT(rel(ds.total, 671e9), 0.005);
    // DeepSeek reports 37B activated; the exact architecture gives 37.6B (the report rounds).
    EXPECT_LT(rel(ds.active, 37e9), 0.02);
}

TEST(ModelStats, DenseModelsHaveAllParametersActive) {
    for (const char* m : {"llama3-8b", "gpt3-175b"}) {
        const ModelStats s = stats(m);
        EXPECT_EQ(s.active, s.total) << m;
        EXPECT_EQ(s.expert, 0) << m;
    }
}

TEST(ModelStats, PartsAddUp) {
    const ModelSpec m = config::load_model("mixtral-8x7b");
    const ModelStats s = compute_stats(m);
    EXPECT_EQ(s.total, s.embedding + s.lm_head + s.final_norm + m.layers * s.attention +
                           m.layers * (s.moe_shared + m.moe.experts * s.expert));
    // One Mixtral expert: three 4096 x 14336 matrices.
    EXPECT_EQ(s.expert, 3LL * 4096 * 14336);
    // Tied embeddings (GPT-3) have no separate output projection.
    EXPECT_EQ(stats("gpt3-175b").lm_head, 0);
}

TEST(ModelStats, TrainingFlopsFollowTheNeuronConvention) {
    const ModelSpec m = config::load_model("llama3-8b");
    const ModelStats s = compute_stats(m);
    // 6 N + 12 L d S with d = 4096, L = 32, S = 8192.
    const double expect = 6.0 * 8'030'261'248.0 + 12.0 * 32 * 4096 * 8192;
    EXPECT_DOUBLE_EQ(s.model_flops_per_token(m, 8192), expect);
}

TEST(ModelStats, MlaAttentionWidths) {
    const ModelSpec m = config::load_model("deepseek-v3");
    EXPECT_EQ(m.qk_dim(), 192);
    EXPECT_EQ(m.v_dim(), 128);
    EXPECT_DOUBLE_EQ(ModelStats::attention_flops_per_token_layer(m, 4096),
                     2.0 * 4096 * 128 * (192 + 128));
    EXPECT_EQ(m.dense_layers(), 3);
    EXPECT_EQ(m.moe_layers(), 58);
}

} // namespace
} // namespace trnsim::workload
