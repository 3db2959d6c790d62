// The fleet's jobs and scheduler, by hand: a segment's checkpoints and cuts, a three-job queue
// under each policy, quotas, a failure onto a spare and without one, and the conservation of
// every job's held time and of the pool's domains.
#include "trnsim/fleet/fleet.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace trnsim::fleet {
namespace {

Duration min(std::int64_t m) { return Duration::from_ns(m * 60'000'000'000); }
SimTime at_min(std::int64_t m) { return SimTime::zero() + min(m); }

/// A job of `steps` steps of `step` minutes on `domains` domains, without checkpoints.
JobSpec job(std::int64_t submit, std::int64_t domains, std::int64_t steps, std::int64_t step,
            int priority = 0) {
    JobSpec j;
    j.name = "j";
    j.submit = at_min(submit);
    j.domains = domains;
    j.steps = steps;
    j.step = min(step);
    j.priority = priority;
    return j;
}

/// Step 10 min, 10 steps, a checkpoint every 3 steps saving 2 min, launch 5 min, restore 4 min.
JobSpec checkpointed() {
    JobSpec j = job(0, 1, 10, 10);
    j.checkpoint_steps = 3;
    j.save = min(2);
    j.launch = min(5);
    j.restore = min(4);
    return j;
}

TEST(FleetSegment, EndsAfterSetupStepsAndCheckpointsButTheLast) {
    const JobSpec j = checkpointed();
    Segment s{at_min(0), j.launch, 10};
    EXPECT_EQ(s.end(j), at_min(5 + 100 + 3 * 2)); // checkpoints after steps 3, 6, 9
    Segment resumed{at_min(50), j.launch + j.restore, 7};
    EXPECT_EQ(resumed.end(j), at_min(50 + 9 + 70 + 2 * 2)); // after steps 3 and 6
    Segment exact{at_min(0), Duration::zero(), 9};
    EXPECT_EQ(exact.end(j), at_min(90 + 2 * 2)); // none after the 9th, the last
}

TEST(FleetSegment, ACutKeepsTheStepsOfTheLastFinishedCheckpoint) {
    const JobSpec j = checkpointed();
    const Segment s{at_min(0), j.launch, 10};
    // At 50: 45 min of running, cycles of 32 (3 steps + save): one checkpoint done.
    Segment::Cut c = s.cut(j, at_min(50));
    EXPECT_EQ(c.durable_steps, 3);
    EXPECT_EQ(c.overhead, min(5 + 2));
    EXPECT_EQ(c.lost, min(50 - 7 - 30));
    // At 36: 31 min of running, the first checkpoint is being saved: nothing kept.
    c = s.cut(j, at_min(36));
    EXPECT_EQ(c.durable_steps, 0);
    EXPECT_EQ(c.overhead, min(5));
    EXPECT_EQ(c.lost, min(31));
    // In the launch: its part is overhead, nothing lost.
    c = s.cut(j, at_min(3));
    EXPECT_EQ(c.durable_steps, 0);
    EXPECT_EQ(c.overhead, min(3));
    EXPECT_EQ(c.lost, Duration::zero());
}

/// Four domains in one leaf group; A (3 domains, 10 h), B (2, 5 h) and C (1, 2 h) submitted at
/// 0, 1 h and 2 h.
FleetInput three_jobs(Policy policy) {
    FleetInput in;
    in.domains = 4;
    in.chips_per_domain = 64;
    in.groups.domains_per_leaf_group = 4;
    in.jobs = {job(0, 3, 10, 60), job(60, 2, 5, 60, 1), job(120, 1, 2, 60)};
    in.scheduler.policy = policy;
    return in;
}

TEST(FleetScheduler, FifoRunsTheQueueInOrderAndTheHeadBlocks) {
    const FleetResult r = simulate_fleet(three_jobs(Policy::fifo));
    // A 0-10 h; B waits for A; C fits at 2 h but waits behind B: both start at 10 h.
    EXPECT_EQ(r.jobs[0].end, at_min(600));
    EXPECT_EQ(r.jobs[1].first_start, at_min(600));
    EXPECT_EQ(r.jobs[1].end, at_min(900));
    EXPECT_EQ(r.jobs[2].first_start, at_min(600));
    EXPECT_EQ(r.jobs[2].end, at_min(720));
    EXPECT_EQ(r.jobs[1].waiting, min(540));
    EXPECT_EQ(r.jobs[2].waiting, min(480));
    EXPECT_EQ(r.end, at_min(900));
    // The idle domain is fragmented while only B (2 domains) waits, 1-2 h; from 2 h C would
    // fit it and the policy holds it back.
    EXPECT_DOUBLE_EQ(r.pool.fragmented_time.seconds(), 3600.0);
}

TEST(FleetScheduler, FragmentedIdleDomainsAreTooFewForEveryWaitingJob) {
    const FleetResult r = simulate_fleet(three_jobs(Policy::backfill));
    // B waits 1-10 h for 2 domains with 1 idle, except 2-4 h when C holds it: 7 h.
    EXPECT_DOUBLE_EQ(r.pool.fragmented_time.seconds(), 7 * 3600.0);
    std::vector<std::pair<SimTime, std::int64_t>> changes;
    for (const auto& p : r.pool.timeline) {
        if (changes.empty() || changes.back().second != p.fragmented) {
            changes.emplace_back(p.at, p.fragmented);
        }
    }
    const std::vector<std::pair<SimTime, std::int64_t>> expect = {
        {at_min(0), 0}, {at_min(60), 1}, {at_min(120), 0}, {at_min(240), 1}, {at_min(600), 0}};
    EXPECT_EQ(changes, expect);
}

TEST(FleetScheduler, BackfillStartsAJobThatEndsBeforeTheHeadsReservation) {
    const FleetResult r = simulate_fleet(three_jobs(Policy::backfill));
    // B's reservation is at 10 h (A's end); C ends at 4 h, before it: C runs 2-4 h.
    EXPECT_EQ(r.jobs[2].first_start, at_min(120));
    EXPECT_EQ(r.jobs[2].end, at_min(240));
    EXPECT_EQ(r.jobs[1].first_start, at_min(600)); // not delayed
    EXPECT_EQ(r.jobs[1].end, at_min(900));
}

TEST(FleetScheduler, BackfillKeepsTheHeadsReservation) {
    // A holds 2 of the 4 domains until 10 h; the head B needs 3, so its reservation is at 10 h
    // with 1 domain left over then. C (1 domain, 12 h) may run past 10 h on that one.
    FleetInput in = three_jobs(Policy::backfill);
    in.jobs[0].domains = 2;
    in.jobs[1].domains = 3;
    in.jobs[2] = job(120, 1, 12, 60);
    FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[2].first_start, at_min(120));
    EXPECT_EQ(r.jobs[1].first_start, at_min(600));
    // C on 2 domains fits at 2 h but would hold one the head needs at 10 h: it waits for B.
    in.jobs[2] = job(120, 2, 12, 60);
    r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[1].first_start, at_min(600));
    EXPECT_EQ(r.jobs[2].first_start, at_min(900));
}

TEST(FleetScheduler, PriorityPreemptsALowerJobThatLosesItsWorkSinceTheLastCheckpoint) {
    const FleetResult r = simulate_fleet(three_jobs(Policy::priority));
    // B (priority 1) preempts A at 1 h and runs 1-6 h; A has no checkpoint and loses its hour;
    // C waits behind A (same priority, earlier submit) until 6 h, when A restarts.
    const JobRecord& a = r.jobs[0];
    EXPECT_EQ(r.jobs[1].first_start, at_min(60));
    EXPECT_EQ(r.jobs[1].end, at_min(360));
    EXPECT_EQ(a.preemptions, 1);
    EXPECT_EQ(a.starts, 2);
    EXPECT_EQ(a.lost, min(60));
    EXPECT_EQ(a.waiting, min(300));
    EXPECT_EQ(a.end, at_min(360 + 600));
    EXPECT_EQ(r.jobs[2].first_start, at_min(360));
    EXPECT_EQ(r.jobs[2].end, at_min(480));
}

TEST(FleetScheduler, PriorityOrdersTheQueueByPriorityBeforeSubmitTime) {
    // Two domains held by R (priority 5) until 60; L (priority 0, 1 domain) waits from 10 and
    // H (priority 1, 2 domains) from 20. When R ends, H goes first; under fifo, L does.
    FleetInput in;
    in.domains = 2;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 2, 1, 60, 5), job(10, 1, 1, 60, 0), job(20, 2, 1, 60, 1)};
    in.scheduler.policy = Policy::priority;
    FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[2].first_start, at_min(60));
    EXPECT_EQ(r.jobs[1].first_start, at_min(120));
    in.scheduler.policy = Policy::fifo;
    r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[1].first_start, at_min(60));
    EXPECT_EQ(r.jobs[2].first_start, at_min(120));
}

