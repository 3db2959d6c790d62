// The run simulation against closed forms, counts, conservation laws and hand-traced
// scenarios. Every expected value is derived in the test.
#include "support/reliability_cases.hpp"
#include "support/reliability_expect.hpp"

#include "trnsim/reliability/run_tenant.hpp"
#include "trnsim/reliability/theory.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <tuple>

namespace trnsim::reliability {
namespace {

using namespace test;

RunSummary run(const RunInput& in, int replications, std::uint64_t seed = 3, int threads = 1,
               Duration duration = Duration::zero()) {
    RunControl c;
    c.replications = replications;
    c.seed = seed;
    c.threads = threads;
    c.duration = duration;
    return simulate(in, c);
}

std::int64_t state(const ReplicationResult& r, JobState s) {
    return r.time_in_state[static_cast<std::size_t>(s)].ns();
}

// ---------------------------------------------------------------------------------------------
// Closed form.
//
// Exponential failures of the job at rate lambda, a replacement available at once, restart
// cost u (failures can strike during it), a checkpoint every tau of work that costs nothing.
// Work proceeds in segments of tau. Let S be the wall time to finish one segment from its
// start. A segment attempt either completes (probability e^{-lambda tau}, taking tau) or fails
// after a time X < tau, after which the restart must complete: restart attempts fail after
// Y < u with probability 1 - e^{-lambda u} each. Expected time to get through one restart:
// E[U] = (e^{lambda u} - 1) / lambda (the mean time to the first failure-free stretch of
// length u). The number of failed segment attempts is geometric with mean e^{lambda tau} - 1,
// and the time spent in attempts until the successful one is (e^{lambda tau} - 1) / lambda in
// expectation. So
//   E[S] = (e^{lambda tau} - 1) / lambda + (e^{lambda tau} - 1) E[U]
//        = (e^{lambda tau} - 1) e^{lambda u} / lambda,
// and over T_s / tau segments, E[ETTR] = T_s / E[wall] = lambda tau e^{-lambda u} /
// (e^{lambda tau} - 1) (Daly's formula with delta = 0).
TEST(ClosedForm, EttrWithFreeCheckpointsAndInstantSpares) {
    const double mtbf = 2 * kHour; // of the job: 64 chips with MTBF 128 h each
    const double u = 10 * kMin;
    const double tau = 30 * kMin;
    const double lambda = 1.0 / mtbf;
    const double expected = lambda * tau * std::exp(-lambda * u) / std::expm1(lambda * tau);
    ASSERT_NEAR(expected, theory::expected_ettr(tau, 0.0, u, mtbf), 1e-12);

    RunInput in = instances_input(4, 1, 300 * kHour);
    in.spec.failures.push_back(failure(ComponentClass::chip, 64 * mtbf));
    in.spec.recovery.restart = seconds(u);
    in.spec.checkpoint.interval = seconds(tau);
    const RunSummary s = run(in, 200);
    // ETTR = T_s / mean wall time; its 95% interval follows from the wall time's.
    const Estimate& wall = s.estimate("wall_time_s");
    const double ettr = 300 * kHour / wall.mean;
    const double half = ettr * wall.half_width / wall.mean;
    std::printf("expected ETTR %.5f, simulated %.5f +- %.5f (95%%, 200 replications)\n", expected,
                ettr, half);
    EXPECT_LT(half, 0.003);
    EXPECT_NEAR(ettr, expected, 2.0 * half); // about 4 standard errors
    // The per-replication ETTR of a run that finished is T_s / wall exactly.
    EXPECT_DOUBLE_EQ(s.metrics[0].ettr, 300 * kHour / s.metrics[0].wall_time.seconds());
}

// ---------------------------------------------------------------------------------------------
// Counting.

/// Failures counted over `reps` runs of `duration` against rate x exposure, within a band of
/// 4.5 standard deviations of the Poisson count (all processes here are Poisson: exponential
/// lifetimes renewed the instant they fail, because repairs take no time).
void expect_poisson(double counted, double expected, const char* what) {
    const double band = 4.5 * std::sqrt(expected);
    std::printf("%-28s counted %8.0f expected %10.1f (band +- %.1f)\n", what, counted, expected,
                band);
    EXPECT_NEAR(counted, expected, band) << what;
}

TEST(Counting, FailuresPerClassMatchRateTimesExposure) {
    // 2 UltraServers + 1 spare (12 instances, 192 chips, 16 rails); every class with its own
    // MTBF, a 10-day window, 20 replications. The job's own state does not matter for the
    // counts: components fail whether or not they are in the job.
    RunInput in = ultraservers_input(2, 1, 1e9);
    in.spec.fabric.power_domain_instances = 4;
    // NeuronLink switches as a Gen2 UltraServer counts them: one a server, 2 joining them.
    in.hardware.instance_switches = 1;
    in.hardware.ultraserver_switches = 2;
    const std::vector<std::pair<ComponentClass, double>> mtbf = {
        {ComponentClass::chip, 60 * kDay},        {ComponentClass::hbm, 200 * kDay},
        {ComponentClass::host, 30 * kDay},        {ComponentClass::neuronlink, 2000 * kDay},
        {ComponentClass::nic, 300 * kDay},        {ComponentClass::leaf, 20 * kDay},
        {ComponentClass::spine, 30 * kDay},       {ComponentClass::power, 20 * kDay},
        {ComponentClass::software, 15 * kDay},    {ComponentClass::neuronswitch, 10 * kDay},
    };
    for (const auto& [c, m] : mtbf) {
        in.spec.failures.push_back(failure(c, m));
    }
    const double window = 10 * kDay;
    const int reps = 20;
    const RunSummary s = run(in, reps, 5, 1, seconds(window));
    for (std::size_t i = 0; i < mtbf.size(); ++i) {
        const auto [c, m] = mtbf[i];
        const std::int64_t n = s.facts.components[static_cast<std::size_t>(c)];
        ASSERT_GT(n, 0) << to_string(c);
        expect_poisson(s.mean_failures_by_process[i] * reps,
                       static_cast<double>(n) * window / m * reps, to_string(c));
    }
}

TEST(Counting, BadComponentsFailAtTheirMultiple) {
    // 20% of the chips fail 5x as often: the population rate is (0.8 + 0.2 x 5) / MTBF.
    RunInput in = instances_input(8, 0, 1e9);
    FailureSpec f = failure(ComponentClass::chip, 100 * kDay);
    f.bad_fraction = 0.2;
    f.bad_multiplier = 5.0;
    in.spec.failures.push_back(f);
    const double window = 20 * kDay;
    const RunSummary s = run(in, 10, 5, 1, seconds(window));
    expect_poisson(s.mean_failures_by_process[0] * 10, 128 * window / (100 * kDay) * 1.8 * 10,
                   "chips, 20% at 5x");
}

TEST(Counting, WeibullWithShapeOneIsTheExponential) {
    // Same stream words, same transform: every run must be identical, event by event.
    RunInput exp = instances_input(4, 1, 100 * kHour);
    exp.spec.failures.push_back(failure(ComponentClass::chip, 50 * kHour));
    exp.spec.recovery.restart = seconds(5 * kMin);
    exp.spec.checkpoint.interval = seconds(kHour);
    RunInput wei = exp;
    wei.spec.failures[0].distribution = {LifetimeKind::weibull, 1.0, 1.0};
    const RunSummary a = run(exp, 5);
    const RunSummary b = run(wei, 5);
    for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(a.replications[r].wall.ns(), b.replications[r].wall.ns());
        EXPECT_EQ(a.replications[r].failures, b.replications[r].failures);
        EXPECT_GT(a.replications[r].failures, 0);
    }
    ASSERT_EQ(a.replications[0].events.size(), b.replications[0].events.size());
    for (std::size_t i = 0; i < a.replications[0].events.size(); ++i) {
        EXPECT_EQ(a.replications[0].events[i].time.ns(), b.replications[0].events[i].time.ns());
    }
}

TEST(Counting, RenewalCountsOfWeibullAndLognormal) {
    // A renewal process started new at 0 has E[N(T)] = T/mu + (cv^2 - 1)/2 + o(1) and
    // Var[N(T)] ~ cv^2 T / mu (Cox, Renewal Theory, ch. 4). Weibull k = 0.7:
    // cv^2 = Gamma(1 + 2/k) / Gamma(1 + 1/k)^2 - 1; lognormal sigma = 1: cv^2 = e - 1.
    const double mu = 1 * kDay;
    const double window = 25 * kDay;
    const double k = 0.7;
    const double cv2_weibull = std::tgamma(1 + 2 / k) / std::pow(std::tgamma(1 + 1 / k), 2) - 1;
    const double cv2_lognormal = std::exp(1.0) - 1.0;
    for (const auto& [lifetime, cv2] : {std::pair{Lifetime{LifetimeKind::weibull, k, 1.0}, cv2_weibull},
                                        std::pair{Lifetime{LifetimeKind::lognormal, 1.0, 1.0}, cv2_lognormal}}) {
        RunInput in = instances_input(4, 0, 1e9);
        FailureSpec f = failure(ComponentClass::software, mu); // renewed at once
        f.distribution = lifetime;
        in.spec.failures.push_back(f);
        const int reps = 10;
        const RunSummary s = run(in, reps, 9, 1, seconds(window));
        const double per = window / mu + (cv2 - 1) / 2;
        const double n = 4 * reps;
        const double counted = s.mean_failures_by_process[0] * reps;
        const double sd = std::sqrt(n * cv2 * window / mu);
        std::printf("%-10s counted %6.0f expected %8.1f (sd %.1f)\n", to_string(lifetime.kind),
                    counted, n * per, sd);
        EXPECT_NEAR(counted, n * per, 4.5 * sd) << to_string(lifetime.kind);
    }
}

// ---------------------------------------------------------------------------------------------
// Conservation and determinism.

/// A busy scenario: several classes, delays, limited spares and repairs, async checkpoints.
RunInput busy_input() {
    RunInput in = ultraservers_input(4, 1, 8 * kDay);
    in.spec.fabric.power_domain_instances = 8;
    in.spec.failures.push_back(failure(ComponentClass::chip, 400 * kDay, "faulty_chip"));
    in.spec.failures.push_back(failure(ComponentClass::hbm, 900 * kDay));
    in.spec.failures.push_back(failure(ComponentClass::host, 300 * kDay));
    in.spec.failures.push_back(failure(ComponentClass::neuronlink, 20000 * kDay));
    in.spec.failures.push_back(failure(ComponentClass::software, 200 * kDay));
    in.spec.failures.push_back(failure(ComponentClass::power, 100 * kDay));
    FailureSpec leaf = failure(ComponentClass::leaf, 200 * kDay);
    leaf.distribution = {LifetimeKind::weibull, 0.8, 1.0};
    in.spec.failures.push_back(leaf);
    in.spec.recovery.detection = seconds(2 * kMin);
    in.spec.recovery.restart = seconds(10 * kMin);
    in.spec.repair.automatic = seconds(6 * kHour);
    in.spec.repair.manual = seconds(3 * kDay);
    in.spec.repair.manual_fraction = 0.3;
    in.spec.repair.auto_escalation = 0.2;
    in.spec.repair.distribution = RepairDistribution::exponential;
    in.spec.checkpoint.mode = CheckpointMode::async;
    in.spec.checkpoint.interval = Duration::zero(); // auto: about every 40 min here
    in.job.checkpoint_size = Bytes(2'000'000'000'000);
    in.spec.checkpoint.storage_bandwidth = Bandwidth::bytes_per_s(5e9);
    in.job.step_time = [](std::int64_t domains, double f) -> std::optional<double> {
        return 4.0 / static_cast<double>(domains) / f; // 1 s on 4 domains
    };
    return in;
}

void expect_conserved(const ReplicationResult& r) {
    const Duration states =
        std::accumulate(r.time_in_state.begin(), r.time_in_state.end(), Duration::zero());
    EXPECT_EQ(states.ns(), r.wall.ns());
    const std::int64_t running =
        state(r, JobState::running) + state(r, JobState::running_degraded);
    EXPECT_EQ(running, r.kept_run.ns() + r.lost_run.ns());
}

TEST(Conservation, StatesAndWorkAddUpToTheWallTimeExactly) {
    RunInput in = busy_input();
    const RunSummary s = run(in, 6, 21);
    std::int64_t interruptions = 0;
    for (const ReplicationResult& r : s.replications) {
        expect_conserved(r);
        EXPECT_TRUE(r.done);
        interruptions += r.interruptions;
        // At full speed (no fabric degradation here: leaves degrade, so check the run with
        // rate 1 separately below) progress kept is running time kept.
    }
    EXPECT_GT(interruptions, 5) << "the scenario should exercise recoveries";

    // Without degraded running every nanosecond of running is a nanosecond of work, so
    // work kept + work lost + every other state = wall time, exactly.
    in.spec.failures.pop_back(); // no leaf degradation
    const RunSummary t = run(in, 6, 22);
    for (const ReplicationResult& r : t.replications) {
        expect_conserved(r);
        EXPECT_EQ(r.work.ns(), r.kept_run.ns());
        EXPECT_EQ(r.lost_work.ns(), r.lost_run.ns());
        std::int64_t other = 0;
        for (JobState st : {JobState::checkpointing, JobState::detecting, JobState::restarting,
                            JobState::loading, JobState::waiting_for_spare}) {
            other += state(r, st);
        }
        EXPECT_EQ(r.work.ns() + r.lost_work.ns() + other, r.wall.ns());
        EXPECT_EQ(r.work.ns(), static_cast<std::int64_t>(8 * kDay) * 1'000'000'000);
    }
}

TEST(Conservation, ReplicaScopeAndDegradedJobsConserveTime) {
    RunInput in = busy_input();
    in.spec.recovery.scope = RecoveryScope::replica;
    in.job.tp = 16;
    in.job.dp = 16; // 4 domains x 256 ranks / tp 16 / pp 4
    for (const ReplicationResult& r : run(in, 4, 31).replications) {
        expect_conserved(r);
    }
    in.spec.recovery.scope = RecoveryScope::job;
    in.spec.recovery.run_degraded = true;
    in.spec.spares.ultraservers = 0;
    for (const ReplicationResult& r : run(in, 4, 32).replications) {
        expect_conserved(r);
        EXPECT_GT(state(r, JobState::running_degraded), 0);
    }
}

void expect_identical_for_thread_counts(const RunInput& in, int replications) {
    const RunSummary one = run(in, replications, 41, 1);
    for (int threads : {2, 4}) {
        const RunSummary many = run(in, replications, 41, threads);
        for (std::size_t r = 0; r < one.replications.size(); ++r) {
            expect_same_replication(one.replications[r], many.replications[r]);
        }
    }
}

TEST(Determinism, IdenticalForAnyThreadCount) {
    // One replication: the engine itself runs its windows on 1, 2 and 4 threads. Three: the
    // replications run at once on different threads.
    RunInput in = busy_input();
    in.spec.recovery.scope = RecoveryScope::replica;
    in.job.tp = 16;
    in.job.dp = 16;
    expect_identical_for_thread_counts(in, 1);
    expect_identical_for_thread_counts(in, 3);
}

TEST(Determinism, ReplicationsAreIndependentOfEachOther) {
    // Replication 2 of a 3-replication run equals ... replication 2 of a 5-replication run,
    // and differs from replication 1.
    const RunInput in = busy_input();
    const RunSummary a = run(in, 3, 51);
    const RunSummary b = run(in, 5, 51);
    EXPECT_EQ(a.replications[2].wall.ns(), b.replications[2].wall.ns());
    EXPECT_NE(a.replications[1].wall.ns(), a.replications[2].wall.ns());
}

// ---------------------------------------------------------------------------------------------
// Hand-traced scenarios.

TraceFailure trace_at(double t, ComponentClass c, std::int64_t index) {
    TraceFailure f;
    f.time = seconds(t);
    f.component = c;
    f.index = index;
    f.cause = "trace";
    return f;
}

RunInput traced_input() {
    // 10 h of work, a checkpoint every hour costing 60 s (60 GB at 1 GB/s, read back in 60 s),
    // detection 2 min, restart 10 min; one spare, repaired in no time.
    RunInput in = instances_input(4, 1, 10 * kHour);
    in.spec.checkpoint.interval = seconds(kHour);
    in.job.checkpoint_size = Bytes(60'000'000'000);
    in.spec.recovery.detection = seconds(2 * kMin);
    in.spec.recovery.restart = seconds(10 * kMin);
    return in;
}

TEST(Scenario, TraceReplayOfOneChipFailure) {
    // Chip 5 (instance 0) fails at 2 h 30 min. Checkpoints end at 1:01 and 2:02; the failure
    // loses the 28 min since 2:02; detection to 2:32, restart to 2:42, load to 2:43; then 8 h
    // of work with 7 more checkpoints (the 8th hour ends the job before its checkpoint):
    // wall = 10 h + 28 min lost + 13 min down + 9 checkpoints x 1 min = 10 h 50 min.
    RunInput in = traced_input();
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::chip, 5));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_TRUE(r.done);
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 50 * kMin) * 1e9));
    EXPECT_EQ(r.lost_work.ns(), static_cast<std::int64_t>(28 * kMin * 1e9));
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_EQ(r.checkpoints, 9);
    EXPECT_EQ(state(r, JobState::detecting), static_cast<std::int64_t>(2 * kMin * 1e9));
    EXPECT_EQ(state(r, JobState::restarting), static_cast<std::int64_t>(10 * kMin * 1e9));
    EXPECT_EQ(state(r, JobState::loading), static_cast<std::int64_t>(kMin * 1e9));
    EXPECT_EQ(r.spares_assigned, 1);
    // The events name the chip and its domain at the trace's time.
    bool seen = false;
    for (const RunEvent& e : r.events) {
        if (e.kind == EventKind::interruption) {
            seen = true;
            EXPECT_EQ(e.time.ns(), static_cast<std::int64_t>(2.5 * kHour * 1e9));
            EXPECT_EQ(e.domain, 0);
        }
        if (e.kind == EventKind::failure) {
            EXPECT_EQ(e.component, ComponentClass::chip);
            EXPECT_EQ(e.component_index, 5);
        }
    }
    EXPECT_TRUE(seen);
}

