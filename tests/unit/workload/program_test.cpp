#include "trnsim/compute/cost_model.hpp"
#include "trnsim/compute/kernel.hpp"
#include "trnsim/config/load.hpp"
#include "trnsim/core/error.hpp"
#include "trnsim/workload/plan.hpp"
#include "trnsim/workload/program.hpp"

#include <gtest/gtest.h>


namespace trnsim::workload {
namespace {

// Llama 3 8B (32 query heads and 8 kv heads of 128, hidden 4096), sequence 8192, tp 4, pp 4 on
// 2 UltraServers (512 ranks).
Plan plan_with(const std::vector<std::string>& extra) {
    std::vector<std::string> o = {"workload.model=llama3-8b", "cluster.ultraservers=2",
                                  "workload.parallelism.tp=4", "workload.parallelism.pp=4",
                                  "workload.global_batch=256"};
    o.insert(o.end(), extra.begin(), extra.end());
    const auto s = config::load_scenario(
        std::string(TRNSIM_SOURCE_DIR) + "/scenarios/default.yaml", o);
    return build_plan(s.training, s.hardware.chip, s.hardware.lnc, s.cluster,
                      s.hardware.hbm_reserve);
}

/// Useful FLOPs of the kernels of an op list (collectives have none), but for the gradient
/// accumulation: per parameter of the rank, not per token.
double flops(const std::vector<ProgramOp>& ops) {
    double f = 0.0;
    for (const ProgramOp& op : ops) {
        if (op.name == "grad_accumulate") {
            continue;
        }
        switch (op.kind) {
        case ProgramOp::Kind::matmul:
            f += op.repeat * compute::useful_flops(op.matmul);
            break;
        case ProgramOp::Kind::attention:
            f += op.repeat * compute::useful_flops(op.attention);
            break;
        case ProgramOp::Kind::stream:
            f += op.repeat * compute::useful_flops(op.stream);
            break;
        case ProgramOp::Kind::optimizer:
            f += op.repeat * compute::useful_flops(op.optimizer);
            break;
        case ProgramOp::Kind::collective:
            break;
        }
    }
    return f;
}

double flops(const BlockProgram& b) { return flops(b.forward) + flops(b.backward); }

std::vector<const ProgramOp*> named(const std::vector<ProgramOp>& ops, const std::string& name) {
    std::vector<const ProgramOp*> out;
    for (const ProgramOp& op : ops) {
        if (op.name == name) {
            out.push_back(&op);
        }
    }
    return out;
}

TEST(ContextParallelProgram, EachRankDoesItsShareOfTheWork) {
    for (const char* recompute : {"none", "selective", "full"}) {
        const std::string r = std::string("workload.parallelism.recompute=") + recompute;
        const StepProgram one = build_program(plan_with({r}));
        for (int cp : {2, 4}) {
            const StepProgram p =
                build_program(plan_with({r, "workload.parallelism.cp=" + std::to_string(cp)}));
            // Per rank 1 / cp of the work, the causal attention included (load-balanced chunks:
            // see program.hpp), so the cp ranks together do exactly the work of one rank
            // without CP.
            for (auto block : {&StepProgram::dense_layer, &StepProgram::head}) {
                const double f1 = flops(one.*block);
                ASSERT_GT(f1, 0.0);
                EXPECT_NEAR(flops(p.*block) * cp, f1, 1e-12 * f1) << recompute << " cp " << cp;
            }
        }
    }
}

TEST(ContextParallelProgram, AttentionPairsByHand) {
    // cp 2, S = 8192: four chunks of c = 2048; a rank's 4096 queries see, causally, its own
    // 4096 keys (4096 x 4097 / 2 pairs) and, unmasked, 2048 keys of the other rank
    // (4096 x 2048): 16,779,264 pairs, half of 8192 x 8193 / 2 = 33,558,528.
    const StepProgram p = build_program(plan_with({"workload.parallelism.cp=2"}));
    const auto own = named(p.dense_layer.forward, "attention");
    const auto ring = named(p.dense_layer.forward, "attention_ring");
    ASSERT_EQ(own.size(), 1u);
    ASSERT_EQ(ring.size(), 1u);
    const auto& a = own[0]->attention;
    EXPECT_EQ(a.q_len, 4096);
    EXPECT_EQ(a.kv_len, 4096);
    EXPECT_TRUE(a.causal);
    const auto& b = ring[0]->attention;
    EXPECT_EQ(b.q_len, 4096);
    EXPECT_EQ(b.kv_len, 2048);
    EXPECT_FALSE(b.causal);
    EXPECT_DOUBLE_EQ(ring[0]->repeat, 1.0);
    // 8 query heads per rank (32 / tp 4), 2 FLOPs per multiply-add, q.k (128) and p.v (128).
    const double per_pair = 8.0 * 2.0 * (128 + 128);
    EXPECT_DOUBLE_EQ(compute::useful_flops(a) + compute::useful_flops(b),
                     per_pair * 16'779'264.0);
}

TEST(ContextParallelProgram, KeyValueExchangePerLayerByHand) {
    // The gathered keys and values of a layer: 8192 tokens x 2 kv heads (8 / tp 4) x
    // (128 + 128) x 2 bytes = 8,388,608 bytes per rank, whatever cp (cp blocks of S / cp tokens).
    const double kv = 8192.0 * 2 * 256 * 2;
    for (int cp : {2, 4}) {
        const std::string c = "workload.parallelism.cp=" + std::to_string(cp);
        // Without recomputation: gathered forward, gathered again in the backward pass, and
        // the key/value gradients reduce-scattered.
        {
            const StepProgram p = build_program(plan_with({c, "workload.parallelism.recompute=none"}));
            const auto fwd = named(p.dense_layer.forward, "cp_kv_all_gather");
            ASSERT_EQ(fwd.size(), 1u);
            EXPECT_EQ(fwd[0]->collective, network::CollectiveOp::all_gather);
            EXPECT_EQ(fwd[0]->group, CommGroup::cp);
            EXPECT_FALSE(fwd[0]->overlapped);
            EXPECT_DOUBLE_EQ(fwd[0]->bytes, kv);
            const auto again = named(p.dense_layer.backward, "cp_kv_all_gather backward");
            const auto rs = named(p.dense_layer.backward, "cp_kv_reduce_scatter");
            ASSERT_EQ(again.size(), 1u);
            ASSERT_EQ(rs.size(), 1u);
            EXPECT_EQ(again[0]->collective, network::CollectiveOp::all_gather);
            EXPECT_EQ(rs[0]->collective, network::CollectiveOp::reduce_scatter);
            EXPECT_DOUBLE_EQ(again[0]->bytes, kv);
            EXPECT_DOUBLE_EQ(rs[0]->bytes, kv);
            // The re-gather comes before the attention backward that needs it, the
            // reduce-scatter after it.
            const auto& bwd = p.dense_layer.backward;
            const auto pos = [&](const ProgramOp* op) { return op - bwd.data(); };
            const auto attn = named(bwd, "attention backward");
            ASSERT_EQ(attn.size(), 1u);
            EXPECT_LT(pos(again[0]), pos(attn[0]));
            EXPECT_GT(pos(rs[0]), pos(attn[0]));
        }
        // Selective recomputation gathers them again as part of the recomputed attention.
        {
            const StepProgram p = build_program(plan_with({c}));
            EXPECT_EQ(named(p.dense_layer.backward, "cp_kv_all_gather recompute").size(), 1u);
            EXPECT_TRUE(named(p.dense_layer.backward, "cp_kv_all_gather backward").empty());
            EXPECT_EQ(named(p.dense_layer.backward, "cp_kv_reduce_scatter").size(), 1u);
        }
    }
    // Without CP there is no exchange.
    const StepProgram none = build_program(plan_with({}));
    for (const auto* ops : {&none.dense_layer.forward, &none.dense_layer.backward}) {
        for (const ProgramOp& op : *ops) {
            EXPECT_NE(op.group, CommGroup::cp) << op.name;
        }
    }
}

TEST(ContextParallelProgram, PipelineTransferCarriesTheRankTokens) {
    const StepProgram one = build_program(plan_with({}));
    const StepProgram two = build_program(plan_with({"workload.parallelism.cp=2"}));
    EXPECT_DOUBLE_EQ(two.pipeline_send.bytes * 2.0, one.pipeline_send.bytes);
}

} // namespace
} // namespace trnsim::workload