TEST(FleetScheduler, APreemptedJobResumesFromItsCheckpointAndPaysTheRestore) {
    FleetInput in;
    in.domains = 1;
    in.chips_per_domain = 64;
    JobSpec low = checkpointed();
    in.jobs = {low, job(50, 1, 1, 30, 1)};
    in.scheduler.policy = Policy::priority;
    const FleetResult r = simulate_fleet(in);
    // Cut at 50 (3 steps kept, 13 min lost), the high job runs 50-80, the low resumes at 80
    // with 7 steps: 80 + launch 5 + restore 4 + 70 + 2 checkpoints of 2.
    EXPECT_EQ(r.jobs[0].lost, min(13));
    EXPECT_EQ(r.jobs[0].end, at_min(80 + 9 + 70 + 4));
    EXPECT_EQ(r.jobs[0].overhead, min(7) + min(9 + 4));
}

TEST(FleetScheduler, AQuotaPassesOverAJobWithoutBlockingOthers) {
    FleetInput in;
    in.domains = 4;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 2, 1, 60), job(0, 1, 1, 60), job(0, 1, 1, 60)};
    in.jobs[2].tenant = 1;
    in.scheduler.quotas = {2}; // tenant 0 holds at most 2 domains; tenant 1 has no quota
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[0].first_start, at_min(0));
    EXPECT_EQ(r.jobs[1].first_start, at_min(60)); // at its quota until the first ends
    EXPECT_EQ(r.jobs[2].first_start, at_min(0));  // not blocked by it
}

