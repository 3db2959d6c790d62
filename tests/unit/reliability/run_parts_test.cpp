// The run simulation's controller parts alone (src/reliability: job_domains, job_ledger,
// replica_slots): hand-worked sequences of events and the figures they must leave.
#include "support/reliability_cases.hpp"

#include "job_domains.hpp"
#include "job_ledger.hpp"
#include "replica_slots.hpp"

#include <gtest/gtest.h>

namespace trnsim::reliability::detail {
namespace {

Layout layout_of(std::int64_t instances, std::int64_t spares) {
    const RunInput in = test::instances_input(instances, spares, 1000.0);
    std::array<bool, kClassCount> present{};
    present[static_cast<std::size_t>(ComponentClass::chip)] = true;
    return Layout(in.cluster, in.hardware, in.spec.fabric, spares, present);
}

TEST(JobDomains, SparesFillTheLowestVacancyLowestFirst) {
    // 4 job domains (slots 0-3 hold domains 0-3) and 2 spares (domains 4 and 5).
    JobDomains d(layout_of(4, 2));
    EXPECT_EQ(d.slots(), 4);
    EXPECT_EQ(d.spares(), 2u);
    EXPECT_EQ(d.vacancies(), 0u);
    EXPECT_EQ(d.down(5), -1); // a spare broke: it leaves the pool
    EXPECT_EQ(d.spares(), 1u);
    EXPECT_EQ(d.down(2), 2); // domain 2 leaves slot 2
    EXPECT_EQ(d.down(1), 1);
    EXPECT_FALSE(d.in_job(2));
    EXPECT_EQ(d.domain_of(2), -1);
    EXPECT_EQ(d.first_vacancy(), 1);
    EXPECT_EQ(d.take_spare(d.first_vacancy()), 4); // the lowest spare, into slot 1
    EXPECT_EQ(d.slot_of(4), 1);
    EXPECT_EQ(d.spares(), 0u);
    d.repaired(2);
    d.repaired(5);
    EXPECT_EQ(d.take_spare(d.first_vacancy()), 2); // slot 2 gets domain 2 back
    EXPECT_EQ(d.vacancies(), 0u);
    // Running degraded: slot 3's domain goes back to the pool.
    d.release(3);
    EXPECT_EQ(d.vacancies(), 1u);
    EXPECT_EQ(d.spares(), 2u); // 3 and 5
    EXPECT_EQ(d.take_spare(3), 3);
    EXPECT_EQ(d.slot_of(-1), -1);
}

TEST(JobLedger, StatesAndWorkSumExactly) {
    // 100 ns of work. Run 30 ns at rate 1, checkpoint (snapshot at 30) for 10 ns, commit, run
    // 20 ns at rate 0.5 (10 ns of work), fail: the 10 uncommitted ns of work and their 20 ns
    // of running are lost; detect 5 ns, then run at rate 1 to the end.
    ReplicationResult r;
    JobLedger l(r, 100, true, true);
    l.start(1.0);
    l.enter(JobState::checkpointing, 30);
    l.snapshot();
    l.set_rate(40, 0.5);
    l.commit();
    l.enter(JobState::running_degraded, 40);
    EXPECT_EQ(l.remaining_ns(), 70);
    l.enter(JobState::detecting, 60);
    l.lose_uncommitted();
    EXPECT_EQ(r.lost_work.ns(), 10);
    EXPECT_EQ(r.lost_run.ns(), 20);
    EXPECT_EQ(r.kept_run.ns(), 30);
    l.set_rate(65, 1.0);
    l.enter(JobState::running, 65);
    EXPECT_EQ(l.remaining_ns(), 70);
    l.complete(135);
    l.enter(JobState::done, 135);
    l.close(135, true);
    EXPECT_EQ(r.work.ns(), 100);
    EXPECT_EQ(r.time_in_state[static_cast<std::size_t>(JobState::running)].ns(), 30 + 70);
    EXPECT_EQ(r.time_in_state[static_cast<std::size_t>(JobState::checkpointing)].ns(), 10);
    EXPECT_EQ(r.time_in_state[static_cast<std::size_t>(JobState::running_degraded)].ns(), 20);
    EXPECT_EQ(r.time_in_state[static_cast<std::size_t>(JobState::detecting)].ns(), 5);
    EXPECT_EQ(r.kept_run.ns() + r.lost_run.ns(), 30 + 20 + 70); // every running ns, kept or lost
    EXPECT_EQ(r.timeline.size(), 6u); // start and five transitions
}

TEST(JobLedger, AReplicaFailureLosesTheStepInProgress) {
    // Steps of 8 ns; 20 ns of work done at rate 0.5 (40 ns running): the step in progress
    // holds 20 mod 8 = 4 ns of work, 8 ns of running at that rate.
    ReplicationResult r;
    JobLedger l(r, 1000, false, false);
    l.start(0.5);
    l.enter(JobState::detecting, 40);
    l.lose_step(8);
    EXPECT_EQ(r.lost_work.ns(), 4);
    EXPECT_EQ(r.lost_run.ns(), 8);
    EXPECT_EQ(l.remaining_ns(), 1000 - 16);
    l.close(50, false);
    EXPECT_EQ(r.kept_run.ns(), 40 - 8);
    EXPECT_TRUE(r.timeline.empty()); // not recorded
}

TEST(ReplicaSlots, ASlotTakesTheReplicasOfItsRanks) {
    // 4 replicas, 16 ranks per slot, 8 ranks per replica and stage: slot 0 holds replicas 0
    // and 1, slot 1 replicas 2 and 3, slot 2 (ranks 32-47) replicas 4 and 5 mod 4 = 0 and 1.
    ReplicaSlots s(4, 16, 8);
    ASSERT_TRUE(s.enabled());
    const std::uint64_t p0 = s.fail(0, false);
    EXPECT_DOUBLE_EQ(s.healthy_fraction(), 0.5);
    EXPECT_TRUE(s.current(p0));
    const std::uint64_t p2 = s.fail(2, true); // the same replicas again
    EXPECT_DOUBLE_EQ(s.healthy_fraction(), 0.5);
    EXPECT_TRUE(s.needs_domain(2));
    EXPECT_FALSE(s.needs_domain(0));
    const std::uint64_t again = s.fail(0, false); // a second failure of slot 0: new epoch
    EXPECT_FALSE(s.current(p0));
    EXPECT_TRUE(s.current(again));
    s.wait(2);
    EXPECT_EQ(s.waiting(), std::vector<std::int64_t>{2});
    EXPECT_TRUE(s.current(p2)); // waiting keeps the epoch
    const std::uint64_t restart = s.enter(2, ReplicaSlots::Stage::restarting);
    EXPECT_FALSE(s.current(p2));
    EXPECT_TRUE(s.current(restart));
    s.recovered(0);
    EXPECT_DOUBLE_EQ(s.healthy_fraction(), 0.5); // slot 2 still holds replicas 0 and 1
    s.fail(1, false);
    EXPECT_TRUE(s.all_down());
    s.clear();
    EXPECT_DOUBLE_EQ(s.healthy_fraction(), 1.0);
    EXPECT_FALSE(ReplicaSlots(0, 16, 8).enabled());
}

} // namespace
} // namespace trnsim::reliability::detail
