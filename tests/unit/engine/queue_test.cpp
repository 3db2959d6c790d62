#include "trnsim/engine/queue.hpp"

#include <gtest/gtest.h>

#include <queue>
#include <random>

namespace trnsim::engine {
namespace {

struct Later {
    bool operator()(const Event& a, const Event& b) const { return before(b, a); }
};

/// Pushes and pops a random mix (with equal times, zero delays, pushes earlier than the last
/// pop, far-future events and empty stretches) and checks every pop against a reference.
template <class Queue>
void check_against_reference(Queue q, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::priority_queue<Event, std::vector<Event>, Later> ref;
    std::uint32_t seq = 0;
    std::int64_t now = 0;
    for (int step = 0; step < 60'000; ++step) {
        const int action = static_cast<int>(rng() % 10);
        if (action < 6 || ref.empty()) {
            std::int64_t t = now;
            switch (rng() % 5) {
            case 0: // same time
                break;
            case 1:
                t += static_cast<std::int64_t>(rng() % 50);
                break;
            case 2:
                t += static_cast<std::int64_t>(rng() % 5'000);
                break;
            case 3: // far future, beyond the calendar's ring
                t += 1'000'000 + static_cast<std::int64_t>(rng() % 10'000'000);
                break;
            default: // before the last pop (allowed: the queue is a general priority queue)
                t = std::max<std::int64_t>(0, now - static_cast<std::int64_t>(rng() % 100));
                break;
            }
            const Event e{t, make_order(static_cast<std::uint32_t>(rng() % 3),
                                        static_cast<EntityId>(rng() % 100), seq++),
                          0, 0, 0, 0};
            q.push(e);
            ref.push(e);
        } else {
            Event got;
            ASSERT_EQ(q.min_time(), ref.top().time);
            ASSERT_TRUE(q.pop_before(kNever, got));
            ASSERT_EQ(got.time, ref.top().time);
            ASSERT_EQ(got.order, ref.top().order);
            now = got.time;
            ref.pop();
        }
        ASSERT_EQ(q.size(), ref.size());
    }
    // Drain, honouring a limit first.
    Event got;
    if (!ref.empty()) {
        EXPECT_FALSE(q.pop_before(ref.top().time, got));
    }
    while (!ref.empty()) {
        ASSERT_TRUE(q.pop_before(kNever, got));
        ASSERT_EQ(got.order, ref.top().order);
        ref.pop();
    }
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.min_time(), kNever);
}

TEST(Queues, BinaryHeapMatchesReference) { check_against_reference(BinaryHeap(), 1); }
TEST(Queues, QuaternaryHeapMatchesReference) { check_against_reference(QuaternaryHeap(), 2); }
TEST(Queues, CalendarQueueMatchesReference) {
    check_against_reference(CalendarQueue(), 3);
    check_against_reference(CalendarQueue(0, 2), 4);   // 1 ns buckets, tiny ring
    check_against_reference(CalendarQueue(12, 10), 5); // wide buckets
}

TEST(Queues, CalendarShiftFollowsTheLookahead) {
    EXPECT_EQ(CalendarQueue::shift_for(1), 0);
    EXPECT_EQ(CalendarQueue::shift_for(100), 6); // 64 ns buckets
    EXPECT_EQ(CalendarQueue::shift_for(128), 7);
}

TEST(Queues, EventsAreSmall) {
    EXPECT_EQ(sizeof(Event), 32u);
    const Event e{5, make_order(3, 12345, 678), 9, 2, 1, 77};
    EXPECT_EQ(e.priority(), 3u);
    EXPECT_EQ(e.source(), 12345u);
    EXPECT_EQ(e.sequence(), 678u);
}

} // namespace
} // namespace trnsim::engine