TEST(Scenario, WithoutSparesTheJobWaitsForTheRepair) {
    // Same failure, no spare, automatic repair in 1 h: detection ends at 2:32, the instance
    // comes back at 3:30 (58 min of waiting), then restart and load as before.
    RunInput in = traced_input();
    in.spec.spares.instances = 0;
    in.spec.repair.automatic = seconds(kHour);
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::chip, 5));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(state(r, JobState::waiting_for_spare), static_cast<std::int64_t>(58 * kMin * 1e9));
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 50 * kMin + 58 * kMin) * 1e9));
}

TEST(Scenario, APowerFailureTakesItsDomainsAtOnce) {
    // Power domains of 2 instances: power domain 0 holds job instances 0 and 1. One
    // interruption, two spares used, one failure counted.
    RunInput in = traced_input();
    in.spec.spares.instances = 2;
    in.spec.fabric.power_domain_instances = 2;
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::power, 0));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_EQ(r.failures, 1);
    EXPECT_EQ(r.spares_assigned, 2);
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 50 * kMin) * 1e9));
}

TEST(Scenario, ASoftwareFailureRestartsWithoutReplacement) {
    RunInput in = traced_input();
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::software, 3));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_EQ(r.spares_assigned, 0);
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 50 * kMin) * 1e9));
}

