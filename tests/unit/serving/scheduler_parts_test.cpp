// The parts of the replica scheduler, each alone (scheduler.hpp names them): the KV cache and
// prefix cache, the sequence table, the decode book's offset form, the inter-token gap log,
// the speculative draws and the batcher's admission, preemption and shapes. Every expected
// value is derived by hand in the comment above it.
#include "trnsim/core/error.hpp"
#include "trnsim/serving/batcher.hpp"
#include "trnsim/serving/decode_book.hpp"
#include "trnsim/serving/kv_cache.hpp"
#include "trnsim/serving/sequence_table.hpp"
#include "trnsim/serving/speculator.hpp"
#include "trnsim/serving/token_gap_log.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace trnsim::serving {
namespace {

Request req(std::uint64_t id, std::int64_t in, std::int64_t out, std::uint32_t prefix = 0,
            std::int64_t prefix_tokens = 0) {
    Request r;
    r.id = id;
    r.input_tokens = in;
    r.output_tokens = out;
    r.prefix_id = prefix;
    r.prefix_tokens = prefix_tokens;
    return r;
}

// ---------------------------------------------------------------------------------------------
// KvCache

// 100 blocks of 16 tokens: 17 tokens take 2 blocks; the watermark is 1% = 1 block.
TEST(KvCache, BlocksAndWatermark) {
    KvCache kv(100, 16);
    EXPECT_EQ(kv.blocks_for(0), 0);
    EXPECT_EQ(kv.blocks_for(1), 1);
    EXPECT_EQ(kv.blocks_for(16), 1);
    EXPECT_EQ(kv.blocks_for(17), 2);
    EXPECT_EQ(kv.watermark(), 1);
    kv.take(30);
    EXPECT_EQ(kv.used(), 30);
    EXPECT_EQ(kv.free_blocks(), 70);
    kv.give(30);
    EXPECT_EQ(kv.used(), 0);
    kv.check(0, {});
}

// A prompt of 40 tokens with a 40-token prefix (2 full blocks of 16) creates the entry: it
// takes 3 blocks, 2 shared and 1 its own. While it computes, the prefix is not offered. Once
// 32 tokens are computed the entry is ready; after its creator leaves, its 2 blocks are idle
// (free, evictable) and a second prompt reuses them: 32 tokens, pinning the 2 idle blocks.
TEST(KvCache, PrefixCreatedComputedAndReused) {
    KvCache kv(100, 16);
    EXPECT_EQ(kv.find(0, 40).entry, kNone); // no prefix
    const KvCache::Prefix p = kv.find(5, 40);
    EXPECT_EQ(p.entry, 5u);
    EXPECT_TRUE(p.create);
    kv.create(5, 2);
    kv.take(3);
    EXPECT_EQ(kv.shared_blocks(5), 2);
    EXPECT_EQ(kv.shared_blocks(kNone), 0);
    const KvCache::Prefix busy = kv.find(5, 40);
    EXPECT_EQ(busy.entry, kNone); // being computed: the next prompt computes it privately
    EXPECT_FALSE(busy.create);
    kv.computed(5, 16);
    EXPECT_EQ(kv.find(5, 40).entry, kNone);
    kv.computed(5, 32);
    const KvCache::Prefix hit = kv.find(5, 40);
    EXPECT_EQ(hit.entry, 5u);
    EXPECT_EQ(hit.cached, 2);
    EXPECT_EQ(hit.pinned, 0); // its creator still references it
    kv.check(1, {0, 0, 0, 0, 0, 1});

    kv.unref(5);
    kv.give(1);
    EXPECT_EQ(kv.idle_cached(), 2);
    EXPECT_EQ(kv.used(), 0);
    EXPECT_EQ(kv.free_blocks(), 100);
    EXPECT_EQ(kv.find(5, 40).pinned, 2);
    EXPECT_EQ(kv.reuse(5), 32);
    EXPECT_EQ(kv.idle_cached(), 0);
    EXPECT_EQ(kv.used(), 2);
    EXPECT_EQ(kv.hits(), 1u);
    EXPECT_EQ(kv.hit_tokens(), 32u);
    kv.check(0, {0, 0, 0, 0, 0, 1});
}

// A prefix shorter than a block is not cached; an entry whose creator leaves before computing
// it is dropped and its blocks are free again.
TEST(KvCache, UncomputedOrShortPrefixIsNotKept) {
    KvCache kv(10, 4);
    EXPECT_EQ(kv.find(1, 3).entry, kNone);
    kv.create(2, 2);
    kv.take(2);
    kv.unref(2);
    EXPECT_EQ(kv.free_blocks(), 10);
    EXPECT_EQ(kv.idle_cached(), 0);
    EXPECT_TRUE(kv.find(2, 8).create); // absent again
    kv.check(0, {});
}

// 10 blocks of 4. Prefix 1 (2 blocks) goes idle, then prefix 2 (1 block): the pool has 7.
// Taking 8 evicts the least recently used, prefix 1 (pool 9), and leaves 1; taking 2 more
// evicts prefix 2 (pool 2) and leaves 0.
TEST(KvCache, EvictsIdlePrefixesLeastRecentlyUsedFirst) {
    KvCache kv(10, 4);
    kv.create(1, 2);
    kv.take(2);
    kv.computed(1, 8);
    kv.unref(1);
    kv.create(2, 1);
    kv.take(1);
    kv.computed(2, 4);
    kv.unref(2);
    EXPECT_EQ(kv.idle_cached(), 3);
    EXPECT_EQ(kv.free_blocks(), 10);
    kv.take(8);
    EXPECT_EQ(kv.evictions(), 1u);
    EXPECT_TRUE(kv.find(1, 8).create);     // evicted
    EXPECT_EQ(kv.find(2, 4).cached, 1);    // still cached
    EXPECT_EQ(kv.free_blocks(), 2);
    kv.take(2);
    EXPECT_EQ(kv.evictions(), 2u);
    EXPECT_EQ(kv.free_blocks(), 0);
    kv.check(10, {});
}

// Hand-offs hold blocks and a prefix reference until released; ids are reused.
TEST(KvCache, HandOffsHoldUntilReleased) {
    KvCache kv(20, 4);
    kv.create(3, 1);
    kv.take(1);
    kv.computed(3, 4);
    kv.take(5);
    const std::uint32_t a = kv.hold(5, kNone);
    kv.take(2);
    const std::uint32_t b = kv.hold(2, 3);
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(b, 1u);
    EXPECT_EQ(kv.used(), 8);
    kv.check(0, {});
    kv.release(a);
    EXPECT_EQ(kv.used(), 3);
    EXPECT_EQ(kv.hold(0, kNone), 0u); // a's id again
    kv.release(b);
    EXPECT_EQ(kv.used(), 0);
    EXPECT_EQ(kv.idle_cached(), 1); // the prefix stays cached, idle
    kv.clear();
    EXPECT_EQ(kv.free_blocks(), 20);
    EXPECT_EQ(kv.idle_cached(), 0);
}

TEST(KvCacheDeathTest, CheckFindsALeak) {
    KvCache kv(10, 4);
    kv.take(3);
    EXPECT_DEATH(kv.check(2, {}), "conserved");
}

// ---------------------------------------------------------------------------------------------
// SequenceTable

// Three sequences run in admission order; the middle one leaves and its slot is reused by a
// fourth, with a new version (add: 1, free: 2, add: 3), which joins the list last.
TEST(SequenceTable, SlotsVersionsAndTheRunningList) {
    SequenceTable t;
    const std::uint32_t a = t.add(req(10, 5, 5));
    const std::uint32_t b = t.add(req(11, 5, 5));
    const std::uint32_t c = t.add(req(12, 5, 5));
    EXPECT_EQ(a, 0u);
    EXPECT_EQ(c, 2u);
    for (std::uint32_t s : {a, b, c}) {
        t[s].state = SeqState::prefill;
        t.link(s);
    }
    EXPECT_EQ(t.running(), 3);
    EXPECT_EQ(t.head(), a);
    EXPECT_EQ(t.tail(), c);
    EXPECT_EQ(t[c].admitted, 2u);
    t.unlink(b);
    t.free(b);
    EXPECT_EQ(t.running(), 2);
    EXPECT_EQ(t.next(a), c);
    const std::uint32_t d = t.add(req(13, 5, 5));
    EXPECT_EQ(d, b);
    EXPECT_EQ(t[d].version, 3u);
    EXPECT_EQ(t[d].req.id, 13u);
    t[d].state = SeqState::decode;
    t.link(d);
    EXPECT_EQ(t.tail(), d);
    EXPECT_EQ(t[d].admitted, 3u);
    EXPECT_TRUE(t.decoding(d, 3));
    EXPECT_FALSE(t.decoding(d, 1)); // the freed sequence of that slot
    EXPECT_FALSE(t.decoding(a, t[a].version)); // in prefill
    EXPECT_EQ(t.ids(), (std::vector<std::uint64_t>{10, 12, 13}));
    t.waiting().push_back(a);
    EXPECT_EQ(t.queued(), 1);
    t.clear();
    EXPECT_EQ(t.running(), 0);
    EXPECT_EQ(t.queued(), 0);
    EXPECT_TRUE(t.ids().empty());
}

// ---------------------------------------------------------------------------------------------
// DecodeBook

// Blocks of 4, G = 0. A has 10 KV tokens (3 blocks, 12 slots) and 4 tokens left; B has 7 (2
// blocks) and 8 left. Bases 10 and 7; keys (-10) mod 4 = 2 and (-7) mod 4 = 1: the iteration
// of counter G writes KV token base + G, which opens a block when base + G = 0 mod 4, so A
// needs a block at G = 2, 6, ... and B at G = 1, 5, .... Last iterations: A 0 + 4 - 1 = 3,
// B 7.
TEST(DecodeBook, OffsetFormKeysAndDemand) {
    SequenceTable t;
    DecodeBook book(4);
    const std::uint32_t a = t.add(req(0, 9, 5));
    const std::uint32_t b = t.add(req(1, 5, 10));
    t[a].kv = 10;
    t[a].generated = 1;
    t[b].kv = 7;
    t[b].generated = 2;
    for (std::uint32_t s : {a, b}) {
        t[s].state = SeqState::decode;
        book.enter(s, t[s]);
    }
    EXPECT_EQ(t[a].kv, 10); // the base (G = 0)
    EXPECT_EQ(book.count(), 2);
    EXPECT_EQ(book.sum_base(), 17);
    EXPECT_EQ(book.key_of(10), 2);
    EXPECT_EQ(book.key_of(7), 1);
    EXPECT_EQ(book.max_base(t), 10);
    EXPECT_EQ(book.next_finish(t), 3);
    EXPECT_EQ(book.finish_slot(), a);
    // Blocks of the next iterations: G = 0: none; G = 1: B; G = 2: A; G = 3: none.
    EXPECT_EQ(book.next_demand(), 0);
    EXPECT_EQ(book.demand(1), 0);
    EXPECT_EQ(book.demand(2), 1);
    EXPECT_EQ(book.demand(3), 2);
    EXPECT_EQ(book.demand(4), 2);
    EXPECT_EQ(book.demand(6), 3); // a whole cycle (2), then G = 4, 5: B
    // With 1 free block, 2 iterations fit (demand(3) = 2); with 5, 10 (demand(10) = 4 + 1,
    // demand(11) = 6).
    EXPECT_EQ(book.iterations_fitting(1), 2);
    EXPECT_EQ(book.iterations_fitting(5), 10);

    // Three iterations later A leaves: its heap items go stale, B is the top of both heaps.
    book.advance(3);
    EXPECT_EQ(book.iteration(), 3);
    EXPECT_EQ(book.next_demand(), 0); // G = 3: key 3, nobody
    book.leave(t[a]);
    EXPECT_EQ(book.count(), 1);
    EXPECT_EQ(book.sum_base(), 7);
    EXPECT_EQ(book.next_finish(t), 7);
    EXPECT_EQ(book.finish_slot(), b);
    EXPECT_EQ(book.max_base(t), 7);
    book.compact(t);
    book.check(1, 7, {0, 1, 0, 0});
    // Entering at G = 3 with 9 KV tokens: base 6, key 2; last iteration 3 + 2 - 1 = 4.
    const std::uint32_t c = t.add(req(2, 8, 3));
    t[c].kv = 9;
    t[c].generated = 1;
    t[c].state = SeqState::decode;
    book.enter(c, t[c]);
    EXPECT_EQ(t[c].kv, 6);
    EXPECT_EQ(book.next_finish(t), 4);
    EXPECT_EQ(book.finish_slot(), c);
    book.check(2, 13, {0, 1, 1, 0});
    book.clear();
    EXPECT_EQ(book.iteration(), 0);
    EXPECT_EQ(book.count(), 0);
}

// ---------------------------------------------------------------------------------------------
// TokenGapLog

// Equal gaps in a row merge; a zero count records nothing; gaps() sorts and merges.
TEST(TokenGapLog, RunsMergeAndCompact) {
    TokenGapLog log;
    log.record(5, 1);
    log.record(5, 2);
    log.record(7, 1);
    log.record(9, 0);
    log.record(5, 1);
    const std::vector<TokenGap> g = log.gaps();
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].ns, 5);
    EXPECT_EQ(g[0].count, 4);
    EXPECT_EQ(g[1].ns, 7);
    EXPECT_EQ(g[1].count, 1);
}