/// Step 60 min, 10 steps on 2 domains, a checkpoint every 2 steps saving 6 min, launch 10,
/// restore 20; domain 1 fails at 200 min and is repaired at 300.
FleetInput failing(std::int64_t domains, std::int64_t spares) {
    FleetInput in;
    in.domains = domains;
    in.chips_per_domain = 64;
    in.spares = spares;
    JobSpec j = job(0, 2, 10, 60);
    j.checkpoint_steps = 2;
    j.save = min(6);
    j.launch = min(10);
    j.restore = min(20);
    in.jobs = {j};
    in.outages = {{1, at_min(200), at_min(300)}};
    return in;
}

TEST(FleetScheduler, AFailureOnABusyDomainRestartsTheJobOnASpare) {
    const FleetResult r = simulate_fleet(failing(3, 1));
    const JobRecord& j = r.jobs[0];
    // At 200: 190 min of running, cycles of 126: one checkpoint (2 steps) kept, 64 min lost.
    // The spare (domain 2) joins at once: 200 + 10 + 20 + 8 steps + 3 checkpoints.
    EXPECT_EQ(j.failures, 1);
    EXPECT_EQ(j.starts, 2);
    EXPECT_EQ(j.lost, min(64));
    EXPECT_EQ(j.end, at_min(200 + 30 + 480 + 18));
    EXPECT_EQ(j.waiting, Duration::zero());
    // The repaired domain refills the spare pool.
    EXPECT_EQ(r.pool.timeline.back().domains[static_cast<std::size_t>(DomainUse::spare)], 1);
}