TEST(Scenario, AFailureOfASpareDoesNotInterrupt) {
    RunInput in = traced_input();
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::host, 4)); // the spare
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.failures, 1);
    EXPECT_EQ(r.interruptions, 0);
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 9 * kMin) * 1e9));
}

/// traced_input on radix-8 switches (4 instances per leaf, 4 leaves and spines per pod, 16
/// cores) with 28 spares: 32 instances, 8 leaves in 2 pods. The job (instances 0-3) uses leaf
/// 0 and the spines of pod 0 only; leaves 1-7, the spines of pod 1 and the cores carry only
/// idle spares.
RunInput spare_fabric_input() {
    RunInput in = traced_input();
    in.spec.spares.instances = 28;
    in.spec.fabric.switch_radix = 8;
    return in;
}

TEST(Scenario, ASwitchOfTheIdleSparesNeitherStopsNorSlowsTheJob) {
    // One rail: a leaf failure interrupts, but only the job's leaf (leaf 0). A failure of
    // leaf 5 (instances 20-23, spares) leaves the job alone: 10 h of work + 9 checkpoints of
    // 1 min, as without any failure. (Before, every leaf of the spare pool stopped the job.)
    for (std::int64_t leaf : {1, 5, 7}) {
        RunInput in = spare_fabric_input();
        in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::leaf, leaf));
        const ReplicationResult r = run(in, 1).replications[0];
        EXPECT_EQ(r.failures, 1) << leaf;
        EXPECT_EQ(r.interruptions, 0) << leaf;
        EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 9 * kMin) * 1e9)) << leaf;
    }
    // The job's own leaf: one interruption, recovered in place as a software failure is
    // (28 min lost since the 2:02 checkpoint, 2 + 10 + 1 min down): 10 h 50 min.
    RunInput in = spare_fabric_input();
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::leaf, 0));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_EQ(r.spares_assigned, 0);
    EXPECT_EQ(r.wall.ns(), static_cast<std::int64_t>((10 * kHour + 50 * kMin) * 1e9));
    // Spines degrade (4 per pod). A spine of pod 1 (spines 4-7) or a core (the job is in one
    // pod) does not slow the job; a spine of pod 0 does, for its 2 h repair: at 3/4 of the
    // spines a communication-bound step takes 4/3 as long, 30 min more over those 2 h.
    for (const auto& [cls, index, slower_s] :
         {std::tuple{ComponentClass::spine, 5, 0.0}, std::tuple{ComponentClass::core, 3, 0.0},
          std::tuple{ComponentClass::spine, 1, 30 * kMin}}) {
        RunInput d = spare_fabric_input();
        d.spec.repair.automatic = seconds(2 * kHour);
        d.spec.checkpoint.interval = seconds(100 * kHour);
        d.job.step_time = [](std::int64_t, double f) -> std::optional<double> { return 1.0 / f; };
        d.spec.trace.failures.push_back(trace_at(kHour, cls, index));
        const ReplicationResult x = run(d, 1).replications[0];
        EXPECT_EQ(x.interruptions, 0);
        EXPECT_NEAR(x.wall.seconds(), 10 * kHour + slower_s, 1e-6)
            << to_string(cls) << " " << index;
        EXPECT_EQ(state(x, JobState::running_degraded) > 0, slower_s > 0.0);
    }
}

