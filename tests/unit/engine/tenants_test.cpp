#include "support/phold.hpp"

#include "trnsim/engine/tenants.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trnsim::engine {
namespace {

/// PHOLD as a tenant: its own partitions and lookahead; it stops at its end time (a pause
/// after which it is done), so the events it leaves pending are never handled, as alone.
class PholdTenant final : public Tenant<QuaternaryHeap> {
public:
    PholdTenant(const phold::Config& c, std::uint32_t partitions)
        : model_(c), partitions_(partitions) {}

    PartitionMap partition_map() const override {
        return PartitionMap::blocks(model_.config().entities, partitions_);
    }
    Duration lookahead() const override {
        return Duration::from_ns(model_.config().lookahead_ns);
    }
    void start(Injector<QuaternaryHeap>& in) override {
        for (EntityId e = 0; e < model_.config().entities; ++e) {
            for (std::uint32_t k = 0; k < model_.config().events_per_entity; ++k) {
                in.at(e, model_.initial_time(e), 0);
            }
        }
    }
    void handle(Context<QuaternaryHeap>& ctx, const Event& e) override {
        EXPECT_EQ(e.target, ctx.self());
        model_.handle(ctx, e);
    }
    std::int64_t pause_at() const override { return model_.config().end_ns; }
    void resume(Injector<QuaternaryHeap>&) override { done_ = true; }
    bool done() const override { return done_; }

    const phold::Model& model() const { return model_; }

private:
    phold::Model model_;
    std::uint32_t partitions_;
    bool done_ = false;
};

/// A tenant that works in chunks, as the reliability run does: each pause injects the next
/// chunk's ticks (one per entity per chunk, at a per-entity offset), and every tick sends one
/// event to the next entity (another partition) a fixed delay later. Its record is each
/// entity's list of handled times.
class ChunkedTenant final : public Tenant<QuaternaryHeap> {
public:
    static constexpr std::uint32_t kEntities = 6;
    static constexpr std::int64_t kChunk = 50'000;
    static constexpr std::int64_t kDelay = 7'000;
    static constexpr std::int64_t kEnd = 200'000;

    PartitionMap partition_map() const override {
        return PartitionMap::blocks(kEntities, 3);
    }
    Duration lookahead() const override { return Duration::from_ns(kDelay); }
    void start(Injector<QuaternaryHeap>& in) override { queue_chunk(in); }
    void handle(Context<QuaternaryHeap>& ctx, const Event& e) override {
        seen_[ctx.self()].push_back(ctx.now_ns() * 4 + e.type);
        if (e.type == 0) {
            ctx.schedule((ctx.self() + 2) % kEntities, Duration::from_ns(kDelay), 1);
        }
    }
    std::int64_t pause_at() const override { return horizon_; }
    void resume(Injector<QuaternaryHeap>& in) override {
        if (horizon_ >= kEnd) {
            done_ = true;
            return;
        }
        queue_chunk(in);
    }
    bool done() const override { return done_; }

    const std::vector<std::vector<std::int64_t>>& seen() const { return seen_; }

private:
    void queue_chunk(Injector<QuaternaryHeap>& in) {
        for (EntityId e = 0; e < kEntities; ++e) {
            in.at(e, horizon_ + 1'000 * (e + 1), 0);
        }
        horizon_ += kChunk;
    }

    std::vector<std::vector<std::int64_t>> seen_ = std::vector<std::vector<std::int64_t>>(kEntities);
    std::int64_t horizon_ = 0;
    bool done_ = false;
};

phold::Config phold_config(std::uint32_t entities, std::int64_t lookahead, std::uint64_t seed,
                           std::int64_t end) {
    phold::Config c;
    c.entities = entities;
    c.events_per_entity = 2;
    c.remote = 0.3;
    c.lookahead_ns = lookahead;
    c.mean_ns = 900;
    c.end_ns = end;
    c.seed = seed;
    return c;
}

struct Alone {
    std::vector<std::uint64_t> fingerprints;
    std::vector<std::uint32_t> handled;
};

Alone baseline(const phold::Config& c) {
    phold::Model m(c);
    (void)phold::run_baseline(m);
    return {m.fingerprints(), m.handled()};
}

TEST(Tenants, EachTenantOfASetHandlesWhatItHandlesAlone) {
    // Two PHOLD models with different lookaheads, seeds, sizes and ends, and a chunked one.
    const phold::Config a = phold_config(1000, 100, 11, 20'000);
    const phold::Config b = phold_config(700, 2'500, 12, 90'000);
    const Alone alone_a = baseline(a);
    const Alone alone_b = baseline(b);
    ChunkedTenant chunked_alone;
    {
        TenantSet<QuaternaryHeap> one;
        one.add(chunked_alone);
        (void)one.run(1);
    }
    for (const int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        PholdTenant ta(a, 4);
        ChunkedTenant tc;
        PholdTenant tb(b, 3);
        TenantSet<QuaternaryHeap> set;
        EXPECT_EQ(set.add(ta), 0u);
        EXPECT_EQ(set.add(tc), 1u);
        EXPECT_EQ(set.add(tb), 2u);
        EXPECT_EQ(set.lookahead().ns(), 100); // the smallest
        const RunStats s = set.run(threads);
        EXPECT_EQ(ta.model().fingerprints(), alone_a.fingerprints);
        EXPECT_EQ(ta.model().handled(), alone_a.handled);
        EXPECT_EQ(tb.model().fingerprints(), alone_b.fingerprints);
        EXPECT_EQ(tb.model().handled(), alone_b.handled);
        EXPECT_EQ(tc.seen(), chunked_alone.seen());
        // Each tick of the 4 chunks and the event it sent.
        std::size_t ticks = 0;
        for (const auto& v : tc.seen()) {
            ticks += v.size();
        }
        EXPECT_EQ(ticks, 4u * ChunkedTenant::kEntities * 2u);
        // The set counts each tenant's events: what it handled, and the events it left
        // pending at its end (PHOLD keeps entities x 2), which the set dropped as the run
        // went on to the chunked tenant's end.
        EXPECT_EQ(set.handled(0), ta.model().total_handled() + 1000u * 2u);
        EXPECT_EQ(set.handled(1), ticks);
        EXPECT_EQ(set.handled(2), tb.model().total_handled() + 700u * 2u);
        EXPECT_EQ(s.events, set.handled(0) + set.handled(1) + set.handled(2));
        EXPECT_EQ(s.pending, 0u);
    }
}

TEST(Tenants, ATenantKeepsTheEngineGuarantees) {
    // A tenant that sends to another of its partitions below its own lookahead breaks the
    // engine's promise as it would alone.
    struct Liar final : Tenant<QuaternaryHeap> {
        PartitionMap partition_map() const override { return PartitionMap::blocks(2, 2); }
        Duration lookahead() const override { return Duration::from_ns(1'000); }
        void start(Injector<QuaternaryHeap>& in) override { in.at(0, 10, 0); }
        void handle(Context<QuaternaryHeap>& ctx, const Event&) override {
            ctx.schedule(1, Duration::from_ns(5), 0);
        }
    } liar;
    PholdTenant other(phold_config(10, 1'000, 3, 5'000), 1);
    TenantSet<QuaternaryHeap> set;
    set.add(other);
    set.add(liar);
    EXPECT_THROW((void)set.run(1), LookaheadError);
    TenantSet<QuaternaryHeap> empty;
    EXPECT_THROW((void)empty.run(1), std::invalid_argument);
}

} // namespace
} // namespace trnsim::engine