TEST(FleetScheduler, WithoutASpareTheJobWaitsForTheRepair) {
    const FleetResult r = simulate_fleet(failing(2, 0));
    const JobRecord& j = r.jobs[0];
    EXPECT_EQ(j.waiting, min(100));
    EXPECT_EQ(j.end, at_min(300 + 30 + 480 + 18));
    EXPECT_EQ(j.lost, min(64));
}

TEST(FleetScheduler, ARequeuedJobPaysTheDetectionBeforeItsRestart) {
    FleetInput in = failing(2, 0);
    in.detection = min(5);
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[0].end, at_min(300 + 5 + 30 + 480 + 18));
    in = failing(3, 1); // on a spare: the same detection
    in.detection = min(5);
    EXPECT_EQ(simulate_fleet(in).jobs[0].end, at_min(200 + 5 + 30 + 480 + 18));
}

TEST(FleetScheduler, AJobEndingAtAnInstantIsNeverPreemptedAtIt) {
    // A (priority 10) and B (priority 0) hold 4 domains each until 100 min; H (priority 5)
    // needs all 8 from 10 min: preempting B alone would not make it fit. At 100 both end,
    // and H starts on the 8 they free: B finished, nothing preempted.
    FleetInput in;
    in.domains = 8;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 4, 1, 100, 10), job(0, 4, 1, 100, 0), job(10, 8, 1, 60, 5)};
    in.scheduler.policy = Policy::priority;
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[1].preemptions, 0);
    EXPECT_EQ(r.jobs[1].end, at_min(100));
    EXPECT_EQ(r.jobs[2].first_start, at_min(100));
}

TEST(FleetScheduler, AHorizonLeavesJobsWaitingOrRunningAsTheyAre) {
    // One domain: the first job runs 0-100 min, the second waits; the run stops at 60 min.
    FleetInput in;
    in.domains = 1;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 1, 10, 10), job(20, 1, 1, 10)};
    in.jobs[0].checkpoint_steps = 2;
    in.horizon = at_min(60);
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.end, at_min(60));
    EXPECT_FALSE(r.jobs[0].finished());
    EXPECT_EQ(r.jobs[0].steps_done, 6);          // checkpoints after steps 2, 4 and 6
    EXPECT_EQ(r.jobs[0].unsaved, min(60 - 60)); // step 6 ends at 60: nothing unsaved
    EXPECT_EQ(r.jobs[0].held, min(60));
    EXPECT_EQ(r.jobs[1].first_start, SimTime::max());
    EXPECT_EQ(r.jobs[1].waiting, min(40)); // queued from 20 to the horizon
}

TEST(FleetScheduler, BackfillWithoutAReservationStartsWhatFits) {
    // 4 domains, one down for 10 h: the head needs all 4 and no end frees them, so there is no
    // reservation to keep and a 1-domain job behind it starts at once.
    FleetInput in;
    in.domains = 4;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 4, 1, 60), job(1, 1, 1, 600)};
    in.outages = {{3, at_min(0), at_min(600)}};
    in.scheduler.policy = Policy::backfill;
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[1].first_start, at_min(1));
    EXPECT_EQ(r.jobs[0].first_start, at_min(601)); // after the small job's end
}