TEST(Scenario, InterruptionsDoNotGrowWithTheSparePool) {
    // 8 job instances under 2 leaves (radix 8), leaves failing every 20 days each with
    // interrupting effect (one rail). The spare pool grows from 8 to 8,000 instances, so the
    // leaves from 4 to 2,002: before, every one of them stopped the job, about 500 times as
    // many interruptions. The job's two leaves fail about 2 x 60 d / 20 d = 6 times per run
    // either way (60 days of work); over 20 replications the means agree within noise.
    const auto mean_interruptions = [](std::int64_t spares, double& job_rate) {
        RunInput in = instances_input(8, spares, 60 * kDay);
        in.spec.fabric.switch_radix = 8;
        in.spec.checkpoint.interval = seconds(kHour);
        FailureSpec leaf = failure(ComponentClass::leaf, 20 * kDay, "switch_or_cable");
        leaf.effect = Effect::interrupt;
        in.spec.failures.push_back(leaf);
        const RunSummary r = run(in, 20, 7, 2);
        job_rate = r.facts.job_failure_rate;
        double sum = 0.0;
        for (const auto& x : r.replications) {
            sum += static_cast<double>(x.interruptions);
        }
        return sum / static_cast<double>(r.replications.size());
    };
    double rate_small = 0.0, rate_large = 0.0;
    const double small = mean_interruptions(8, rate_small);
    const double large = mean_interruptions(8000, rate_large);
    // The job's failure rate counts the job's 2 leaves in both cases: 2 / 20 d.
    EXPECT_DOUBLE_EQ(rate_small, 2.0 / (20 * kDay));
    EXPECT_DOUBLE_EQ(rate_large, rate_small);
    EXPECT_GT(small, 3.0);
    EXPECT_LT(small, 9.0);
    EXPECT_LT(large, small * 1.5 + 1.0);
    EXPECT_GT(large, small / 1.5 - 1.0);
}

