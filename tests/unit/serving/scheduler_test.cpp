// The per-replica scheduler against hand-traced schedules, closed forms and invariants.
//
// Costs come from test::TestCost (test_cost.hpp): an iteration takes 1 ms + 10 us per token it
// computes (prefill tokens, plus one per decoding sequence, 1 + k with speculation), so every
// expected time below is a sum written out in its comment.
#include "unit/serving/test_cost.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/serving/replica_sim.hpp"
#include "trnsim/serving/request.hpp"
#include "trnsim/serving/scheduler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace trnsim::serving {
namespace {

using test::TestCost;

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kUs = 1'000;

InferenceSpec base_spec() {
    InferenceSpec s;
    s.serving.max_batch = 4;
    s.serving.max_context = 4096;
    s.serving.kv_block = 16;
    s.serving.prefill_chunk = 0;
    s.serving.prefill_batch = 1;
    return s;
}

Request req(std::uint64_t id, std::int64_t arrival_ns, std::int64_t in, std::int64_t out,
            std::uint32_t prefix = 0, std::int64_t prefix_tokens = 0) {
    Request r;
    r.id = id;
    r.arrival = SimTime::from_ns(arrival_ns);
    r.input_tokens = in;
    r.output_tokens = out;
    r.prefix_id = prefix;
    r.prefix_tokens = prefix_tokens;
    return r;
}

ReplicaRun run(const InferenceSpec& spec, const std::vector<Request>& rs, std::int64_t blocks,
               bool fast = true, const IterationCost* cost = nullptr) {
    static const TestCost kCost;
    ReplicaRunOptions o;
    o.fast_forward = fast;
    o.check_invariants = true; // conservation and capacity after every step
    return simulate_replica(spec, cost ? *cost : kCost, blocks, rs, 11, o);
}

/// Inter-token gaps cover each request's span from its first token to its finish exactly
/// once: their sum is sum of (finish - first token), and without speculation there is one per
/// output token after the first (a recompute's token included).
void expect_gaps_cover_requests(const ReplicaRun& r, bool speculative) {
    double span_s = 0.0;
    std::uint64_t tokens = 0;
    for (const RequestRecord& q : r.records) {
        span_s += (q.finish - q.first_token).seconds();
        tokens += static_cast<std::uint64_t>(q.output_tokens - 1);
    }
    EXPECT_NEAR(r.summary.itl_mean.seconds() * static_cast<double>(r.summary.itl_count), span_s,
                1e-9 * span_s);
    if (speculative) {
        EXPECT_LE(r.summary.itl_count, tokens);
    } else {
        EXPECT_EQ(r.summary.itl_count, tokens);
    }
}

// ---------------------------------------------------------------------------------------------
// One request: prefill 100 tokens = 1 ms + 100 x 10 us = 2 ms, first token at 2 ms; then 4
// decode iterations of 1 ms + 10 us = 1.01 ms: finish at 2 + 4.04 = 6.04 ms.
// TTFT 2 ms, TPOT 4.04 / 4 = 1.01 ms, E2E 6.04 ms.
TEST(Scheduler, OneRequestLatencies) {
    for (bool fast : {true, false}) {
        const ReplicaRun r = run(base_spec(), {req(0, 0, 100, 5)}, 1000, fast);
        ASSERT_EQ(r.records.size(), 1u);
        EXPECT_EQ(r.records[0].first_token.ns(), 2 * kMs);
        EXPECT_EQ(r.records[0].finish.ns(), 6 * kMs + 40 * kUs);
        EXPECT_NEAR(r.summary.ttft_p50.seconds(), 0.002, 1e-12);
        EXPECT_NEAR(r.summary.tpot_p50.seconds(), 0.00101, 1e-12);
        EXPECT_NEAR(r.summary.e2e_p50.seconds(), 0.00604, 1e-12);
        EXPECT_EQ(r.stats.iterations, 5u);
        EXPECT_EQ(r.stats.steps, fast ? 2u : 5u); // the 4 decodes are one step when fast
        // The KV cache touched (the measured MBU's bytes): the prefill writes 100 tokens, the
        // four decodes read contexts of 101, 102, 103 and 104 (the cache plus the new token),
        // one step of four or four steps alike.
        EXPECT_EQ(r.stats.kv_tokens_touched, 100.0 + 101 + 102 + 103 + 104);
        // Four gaps of 1.01 ms between its five tokens.
        EXPECT_EQ(r.summary.itl_count, 4u);
        EXPECT_NEAR(r.summary.itl_p50.seconds(), 0.00101, 1e-12);
        EXPECT_NEAR(r.summary.itl_p99.seconds(), 0.00101, 1e-12);
    }
}

// Two requests at time 0, whole-prompt prefill one prompt at a time (NxD Inference's default):
//   R0 prefill 100: 0 -> 2 ms (first token 2)
//   R1 prefill 50: 2 -> 3.5 ms (first token 3.5)
//   both decode, 1 ms + 2 x 10 us = 1.02 ms: R1 (3 tokens) needs 2: finish 3.5 + 2.04 = 5.54
//   R0 needs 2 more alone at 1.01: finish 5.54 + 2.02 = 7.56 ms
TEST(Scheduler, TwoRequestsBatch) {
    const ReplicaRun r = run(base_spec(), {req(0, 0, 100, 5), req(1, 0, 50, 3)}, 1000);
    EXPECT_EQ(r.records[0].first_token.ns(), 2 * kMs);
    EXPECT_EQ(r.records[1].first_token.ns(), 3 * kMs + 500 * kUs);
    EXPECT_EQ(r.records[1].finish.ns(), 5 * kMs + 540 * kUs);
    EXPECT_EQ(r.records[0].finish.ns(), 7 * kMs + 560 * kUs);
    // TPOT of R0: (7.56 - 2) / 4 = 1.39 ms; of R1: (5.54 - 3.5) / 2 = 1.02 ms.
    EXPECT_NEAR(r.records[0].tpot_s(), 0.00139, 1e-12);
    EXPECT_NEAR(r.records[1].tpot_s(), 0.00102, 1e-12);
    // Inter-token gaps: R0's first decode comes 2.52 ms after its first token (R1's prefill
    // ran between), then 1.02, 1.01, 1.01; R1's 1.02, 1.02. Sorted: 1.01 1.01 1.02 1.02 1.02
    // 2.52: p50 (h = 2.5) 1.02 ms, p99 (h = 4.95) 1.02 + 0.95 x 1.50 = 2.445 ms, mean
    // 7.60 / 6 ms.
    EXPECT_EQ(r.summary.itl_count, 6u);
    EXPECT_NEAR(r.summary.itl_p50.seconds(), 0.00102, 1e-12);
    EXPECT_NEAR(r.summary.itl_p99.seconds(), 0.002445, 1e-12);
    EXPECT_NEAR(r.summary.itl_mean.seconds(), 0.0076 / 6.0, 1e-12);

    // Two prompts per prefill: one iteration of 150 tokens = 2.5 ms, both first tokens at 2.5;
    // R1 finishes at 2.5 + 2 x 1.02 = 4.54, R0 at 4.54 + 2 x 1.01 = 6.56 ms.
    InferenceSpec two = base_spec();
    two.serving.prefill_batch = 2;
    const ReplicaRun b = run(two, {req(0, 0, 100, 5), req(1, 0, 50, 3)}, 1000);
    EXPECT_EQ(b.records[0].first_token.ns(), 2 * kMs + 500 * kUs);
    EXPECT_EQ(b.records[1].first_token.ns(), 2 * kMs + 500 * kUs);
    EXPECT_EQ(b.records[1].finish.ns(), 4 * kMs + 540 * kUs);
    EXPECT_EQ(b.records[0].finish.ns(), 6 * kMs + 560 * kUs);

    // prefill_batch 0 is the whole compiled batch (4): the same single prefill of both.
    two.serving.prefill_batch = 0;
    const ReplicaRun z = run(two, {req(0, 0, 100, 5), req(1, 0, 50, 3)}, 1000);
    EXPECT_EQ(z.records[0].first_token.ns(), 2 * kMs + 500 * kUs);
    EXPECT_EQ(z.records[1].first_token.ns(), 2 * kMs + 500 * kUs);
    EXPECT_EQ(z.records[0].finish.ns(), 6 * kMs + 560 * kUs);
}

// A request arriving during another's decode joins at the next iteration boundary.
//   R0 (100 tokens, 10 outputs): prefill 0 -> 2 ms (token 1), decodes at 1.01 ms end at 3.01
//   (token 2) and 4.02 (token 3). R1 (10 tokens, 2 outputs) arrives at 3.5 ms, inside the
//   second decode; at 4.02 its prefill runs first: 1 + 0.1 = 1.1 ms, first token at 5.12.
//   Both decode, 1.02 ms: R1 finishes at 6.14 and R0 has 4 tokens; R0's last 6 alone at
//   1.01 ms: 6.14 + 6.06 = 12.20 ms.
TEST(Scheduler, ArrivalCutsAFastForwardedStep) {
    for (bool fast : {true, false}) {
        const ReplicaRun r = run(base_spec(), {req(0, 0, 100, 10), req(1, 3500 * kUs, 10, 2)},
                                 1000, fast);
        EXPECT_EQ(r.records[1].first_token.ns(), 5 * kMs + 120 * kUs);
        EXPECT_EQ(r.records[1].finish.ns(), 6 * kMs + 140 * kUs);
        EXPECT_EQ(r.records[0].finish.ns(), 12 * kMs + 200 * kUs);
        // Gaps: R0 1.01, 1.01, then 6.14 - 4.02 = 2.12 ms across R1's prefill, then six of
        // 1.01; R1 one of 1.02. Sorted: eight 1.01, 1.02, 2.12: p50 1.01, p90 (h = 8.1)
        // 1.02 + 0.1 x 1.10 = 1.13 ms; the sum 11.22 ms is sum of (finish - first token).
        EXPECT_EQ(r.summary.itl_count, 10u);
        EXPECT_NEAR(r.summary.itl_p50.seconds(), 0.00101, 1e-12);
        EXPECT_NEAR(r.summary.itl_p90.seconds(), 0.00113, 1e-12);
        EXPECT_NEAR(r.summary.itl_mean.seconds() * 10.0, 0.01122, 1e-12);
    }
}

// Chunked prefill, chunk 64, one prompt of 200 and 3 outputs: chunks of 64, 64, 64, 8 take
// 1.64, 1.64, 1.64 and 1.08 ms: first token at 6.00 ms; 2 decodes of 1.01: finish 8.02 ms.
TEST(Scheduler, ChunkedPrefillSplitsAPrompt) {
    InferenceSpec s = base_spec();
    s.serving.prefill_chunk = 64;
    const ReplicaRun r = run(s, {req(0, 0, 200, 3)}, 1000);
    EXPECT_EQ(r.records[0].first_token.ns(), 6 * kMs);
    EXPECT_EQ(r.records[0].finish.ns(), 8 * kMs + 20 * kUs);
    EXPECT_EQ(r.stats.prefill_iterations, 4u);
    EXPECT_EQ(r.stats.prefill_tokens, 200u);

    // The shapes, stepping by hand: the longest context grows by a chunk per iteration.
    TestCost cost;
    ReplicaScheduler sched(s.serving, cost, 1000, 1);
    sched.add(req(0, 0, 200, 3));
    std::int64_t t = 0;
    const std::int64_t contexts[] = {64, 128, 192, 200};
    const std::int64_t tokens[] = {64, 64, 64, 8};
    for (int i = 0; i < 4; ++i) {
        t = sched.begin(t);
        EXPECT_EQ(sched.shape().prefill_max_context, contexts[i]);
        EXPECT_EQ(sched.shape().prefill_tokens, tokens[i]);
        EXPECT_EQ(sched.shape().decode_sequences, 0);
        sched.end();
        sched.check_invariants();
    }
}

// A failure drops every sequence (running, waiting, preempted alike) and the cache; the
// replica then serves as a new one. R0 (100 tokens) prefills 0 -> 2 ms and decodes; R1 and R2
// wait behind it with max_batch 1. At 3 ms (R0 mid-decode) the replica fails: the ids come back
// by id, every block is free, and R3 arriving afterwards takes the latencies of a lone request
// (OneRequestLatencies: first token 2 ms after it starts, finish 6.04 ms).
TEST(Scheduler, AFailureDropsEverythingAndTheReplicaStartsEmpty) {
    InferenceSpec s = base_spec();
    s.serving.max_batch = 1;
    s.serving.prefix_caching = true;
    TestCost cost;
    ReplicaScheduler sched(s.serving, cost, 1000, 1);
    sched.add(req(2, 0, 50, 5));
    sched.add(req(0, 0, 100, 5, 1, 64));
    sched.add(req(1, 0, 50, 5));
    std::int64_t t = sched.begin(0);
    sched.end();
    t = sched.begin(t);
    EXPECT_TRUE(sched.busy());
    EXPECT_GT(sched.used_blocks(), 0);
    const std::vector<std::uint64_t> dropped = sched.fail();
    EXPECT_EQ(dropped, (std::vector<std::uint64_t>{0, 1, 2}));
    EXPECT_FALSE(sched.busy());
    EXPECT_FALSE(sched.has_work());
    EXPECT_EQ(sched.used_blocks(), 0);
    sched.check_invariants();
    sched.add(req(3, 10 * kMs, 100, 5));
    std::int64_t first = -1, finish = -1;
    for (t = 10 * kMs; finish < 0;) {
        t = sched.begin(t);
        ASSERT_GE(t, 0);
        for (const Completion& c : sched.end()) {
            first = c.first_token.ns();
            finish = c.time.ns();
        }
        sched.check_invariants();
    }
    EXPECT_EQ(first, 12 * kMs);
    EXPECT_EQ(finish, 16 * kMs + 40 * kUs);
}

// Chunked prefill mixes a decode with the chunk of another prompt. Chunk 64; R0 (10 tokens,
// 10 outputs) and R1 (200 tokens, 2 outputs) at time 0:
//   it 1: R0's 10 + R1's first 54 tokens: 1 + 0.64 = 1.64 ms; R0's first token at 1.64
//   it 2: decode R0 + R1 64 (118): 1 + 0.65 = 1.65 -> 3.29
//   it 3: decode R0 + R1 64 (182): 1.65 -> 4.94
//   it 4: decode R0 + R1 18 (200): 1 + 0.19 = 1.19 -> 6.13; R1's first token; R0 has 4
//   it 5: decode both, 1.02 -> 7.15: R1 done; R0 has 5
//   R0's last 5 alone at 1.01 -> 7.15 + 5.05 = 12.20 ms.
TEST(Scheduler, ChunkedPrefillMixesDecode) {
    InferenceSpec s = base_spec();
    s.serving.prefill_chunk = 64;
    for (bool fast : {true, false}) {
        const ReplicaRun r = run(s, {req(0, 0, 10, 10), req(1, 0, 200, 2)}, 1000, fast);
        EXPECT_EQ(r.records[0].first_token.ns(), 1 * kMs + 640 * kUs);
        EXPECT_EQ(r.records[1].first_token.ns(), 6 * kMs + 130 * kUs);
        EXPECT_EQ(r.records[1].finish.ns(), 7 * kMs + 150 * kUs);
        EXPECT_EQ(r.records[0].finish.ns(), 12 * kMs + 200 * kUs);
        // Gaps: R0 1.65, 1.65, 1.19 (mixed with R1's chunks), 1.02, then five of 1.01; R1
        // one of 1.02. Sorted: five 1.01, 1.02, 1.02, 1.19, 1.65, 1.65: p50 (h = 4.5) 1.015,
        // p90 (h = 8.1) 1.65 ms; the sum 11.58 ms = (12.20 - 1.64) + (7.15 - 6.13).
        EXPECT_EQ(r.summary.itl_count, 10u);
        EXPECT_NEAR(r.summary.itl_p50.seconds(), 0.001015, 1e-12);
        EXPECT_NEAR(r.summary.itl_p90.seconds(), 0.00165, 1e-12);
        EXPECT_NEAR(r.summary.itl_mean.seconds() * 10.0, 0.01158, 1e-12);
    }
}

// KV exhaustion. Blocks of 4 tokens, 10 blocks, max_context 32 (one sequence needs
// ceil(33 / 4) = 9 blocks; the watermark is 10 / 100 = 0). R0 and R1: 8 prompt tokens and 20
// outputs each, at time 0.
//   R0 prefill 0 -> 1.08 ms (2 blocks); R1 prefill 1.08 -> 2.16 (2 blocks).
//   Decode both from 2.16 at 1.02 ms; a sequence with kv tokens takes a block when kv is a
//   multiple of 4: iterations 1, 5, 9 take 2 blocks each (4 -> 6 -> 8 -> 10 in use).
//   Iteration 13 (at 2.16 + 12 x 1.02 = 14.40 ms, both at kv 20, generated 13) needs 2 and
//   none is free: R1, the youngest, is preempted (5 blocks free); R0 decodes alone.
//   R1 (recompute 8 + 13 = 21 tokens = 6 blocks) does not fit until R0 finishes: R0 needs 7
//   more tokens at 1.01 ms: finish 14.40 + 7.07 = 21.47 ms.
//   R1 recomputes 21 tokens: 1.21 ms -> 22.68 (its 14th token), then 6 decodes at 1.01:
//   finish 28.74 ms. Its first token stays the one of its first prefill, 2.16 ms.
TEST(Scheduler, KvExhaustionPreemptsTheYoungestAndRecomputes) {
    InferenceSpec s = base_spec();
    s.serving.kv_block = 4;
    s.serving.max_context = 32;
    for (bool fast : {true, false}) {
        const ReplicaRun r = run(s, {req(0, 0, 8, 20), req(1, 0, 8, 20)}, 10, fast);
        EXPECT_EQ(r.records[0].first_token.ns(), 1 * kMs + 80 * kUs);
        EXPECT_EQ(r.records[0].finish.ns(), 21 * kMs + 470 * kUs);
        EXPECT_EQ(r.records[0].preemptions, 0u);
        EXPECT_EQ(r.records[1].first_token.ns(), 2 * kMs + 160 * kUs);
        EXPECT_EQ(r.records[1].finish.ns(), 28 * kMs + 740 * kUs);
        EXPECT_EQ(r.records[1].preemptions, 1u);
        EXPECT_EQ(r.stats.preemptions, 1u);
        EXPECT_EQ(r.stats.peak_used_blocks, 10);
        EXPECT_EQ(r.stats.prefill_tokens, 8u + 8u + 21u);
        expect_gaps_cover_requests(r, false);
    }
}

// Capacity is never exceeded under pressure: many requests into a small cache, with every
// invariant checked after every step (run() turns the checks on) and the sampled use <= 1.
TEST(Scheduler, CapacityNeverExceededUnderPressure) {
    InferenceSpec s = base_spec();
    s.serving.kv_block = 8;
    s.serving.max_context = 512;
    s.serving.max_batch = 16;
    s.requests.input = {TokenDistribution::Kind::lognormal, 150, 120, 1, 400, {}};
    s.requests.output = {TokenDistribution::Kind::uniform, 20, 100, 1, 0, {}};
    s.requests.arrival.kind = ArrivalSpec::Kind::poisson;
    s.requests.arrival.rate_per_s = 400;
    s.requests.count = 600;
    for (std::int64_t chunk : {0, 128}) {
        s.serving.prefill_chunk = chunk;
        const RequestSource src(s.requests, s.serving.max_context, 5);
        TestCost cost;
        ReplicaRunOptions o;
        o.check_invariants = true;
        o.kv_sample = Duration::from_ns(1 * kMs);
        const ReplicaRun r = simulate_replica(s, cost, 120, src, 5, o);
        EXPECT_EQ(r.summary.requests, 600u);
        EXPECT_GT(r.stats.preemptions, 0u) << "the case must exercise preemption";
        EXPECT_LE(r.stats.peak_used_blocks, 120);
        expect_gaps_cover_requests(r, false);
        for (double f : r.kv_used_fraction) {
            ASSERT_LE(f, 1.0);
            ASSERT_GE(f, 0.0);
        }
    }
}

// Prefix caching: a 64-token prefix (4 blocks of 16) shared by R0 (t = 0) and R1 (t = 10 ms),
// 100 prompt tokens each. R0 computes all 100 (2 ms) and the prefix stays cached; R1 reuses
// the 4 blocks and computes 36 tokens: 1 + 0.36 = 1.36 ms, TTFT 1.36 ms instead of 2.
TEST(Scheduler, PrefixCacheHitsReducePrefill) {
    InferenceSpec s = base_spec();
    s.serving.prefix_caching = true;
    const std::vector<Request> rs = {req(0, 0, 100, 2, 7, 64), req(1, 10 * kMs, 100, 2, 7, 64)};
    const ReplicaRun r = run(s, rs, 1000);
    EXPECT_EQ(r.records[0].first_token.ns(), 2 * kMs);
    EXPECT_EQ(r.records[1].first_token.ns() - r.records[1].arrival.ns(), 1 * kMs + 360 * kUs);
    EXPECT_EQ(r.stats.prefix_hits, 1u);
    EXPECT_EQ(r.stats.prefix_hit_tokens, 64u);
    EXPECT_EQ(r.stats.prefill_tokens, 100u + 36u);

    s.serving.prefix_caching = false;
    const ReplicaRun off = run(s, rs, 1000);
    EXPECT_EQ(off.records[1].first_token.ns() - off.records[1].arrival.ns(), 2 * kMs);
    EXPECT_EQ(off.stats.prefix_hits, 0u);
}

// A prefix still being computed is not reused, and an idle cached prefix is evicted when its
// blocks are needed (least recently used first), then computed again. 19 blocks of 16,
// max_context 256 (17 blocks for one sequence, watermark 0), two prompts per prefill.
//   R0, R1 at 0: prefix A (64 tokens = 4 blocks), 100 tokens (7 blocks), 2 outputs. Both are
//       admitted into one prefill (200 tokens, 3 ms): R0 creates A, R1 finds it not yet
//       computed and holds 7 private blocks. One decode (1.02 ms) finishes both at 4.02 ms;
//       A stays cached, idle: 15 blocks free, 4 cached.
//   R2 at 5 ms: 255 tokens, no prefix, 1 output: 16 blocks > 15 free: A is evicted.
//   R3 at 30 ms: prefix A again: a miss, it computes all 100 tokens (2 ms).
TEST(Scheduler, PrefixCacheEvictsLeastRecentlyUsed) {
    InferenceSpec s = base_spec();
    s.serving.prefix_caching = true;
    s.serving.max_context = 256;
    s.serving.prefill_batch = 2;
    const std::vector<Request> rs = {req(0, 0, 100, 2, 1, 64), req(1, 0, 100, 2, 1, 64),
                                     req(2, 5 * kMs, 255, 1, 0, 0), req(3, 30 * kMs, 100, 2, 1, 64)};
    const ReplicaRun r = run(s, rs, 19);
    EXPECT_EQ(r.records[0].first_token.ns(), 3 * kMs);
    EXPECT_EQ(r.records[1].first_token.ns(), 3 * kMs);
    EXPECT_EQ(r.records[1].finish.ns(), 4 * kMs + 20 * kUs);
    EXPECT_EQ(r.stats.prefix_evictions, 1u);
    EXPECT_EQ(r.records[3].first_token.ns() - r.records[3].arrival.ns(), 2 * kMs);
    EXPECT_EQ(r.stats.prefix_hits, 0u);
    EXPECT_EQ(r.stats.prefill_tokens, 100u + 100u + 255u + 100u);
}

// Speculative decoding, acceptance 1 for 3 drafts: every decode iteration gains 4 tokens and
// costs 1 ms + 10 us x (1 + 3) = 1.04 ms. 10 prompt tokens (1.1 ms), 9 outputs: 1 + 4 + 4,
// two decodes: finish 1.1 + 2.08 = 3.18 ms. With 8 outputs the second gain is capped at 3:
// also two decodes. With acceptance 0 every iteration gains 1: 8 decodes, 1.1 + 8.32 ms.
TEST(Scheduler, SpeculativeHandCases) {
    InferenceSpec s = base_spec();
    SpeculativeSpec sp;
    sp.k = 3;
    sp.acceptance = {1.0, 1.0, 1.0};
    s.serving.speculative = sp;
    const ReplicaRun r = run(s, {req(0, 0, 10, 9), req(1, 100 * kMs, 10, 8)}, 1000);
    EXPECT_EQ(r.records[0].finish.ns(), 3 * kMs + 180 * kUs);
    EXPECT_EQ(r.records[1].finish.ns() - r.records[1].arrival.ns(), 3 * kMs + 180 * kUs);
    s.serving.speculative->acceptance = {0.0, 0.0, 0.0};
    const ReplicaRun z = run(s, {req(0, 0, 10, 9)}, 1000);
    EXPECT_EQ(z.records[0].finish.ns(), 1 * kMs + 100 * kUs + 8 * (1 * kMs + 40 * kUs));
    // Nothing accepted: 8 deliveries of one token, 1.04 ms apart.
    EXPECT_EQ(z.summary.itl_count, 8u);
    EXPECT_NEAR(z.summary.itl_p50.seconds(), 0.00104, 1e-12);
    // All accepted: R0's 8 tokens after the first come as 4 + 4, R1's 7 as 4 + 3: four
    // deliveries.
    EXPECT_EQ(r.summary.itl_count, 4u);
    expect_gaps_cover_requests(r, true);
}

// The mean gain per speculative iteration converges to 1 + sum_i prod_{j<=i} a_j:
// a = (0.8, 0.6, 0.5) as per-position rates: 1 + 0.8 + 0.6 + 0.5 = 2.9 (P(gain >= i + 2) =
// a_i). Each gain is 1..4 (variance 1.19), so over ~88,000 sequence-iterations the standard
// error is ~0.0037; the bound is 5 of them.
// The mean draws are those before the cap at the tokens left.
TEST(Scheduler, SpeculativeAcceptanceConvergesToClosedForm) {
    InferenceSpec s = base_spec();
    s.serving.max_batch = 32;
    SpeculativeSpec sp;
    sp.k = 3;
    sp.acceptance = {0.8, 0.6, 0.5};
    s.serving.speculative = sp;
    std::vector<Request> rs;
    for (std::uint64_t i = 0; i < 400; ++i) {
        rs.push_back(req(i, static_cast<std::int64_t>(i) * kMs, 20, 640));
    }
    const ReplicaRun r = run(s, rs, 20000);
    ASSERT_GT(r.stats.speculative_steps, 80000u);
    const double mean = 1.0 + static_cast<double>(r.stats.speculative_accepted) /
                                  static_cast<double>(r.stats.speculative_steps);
    EXPECT_NEAR(mean, 2.9, 0.018);
    // Generated tokens per sequence-iteration, with the cap: a little below the mean.
    const double gained = static_cast<double>(r.stats.decode_tokens) /
                          static_cast<double>(r.stats.speculative_steps);
    EXPECT_LT(gained, mean);
    EXPECT_GT(gained, mean - 0.02);
}

// Fast-forwarded decode equals stepwise decode exactly: a busy random workload with bucket
// boundaries (the bucket term makes a step end at every 128 tokens of the longest context),
// preemptions and prefix caching, in both prefill modes. Every record, every statistic but the
// step count, and every KV sample must be identical.
TEST(Scheduler, FastForwardEqualsStepwise) {
    TestCost cost;
    cost.per_bucket = Duration::from_ns(20 * kUs);
    for (std::int64_t chunk : {0, 96}) {
        for (bool caching : {false, true}) {
            InferenceSpec s = base_spec();
            s.serving.kv_block = 16;
            s.serving.max_context = 2048;
            s.serving.max_batch = 24;
            s.serving.prefill_chunk = chunk;
            s.serving.prefix_caching = caching;
            s.requests.input = {TokenDistribution::Kind::lognormal, 300, 250, 1, 1500, {}};
            s.requests.output = {TokenDistribution::Kind::lognormal, 300, 300, 1, 1500, {}};
            s.requests.arrival.kind = ArrivalSpec::Kind::gamma;
            s.requests.arrival.rate_per_s = 12;
            s.requests.arrival.gamma_cv = 2.0;
            s.requests.count = 600;
            s.requests.prefix = {5, 100, 0.6};
            const RequestSource src(s.requests, s.serving.max_context, 9);
            ReplicaRunOptions o;
            o.kv_sample = Duration::from_ns(10 * kMs);
            o.check_invariants = true;
            o.fast_forward = true;
            const ReplicaRun fast = simulate_replica(s, cost, 400, src, 9, o);
            o.fast_forward = false;
            const ReplicaRun slow = simulate_replica(s, cost, 400, src, 9, o);
            ASSERT_EQ(fast.records.size(), slow.records.size());
            for (std::size_t i = 0; i < fast.records.size(); ++i) {
                const RequestRecord& a = fast.records[i];
                const RequestRecord& b = slow.records[i];
                ASSERT_EQ(a.first_token.ns(), b.first_token.ns()) << "request " << i;
                ASSERT_EQ(a.finish.ns(), b.finish.ns()) << "request " << i;
                ASSERT_EQ(a.preemptions, b.preemptions) << "request " << i;
            }
            EXPECT_EQ(fast.stats.iterations, slow.stats.iterations);
            EXPECT_EQ(fast.stats.busy.ns(), slow.stats.busy.ns());
            EXPECT_EQ(fast.stats.kv_tokens_touched, slow.stats.kv_tokens_touched);
            EXPECT_EQ(fast.stats.preemptions, slow.stats.preemptions);
            EXPECT_EQ(fast.stats.prefix_hits, slow.stats.prefix_hits);
            EXPECT_EQ(fast.stats.prefix_evictions, slow.stats.prefix_evictions);
            EXPECT_EQ(fast.stats.peak_used_blocks, slow.stats.peak_used_blocks);
            EXPECT_EQ(fast.kv_used_fraction, slow.kv_used_fraction);
            EXPECT_EQ(fast.summary.itl_count, slow.summary.itl_count);
            EXPECT_EQ(fast.summary.itl_p50.seconds(), slow.summary.itl_p50.seconds());
            EXPECT_EQ(fast.summary.itl_p99.seconds(), slow.summary.itl_p99.seconds());
            EXPECT_DOUBLE_EQ(fast.summary.itl_mean.seconds(), slow.summary.itl_mean.seconds());
            expect_gaps_cover_requests(fast, false);
            EXPECT_GT(fast.stats.preemptions, 0u) << "chunk " << chunk;
            std::printf("chunk %lld caching %d: %llu steps fast, %llu stepwise, %llu preemptions, "
                        "%llu prefix hits\n",
                        static_cast<long long>(chunk), caching ? 1 : 0,
                        static_cast<unsigned long long>(fast.stats.steps),
                        static_cast<unsigned long long>(slow.stats.steps),
                        static_cast<unsigned long long>(fast.stats.preemptions),
                        static_cast<unsigned long long>(fast.stats.prefix_hits));
            if (caching) {
                EXPECT_GT(fast.stats.prefix_hits, 0u);
            }
            EXPECT_LT(fast.stats.steps * 3, slow.stats.steps) << "fast-forward must pay off";
        }
    }
}

// Disaggregation at the scheduler: a prefill replica hands the sequence off and keeps its
// blocks until release(); a decode replica decodes what it receives.
//   Prefill replica: 100 tokens, 5 outputs: 2 ms, hand-off at 2 ms, first token at 2 ms,
//   7 blocks (of 16) held, freed by release().
//   Decode replica: the sequence arrives at 3 ms, joins: 4 decodes of 1.01 ms: 7.04 ms.
TEST(Scheduler, DisaggregatedRoles) {
    const InferenceSpec s = base_spec();
    TestCost cost;
    ReplicaScheduler pre(s.serving, cost, 1000, 1, ReplicaRole::prefill);
    pre.add(req(0, 0, 100, 5));
    EXPECT_EQ(pre.begin(0), 2 * kMs);
    const std::vector<Completion> out = pre.end();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].kind, Completion::Kind::prefilled);
    EXPECT_EQ(out[0].first_token.ns(), 2 * kMs);
    EXPECT_EQ(pre.used_blocks(), 7);
    EXPECT_EQ(pre.running(), 0);
    pre.check_invariants();
    pre.release(out[0].handoff);
    EXPECT_EQ(pre.used_blocks(), 0);
    pre.check_invariants();

    ReplicaScheduler dec(s.serving, cost, 1000, 1, ReplicaRole::decode);
    dec.add_transferred(req(0, 0, 100, 5), out[0].first_token.ns(), 0);
    std::int64_t t = 3 * kMs;
    std::vector<Completion> done;
    while (dec.has_work()) {
        t = dec.begin(t);
        ASSERT_GT(t, 0);
        const auto& c = dec.end();
        done.insert(done.end(), c.begin(), c.end());
        dec.check_invariants();
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].time.ns(), 7 * kMs + 40 * kUs);
    EXPECT_EQ(done[0].first_token.ns(), 2 * kMs);
}

TEST(Scheduler, RejectsWhatItCannotRun) {
    InferenceSpec s = base_spec();
    TestCost cost;
    // 4096 tokens need 257 blocks of 16 (with the token being written), plus 2 of watermark.
    EXPECT_THROW(ReplicaScheduler(s.serving, cost, 200, 1), InputError);
    EXPECT_NO_THROW(ReplicaScheduler(s.serving, cost, 300, 1));
    s.serving.max_batch = 0;
    EXPECT_THROW(ReplicaScheduler(s.serving, cost, 1000, 1), InputError);
    s = base_spec();
    SpeculativeSpec sp;
    sp.k = 2;
    sp.acceptance = {0.5};
    s.serving.speculative = sp;
    EXPECT_THROW(ReplicaScheduler(s.serving, cost, 1000, 1), InputError);
}

} // namespace
} // namespace trnsim::serving