// A decode step ended at 50; then sequence s got its first token at 100 (fresh) while r has
// decoded since before. A step of 3 iterations of 10 from 100 over both: s's first gap 110 -
// 100 = 10, r's 110 - 50 = 60, then (3 - 1) x 2 gaps of 10. A stale fresh entry (s's slot
// reused) counts as nothing fresh: both first gaps are then against 50.
TEST(TokenGapLog, DecodeStepGaps) {
    SequenceTable t;
    const std::uint32_t r = t.add(req(0, 5, 50));
    const std::uint32_t s = t.add(req(1, 5, 50));
    t[r].state = SeqState::decode;
    t[s].state = SeqState::decode;
    TokenGapLog log;
    log.stamp(t[r], 40);
    EXPECT_EQ(log.last_token(t[r]), 40);
    log.decode_step_ended(50);
    EXPECT_EQ(log.last_token(t[r]), 50); // it decoded in that step
    log.stamp(t[s], 100);
    EXPECT_EQ(log.last_token(t[s]), 100);
    log.fresh(s, t[s].version);
    log.decoded(t, 100, 10, 3, 2, 2);
    log.decode_step_ended(130);
    std::vector<TokenGap> g = log.gaps();
    ASSERT_EQ(g.size(), 2u);
    EXPECT_EQ(g[0].ns, 10);
    EXPECT_EQ(g[0].count, 5);
    EXPECT_EQ(g[1].ns, 60);
    EXPECT_EQ(g[1].count, 1);

    TokenGapLog stale;
    stale.decode_step_ended(50);
    stale.stamp(t[s], 100);
    stale.fresh(s, t[s].version + 1);
    stale.decoded(t, 100, 10, 1, 2, 2);
    g = stale.gaps();
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].ns, 60);
    EXPECT_EQ(g[0].count, 2);

    // token() (the explicit form: speculation, a joining sequence) counts from the stamp,
    // 100 (set again above): a gap of 70, and the new stamp is its last token.
    log.token(t[s], 170);
    EXPECT_EQ(log.last_token(t[s]), 170);
    EXPECT_EQ(log.gaps().back().ns, 70);
}