TEST(FleetScheduler, BackfillTakesTheJobsBehindTheHeadInQueueOrderWhateverTheirGang) {
    // 8 domains; A holds 6 until 10 h, so the head B (all 8) has its reservation at 10 h with
    // none left over. Behind it: C (2 domains, 20 h: would delay B), D (2, 1 h), E (2, 1 h),
    // F (1, 1 h). D starts at once (1 h 2 min) on the two idle domains. When D ends, C is
    // passed over and E takes both idle domains before F, which is later in the queue though
    // smaller; F starts when E ends; B at 10 h, C after it.
    FleetInput in;
    in.domains = 8;
    in.chips_per_domain = 64;
    in.jobs = {job(0, 6, 10, 60), job(60, 8, 1, 60), job(61, 2, 20, 60),
               job(62, 2, 1, 60),  job(63, 2, 1, 60), job(64, 1, 1, 60)};
    in.scheduler.policy = Policy::backfill;
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[3].first_start, at_min(62));
    EXPECT_EQ(r.jobs[4].first_start, at_min(122));
    EXPECT_EQ(r.jobs[5].first_start, at_min(182));
    EXPECT_EQ(r.jobs[1].first_start, at_min(600));
    EXPECT_EQ(r.jobs[2].first_start, at_min(660));
}

/// An elastic job of 60 steps on 2, 4 or 8 domains at 4, 2 or 1 min a step, a checkpoint
/// every 10 steps (no stall), submitted at `submit` minutes.
JobSpec elastic(std::int64_t submit) {
    JobSpec j = job(submit, 2, 60, 4);
    j.checkpoint_steps = 10;
    for (const auto& [d, m] : {std::pair<std::int64_t, std::int64_t>{2, 4}, {4, 2}, {8, 1}}) {
        JobShape h;
        h.domains = d;
        h.step = min(m);
        h.checkpoint_steps = 10;
        j.shapes.push_back(h);
    }
    return j;
}

TEST(FleetScheduler, AnElasticJobStartsOnTheLargestShapeThatFits) {
    FleetInput in;
    in.domains = 8;
    in.chips_per_domain = 64;
    in.scheduler.policy = Policy::fifo;
    in.jobs = {elastic(0)};
    FleetResult r = simulate_fleet(in); // all 8 idle: 60 steps of 1 min
    EXPECT_EQ(r.jobs[0].end, at_min(60));
    EXPECT_EQ(r.jobs[0].gang, 8);
    EXPECT_DOUBLE_EQ(r.jobs[0].domain_seconds, 8 * 3600.0);
    // Beside a rigid job holding 6 of the 8 until 10 h, it starts on the 2 left: 4 h.
    in.jobs = {job(0, 6, 10, 60), elastic(60)};
    r = simulate_fleet(in);
    EXPECT_EQ(r.jobs[1].first_start, at_min(60));
    EXPECT_EQ(r.jobs[1].end, at_min(60 + 240));
    EXPECT_EQ(r.jobs[1].gang, 2);
    EXPECT_EQ(r.jobs[1].resizes, 0);
}

TEST(FleetScheduler, APreemptedElasticJobComesBackOnTheShapeLeftToIt) {
    // It runs on all 8; at 30 min a job of priority 1 needs 4 and preempts it. Its 30 steps
    // are durable (checkpoints every 10 steps); it is back at once on the other 4 and runs
    // its last 30 steps at 2 min: it ends at 90 min, resized once, and held 30 min x 8 +
    // 60 min x 4 domain-minutes.
    FleetInput in;
    in.domains = 8;
    in.chips_per_domain = 64;
    in.scheduler.policy = Policy::priority;
    in.jobs = {elastic(0), job(30, 4, 1, 600, 1)};
    const FleetResult r = simulate_fleet(in);
    const JobRecord& e = r.jobs[0];
    EXPECT_EQ(r.jobs[1].first_start, at_min(30));
    EXPECT_EQ(e.preemptions, 1);
    EXPECT_EQ(e.starts, 2);
    EXPECT_EQ(e.resizes, 1);
    EXPECT_EQ(e.gang, 4);
    EXPECT_EQ(e.end, at_min(90));
    EXPECT_EQ(e.lost, Duration::zero());
    EXPECT_DOUBLE_EQ(e.domain_seconds, (30.0 * 8 + 60.0 * 4) * 60.0);
    EXPECT_EQ(e.held, min(90));
}

