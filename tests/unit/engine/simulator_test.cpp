#include "support/phold.hpp"

#include "trnsim/engine/simulator.hpp"

#include <gtest/gtest.h>


namespace trnsim::engine {
namespace {

phold::Config small_phold() {
    phold::Config c;
    c.entities = 3000;
    c.events_per_entity = 2;
    c.remote = 0.3;
    c.lookahead_ns = 100;
    c.mean_ns = 900;
    c.end_ns = 20'000;
    c.seed = 11;
    return c;
}

struct Reference {
    std::vector<std::uint64_t> fingerprints;
    std::vector<std::uint32_t> handled;
    std::uint64_t events;
};

const Reference& baseline() {
    static const Reference ref = [] {
        phold::Model m(small_phold());
        const std::uint64_t n = phold::run_baseline(m);
        return Reference{m.fingerprints(), m.handled(), n};
    }();
    return ref;
}

template <class Queue>
void check_matrix() {
    const Reference& ref = baseline();
    ASSERT_GT(ref.events, 100'000u);
    for (std::uint32_t partitions : {1u, 3u, 16u, 64u}) {
        for (int threads : {1, 2, 4}) {
            phold::Model m(small_phold());
            const RunStats s = phold::run_engine<Queue>(m, partitions, threads);
            SCOPED_TRACE(std::string(Queue::name()) + ", " + std::to_string(partitions) +
                         " partitions, " + std::to_string(threads) + " threads");
            // Identical per-entity histories: the same events in the same order.
            EXPECT_EQ(m.fingerprints(), ref.fingerprints);
            EXPECT_EQ(m.handled(), ref.handled);
            // Conservation: every handled event made exactly one more.
            EXPECT_EQ(s.events, ref.events);
            EXPECT_EQ(s.pending, 3000u * 2u);
            EXPECT_EQ(s.threads, std::min<int>(threads, static_cast<int>(partitions)));
            if (partitions == 1) {
                EXPECT_EQ(s.remote_events, 0u);
            } else {
                EXPECT_GT(s.remote_events, 0u);
            }
        }
    }
}

TEST(Determinism, BinaryHeapMatchesSequentialBaseline) { check_matrix<BinaryHeap>(); }
TEST(Determinism, QuaternaryHeapMatchesSequentialBaseline) { check_matrix<QuaternaryHeap>(); }
TEST(Determinism, CalendarQueueMatchesSequentialBaseline) { check_matrix<CalendarQueue>(); }

TEST(Determinism, RepartitioningDoesNotShiftRandomStreams) {
    // Uneven, hand-made partitions give the same histories as the baseline too.
    phold::Model m(small_phold());
    Simulator<phold::Model> sim(m, PartitionMap::from_starts(3000, {0, 7, 1000, 1001, 2500}),
                                Duration::from_ns(100));
    phold::seed_events(m, sim);
    sim.run(SimTime::from_ns(20'000), 3);
    EXPECT_EQ(m.fingerprints(), baseline().fingerprints);
}

/// A model that breaks its promised lookahead: sends to the next partition 10 ns ahead.
struct ShortSighted {
    template <class Q>
    void handle(Context<Q>& ctx, const Event&) {
        ctx.schedule((ctx.self() + 1) % 4, Duration::from_ns(10), 0);
    }
};

TEST(Guarantees, LookaheadViolationsStopTheRun) {
    for (int threads : {1, 2}) {
        ShortSighted model;
        Simulator<ShortSighted> sim(model, PartitionMap::blocks(4, 4), Duration::from_ns(100));
        sim.schedule(0, SimTime::zero(), 0);
        EXPECT_THROW(sim.run(SimTime::from_ns(10'000), threads), LookaheadError);
    }
}

/// Schedules an event into its own past.
struct TimeTraveller {
    template <class Q>
    void handle(Context<Q>& ctx, const Event&) {
        ctx.schedule_at(ctx.self(), ctx.now() - Duration::from_ns(1), 0);
    }
};

TEST(Guarantees, EventsInThePastAreCausalityErrors) {
    TimeTraveller model;
    Simulator<TimeTraveller> sim(model, PartitionMap::blocks(2, 1), Duration::from_ns(100));
    sim.schedule(0, SimTime::from_ns(50), 0);
    EXPECT_THROW(sim.run(SimTime::from_ns(1000), 1), CausalityError);
}

/// Throws from the handlers of two partitions in the same window.
struct Failing {
    template <class Q>
    void handle(Context<Q>& ctx, const Event&) {
        if (ctx.now_ns() >= 500) {
            throw std::runtime_error("failure in partition " + std::to_string(ctx.partition()));
        }
        ctx.schedule(ctx.self(), Duration::from_ns(100), 0);
    }
};

TEST(Guarantees, ExceptionsCrossNoParallelRegionAndAreDeterministic) {
    for (int threads : {1, 2, 4}) {
        Failing model;
        Simulator<Failing> sim(model, PartitionMap::blocks(8, 8), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::zero(), 0);
        }
        try {
            sim.run(SimTime::from_ns(10'000), threads);
            FAIL() << "expected an exception";
        } catch (const std::runtime_error& e) {
            // Every partition fails in the same window; the lowest partition's error wins.
            EXPECT_STREQ(e.what(), "failure in partition 0");
        }
    }
}

/// Two bursts of events a long time apart, and a window-edge hook that counts and injects.
struct Bursty {
    int edges = 0;
    int handled = 0;
    bool injected = false;
    template <class Q>
    void handle(Context<Q>&, const Event&) {
        ++handled;
    }
    template <class Q>
    void window_edge(WindowEdge<Q>& edge) {
        ++edges;
        if (!injected) {
            injected = true;
            edge.schedule_at(0, 1, edge.window_end() + Duration::from_ns(5), 7);
        }
    }
};

TEST(Windows, JumpOverEmptyTimeAndRunHooks) {
    Bursty model;
    Simulator<Bursty> sim(model, PartitionMap::blocks(2, 2), Duration::from_ns(100));
    sim.schedule(0, SimTime::zero(), 0);
    sim.schedule(1, SimTime::from_ns(1'000'000'000'000), 0); // 1000 s later
    const RunStats s = sim.run(SimTime::from_ns(2'000'000'000'000), 2);
    // One window for t = 0, one for the hook's event at 105 ns, one for the distant burst:
    // the scheduler does not step through the empty 1000 s in lookahead-sized windows.
    EXPECT_EQ(s.windows, 3u);
    EXPECT_EQ(model.edges, 3);
    EXPECT_EQ(model.handled, 3);
    EXPECT_EQ(s.events, 3u);
}

/// A hook that tries to schedule into the window that just closed.
struct Early {
    template <class Q>
    void handle(Context<Q>&, const Event&) {}
    template <class Q>
    void window_edge(WindowEdge<Q>& edge) {
        edge.schedule_at(0, 0, edge.window_end() - Duration::from_ns(1), 0);
    }
};

TEST(Windows, HooksMayNotScheduleIntoTheClosedWindow) {
    Early model;
    Simulator<Early> sim(model, PartitionMap::blocks(1, 1), Duration::from_ns(100));
    sim.schedule(0, SimTime::zero(), 0);
    EXPECT_THROW(sim.run(SimTime::from_ns(1000), 1), LookaheadError);
}

/// A hook that spreads work over the run's threads: each edge, piece i adds i + 1 to slot i
/// (and, on the edge where `fail_at` is reached, piece 3 throws).
struct Spread {
    static constexpr std::uint32_t kPieces = 37;
    std::vector<std::int64_t> slots = std::vector<std::int64_t>(kPieces, 0);
    int edges = 0;
    int fail_at = -1;
    template <class Q>
    void handle(Context<Q>& ctx, const Event& e) {
        if (e.time < 20'000) {
            ctx.schedule(ctx.self(), Duration::from_ns(1000), 0);
        }
    }
    template <class Q>
    void window_edge(WindowEdge<Q>& edge) {
        const bool fail = ++edges == fail_at;
        edge.parallel_for(kPieces, [&](std::uint32_t i) {
            if (fail && i == 3) {
                throw std::runtime_error("piece 3 failed");
            }
            slots[i] += i + 1; // each piece alone writes its slot
        });
    }
};

TEST(Windows, HooksRunPiecesOnEveryThread) {
    for (const int threads : {1, 2, 3}) {
        Spread model;
        Simulator<Spread> sim(model, PartitionMap::blocks(8, 4), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::from_ns(e), 0);
        }
        const RunStats s = sim.run(SimTime::max(), threads);
        ASSERT_GT(model.edges, 10) << threads;
        EXPECT_EQ(s.windows, static_cast<std::uint64_t>(model.edges));
        for (std::uint32_t i = 0; i < Spread::kPieces; ++i) {
            EXPECT_EQ(model.slots[i], static_cast<std::int64_t>(i + 1) * model.edges)
                << "piece " << i << " on " << threads << " threads";
        }
    }
}

TEST(Windows, AFailingPieceStopsTheRunWithItsError) {
    for (const int threads : {1, 2}) {
        Spread model;
        model.fail_at = 5;
        Simulator<Spread> sim(model, PartitionMap::blocks(8, 4), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::from_ns(e), 0);
        }
        try {
            sim.run(SimTime::max(), threads);
            ADD_FAILURE() << "no exception on " << threads << " threads";
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "piece 3 failed");
        }
        EXPECT_EQ(model.edges, 5);
    }
}

TEST(Windows, EventsAtOrAfterUntilStayPending) {
    phold::Config c = small_phold();
    c.end_ns = 0;
    phold::Model m(c);
    const RunStats s = phold::run_engine<CalendarQueue>(m, 4, 2);
    EXPECT_EQ(s.events, 0u);
    EXPECT_EQ(s.windows, 0u);
    EXPECT_EQ(s.pending, 6000u);
}

TEST(Memory, PerEntityAndPerEventBudgets) {
    // 200,000 entities with one pending event each, 16 partitions.
    phold::Config c = small_phold();
    c.entities = 200'000;
    c.events_per_entity = 1;
    c.end_ns = 3'000;
    phold::Model m(c);
    Simulator<phold::Model> sim(m, PartitionMap::blocks(c.entities, 16), Duration::from_ns(100));
    EXPECT_LE(sim.entity_state_bytes() / c.entities, 32u);
    phold::seed_events(m, sim);
    const RunStats s = sim.run(SimTime::from_ns(c.end_ns), 2);
    EXPECT_GT(s.events, 400'000u);
    EXPECT_EQ(sim.pending(), c.entities);
    // Queues and outboxes, spare capacity included, stay within 64 bytes per pending event.
    EXPECT_LE(static_cast<double>(sim.queue_bytes()) / static_cast<double>(sim.pending()), 64.0);
}

} // namespace
} // namespace trnsim::engine