// ---------------------------------------------------------------------------------------------
// Speculator

ServingSpec speculative(std::vector<double> acceptance) {
    ServingSpec s;
    SpeculativeSpec sp;
    sp.k = static_cast<int>(acceptance.size());
    sp.acceptance = std::move(acceptance);
    s.speculative = sp;
    return s;
}

// u < 1 always and u >= 0 always: rates of 1 accept every draft, rates of 0 none. The gain is
// the accepted drafts plus one, capped by the tokens left.
TEST(Speculator, CertainRatesAndTheCap) {
    Speculator all(speculative({1.0, 1.0, 1.0}), 7);
    Speculator none(speculative({0.0, 0.0, 0.0}), 7);
    EXPECT_EQ(all.k(), 3);
    for (std::uint32_t i = 0; i < 50; ++i) {
        EXPECT_EQ(all.accepted(3, i), 3);
        EXPECT_EQ(none.accepted(3, i), 0);
    }
    Seq q;
    q.req = req(3, 10, 10);
    q.generated = 1;
    EXPECT_EQ(all.gain(q), 4);
    q.generated = 8;
    EXPECT_EQ(all.gain(q), 2); // 2 tokens left
    EXPECT_EQ(q.spec_iterations, 2u);
    EXPECT_EQ(all.steps(), 2u);
    EXPECT_EQ(all.accepted_total(), 6u); // counted before the cap
    EXPECT_EQ(Speculator(ServingSpec{}, 7).k(), 0);
}