namespace trnsim::workload {
namespace {

TEST(BackwardProgram, EveryOpHasItsOwnBackwardKernels) {
    // Llama 3 8B, tp 4, sequence parallel, no recomputation. The dense layer's forward pass:
    // attention_norm, tp_all_gather, qkv_proj, rope, attention, out_proj, tp_reduce_scatter,
    // residual_add, mlp_norm, tp_all_gather, gate_up_proj, silu, gate_multiply, down_proj,
    // tp_reduce_scatter, residual_add: 16 ops. Backward: two matmuls per matmul (4 x 2), one
    // kernel per streaming op (7), the attention backward kernel, the four collectives
    // swapped and the accumulation of the layer's gradients: 21 ops.
    const StepProgram p = build_program(plan_with({"workload.parallelism.recompute=none"}));
    ASSERT_EQ(p.dense_layer.forward.size(), 16u);
    ASSERT_EQ(p.dense_layer.backward.size(), 21u);
    const auto& bwd = p.dense_layer.backward;
    const auto one = [&](const char* name) {
        const auto ops = named(bwd, name);
        EXPECT_EQ(ops.size(), 1u) << name;
        return ops.empty() ? nullptr : ops[0];
    };
    // The flash-attention backward kernel of the forward's shape, not a multiple of it.
    const auto* attn = one("attention backward");
    ASSERT_NE(attn, nullptr);
    EXPECT_TRUE(attn->attention.backward);
    EXPECT_DOUBLE_EQ(attn->repeat, 1.0);
    const auto& fwd_attn = named(p.dense_layer.forward, "attention")[0]->attention;
    EXPECT_EQ(attn->attention.q_len, fwd_attn.q_len);
    EXPECT_EQ(attn->attention.heads, fwd_attn.heads);
    // Norms: their backward kind over the same rows.
    const auto* norm = one("attention_norm backward");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->stream.kind, compute::StreamKind::rms_norm_backward);
    EXPECT_EQ(norm->stream.row, 4096);
    // SiLU: dy silu'(x), two inputs, the derivative on ScalarE.
    const auto* silu = one("silu backward");
    ASSERT_NE(silu, nullptr);
    EXPECT_EQ(silu->stream.kind, compute::StreamKind::elementwise);
    EXPECT_EQ(silu->stream.inputs, 2);
    EXPECT_EQ(silu->stream.engine, compute::StreamEngine::scalar);
    // The gate product: d silu = dy u and du = dy silu(g), three inputs, two outputs.
    const auto* gate = one("gate_multiply backward");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->stream.inputs, 3);
    EXPECT_EQ(gate->stream.outputs, 2);
    // Embedding: the scatter-add of the gradient rows; the head's cross-entropy.
    const auto& emb = p.embedding.backward;
    ASSERT_EQ(named(emb, "embedding_gather backward").size(), 1u);
    EXPECT_EQ(named(emb, "embedding_gather backward")[0]->stream.kind,
              compute::StreamKind::scatter_add);
    const auto xent = named(p.head.forward, "cross_entropy");
    ASSERT_EQ(xent.size(), 1u);
    EXPECT_EQ(xent[0]->stream.kind, compute::StreamKind::cross_entropy);
    EXPECT_EQ(xent[0]->stream.element_bytes, 4); // FP32 logits
    // Useful FLOPs of the layer's backward attention: 2.5 times its forward (five matmuls
    // against two), by the kernel's own count.
    EXPECT_DOUBLE_EQ(compute::useful_flops(attn->attention),
                     2.5 * compute::useful_flops(fwd_attn));
}

} // namespace
} // namespace trnsim::workload