TEST(Scenario, ALeafFailureSlowsTheJobUntilRepaired) {
    // One UltraServer, 16 rails; leaf 0 (rail 0) fails at 1 h 30 min and is repaired in 2 h.
    // The step model is communication bound (step / f): with 15 of 16 rails the job runs at
    // 15/16 speed for 2 h and so falls 7.5 min behind. No checkpoints, no interruption.
    RunInput in = ultraservers_input(1, 0, 10 * kHour);
    in.spec.checkpoint.interval = seconds(100 * kHour);
    in.spec.repair.automatic = seconds(2 * kHour);
    in.spec.trace.failures.push_back(trace_at(1.5 * kHour, ComponentClass::leaf, 0));
    in.job.step_time = [](std::int64_t, double f) -> std::optional<double> { return 1.0 / f; };
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.interruptions, 0);
    EXPECT_EQ(state(r, JobState::running_degraded), static_cast<std::int64_t>(2 * kHour * 1e9));
    EXPECT_NEAR(r.wall.seconds(), 10 * kHour + 7.5 * kMin, 1e-6);
}

TEST(Scenario, AFailureDuringAnUploadLosesThatCheckpoint) {
    // Async checkpoints: a 1 s snapshot (16 GB per chip at 16 GB/s... here 64 chips x 1 GB =
    // 64 GB; 1 GB per chip at 1 GB/s), then a 64 s upload at 1 GB/s. A failure 30 s into the
    // first upload (at 1 h + 1 s + 30 s) loses it: the job restarts from the beginning.
    RunInput in = traced_input();
    in.spec.checkpoint.mode = CheckpointMode::async;
    in.spec.checkpoint.snapshot_bandwidth = Bandwidth::bytes_per_s(1e9);
    in.job.checkpoint_size = Bytes(64'000'000'000);
    in.spec.trace.failures.push_back(trace_at(kHour + 31, ComponentClass::chip, 0));
    const ReplicationResult r = run(in, 1).replications[0];
    EXPECT_EQ(r.checkpoints_lost, 1);
    EXPECT_EQ(r.lost_work.ns(), static_cast<std::int64_t>((kHour + 30) * 1e9));
}

TEST(Scenario, ReplicaScopeKeepsTheHealthyReplicasTraining) {
    // 4 UltraServers, tp 16, dp 16 (pp 4): domain 0 holds ranks 0..255 = tp groups 0..15,
    // i.e. replicas 0..15 of pipeline stage 0... all 16 replicas: a single domain failure
    // would stop every replica. With tp 64 and dp 4 a domain holds 4 tp groups = replicas
    // 0..3 of stage 0, again all. So use tp 16, dp 64 (pp 1): domain 0 holds replicas 0..15
    // of 64, and the job continues at 48/64 speed while they recover.
    RunInput in = ultraservers_input(4, 1, 10 * kHour);
    in.spec.recovery.scope = RecoveryScope::replica;
    in.spec.recovery.detection = seconds(2 * kMin);
    in.spec.recovery.restart = seconds(10 * kMin);
    in.spec.checkpoint.interval = seconds(100 * kHour);
    in.job.tp = 16;
    in.job.dp = 64;
    in.job.checkpoint_size = Bytes(0);
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::chip, 0));
    const ReplicationResult r = run(in, 1).replications[0];
    // Stall of 2 min (detection), then 10 min restart + 0 s peer load at 3/4 speed: the job
    // loses 2 min + 10 min / 4 = 4.5 min, and nothing since the (absent) checkpoint.
    EXPECT_EQ(r.interruptions, 1);
    EXPECT_EQ(state(r, JobState::restarting), 0);
    EXPECT_EQ(state(r, JobState::running_degraded), static_cast<std::int64_t>(10 * kMin * 1e9));
    EXPECT_EQ(r.lost_work.ns(), 0); // the failure hit at a step boundary (2.5 h of 1 s steps)
    EXPECT_NEAR(r.wall.seconds(), 10 * kHour + 4.5 * kMin, 1e-6);
}