// Rates 0.8, 0.5, 0.2: 0, 1, 2, 3 drafts with probabilities 0.2, 0.3, 0.3, 0.2, mean 1.5,
// variance 3.3 - 1.5^2 = 1.05. Over 20,000 draws the mean's standard deviation is 0.0072;
// allow 5 of them. A draw never accepts more with lower rates (the same u).
TEST(Speculator, MeanAcceptanceIsTheSumOfTheRates) {
    Speculator s(speculative({0.8, 0.5, 0.2}), 42);
    Speculator lower(speculative({0.6, 0.5, 0.1}), 42);
    double sum = 0.0;
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) {
        const auto request = static_cast<std::uint64_t>(i % 100);
        const auto iteration = static_cast<std::uint32_t>(i / 100);
        const std::int64_t n = s.accepted(request, iteration);
        EXPECT_LE(lower.accepted(request, iteration), n);
        sum += static_cast<double>(n);
    }
    EXPECT_NEAR(sum / draws, 1.5, 5 * 0.0072);
}

TEST(Speculator, RejectsBadRates) {
    ServingSpec wrong = speculative({0.5});
    wrong.speculative->k = 2;
    EXPECT_THROW(Speculator(wrong, 1), InputError);
    EXPECT_THROW(Speculator(speculative({1.5}), 1), InputError);
    EXPECT_THROW(Speculator(speculative({0.4, 0.6}), 1), InputError);
    EXPECT_NO_THROW(Speculator(speculative({0.6, 0.6}), 1));
}

