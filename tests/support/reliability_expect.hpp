// One replication of the run simulation equal to another, figure by figure and event by event:
// what determinism tests (thread counts) and tenant tests (a shared engine) assert.
#pragma once

#include "trnsim/reliability/run.hpp"

#include <gtest/gtest.h>

namespace trnsim::reliability::test {

inline void expect_same_replication(const ReplicationResult& a, const ReplicationResult& b) {
    EXPECT_EQ(a.done, b.done);
    EXPECT_EQ(a.wall.ns(), b.wall.ns());
    EXPECT_EQ(a.time_in_state, b.time_in_state);
    EXPECT_EQ(a.work.ns(), b.work.ns());
    EXPECT_EQ(a.lost_work.ns(), b.lost_work.ns());
    EXPECT_EQ(a.kept_run.ns(), b.kept_run.ns());
    EXPECT_EQ(a.lost_run.ns(), b.lost_run.ns());
    EXPECT_EQ(a.checkpoints, b.checkpoints);
    EXPECT_EQ(a.failures_by_process, b.failures_by_process);
    EXPECT_EQ(a.interruptions_by_process, b.interruptions_by_process);
    EXPECT_EQ(a.engine_events, b.engine_events);
    ASSERT_EQ(a.events.size(), b.events.size());
    for (std::size_t i = 0; i < a.events.size(); ++i) {
        EXPECT_EQ(a.events[i].time.ns(), b.events[i].time.ns());
        EXPECT_EQ(a.events[i].kind, b.events[i].kind);
        EXPECT_EQ(a.events[i].component_index, b.events[i].component_index);
    }
}

} // namespace trnsim::reliability::test
