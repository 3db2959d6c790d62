// The fleet's services, by hand: the fluid queue's closed forms, the autoscaler's step response
// to a jump of the load (lag + provisioning + model load), scale-in with a drain, a service
// borrowing a training job's domains, and a failure that lands on the tenant holding the domain.
#include "trnsim/fleet/fleet.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace trnsim::fleet {
namespace {

Duration sec(std::int64_t s) { return Duration::from_ns(s * 1'000'000'000); }
SimTime at_s(std::int64_t s) { return SimTime::zero() + sec(s); }

TEST(FleetFluid, UnderCapacityEveryArrivalMeetsTheSlo) {
    const FluidStep s = fluid_step(10.0, 20.0, 0.0, 1.0, 60.0);
    EXPECT_DOUBLE_EQ(s.arrived, 600.0);
    EXPECT_DOUBLE_EQ(s.met, 600.0);
    EXPECT_DOUBLE_EQ(s.served, 600.0);
    EXPECT_DOUBLE_EQ(s.backlog, 0.0);
}

TEST(FleetFluid, OverCapacityArrivalsMeetItUntilTheWaitPassesTheSlack) {
    // Load 30/s on 20/s: the backlog grows 10/s; a wait of B/20 passes 0.5 s when B = 10,
    // after 1 s: 30 arrivals meet it. After 60 s: 1,800 arrived, 600 waiting, 1,200 served.
    const FluidStep s = fluid_step(30.0, 20.0, 0.0, 0.5, 60.0);
    EXPECT_DOUBLE_EQ(s.arrived, 1800.0);
    EXPECT_DOUBLE_EQ(s.met, 30.0);
    EXPECT_DOUBLE_EQ(s.backlog, 600.0);
    EXPECT_DOUBLE_EQ(s.served, 1200.0);
}

TEST(FleetFluid, ADrainingBacklogMeetsItOnceBelowTheBound) {
    // Backlog 100 at 20/s against 10/s arriving: it falls 10/s, below the bound 20 (1 s x 20/s)
    // after 8 s; the last 52 s of arrivals (520) meet it; it is empty after 10 s.
    const FluidStep s = fluid_step(10.0, 20.0, 100.0, 1.0, 60.0);
    EXPECT_DOUBLE_EQ(s.met, 520.0);
    EXPECT_DOUBLE_EQ(s.backlog, 0.0);
    EXPECT_DOUBLE_EQ(s.served, 700.0);
}

TEST(FleetFluid, WithoutCapacityNothingIsServed) {
    const FluidStep s = fluid_step(5.0, 0.0, 7.0, 10.0, 2.0);
    EXPECT_DOUBLE_EQ(s.met, 0.0);
    EXPECT_DOUBLE_EQ(s.served, 0.0);
    EXPECT_DOUBLE_EQ(s.backlog, 17.0);
}

/// 10 requests/s a domain, held at 50% utilisation, 1 to 10 domains, a decision every minute
/// on the metrics of two minutes before, 5 min to provision and 200 s to load the model. The
/// load is `before`/s, then `after`/s from `jump`.
ServiceSpec stepped(double before, double after, std::int64_t jump) {
    ServiceSpec s;
    s.name = "chat";
    s.capacity = 10.0;
    s.slack = sec(1);
    s.load.at = {SimTime::zero(), at_s(jump)};
    s.load.rate = {before, after};
    s.scale.target = 0.5;
    s.scale.min = 1;
    s.scale.max = 10;
    s.scale.interval = sec(60);
    s.scale.lag = sec(120);
    s.scale.provisioning = sec(300);
    s.scale.load = sec(200);
    return s;
}

FleetInput pool_of(std::int64_t domains) {
    FleetInput in;
    in.domains = domains;
    in.chips_per_domain = 64;
    in.groups = {domains, 1};
    return in;
}

const ServiceSample& sample_at(const std::vector<ServiceSample>& v, SimTime t) {
    for (const ServiceSample& s : v) {
        if (s.at == t) {
            return s;
        }
    }
    throw std::out_of_range("no sample at that time");
}

TEST(FleetAutoscaler, StepResponseIsLagThenProvisioningThenModelLoad) {
    // The load jumps from 5/s to 40/s at 600 s. The sample at 660 s is the first whose mean
    // holds the jump (its minute, 600 to 660 s); the autoscaler reads it 120 s later, at 780 s,
    // and wants 40 / (0.5 x 10) = 8 domains; the 7 new ones are ready 300 + 200 s later, at
    // 1,280 s.
    FleetInput in = pool_of(16);
    in.services = {stepped(5.0, 40.0, 600)};
    in.horizon = at_s(3600);
    const FleetResult r = simulate_fleet(in);
    const auto& v = r.service_samples[0];
    EXPECT_EQ(sample_at(v, SimTime::zero()).wanted, 1); // 5/s at 0 s: one domain
    EXPECT_EQ(sample_at(v, at_s(60)).ready, 1);         // deployed before the run
    EXPECT_EQ(sample_at(v, at_s(720)).wanted, 1);      // reads the sample of 600 s
    EXPECT_DOUBLE_EQ(sample_at(v, at_s(660)).load, 40.0);
    EXPECT_EQ(sample_at(v, at_s(780)).wanted, 8);
    EXPECT_EQ(sample_at(v, at_s(1260)).ready, 1);
    EXPECT_EQ(sample_at(v, at_s(1260)).pending, 7);
    EXPECT_EQ(sample_at(v, at_s(1320)).ready, 8);
    EXPECT_EQ(r.services[0].grants, 8);
    EXPECT_EQ(r.services[0].peak_domains, 8);
    // Arrivals: 5/s for 600 s and 40/s for 3,000 s.
    EXPECT_NEAR(r.services[0].arrived, 3000.0 + 120000.0, 1e-6);
    // From 600 s to 1,280 s one domain serves 10/s of 40: the backlog grows by 30/s to 20,400;
    // then 8 domains serve 80/s, 40/s net, and clear it by 1,790 s. Requests are conserved.
    const ServiceSample& cleared = sample_at(v, at_s(1800));
    EXPECT_DOUBLE_EQ(cleared.backlog, 0.0);
    EXPECT_NEAR(sample_at(v, at_s(1260)).backlog, 30.0 * 660.0, 1e-6);
    EXPECT_NEAR(r.services[0].served + r.services[0].backlog_end, r.services[0].arrived, 1e-6);
    EXPECT_DOUBLE_EQ(r.services[0].backlog_end, 0.0);
}

TEST(FleetAutoscaler, ScaleInDrainsThenGivesTheDomainBack) {
    // 40/s, then 5/s from 600 s; the first decision reads the load at 0 s and starts with 8
    // domains (deployed before the run).
    ServiceSpec s = stepped(40.0, 5.0, 600);
    s.scale.lag = Duration::zero();
    s.scale.drain = sec(30);
    FleetInput in = pool_of(16);
    in.services = {s};
    in.horizon = at_s(1200);
    const FleetResult r = simulate_fleet(in);
    const auto& v = r.service_samples[0];
    EXPECT_EQ(sample_at(v, SimTime::zero()).wanted, 8);
    EXPECT_EQ(sample_at(v, SimTime::zero()).ready, 0); // sampled before the grant
    EXPECT_EQ(sample_at(v, at_s(60)).ready, 8);
    // At 660 s it reads the minute 600 to 660 s (5/s): 1 domain; 7 drain for 30 s.
    EXPECT_EQ(sample_at(v, at_s(660)).wanted, 1);
    EXPECT_EQ(sample_at(v, at_s(720)).draining, 0);
    EXPECT_EQ(sample_at(v, at_s(720)).ready, 1);
    EXPECT_EQ(r.services[0].releases, 7);
    // Domain time held: 8 domains to 660 s, 7 of them 30 s more, 1 to the end.
    EXPECT_NEAR(r.services[0].held.seconds(), 8 * 660.0 + 7 * 30.0 + 1 * 540.0, 1e-6);
    EXPECT_NEAR(r.pool.domain_time[0].seconds(), r.services[0].held.seconds(), 1e-6);
}

JobSpec long_job(std::int64_t domains, int priority) {
    JobSpec j;
    j.name = "train";
    j.domains = domains;
    j.steps = 1000;
    j.step = sec(60);
    j.priority = priority;
    j.tenant = 1;
    return j;
}

TEST(FleetAutoscaler, ABorrowingServicePreemptsALowerPriorityJob) {
    // 4 domains: the service holds 1, a job the other 3. The load needs 4 at 900 s: the
    // service preempts the job (priority 0 < 5); a service that may not borrow waits.
    for (const bool borrow : {true, false}) {
        ServiceSpec s = stepped(5.0, 20.0, 600);
        s.priority = 5;
        s.borrow = borrow;
        FleetInput in = pool_of(4);
        in.services = {s};
        in.jobs = {long_job(3, 0)};
        in.horizon = at_s(3600);
        const FleetResult r = simulate_fleet(in);
        EXPECT_EQ(r.jobs[0].preemptions, borrow ? 1 : 0);
        EXPECT_EQ(r.services[0].peak_domains, borrow ? 4 : 1);
        EXPECT_EQ(r.jobs[0].first_start, SimTime::zero());
    }
}

TEST(FleetAutoscaler, AFailureLandsOnTheTenantHoldingTheDomain) {
    // Domain 0 is the service's (granted first, at time zero); domains 1-2 the job's. Domain 0
    // fails at 100 s: the service loses it, the job runs on; domain 2 fails at 200 s: the job
    // is interrupted, the service is not.
    FleetInput in = pool_of(3);
    ServiceSpec s = stepped(5.0, 5.0, 600);
    s.scale.max = 1;
    in.services = {s};
    in.jobs = {long_job(2, 0)};
    in.outages = {{0, at_s(100), at_s(400)}, {2, at_s(200), at_s(500)}};
    in.horizon = at_s(3600);
    const FleetResult r = simulate_fleet(in);
    EXPECT_EQ(r.services[0].failures, 1);
    EXPECT_EQ(r.jobs[0].failures, 1);
    // The service asks again at its next decision (120 s) and gets the idle... none is idle
    // (0 down, 1-2 the job's) until the job is requeued at 200 s and the domain comes back.
    EXPECT_GT(r.services[0].grants, 1);
}

TEST(FleetAutoscaler, RefusesABadSpec) {
    ServiceSpec s = stepped(5.0, 5.0, 600);
    s.scale.min = 3;
    s.scale.max = 2;
    EXPECT_THROW(Service{s}, std::invalid_argument);
    FleetInput in = pool_of(2);
    in.services = {stepped(5.0, 5.0, 600)};
    EXPECT_THROW(simulate_fleet(in), std::invalid_argument); // no horizon
}

} // namespace
} // namespace trnsim::fleet