TEST(FleetScheduler, HeldTimeAndDomainsAreConservedInARandomFleet) {
    std::mt19937_64 rng(11);
    FleetInput in;
    in.domains = 24;
    in.chips_per_domain = 64;
    in.groups.domains_per_leaf_group = 4;
    in.groups.leaf_groups_per_pod = 3;
    in.spares = 2;
    for (int k = 0; k < 60; ++k) {
        const auto draw = [&](std::uint64_t n) { return static_cast<std::int64_t>(rng() % n); };
        JobSpec j = job(draw(2000), 1 + draw(8), 1 + draw(40), 5 + draw(30),
                        static_cast<int>(draw(3)));
        j.checkpoint_steps = 1 + draw(6);
        j.save = min(1);
        j.launch = min(3);
        j.restore = min(2);
        in.jobs.push_back(j);
    }
    for (std::int64_t d = 0; d < in.domains; d += 3) {
        const auto down = static_cast<std::int64_t>(rng() % 3000);
        const auto repair = 1 + static_cast<std::int64_t>(rng() % 200);
        in.outages.push_back({d, at_min(down), at_min(down + repair)});
    }
    for (const Policy p : {Policy::fifo, Policy::backfill, Policy::priority}) {
        in.scheduler.policy = p;
        const FleetResult r = simulate_fleet(in);
        double held_domain_s = 0.0; // the jobs' ledger of the pool's busy time
        for (std::size_t k = 0; k < r.jobs.size(); ++k) {
            const JobRecord& j = r.jobs[k];
            held_domain_s += j.held.seconds() * static_cast<double>(in.jobs[k].domains);
            EXPECT_GE(j.lost, Duration::zero());
            EXPECT_GE(j.overhead, Duration::zero());
            ASSERT_TRUE(j.finished()) << to_string(p) << " job " << k;
            EXPECT_EQ(j.steps_done, in.jobs[k].steps);
            EXPECT_EQ(j.held, in.jobs[k].step * j.steps_done + j.overhead + j.lost + j.unsaved)
                << to_string(p) << " job " << k;
            EXPECT_GE(j.first_start, j.submit);
        }
        double total = 0.0;
        for (const Seconds t : r.pool.domain_time) {
            total += t.seconds();
        }
        EXPECT_NEAR(total, 24.0 * r.end.seconds(), 1e-9 * total);
        const double busy = r.pool.domain_time[static_cast<std::size_t>(DomainUse::busy)].seconds();
        EXPECT_NEAR(held_domain_s, busy, 1e-9 * busy) << to_string(p);
        for (const auto& point : r.pool.timeline) {
            std::int64_t sum = 0;
            for (const std::int64_t n : point.domains) {
                sum += n;
            }
            ASSERT_EQ(sum, 24);
            ASSERT_GE(point.fragmented, 0);
            ASSERT_LE(point.fragmented, point.domains[static_cast<std::size_t>(DomainUse::idle)]);
        }
        EXPECT_LE(r.pool.fragmented_time.seconds(),
                  r.pool.domain_time[static_cast<std::size_t>(DomainUse::idle)].seconds());
        const FleetResult again = simulate_fleet(in); // a function of the input alone
        for (std::size_t k = 0; k < r.jobs.size(); ++k) {
            EXPECT_EQ(again.jobs[k].end, r.jobs[k].end);
        }
    }
}

TEST(FleetScheduler, RefusesAJobLargerThanThePoolAndOverlappingOutages) {
    FleetInput in = failing(3, 1);
    in.jobs[0].domains = 3; // 3 domains, one of them a spare
    EXPECT_THROW((void)simulate_fleet(in), std::invalid_argument);
    in = failing(3, 1);
    in.outages.push_back({1, at_min(250), at_min(400)});
    EXPECT_THROW((void)simulate_fleet(in), std::invalid_argument);
    in = failing(3, 1);
    in.scheduler.quotas = {1};
    EXPECT_THROW((void)simulate_fleet(in), std::invalid_argument);
}

} // namespace
} // namespace trnsim::fleet