TEST(Scenario, RunningDegradedThenBackToFullSize) {
    // No spare, run_degraded: after the failure at 2:30 (detection to 2:32) the job restarts
    // on 3 of 4 instances (restart 10 min, load 1 min) at 3/4 speed (step model: 4/n s). The
    // instance is back at 3:30; at the next checkpoint the job restarts at full size.
    RunInput in = traced_input();
    in.spec.spares.instances = 0;
    in.spec.recovery.run_degraded = true;
    in.spec.repair.automatic = seconds(kHour);
    in.job.step_time = [](std::int64_t n, double) -> std::optional<double> {
        return 4.0 / static_cast<double>(n);
    };
    in.spec.trace.failures.push_back(trace_at(2.5 * kHour, ComponentClass::chip, 5));
    const ReplicationResult r = run(in, 1).replications[0];
    expect_conserved(r);
    EXPECT_GT(state(r, JobState::running_degraded), 0);
    EXPECT_EQ(state(r, JobState::waiting_for_spare), 0);
    // Two restarts: after the failure and when going back to full size.
    EXPECT_EQ(state(r, JobState::restarting), static_cast<std::int64_t>(20 * kMin * 1e9));
    EXPECT_TRUE(r.done);
}

// ---------------------------------------------------------------------------------------------
// On a shared engine.