// ---------------------------------------------------------------------------------------------
// Batcher

ServingSpec batcher_spec() {
    ServingSpec s;
    s.max_batch = 2;
    s.kv_block = 16;
    s.max_context = 256;
    s.prefill_chunk = 0;
    s.prefill_batch = 2;
    return s;
}

std::uint32_t queue(Batcher& b, const Request& r) {
    SequenceTable& t = b.seqs();
    const std::uint32_t s = t.add(r);
    t[s].state = SeqState::waiting;
    t[s].target = r.input_tokens;
    t.waiting().push_back(s);
    return s;
}

// One sequence of max_context 256 (+ the token written) needs 17 blocks of 16; under 100
// blocks the watermark is 0, so 16 blocks are too few and 17 enough. With 100 blocks the
// watermark is 1: max_context 1583 needs 99 + 1 (fits), 1584 needs 100 + 1 (refused).
TEST(Batcher, RefusesACacheTooSmallForOneSequence) {
    ServingSpec s = batcher_spec();
    EXPECT_THROW(Batcher(s, 16, 0), InputError);
    EXPECT_NO_THROW(Batcher(s, 17, 0));
    s.max_context = 1583;
    EXPECT_NO_THROW(Batcher(s, 100, 0));
    s.max_context = 1584;
    EXPECT_THROW(Batcher(s, 100, 0), InputError);
    // Speculation: the k + 1 verified tokens too (256 + 4 tokens: 17 blocks).
    s.max_context = 256;
    EXPECT_NO_THROW(Batcher(s, 17, 3));
    EXPECT_THROW(Batcher(s, 17, 16), InputError); // 273 tokens: 18 blocks
}

// 100 blocks, max_batch 2, whole prompts two at a time. Prompts of 40, 20 and 30 tokens: the
// first two fit (3 + 2 blocks, watermark 1) and prefill together, the third waits for a slot.
// Prefill shape: 2 prompts, 60 tokens, the longest 40.
TEST(Batcher, WholePromptPrefillAdmitsUpToTheBatch) {
    Batcher b(batcher_spec(), 100, 0);
    TokenGapLog gaps;
    const std::uint32_t a = queue(b, req(0, 40, 3));
    const std::uint32_t c = queue(b, req(1, 20, 3));
    queue(b, req(2, 30, 3));
    IterationShape sh;
    const Batcher::Plan p = b.form(gaps, sh);
    EXPECT_TRUE(p.prefill_only);
    EXPECT_EQ(sh.prefill_sequences, 2);
    EXPECT_EQ(sh.prefill_tokens, 60);
    EXPECT_EQ(sh.prefill_max_tokens, 40);
    EXPECT_EQ(sh.decode_sequences, 0);
    EXPECT_EQ(b.kv().used(), 5);
    EXPECT_EQ(b.seqs().running(), 2);
    EXPECT_EQ(b.seqs().queued(), 1);
    std::vector<std::uint32_t> still, done;
    EXPECT_EQ(b.progress_prefill(still, done), 60);
    EXPECT_EQ(done, (std::vector<std::uint32_t>{a, c}));
    EXPECT_TRUE(b.seqs().prefilling().empty());
    b.check_invariants();
}

