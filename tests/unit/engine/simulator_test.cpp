#include "support/phold.hpp"

#include "trnsim/engine/simulator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>


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

/// The thread counts and sharing modes a determinism test runs: 1 thread, and 2 and 4 threads
/// with every window shared, none, and as the policy picks (on tests this small, mostly
/// inline).
struct Mode {
    int threads;
    Sharing sharing;
    std::string name() const {
        static const char* const names[] = {"adaptive", "always", "never"};
        return std::to_string(threads) + " threads, sharing " +
               names[static_cast<int>(sharing)];
    }
};
std::vector<Mode> runs() {
    std::vector<Mode> r = {{1, Sharing::adaptive}};
    for (int t : {2, 4}) {
        for (Sharing s : {Sharing::always, Sharing::never, Sharing::adaptive}) {
            r.push_back({t, s});
        }
    }
    return r;
}

template <class Queue>
void check_matrix() {
    const Reference& ref = baseline();
    ASSERT_GT(ref.events, 100'000u);
    for (std::uint32_t partitions : {1u, 3u, 16u, 64u}) {
        for (const Mode& run : runs()) {
            phold::Model m(small_phold());
            const RunStats s = phold::run_engine<Queue>(m, partitions, run.threads, run.sharing);
            SCOPED_TRACE(std::string(Queue::name()) + ", " + std::to_string(partitions) +
                         " partitions, " + run.name());
            // Identical per-entity histories: the same events in the same order.
            EXPECT_EQ(m.fingerprints(), ref.fingerprints);
            EXPECT_EQ(m.handled(), ref.handled);
            // Conservation: every handled event made exactly one more.
            EXPECT_EQ(s.events, ref.events);
            EXPECT_EQ(s.pending, 3000u * 2u);
            EXPECT_EQ(s.threads, std::min<int>(run.threads, static_cast<int>(partitions)));
            if (partitions == 1) {
                EXPECT_EQ(s.remote_events, 0u);
            } else {
                EXPECT_GT(s.remote_events, 0u);
            }
            // Forced sharing shares every window (with more than one thread); one thread or
            // forbidden sharing, none.
            if (s.threads > 1 && run.sharing == Sharing::always) {
                EXPECT_EQ(s.shared_windows, s.windows);
            } else if (s.threads == 1 || run.sharing == Sharing::never) {
                EXPECT_EQ(s.shared_windows, 0u);
            }
            EXPECT_LE(s.shared_windows, s.windows);
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
    for (const Mode& run : runs()) {
        ShortSighted model;
        Simulator<ShortSighted> sim(model, PartitionMap::blocks(4, 4), Duration::from_ns(100));
        sim.schedule(0, SimTime::zero(), 0);
        EXPECT_THROW(sim.run(SimTime::from_ns(10'000), run.threads, run.sharing), LookaheadError)
            << run.name();
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
    for (const Mode& run : runs()) {
        SCOPED_TRACE(run.name());
        Failing model;
        Simulator<Failing> sim(model, PartitionMap::blocks(8, 8), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::zero(), 0);
        }
        try {
            sim.run(SimTime::from_ns(10'000), run.threads, run.sharing);
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
    std::vector<Mode> all = runs();
    all.push_back({3, Sharing::always});
    for (const Mode& run : all) {
        Spread model;
        Simulator<Spread> sim(model, PartitionMap::blocks(8, 4), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::from_ns(e), 0);
        }
        const RunStats s = sim.run(SimTime::max(), run.threads, run.sharing);
        ASSERT_GT(model.edges, 10) << run.name();
        EXPECT_EQ(s.windows, static_cast<std::uint64_t>(model.edges));
        for (std::uint32_t i = 0; i < Spread::kPieces; ++i) {
            EXPECT_EQ(model.slots[i], static_cast<std::int64_t>(i + 1) * model.edges)
                << "piece " << i << ", " << run.name();
        }
    }
}

TEST(Windows, AFailingPieceStopsTheRunWithItsError) {
    for (const Mode& run : runs()) {
        Spread model;
        model.fail_at = 5;
        Simulator<Spread> sim(model, PartitionMap::blocks(8, 4), Duration::from_ns(100));
        for (EntityId e = 0; e < 8; ++e) {
            sim.schedule(e, SimTime::from_ns(e), 0);
        }
        try {
            sim.run(SimTime::max(), run.threads, run.sharing);
            ADD_FAILURE() << "no exception on " << run.name();
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "piece 3 failed");
        }
        EXPECT_EQ(model.edges, 5);
    }
}

// TRNSIM_WINDOW_SHARING stands in for a run that asks for adaptive sharing (what every
// simulation passes): tests and benchmarks force a mode through code that passes none.
TEST(Windows, TheEnvironmentForcesASharingMode) {
    const auto run_with = [](const char* value) {
        ::setenv("TRNSIM_WINDOW_SHARING", value, 1);
        phold::Model m(small_phold());
        RunStats s;
        try {
            s = phold::run_engine<QuaternaryHeap>(m, 16, 2);
        } catch (...) {
            ::unsetenv("TRNSIM_WINDOW_SHARING");
            throw;
        }
        ::unsetenv("TRNSIM_WINDOW_SHARING");
        EXPECT_EQ(m.fingerprints(), baseline().fingerprints) << value;
        return s;
    };
    const RunStats always = run_with("always");
    EXPECT_GT(always.windows, 100u);
    EXPECT_EQ(always.shared_windows, always.windows);
    EXPECT_EQ(run_with("never").shared_windows, 0u);
    EXPECT_LE(run_with("adaptive").shared_windows, always.windows);
    EXPECT_THROW(run_with("sometimes"), std::invalid_argument);
    // A mode passed by the caller wins over the environment.
    ::setenv("TRNSIM_WINDOW_SHARING", "never", 1);
    phold::Model m(small_phold());
    const RunStats forced = phold::run_engine<QuaternaryHeap>(m, 16, 2, Sharing::always);
    ::unsetenv("TRNSIM_WINDOW_SHARING");
    EXPECT_EQ(forced.shared_windows, forced.windows);
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