TEST(Tenant, ARunOnASharedEngineIsReplicationZeroOfItsRunAlone) {
    // Two jobs as tenants of one engine (a busy one and a quiet one with other seeds and an
    // end of its own) give what each gives alone, on 1 and 2 threads: the shared engine's
    // windows, pauses and thread count change nothing a tenant computes.
    RunInput busy = busy_input();
    busy.spec.recovery.scope = RecoveryScope::replica;
    busy.job.tp = 16;
    busy.job.dp = 16;
    const RunInput quiet = traced_input();
    RunControl busy_control;
    busy_control.seed = 41;
    RunControl quiet_control;
    quiet_control.seed = 7;
    quiet_control.duration = seconds(6 * kHour);
    const RunSummary busy_alone = simulate(busy, busy_control);
    const RunSummary quiet_alone = simulate(quiet, quiet_control);
    for (const int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        RunTenant a(quiet, quiet_control);
        RunTenant b(busy, busy_control);
        engine::TenantSet<engine::QuaternaryHeap> set;
        set.add(a);
        set.add(b);
        (void)set.run(threads);
        for (const auto& [tenant, alone] :
             {std::pair{a.take_summary(), &quiet_alone}, std::pair{b.take_summary(), &busy_alone}}) {
            expect_same_replication(tenant.replications.at(0), alone->replications.at(0));
            EXPECT_EQ(tenant.estimate("ettr").mean, alone->estimate("ettr").mean);
        }
    }
    EXPECT_GT(busy_alone.replications[0].failures, 0);
    EXPECT_EQ(quiet_alone.replications[0].done, false); // cut at its 6 h duration
}

} // namespace
} // namespace trnsim::reliability
