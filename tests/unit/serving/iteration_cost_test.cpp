#include "support/serving_benchmark.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/serving/iteration_cost.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

namespace trnsim::serving {
namespace {

struct Replica {
    compute::ChipSpec chip;
    std::unique_ptr<IterationCostModel> model;
};

Replica make(const char* chip_name, const workload::ModelSpec& m, ServingSpec s, int lnc = 0) {
    Replica r{config::load_chip(chip_name), nullptr};
    const int l = lnc > 0 ? lnc : r.chip.lnc_default;
    r.model = std::make_unique<IterationCostModel>(m, r.chip, l, s,
                                                   ReplicaPlacement::single(r.chip, l, s.tp),
                                                   r.chip.hbm_runtime_reserve);
    return r;
}

ServingSpec spec(int tp, int max_batch, std::int64_t max_context) {
    ServingSpec s;
    s.tp = tp;
    s.max_batch = max_batch;
    s.max_context = max_context;
    return s;
}

IterationShape decode(std::int64_t sequences, std::int64_t context, int k = 0) {
    IterationShape s;
    s.decode_sequences = sequences;
    s.decode_context_tokens = sequences * context;
    s.decode_max_context = context;
    s.speculative_k = k;
    return s;
}

IterationShape prefill(std::int64_t sequences, std::int64_t tokens) {
    IterationShape s;
    s.prefill_sequences = sequences;
    s.prefill_tokens = sequences * tokens;
    s.prefill_max_tokens = tokens;
    s.prefill_max_context = tokens;
    return s;
}

/// A small dense model: 2 layers, hidden 256, 4 heads of 64 (MHA), MLP 512, vocabulary 1024.
workload::ModelSpec tiny() {
    workload::ModelSpec m;
    m.name = "tiny";
    m.layers = 2;
    m.hidden = 256;
    m.heads = 4;
    m.kv_heads = 4;
    m.head_dim = 64;
    m.ffn_hidden = 512;
    m.vocab = 1024;
    return m;
}

TEST(Buckets, TnxContextBucketsEncodeTheRestTokenByToken) {
    // Transformers NeuronX 2.18 (base.py, context): with context buckets {64, 128} of a
    // 256-token replica, a 200-token prompt is one context graph of 128 tokens attending to
    // its own 128 keys, then 72 decode steps; the decode steps are at the bucket holding the
    // prompt (256). A 100-token prompt pads to the 128 bucket and runs no decode step.
    ServingSpec s = spec(1, 1, 256);
    s.prefill_buckets = {64, 128};
    const Replica r = make("trn1", tiny(), s);
    EXPECT_EQ(r.model->prefill_buckets(), (std::vector<std::int64_t>{64, 128}));
    EXPECT_EQ(r.model->buckets(), (std::vector<std::int64_t>{128, 256}));
    const double graph128 = r.model->seconds(prefill(1, 128));
    EXPECT_DOUBLE_EQ(r.model->seconds(prefill(1, 100)), graph128);
    EXPECT_LT(r.model->seconds(prefill(1, 64)), graph128);
    EXPECT_NEAR(r.model->seconds(prefill(1, 200)),
                graph128 + 72.0 * r.model->seconds(decode(1, 200)), 1e-12);
    // The breakdown recomputes the same terms: one prefill graph and 72 decode graphs.
    const IterationBreakdown b = r.model->breakdown(prefill(1, 200));
    EXPECT_DOUBLE_EQ(b.graphs, 73.0);
    EXPECT_DOUBLE_EQ(b.prefill_graphs, 1.0);
    EXPECT_NEAR(b.seconds(r.chip.serving), r.model->seconds(prefill(1, 200)), 1e-9);
    // Buckets beyond max_context are rejected with their key.
    ServingSpec bad = spec(1, 1, 256);
    bad.prefill_buckets = {128, 512};
    try {
        make("trn1", tiny(), bad);
        ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("workload.serving.prefill_buckets"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Coefficients, ThePrefillGraphOverheadIsPaidOncePerContextGraph) {
    // Raising serving.prefill_graph_overhead by 1 ms adds 1 ms per context-encoding graph
    // (prefill_batch 1: a graph per prompt, so 3 ms for 3 prompts) and nothing to a decode.
    ServingSpec s = spec(1, 4, 256);
    Replica a = make("trn1", tiny(), s);
    compute::ChipSpec chip = a.chip;
    chip.serving.prefill_graph_overhead = chip.serving.prefill_graph_overhead +
                                          Duration::from_ns(1000000);
    const IterationCostModel b(tiny(), chip, chip.lnc_default, s,
                               ReplicaPlacement::single(chip, chip.lnc_default, 1),
                               chip.hbm_runtime_reserve);
    EXPECT_NEAR(b.seconds(prefill(3, 100)) - a.model->seconds(prefill(3, 100)), 3e-3, 1e-12);
    EXPECT_DOUBLE_EQ(b.seconds(decode(4, 200)), a.model->seconds(decode(4, 200)));
}

TEST(Buckets, NeuronDefaultsArePowersOfTwoUpToMaxContext) {
    EXPECT_EQ(default_buckets(1152), (std::vector<std::int64_t>{128, 256, 512, 1024, 1152}));
    EXPECT_EQ(default_buckets(4096),
              (std::vector<std::int64_t>{128, 256, 512, 1024, 2048, 4096}));
    EXPECT_EQ(default_buckets(100), (std::vector<std::int64_t>{100}));
    const Replica r = make("trn1", tiny(), spec(2, 1, 1152));
    EXPECT_EQ(r.model->bucket_end(1), 128);
    EXPECT_EQ(r.model->bucket_end(128), 128);
    EXPECT_EQ(r.model->bucket_end(129), 256);
    EXPECT_EQ(r.model->bucket_end(1025), 1152);
    EXPECT_EQ(r.model->bucket_end(1152), 1152);
    // Static shapes: every context of a bucket costs the same.
    EXPECT_EQ(r.model->time(decode(1, 129)), r.model->time(decode(1, 256)));
    EXPECT_EQ(r.model->time(prefill(1, 300)), r.model->time(prefill(1, 512)));
}

TEST(Memory, WeightsAndKvCacheOfLlama3_70BOnTrn1) {
    const auto m = config::load_model("llama3-70b");
    const Replica r = make("trn1", m, spec(32, 1, 4096));
    const ReplicaMemory& mem = r.model->memory();
    // KV of one token: 2 (K, V) x 80 layers x 8 kv heads x 128 x 2 bytes.
    EXPECT_EQ(mem.kv_per_token.count(), 2 * 80 * 8 * 128 * 2);
    EXPECT_EQ(mem.kv_per_token.count(), 327'680);
    // tp 32 > 8 kv heads: each rank holds one (replicated) kv head: 2 x 80 x 1 x 128 x 2.
    EXPECT_EQ(r.model->kv_heads_per_rank(), 1);
    EXPECT_EQ(r.model->heads_per_rank(), 2);
    EXPECT_EQ(mem.kv_per_token_per_rank.count(), 40'960);
    // Weights per rank, BF16. Per layer: QKV 8192 x (2 + 2 x 1) x 128 = 4,194,304; O
    // 256 x 8192 = 2,097,152; MLP 3 x 8192 x 896 = 22,020,096 (28,672 / 32 = 896): 28,311,552
    // x 80 layers = 2,264,924,160. Replicated norms 80 x 2 x 8192 + 8192 = 1,318,912;
    // embedding 128,256 x 256 (hidden / 32) = 32,833,536; LM head 8192 x 4008 (128,256 / 32)
    // = 32,833,536. Total 2,331,910,144 parameters x 2 bytes.
    EXPECT_EQ(mem.weights_per_rank.count(), 4'663'820'288);
    // 16 GiB per rank - 512 MiB reserve (1 GiB per chip) - weights - workspace.
    EXPECT_EQ(mem.capacity_per_rank.count(), std::int64_t{16} << 30);
    EXPECT_EQ(mem.reserve_per_rank.count(), std::int64_t{512} << 20);
    EXPECT_EQ(mem.kv_free_per_rank.count(),
              mem.capacity_per_rank.count() - mem.reserve_per_rank.count() -
                  mem.weights_per_rank.count() - mem.workspace_per_rank.count());
    EXPECT_EQ(mem.kv_capacity_tokens, mem.kv_free_per_rank.count() / 40'960);
    EXPECT_GT(mem.kv_capacity_tokens, 250'000);
}

TEST(Memory, ConvertToMhaRepeatsTheKeyValueHeadsUpToTheQueryHeads) {
    // Llama 3 70B (64 query, 8 key/value heads of 128, hidden 8192, 80 layers) on 24 inf2
    // ranks, laid out as Transformers NeuronX does (GQA.REPLICATED_HEADS): the 64 query heads
    // pad to 72, 3 per rank, and the key/value heads repeated to the query heads follow them:
    // 3 per rank instead of 1. KV of one token per rank: 2 x 80 x 3 x 128 x 2 bytes = 122,880
    // (40,960 replicated to tp). Weights per rank grow by the K and V projections of the 2
    // extra heads: 80 layers x 2 (K, V) x 8192 x (2 x 128) x 2 bytes = 671,088,640.
    const auto m = config::load_model("llama3-70b");
    const Replica tp = make("inf2", m, spec(24, 1, 4096));
    ServingSpec s = spec(24, 1, 4096);
    s.gqa = GqaLayout::convert_to_mha;
    const Replica mha = make("inf2", m, s);
    EXPECT_EQ(tp.model->heads_per_rank(), 3);
    EXPECT_EQ(tp.model->kv_heads_per_rank(), 1);
    EXPECT_EQ(mha.model->kv_heads_per_rank(), 3);
    EXPECT_EQ(tp.model->memory().kv_per_token_per_rank.count(), 40'960);
    EXPECT_EQ(mha.model->memory().kv_per_token_per_rank.count(), 122'880);
    EXPECT_EQ(mha.model->memory().weights_per_rank.count() -
                  tp.model->memory().weights_per_rank.count(),
              671'088'640);
    // A decode step reads those weights: it takes longer (HBM-bound).
    EXPECT_GT(mha.model->seconds(decode(1, 1024)), tp.model->seconds(decode(1, 1024)));
    // tp 12 cannot replicate 8 key/value heads evenly (an error below), but can convert them:
    // 64 query heads pad to 72, 6 per rank, and so many key/value heads.
    s = spec(12, 1, 4096);
    s.gqa = GqaLayout::convert_to_mha;
    const Replica twelve = make("trn2", m, s);
    EXPECT_EQ(twelve.model->kv_heads_per_rank(), 6);
    // A multi-head model has nothing to convert.
    s = spec(32, 1, 8192);
    s.gqa = GqaLayout::convert_to_mha;
    EXPECT_EQ(make("trn1", config::load_model("llama2-13b"), s).model->kv_heads_per_rank(), 2);
}

TEST(Memory, HeadsArePaddedWhenTpDoesNotDivideThem) {
    // Llama-2-13b: 40 heads (MHA) on 32 ranks pad to 64: 2 query and 2 kv heads per rank.
    const Replica r = make("trn1", config::load_model("llama2-13b"), spec(32, 1, 8192));
    EXPECT_EQ(r.model->heads_per_rank(), 2);
    EXPECT_EQ(r.model->kv_heads_per_rank(), 2);
    EXPECT_EQ(r.model->memory().kv_per_token_per_rank.count(), 2 * 40 * 2 * 128 * 2);
    // Int8 storage halves the matmul weights (norms, embedding and LM head stay BF16).
    ServingSpec s = spec(32, 1, 8192);
    const Replica bf16 = make("trn1", config::load_model("llama3-8b"), s);
    s.weight_bytes = 1;
    const Replica int8 = make("trn1", config::load_model("llama3-8b"), s);
    const double ratio = int8.model->memory().weights_per_rank.as_double() /
                         bf16.model->memory().weights_per_rank.as_double();
    EXPECT_GT(ratio, 0.5);
    EXPECT_LT(ratio, 0.65);
}

TEST(Memory, MicroscalingWeightsHoldTheirBlockScales) {
    // On trn3: MXFP8 stores 1 byte and MXFP4 half a byte an element, each with one 8-bit
    // scale a block of 32: 33/32 and 17/32 of an FP8 copy's matmul weights (the rest, norms,
    // embedding and head, stays BF16 in all three).
    ServingSpec s = spec(32, 1, 8192); // 8 trn3 chips at LNC 2
    s.weight_bytes = 1;
    const auto m = config::load_model("llama3-8b");
    const Replica fp8 = make("trn3", m, s, 2);
    s.mx = MxFormat::mxfp8;
    const Replica mx8 = make("trn3", m, s, 2);
    s.mx = MxFormat::mxfp4;
    const Replica mx4 = make("trn3", m, s, 2);
    s.mx = MxFormat::none;
    s.weight_bytes = 2;
    const Replica bf16 = make("trn3", m, s, 2);
    const auto w = [](const Replica& r) { return r.model->memory().weights_per_rank.as_double(); };
    // fp8 = matmul + 2 other, bf16 = 2 matmul + 2 other: so matmul = bf16 - fp8.
    const double matmul = w(bf16) - w(fp8);
    EXPECT_NEAR(w(mx8) - w(fp8), matmul / 32.0, 2.0);
    EXPECT_NEAR(w(fp8) - w(mx4), matmul * (1.0 - 17.0 / 32.0), 2.0);
    // A decode step streams the weights: MXFP4's is the cheapest, and its matmuls are at most
    // the FP8 weights' time x 17/32 where the stream bounds them.
    const double t4 = mx4.model->seconds(decode(1, 4096));
    EXPECT_LT(t4, mx8.model->seconds(decode(1, 4096)));
    EXPECT_LT(t4, fp8.model->seconds(decode(1, 4096)));
    // A long prompt multiplies at the MX rate (4x BF16 on trn3), faster than 8-bit weights
    // dequantized to BF16.
    EXPECT_LT(mx8.model->seconds(prefill(1, 8192)), fp8.model->seconds(prefill(1, 8192)));
}

TEST(Memory, StructuredSparseWeightsHoldTheKeptElementsAndTheirPositions) {
    // BF16 weights at 2:4 keep half their elements, each with a 2-bit position: 0.5 x (2 +
    // 2/8) = 1.125 bytes an element; at 1:4 a quarter: 0.25 x 2.25 = 0.5625; at 4:12 a
    // third, 4-bit positions: (2 + 0.5) / 3.
    ServingSpec s = spec(32, 1, 8192);
    const auto m = config::load_model("llama3-8b");
    const Replica dense = make("trn2", m, s, 2);
    EXPECT_DOUBLE_EQ(s.stored_weight_bytes(), 2.0);
    const auto w = [](const Replica& r) { return r.model->memory().weights_per_rank.as_double(); };
    s.weight_bytes = 1;
    const double other = 2.0 * w(make("trn2", m, s, 2)) - w(dense); // 2 (M + O) - (2 M + O)
    const double matmul_elements = (w(dense) - other) / 2.0;
    s.weight_bytes = 2;
    const std::pair<std::pair<int, int>, double> cases[] = {
        {{2, 4}, 1.125}, {{1, 4}, 0.5625}, {{4, 12}, 2.5 / 3.0}};
    for (const auto& [nm, bytes] : cases) {
        s.sparse_n = nm.first;
        s.sparse_m = nm.second;
        EXPECT_DOUBLE_EQ(s.stored_weight_bytes(), bytes);
        const Replica r = make("trn2", m, s, 2);
        EXPECT_NEAR(w(r), other + matmul_elements * bytes, 4.0) << nm.first << ":" << nm.second;
        // Fewer weights to stream and fewer products: never slower than dense.
        EXPECT_LT(r.model->seconds(decode(1, 4096)), dense.model->seconds(decode(1, 4096)));
        EXPECT_LT(r.model->seconds(prefill(1, 8192)), dense.model->seconds(prefill(1, 8192)));
    }
}

TEST(Groups, TensorParallelGroupsFollowThePlacement) {
    const auto m = config::load_model("llama3-70b");
    EXPECT_EQ(make("trn1", m, spec(32, 1, 4096)).model->tp_group().describe(),
              "2 on_chip x 16 neuronlink");
    EXPECT_EQ(make("trn2", config::load_model("llama3-8b"), spec(8, 2, 2048), 2)
                  .model->tp_group()
                  .describe(),
              "4 on_chip x 2 neuronlink");
    EXPECT_EQ(make("inf2", config::load_model("llama3-8b"), spec(24, 1, 4096))
                  .model->tp_group()
                  .describe(),
              "2 on_chip x 12 neuronlink");
    // 128 ranks at LNC 2 = 32 chips: two instances of one UltraServer, joined by NeuronLink.
    EXPECT_EQ(make("trn2", config::load_model("llama3-405b"), spec(128, 1, 4096), 2)
                  .model->tp_group()
                  .describe(),
              "4 on_chip x 16 neuronlink x 2 neuronlink_z");
}

TEST(DecodeStep, TinyModelCountsAndCollectivesByHand) {
    // trn1, tp 2 = the two cores of one chip; one sequence, context 100 (bucket 128).
    const Replica r = make("trn1", tiny(), spec(2, 1, 512));
    const IterationBreakdown b = r.model->breakdown(decode(1, 100));
    // Fused attention: 13 kernels per layer (norm, QKV, rotary, KV write, attention, O,
    // residual, norm, gate/up, SiLU, product, down, residual) + embedding gather, final norm,
    // LM head; 2 all-reduces per layer + the embedding and logits all-gathers; one graph.
    EXPECT_DOUBLE_EQ(b.kernels, 13.0 * 2 + 3);
    EXPECT_DOUBLE_EQ(b.collectives, 2.0 * 2 + 2);
    EXPECT_DOUBLE_EQ(b.graphs, 1.0);
    // Collectives by hand (one level: 2 ranks on one chip, HBM 820 GB/s / 2, 2 us per step;
    // below 1 MiB one mesh step; no launch: operations of a compiled graph): all-reduce of
    // 256 x 2 B = 512 B: 2 x (1/2 x 512 / 410e9 + 2e-6); all-gathers of 512 B and of the logits
    // 1024 x 4 B: 1/2 x bytes / 410e9 + 2e-6 each.
    EXPECT_EQ(r.model->tp_group().launch, Duration::zero());
    const double hbm = 410e9;
    const double ar = 2.0 * (0.5 * 512.0 / hbm + 2e-6);
    const double ag = [&](double bytes) { return 0.5 * bytes / hbm + 2e-6; }(512.0) +
                      (0.5 * 4096.0 / hbm + 2e-6);
    EXPECT_NEAR(b.collective_time.seconds(), 2 * 2 * ar + ag, 1e-12);
    // Matmuls read every weight once: at least the weight bytes over the rank's DMA rate
    // (16 engines x 17 GB/s, DMAG), per layer (256 x 768 + 256 x 256 + 3 x 256 x 256) x 2 B,
    // plus the LM head 256 x 512 x 2 B; and each matmul pays at least one DMA setup (1.3 us).
    const double weight_bytes = 2.0 * (2.0 * (256 * 768 + 256 * 256 + 3 * 256 * 256) + 256 * 512);
    EXPECT_GT(b.matmul.seconds(), weight_bytes / (16 * 17e9));
    EXPECT_GT(b.matmul.seconds(), 9 * 1.3e-6);
    // Materialised attention: four operators instead of one.
    ServingSpec s = spec(2, 1, 512);
    s.materialized_attention = true;
    EXPECT_DOUBLE_EQ(make("trn1", tiny(), s).model->breakdown(decode(1, 100)).kernels,
                     16.0 * 2 + 3);
}

TEST(PrefillGraph, CollectiveOverlapLeavesTheLongerSideAndOneTile) {
    // Llama 3 70B at tp 64 on one trn2.48xlarge, one 8,192-token prompt. Compiled without
    // overlap (collective_tiling 1) the graph is its compute K plus its collectives X; with t
    // tiles the collectives expose max(K, X) + min(K, X) / (t n) - K for n collectives, so the
    // graph takes the longer side plus one tile of one segment of the shorter.
    const auto m = config::load_model("llama3-70b");
    ServingSpec s = spec(64, 4, 8192);
    s.collective_tiling = 1;
    const IterationBreakdown one = make("trn2", m, s, 2).model->breakdown(prefill(1, 8192));
    const double k = one.prefill_kernel.seconds();
    const double x = one.collective_time.seconds();
    const double n = one.collectives;
    ASSERT_GT(k, 0.0);
    ASSERT_GT(x, 0.0);
    EXPECT_DOUBLE_EQ(n, 2.0 * 80 + 2); // two all-reduces a layer, the embedding's and logits'
    for (const int t : {2, 4}) {
        s.collective_tiling = t;
        const Replica r = make("trn2", m, s, 2);
        const IterationBreakdown b = r.model->breakdown(prefill(1, 8192));
        EXPECT_DOUBLE_EQ(b.prefill_kernel.seconds(), k);
        EXPECT_DOUBLE_EQ(b.collectives, n);
        EXPECT_NEAR(b.collective_time.seconds(), std::max(k, x) + std::min(k, x) / (t * n) - k,
                    1e-12 * (k + x));
        // Decode graphs pay their collectives in full whatever the tiling.
        s.collective_tiling = 1;
        EXPECT_DOUBLE_EQ(r.model->seconds(decode(4, 4096)),
                         make("trn2", m, s, 2).model->seconds(decode(4, 4096)));
        s.collective_tiling = t;
    }
}

TEST(DecodeStep, Llama3_70BDecodeIsHbmBound) {
    // Weights per rank 4.66 GB (above) over the core's DMA rate of 16 x 17 GB/s: 17.1 ms is
    // the floor of the matmuls; the kernel model streams a large M = 1 matmul at 80-95% of it.
    const Replica r = make("trn1", config::load_model("llama3-70b"), spec(32, 1, 4096));
    const IterationBreakdown b = r.model->breakdown(decode(1, 256));
    const double floor = 2.0 * (2'264'924'160.0 + 32'833'536.0) / (16 * 17e9);
    EXPECT_GT(b.matmul.seconds(), floor);
    EXPECT_LT(b.matmul.seconds(), floor / 0.75);
    // The iteration: kernels + collectives + the chip's fixed costs.
    EXPECT_NEAR(r.model->seconds(decode(1, 256)), b.seconds(r.chip.serving), 1e-12);
    EXPECT_NEAR(b.seconds(r.chip.serving) - b.seconds(compute::ServingCosts{}),
                r.chip.serving.iteration_overhead.seconds() +
                    b.kernels * r.chip.serving.kernel_overhead.seconds(),
                1e-12);
}

TEST(Monotonicity, LongerContextsAndPromptsNeverCostLess) {
    for (const char* chip : {"trn1", "trn2", "inf2"}) {
        const auto m = config::load_model("llama3-8b");
        ServingSpec s = spec(chip == std::string("trn2") ? 8 : 16, 4, 8192);
        for (const bool materialized : {false, true}) {
            s.materialized_attention = materialized;
            const Replica r = make(chip, m, s);
            double prev_decode = 0.0;
            double prev_prefill = 0.0;
            for (std::int64_t c = 1; c <= 8192; c = c * 3 / 2 + 1) {
                const double d = r.model->seconds(decode(4, c));
                const double p = r.model->seconds(prefill(1, c));
                EXPECT_GE(d, prev_decode) << chip << " decode " << c;
                EXPECT_GE(p, prev_prefill) << chip << " prefill " << c;
                prev_decode = d;
                prev_prefill = p;
            }
            // More prompts in one iteration never cost less.
            EXPECT_GT(r.model->seconds(prefill(2, 512)), r.model->seconds(prefill(1, 512)));
        }
    }
}

/// `s` with Llama-3.2-1B drafting k = 3 tokens (acceptance 0.8, 0.7, 0.6).
ServingSpec with_1b_draft(ServingSpec s, bool fused = false) {
    SpeculativeSpec sp;
    sp.draft_ref = "llama3.2-1b";
    sp.draft = config::load_model("llama3.2-1b");
    sp.k = 3;
    sp.acceptance = {0.8, 0.7, 0.6};
    sp.fused = fused;
    s.speculative = sp;
    return s;
}

TEST(Speculation, DraftStepsPlusVerificationCostMoreThanOneDecode) {
    const ServingSpec s = with_1b_draft(spec(8, 2, 2048));
    const Replica r = make("trn2", config::load_model("llama3-8b"), s, 2);
    const double plain = r.model->seconds(decode(2, 600, 0));
    const double spec3 = r.model->seconds(decode(2, 600, 3));
    EXPECT_GT(spec3, plain);
    // k draft graphs and one verification graph.
    EXPECT_DOUBLE_EQ(r.model->breakdown(decode(2, 600, 3)).graphs, 4.0);
    EXPECT_DOUBLE_EQ(r.model->breakdown(decode(2, 600, 0)).graphs, 1.0);
    // Each draft step is a decode of the (smaller) draft model, below a target decode, so the
    // speculative iteration is less than 1 + k target decodes.
    EXPECT_LT(spec3, 4.0 * plain);
    // The draft's weights and KV cache take HBM too.
    const Replica target_only = make("trn2", config::load_model("llama3-8b"), spec(8, 2, 2048), 2);
    EXPECT_GT(r.model->memory().weights_per_rank, target_only.model->memory().weights_per_rank);
}

TEST(Speculation, FusedDraftPaysTheCostsPerGraphOnce) {
    // The same draft and target compiled into one graph: the same kernels and collectives, one
    // graph a speculative iteration instead of 1 + k, one context-encoding graph instead of
    // two, so the iteration is cheaper by exactly k costs per graph (one cost per graph and
    // one per context graph for a prefill).
    const Replica apart =
        make("trn2", config::load_model("llama3-8b"), with_1b_draft(spec(8, 2, 2048)), 2);
    const Replica fused =
        make("trn2", config::load_model("llama3-8b"), with_1b_draft(spec(8, 2, 2048), true), 2);
    const IterationBreakdown a = apart.model->breakdown(decode(2, 600, 3));
    const IterationBreakdown f = fused.model->breakdown(decode(2, 600, 3));
    EXPECT_DOUBLE_EQ(a.graphs, 4.0);
    EXPECT_DOUBLE_EQ(f.graphs, 1.0);
    EXPECT_DOUBLE_EQ(f.kernels, a.kernels);
    EXPECT_DOUBLE_EQ(f.collectives, a.collectives);
    const compute::ServingCosts& c = fused.chip.serving;
    ASSERT_GT(c.iteration_overhead.seconds(), 0.0);
    EXPECT_NEAR(apart.model->seconds(decode(2, 600, 3)) - fused.model->seconds(decode(2, 600, 3)),
                3.0 * c.iteration_overhead.seconds(), 1e-12);
    const IterationBreakdown pa = apart.model->breakdown(prefill(1, 512));
    const IterationBreakdown pf = fused.model->breakdown(prefill(1, 512));
    EXPECT_DOUBLE_EQ(pa.prefill_graphs, 2.0);
    EXPECT_DOUBLE_EQ(pf.prefill_graphs, 1.0);
    EXPECT_NEAR(apart.model->seconds(prefill(1, 512)) - fused.model->seconds(prefill(1, 512)),
                c.iteration_overhead.seconds() + c.prefill_graph_overhead.seconds(), 1e-12);
    // Without speculation in the iteration, fusion changes nothing.
    EXPECT_DOUBLE_EQ(apart.model->seconds(decode(2, 600, 0)),
                     fused.model->seconds(decode(2, 600, 0)));
}

TEST(Speculation, AModelWithFewerHeadsThanRanksIsPadded) {
    // Llama-3.2-1B (32 query heads, 8 key/value heads) at tp 64, as INF-T2b's fused run
    // compiles its draft: the query heads padded up to tp, one a rank (half of them padding),
    // and the key/value heads replicated to one a rank, so a rank's attention is the same
    // kernel as at tp 32 (one head each), while its weights halve.
    const auto m = config::load_model("llama3.2-1b");
    const Replica r64 = make("trn2", m, spec(64, 1, 4096), 2);
    const Replica r32 = make("trn2", m, spec(32, 1, 4096), 2);
    EXPECT_EQ(r64.model->heads_per_rank(), 1);
    EXPECT_EQ(r64.model->kv_heads_per_rank(), 1);
    EXPECT_EQ(r32.model->heads_per_rank(), 1);
    EXPECT_DOUBLE_EQ(r64.model->breakdown(decode(1, 1000)).attention.seconds(),
                     r32.model->breakdown(decode(1, 1000)).attention.seconds());
    EXPECT_LT(r64.model->memory().weights_per_rank, r32.model->memory().weights_per_rank);
    // As a draft of Llama-3.3-70B at tp 64.
    const Replica r = make("trn2", config::load_model("llama3.3-70b"),
                           with_1b_draft(spec(64, 1, 4096), true), 2);
    EXPECT_GT(r.model->seconds(decode(1, 1000, 3)), r.model->seconds(decode(1, 1000, 0)));
}

TEST(Memoisation, TablesEqualRecomputation) {
    ServingSpec s = spec(32, 4, 4096);
    s.materialized_attention = true;
    s.prefill_batch = 0;
    const Replica r = make("trn1", config::load_model("llama2-70b"), s);
    for (std::int64_t c : {1, 100, 128, 129, 1000, 2048, 3000, 4096}) {
        EXPECT_DOUBLE_EQ(r.model->seconds(decode(4, c)),
                         r.model->breakdown(decode(4, c)).seconds(r.chip.serving))
            << c;
        EXPECT_DOUBLE_EQ(r.model->seconds(prefill(3, c)),
                         r.model->breakdown(prefill(3, c)).seconds(r.chip.serving))
            << c;
        IterationShape both = prefill(1, c);
        both.decode_sequences = 2;
        both.decode_max_context = 4096;
        EXPECT_DOUBLE_EQ(r.model->seconds(both),
                         r.model->seconds(prefill(1, c)) + r.model->seconds(decode(2, 4096)));
    }
    // Static batching pads a prefill to the compiled batch: 1 or 4 prompts cost the same.
    EXPECT_DOUBLE_EQ(r.model->seconds(prefill(1, 512)), r.model->seconds(prefill(4, 512)));
}

TEST(Memoisation, TimeIsATableLookup) {
    const Replica r = make("trn1", config::load_model("llama3-70b"), spec(32, 8, 8192));
    const int n = 2'000'000;
    std::int64_t sink = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        sink += r.model->time(decode(8, 1 + (i & 8191))).ns();
    }
    const double ns = std::chrono::duration<double, std::nano>(
                          std::chrono::steady_clock::now() - t0)
                          .count() /
                      n;
    std::printf("IterationCostModel::time: %.1f ns per call (decode shapes over all buckets)\n",
                ns);
    EXPECT_GT(sink, 0);
    EXPECT_LT(ns, 1000.0);
}

TEST(Moe, RoutedExpertsReadOnlyTheExpertsTokensReach) {
    // Mixtral 8x7B, top-2 of 8: one decode token touches 2 experts, so the expert matmuls of
    // a layer are 8 x p = 2 expert MLPs with p = 1 - (1 - 2/8)^1 = 1/4; with 64 tokens almost
    // every expert (p = 1 - 0.75^64) is read.
    const auto m = config::load_model("mixtral-8x7b");
    const Replica one = make("trn2", m, spec(16, 1, 4096), 2);
    const Replica many = make("trn2", m, spec(16, 64, 4096), 2);
    const double k1 = one.model->breakdown(decode(1, 128)).matmul.seconds();
    const double k64 = many.model->breakdown(decode(64, 128)).matmul.seconds();
    EXPECT_GT(k64, 2.5 * k1);
    // Expert parallelism adds the dispatch and combine all-to-alls per MoE layer.
    ServingSpec s = spec(16, 1, 4096);
    s.ep = 4;
    const Replica ep = make("trn2", m, s, 2);
    EXPECT_DOUBLE_EQ(ep.model->breakdown(decode(1, 128)).collectives,
                     one.model->breakdown(decode(1, 128)).collectives + 2.0 * 32);
}

void expect_error(const char* chip, const workload::ModelSpec& m, const ServingSpec& s,
                  const std::string& key) {
    const compute::ChipSpec c = config::load_chip(chip);
    try {
        IterationCostModel x(m, c, c.lnc_default, s, ReplicaPlacement::single(c, c.lnc_default,
                                                                               s.tp),
                             c.hbm_runtime_reserve);
        ADD_FAILURE() << "expected an InputError at " << key;
    } catch (const InputError& e) {
        EXPECT_EQ(e.key_path(), key) << e.what();
    }
}

TEST(Errors, BadReplicasNameTheirKey) {
    const auto l70 = config::load_model("llama3-70b");
    // 70B on 2 trn1 ranks: 141 GB of weights in 32 GiB.
    expect_error("trn1", l70, spec(2, 1, 4096), "workload.serving");
    // Fits the weights on 32 ranks, not the KV cache of 64 x 128k tokens.
    expect_error("trn1", l70, spec(32, 64, 131072), "workload.serving");
    // tp 3 neither divides nor is a multiple of a trn1 chip's 2 ranks.
    expect_error("trn1", l70, spec(3, 1, 4096), "workload.serving.tp");
    // tp 12 and 8 kv heads: kv heads cannot be split or replicated evenly.
    expect_error("trn2", l70, spec(12, 1, 4096), "workload.serving.tp");
    ServingSpec s = spec(32, 1, 4096);
    s.ep = 2;
    expect_error("trn1", l70, s, "workload.serving.ep");
    s = spec(32, 1, 4096);
    s.buckets = {128, 1024};
    expect_error("trn1", l70, s, "workload.serving.buckets");
    s.buckets = {1024, 512, 4096};
    expect_error("trn1", l70, s, "workload.serving.buckets");
    s = spec(32, 1, 4096);
    s.weight_bytes = 3;
    expect_error("trn1", l70, s, "workload.serving.weight_bytes");
    // Microscaling weights need an MX matmul (NeuronCore-v4).
    s = spec(32, 1, 4096);
    s.weight_bytes = 1;
    s.mx = MxFormat::mxfp4;
    expect_error("trn1", l70, s, "workload.serving.weights");
    s.tp = 64;
    expect_error("trn2", l70, s, "workload.serving.weights");
    // Structured sparsity needs a sparse matmul (no Trainium1), and not on MX weights.
    s = spec(32, 1, 4096);
    s.sparse_n = 2;
    s.sparse_m = 4;
    expect_error("trn1", l70, s, "workload.serving.sparsity");
    s.tp = 64;
    s.weight_bytes = 1;
    s.mx = MxFormat::mxfp8;
    expect_error("trn3", l70, s, "workload.serving.sparsity");
    expect_error("trn1", config::load_model("deepseek-v3"), spec(32, 1, 4096), "workload.model");
    // inf2 has no EFA: a replica larger than one instance cannot be joined.
    expect_error("inf2", config::load_model("llama3-405b"), spec(48, 1, 4096),
                 "workload.serving.tp");
}

TEST(Benchmarks, StaticBatchPercentilesFollowTheBuckets) {
    // 128 + 8064 tokens at max_context 8192: decode steps at contexts 129 .. 8191 fall in the
    // buckets 256 (128 steps), 512, 1024, 2048, 4096 (2048 steps) and 8192 (4095 steps): the
    // median step (rank 4032 of 8063) is in the 8192 bucket, as for 4096 + 4096.
    ServingSpec s = spec(32, 1, 8192);
    s.weight_bytes = 1;
    const Replica r = make("trn1", config::load_model("llama3-8b"), s);
    const BenchmarkResult a = static_batch_benchmark(*r.model, 1, 128, 8064);
    const BenchmarkResult b = static_batch_benchmark(*r.model, 1, 4096, 4096);
    EXPECT_DOUBLE_EQ(a.tpot_p50.seconds(), r.model->seconds(decode(1, 8192)));
    EXPECT_DOUBLE_EQ(b.tpot_p50.seconds(), a.tpot_p50.seconds());
    EXPECT_LT(a.tpot_mean.seconds(), b.tpot_mean.seconds());
    EXPECT_DOUBLE_EQ(a.ttft_p50.seconds(), r.model->seconds(prefill(1, 128)));
    EXPECT_DOUBLE_EQ(a.ttft_p99.seconds(), a.ttft_p50.seconds());
    // Throughput: output tokens over the whole request.
    EXPECT_NEAR(a.output_tokens_per_s,
                8064.0 / (a.ttft_p50.seconds() + 8063.0 * a.tpot_mean.seconds()), 1e-6);
}

TEST(Benchmarks, ClosedLoopWithOneClientIsPrefillThenDecodes) {
    // One client, one sequence slot: every request is a prefill iteration, then output - 1
    // decode iterations alone on the replica.
    const Replica r = make("trn2", config::load_model("llama3-8b"), spec(8, 1, 2048), 2);
    const BenchmarkResult b = closed_loop_benchmark(*r.model, 1, 5, 512, 128);
    EXPECT_NEAR(b.ttft_p50.seconds(), r.model->seconds(prefill(1, 512)), 1e-12);
    double decode_s = 0.0;
    for (std::int64_t g = 1; g < 128; ++g) {
        decode_s += r.model->seconds(decode(1, 512 + g));
    }
    EXPECT_NEAR(b.tpot_p50.seconds(), decode_s / 127.0, 1e-12);
    EXPECT_NEAR(b.output_tokens_per_s, 5.0 * 128.0 / (5.0 * (b.ttft_p50.seconds() + decode_s)),
                1e-6);
}

} // namespace
} // namespace trnsim::serving