namespace trnsim::workload {
namespace {

std::vector<std::string> names_of(const std::vector<ProgramOp>& ops, const std::string& suffix) {
    std::vector<std::string> out;
    for (const ProgramOp& op : ops) {
        if (op.name.size() > suffix.size() &&
            op.name.compare(op.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            out.push_back(op.name);
        }
    }
    return out;
}

TEST(MicroscalingTraining, FP8OnAnMxChipQuantizesEveryMatmulsOperands) {
    // Llama 3 8B, tp 4, sequence 8192, microbatch 1, sequence parallel: qkv_proj multiplies
    // X (8,192 tokens x 4,096) by W (4,096 x (32 + 2 x 8) x 128 / 4 = 1,536). Before it, VectorE
    // quantizes X and W along k; the backward quantizes dY (8,192 x 1,536) twice, W and X once.
    const StepProgram mx = build_program(
        plan_with({"hardware.chip=trn3", "workload.precision=fp8",
                   "workload.parallelism.recompute=none"}));
    const auto fwd = named(mx.dense_layer.forward, "qkv_proj quantize");
    ASSERT_EQ(fwd.size(), 1u);
    const std::int64_t m = 8192, k = 4096, n = 1536;
    EXPECT_EQ(fwd[0]->stream.elements, m * k + k * n);
    EXPECT_EQ(fwd[0]->stream.engine, compute::StreamEngine::vector);
    EXPECT_EQ(fwd[0]->stream.element_bytes, 2);
    const auto bwd = named(mx.dense_layer.backward, "qkv_proj quantize backward");
    ASSERT_EQ(bwd.size(), 4u);
    std::int64_t backward_elements = 0;
    for (const ProgramOp* op : bwd) {
        backward_elements += op->stream.elements;
    }
    EXPECT_EQ(backward_elements, 2 * m * n + k * n + m * k);
    // Every matmul of the layer has its quantization (4 of them), and nothing else changes.
    const StepProgram bf16 = build_program(
        plan_with({"hardware.chip=trn3", "workload.parallelism.recompute=none"}));
    EXPECT_EQ(mx.dense_layer.forward.size(), bf16.dense_layer.forward.size() + 4);
    // Trainium2's FP8 is not microscaling: no quantization kernels.
    const StepProgram trn2 = build_program(
        plan_with({"workload.precision=fp8", "workload.parallelism.recompute=none"}));
    EXPECT_TRUE(named(trn2.dense_layer.forward, "qkv_proj quantize").empty());
    EXPECT_EQ(trn2.dense_layer.forward.size(), bf16.dense_layer.forward.size());
}

TEST(Recompute, SelectivePartsAsTheFrameworksDefineThem) {
    const auto recomputed = [](const std::vector<std::string>& parts) {
        std::vector<std::string> o = {"workload.parallelism.recompute=selective"};
        if (!parts.empty()) {
            std::string list;
            for (const auto& p : parts) {
                list += (list.empty() ? "" : ", ") + p;
            }
            o.push_back("workload.parallelism.recompute_parts=[" + list + "]");
        }
        return names_of(build_program(plan_with(o)).dense_layer.backward, " recompute");
    };
    // Megatron-LM's selective: the attention core.
    EXPECT_EQ(recomputed({}), (std::vector<std::string>{"attention recompute"}));
    // NeMo on Neuron: the core attention and both layer norms.
    EXPECT_EQ(recomputed({"core_attention", "norm"}),
              (std::vector<std::string>{"attention_norm recompute", "attention recompute",
                                        "mlp_norm recompute"}));
    // NxD: the core attention and act_fn(gate) * up.
    EXPECT_EQ(recomputed({"core_attention", "mlp_activation"}),
              (std::vector<std::string>{"attention recompute", "silu recompute",
                                        "gate_multiply recompute"}));
    // NxD's whole LlamaMLP: its sequence-parallel gather and reduce-scatter too.
    EXPECT_EQ(recomputed({"core_attention", "mlp"}),
              (std::vector<std::string>{"attention recompute", "tp_all_gather recompute",
                                        "gate_up_proj recompute", "silu recompute",
                                        "gate_multiply recompute", "down_proj recompute",
                                        "tp_reduce_scatter recompute"}));
    // Full: every op of the forward pass.
    const StepProgram full = build_program(plan_with({"workload.parallelism.recompute=full"}));
    EXPECT_EQ(names_of(full.dense_layer.backward, " recompute").size(),
              full.dense_layer.forward.size());
}

TEST(Recompute, PartsNeedSelective) {
    EXPECT_THROW(plan_with({"workload.parallelism.recompute=full",
                            "workload.parallelism.recompute_parts=[norm]"}),
                 InputError);
}

TEST(MaterializedAttention, ScoresSoftmaxValuesOverEveryPair) {
    // Llama 3 8B, tp 4: 8 query heads per rank, S = 8192, head dim 128, microbatch 1.
    const StepProgram p = build_program(plan_with({"workload.graph.attention=materialized",
                                                   "workload.graph.attention_dropout=0.1"}));
    const auto& fwd = p.dense_layer.forward;
    ASSERT_TRUE(named(fwd, "attention").empty());
    const auto scores = named(fwd, "attention_scores");
    const auto values = named(fwd, "attention_values");
    const auto softmax = named(fwd, "attention_softmax");
    const auto drop = named(fwd, "attention_dropout");
    ASSERT_EQ(scores.size(), 1u);
    ASSERT_EQ(values.size(), 1u);
    ASSERT_EQ(softmax.size(), 1u);
    ASSERT_EQ(drop.size(), 1u);
    // Q K^T per head: 8192 x 128 x 8192, batch 8; all 8192^2 pairs, the causal mask applied
    // to the scores, not skipped.
    EXPECT_EQ(scores[0]->matmul.m, 8192);
    EXPECT_EQ(scores[0]->matmul.k, 128);
    EXPECT_EQ(scores[0]->matmul.n, 8192);
    EXPECT_EQ(scores[0]->matmul.batch, 8);
    EXPECT_EQ(values[0]->matmul.k, 8192);
    EXPECT_EQ(values[0]->matmul.n, 128);
    EXPECT_EQ(softmax[0]->stream.elements, std::int64_t{8} * 8192 * 8192);
    EXPECT_EQ(softmax[0]->stream.row, 8192);
    // Backward: the two matmuls' gradients, the softmax and dropout backward kernels.
    const auto& bwd = p.dense_layer.backward;
    ASSERT_EQ(named(bwd, "attention_softmax backward").size(), 1u);
    EXPECT_EQ(named(bwd, "attention_softmax backward")[0]->stream.kind,
              compute::StreamKind::softmax_backward);
    EXPECT_EQ(named(bwd, "attention_scores data_grad").size(), 1u);
    EXPECT_EQ(named(bwd, "attention_values weight_grad").size(), 1u);
    EXPECT_EQ(named(bwd, "attention_dropout backward").size(), 1u);
    // Selective recomputation recomputes all four.
    EXPECT_EQ(names_of(bwd, " recompute"),
              (std::vector<std::string>{"attention_scores recompute", "attention_softmax recompute",
                                        "attention_dropout recompute",
                                        "attention_values recompute"}));
}

TEST(MaterializedAttention, KeepsItsProbabilitiesUnlessRecomputed) {
    // Llama 3 8B, tp 4, microbatch 1, S = 2048: 8 heads per rank. Without recomputation the
    // probabilities stay: 8 x 2048^2 BF16 = 64 MiB per layer, plus the dropout mask (a byte
    // per element) with dropout.
    const auto act = [](std::vector<std::string> o) {
        o.push_back("workload.sequence_length=2048");
        return plan_with(o).memory.stages[0].activations.count();
    };
    const std::int64_t flash = act({"workload.parallelism.recompute=none"});
    const std::int64_t mat = act({"workload.parallelism.recompute=none",
                                  "workload.graph.attention=materialized"});
    const std::int64_t drop = act({"workload.parallelism.recompute=none",
                                   "workload.graph.attention=materialized",
                                   "workload.graph.attention_dropout=0.1"});
    // Stage 0 of 4 holds 8 layers and min(m, pp) = 4 microbatches in flight.
    const std::int64_t per_layer = std::int64_t{8} * 2048 * 2048;
    EXPECT_EQ(mat - flash, 8 * 4 * 2 * per_layer);
    EXPECT_EQ(drop - mat, 8 * 4 * per_layer);
    EXPECT_EQ(act({"workload.graph.attention=materialized"}), act({}));
}

} // namespace
} // namespace trnsim::workload

namespace trnsim::workload {
namespace {

TEST(GradAccumulation, EveryBlockAddsItsParametersByHand) {
    // Llama 3 8B per layer: attention q and o 4096 x 4096 each, k and v 4096 x 1024 each, and
    // its RMSNorm scale 4096: 41,947,136; SwiGLU MLP 3 x 4096 x 14336 and its norm 4096:
    // 176,164,864. Sum 218,112,000, over tp 4: 54,528,000 per rank. Embedding 128256 x 4096
    // / 4 = 131,334,144; the untied head 128256 x 4096 + the final norm 4096, / 4 =
    // 131,335,168.
    const auto acc = [](const BlockProgram& b) {
        const auto ops = named(b.backward, "grad_accumulate");
        EXPECT_EQ(ops.size(), 1u);
        return ops.empty() ? ProgramOp{} : *ops[0];
    };
    const StepProgram p = build_program(plan_with({}));
    const ProgramOp layer = acc(p.dense_layer);
    EXPECT_EQ(layer.stream.elements, 54'528'000);
    EXPECT_EQ(acc(p.embedding).stream.elements, 131'334'144);
    EXPECT_EQ(acc(p.head).stream.elements, 131'335'168);
    // Read the accumulator and the new gradient, write the accumulator: BF16 by default,
    // 6 bytes per parameter.
    EXPECT_EQ(layer.stream.kind, compute::StreamKind::elementwise);
    EXPECT_EQ(layer.stream.inputs, 2);
    EXPECT_EQ(layer.stream.outputs, 1);
    EXPECT_EQ(layer.stream.element_bytes, 2);
    EXPECT_DOUBLE_EQ(compute::minimum_hbm_bytes(layer.stream), 6.0 * 54'528'000);
    // After the layer's last weight gradient (qkv_proj's), before the norm's backward and the
    // layer's last tensor-parallel collective.
    const auto& bwd = p.dense_layer.backward;
    const auto pos = [&](const std::string& name) {
        for (std::size_t i = 0; i < bwd.size(); ++i) {
            if (bwd[i].name == name) {
                return i;
            }
        }
        ADD_FAILURE() << name;
        return bwd.size();
    };
    EXPECT_EQ(pos("grad_accumulate"), pos("qkv_proj weight_grad") + 1);
    EXPECT_LT(pos("grad_accumulate"), pos("attention_norm backward"));
    // An FP32 accumulator (NxD use_fp32_grad_acc): 4 bytes, and the gradient reduction carries
    // FP32 gradients: the first stage's 8 layers and the embedding, 8 x 54,528,000 +
    // 131,334,144 = 567,558,144 parameters, x 4 bytes (x 2 with BF16).
    const Plan fp32 = plan_with({"workload.graph.grad_accumulator=fp32"});
    EXPECT_EQ(acc(build_program(fp32).dense_layer).stream.element_bytes, 4);
    const auto sync_bytes = [](const Plan& plan) {
        const StageStepOps ops = build_stage_step_ops(plan, 0);
        EXPECT_EQ(ops.gradient_sync.size(), 1u);
        return ops.gradient_sync.empty() ? 0.0 : ops.gradient_sync[0].bytes;
    };
    EXPECT_DOUBLE_EQ(sync_bytes(fp32), 4.0 * 567'558'144);
    EXPECT_DOUBLE_EQ(sync_bytes(plan_with({})), 2.0 * 567'558'144);
    EXPECT_EQ(build_stage_step_ops(fp32, 0).optimizer.optimizer.grad_bytes, 4);
    // The gradients held per rank are the accumulator: 567,558,144 x 4 bytes on stage 0.
    EXPECT_EQ(fp32.memory.stages[0].gradients.count(), std::int64_t{4} * 567'558'144);
    EXPECT_EQ(plan_with({}).memory.stages[0].gradients.count(), std::int64_t{2} * 567'558'144);
    // Any other value is refused, naming the key.
    try {
        plan_with({"workload.graph.grad_accumulator=fp16"});
        ADD_FAILURE() << "fp16 accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("workload.graph.grad_accumulator"),
                  std::string::npos)
            << e.what();
    }
    // ZeRO-3 accumulates the reduce-scattered shard: dp 32 (512 ranks / (tp 4 x pp 4)).
    const StepProgram z3 = build_program(plan_with({"workload.parallelism.zero=3"}));
    EXPECT_EQ(acc(z3.dense_layer).stream.elements, 54'528'000 / 32);
}

TEST(GradAccumulation, CostByHandFromTheBandwidth) {
    // 2^24 BF16 parameters on one Trainium1 NeuronCore: 3 x 2 x 16,777,216 = 100,663,296
    // bytes through HBM. HBM gives a core 820 / 2 = 410 GB/s (245.5 us); a streaming kernel
    // moves its bytes on the core's 16 DMA queues of 17 GB/s each (trn1.yaml, DMAG): 272 GB/s,
    // 370.1 us. The calibrated kernel lies within 10% above the DMA bound.
    const compute::ChipSpec chip = config::load_chip("trn1");
    const compute::CostModel m(chip, 1);
    const auto shape = [](std::int64_t n, int bytes) {
        return compute::StreamShape{n, 2, 1, bytes, 1, compute::StreamEngine::vector,
                                    compute::StreamKind::elementwise, 0};
    };
    const std::int64_t n = std::int64_t{1} << 24;
    const compute::KernelCost bf16 = m.stream(shape(n, 2));
    EXPECT_DOUBLE_EQ(bf16.hbm_bytes, 100'663'296.0);
    EXPECT_DOUBLE_EQ(m.hbm_bandwidth_per_rank().bytes_per_s(), 410e9);
    const double dma_s = 100'663'296.0 / (16 * 17e9);
    EXPECT_GE(bf16.seconds, 100'663'296.0 / 410e9);
    EXPECT_GE(bf16.seconds, dma_s);
    EXPECT_LE(bf16.seconds, 1.1 * dma_s);
    // FP32 moves twice the bytes: twice the time, but for the fixed costs.
    const compute::KernelCost fp32 = m.stream(shape(n, 4));
    EXPECT_DOUBLE_EQ(fp32.hbm_bytes, 2.0 * bf16.hbm_bytes);
    EXPECT_NEAR(fp32.seconds, 2.0 * bf16.seconds, 0.05 * bf16.seconds);
}

} // namespace
} // namespace trnsim::workload