// Chunked prefill, chunk 50: a prompt of 80 takes 50, then its remaining 30 plus 20 of a
// second prompt of 40 admitted behind it.
TEST(Batcher, ChunkedPrefillSpreadsTheBudget) {
    ServingSpec s = batcher_spec();
    s.prefill_chunk = 50;
    Batcher b(s, 100, 0);
    TokenGapLog gaps;
    const std::uint32_t a = queue(b, req(0, 80, 3));
    IterationShape sh;
    Batcher::Plan p = b.form(gaps, sh);
    EXPECT_FALSE(p.prefill_only);
    EXPECT_EQ(sh.prefill_tokens, 50);
    EXPECT_EQ(b.seqs()[a].chunk, 50);
    std::vector<std::uint32_t> still, done;
    b.progress_prefill(still, done);
    EXPECT_TRUE(done.empty());
    const std::uint32_t c = queue(b, req(1, 40, 3));
    p = b.form(gaps, sh);
    EXPECT_EQ(b.seqs()[a].chunk, 30);
    EXPECT_EQ(b.seqs()[c].chunk, 20);
    EXPECT_EQ(sh.prefill_sequences, 2);
    EXPECT_EQ(sh.prefill_max_context, 80); // 50 done + 30
    b.progress_prefill(still, done);
    EXPECT_EQ(done, (std::vector<std::uint32_t>{a}));
    EXPECT_EQ(b.seqs().prefilling(), (std::vector<std::uint32_t>{c}));
    b.check_invariants();
}

// Prefix caching: a prompt of 40 with a 32-token prefix creates it (3 blocks: 2 shared, 1
// own). Once computed, a second prompt with the same prefix takes only 1 new block and starts
// after the 32 cached tokens.
TEST(Batcher, AdmissionReusesACachedPrefix) {
    ServingSpec s = batcher_spec();
    s.prefix_caching = true;
    Batcher b(s, 100, 0);
    TokenGapLog gaps;
    const std::uint32_t a = queue(b, req(0, 40, 3, 1, 32));
    IterationShape sh;
    b.form(gaps, sh);
    EXPECT_EQ(b.seqs()[a].own, 1);
    EXPECT_EQ(b.kv().used(), 3);
    std::vector<std::uint32_t> still, done;
    b.progress_prefill(still, done); // computes the prefix: ready
    const std::uint32_t c = queue(b, req(1, 40, 3, 1, 32));
    EXPECT_TRUE(b.try_admit(c, true));
    b.seqs().waiting().pop_front();
    EXPECT_EQ(b.seqs()[c].done, 32);
    EXPECT_EQ(b.seqs()[c].own, 1);
    EXPECT_EQ(b.kv().used(), 4);
    EXPECT_EQ(b.kv().hits(), 1u);
}

// 20 blocks of 16 (watermark 0) and max_context 256 (17 blocks for one). A prompt of 200
// takes 13 blocks; a second of 150 needs 10 and waits (7 free). Preempting the first frees
// its 13 blocks and puts it back at the front of the queue, to recompute 200 + 0 tokens.
TEST(Batcher, AdmissionNeedsTheBlocksAndPreemptionFreesThem) {
    Batcher b(batcher_spec(), 20, 0);
    TokenGapLog gaps;
    const std::uint32_t a = queue(b, req(0, 200, 3));
    const std::uint32_t c = queue(b, req(1, 150, 3));
    IterationShape sh;
    EXPECT_TRUE(b.form(gaps, sh).prefill_only);
    EXPECT_EQ(sh.prefill_sequences, 1);
    EXPECT_EQ(b.kv().used(), 13);
    EXPECT_FALSE(b.try_admit(c, false));
    b.preempt(a, gaps);
    EXPECT_EQ(b.kv().used(), 0);
    EXPECT_EQ(b.seqs().waiting().front(), a);
    EXPECT_EQ(b.seqs()[a].preemptions, 1u);
    EXPECT_EQ(b.seqs()[a].target, 200);
    EXPECT_EQ(b.preemptions(), 1u);
    EXPECT_TRUE(b.seqs().prefilling().empty());
    b.check_invariants();
    EXPECT_EQ(b.clear(), (std::vector<std::uint64_t>{0, 1}));
}

} // namespace
} // namespace trnsim::serving
