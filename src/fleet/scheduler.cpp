#include "trnsim/fleet/scheduler.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace trnsim::fleet {

namespace {

std::size_t ix(std::int64_t i) { return static_cast<std::size_t>(i); }

} // namespace

Scheduler::Scheduler(Pool& pool, std::vector<JobSpec> jobs, SchedulerSpec spec)
    : pool_(pool), jobs_(std::move(jobs)), spec_(std::move(spec)) {
    const std::int64_t grantable = pool_.domains() - pool_.count(DomainUse::spare);
    std::int64_t tenants = static_cast<std::int64_t>(spec_.quotas.size());
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
        const JobSpec& job = jobs_[j];
        const std::string which = "fleet: job " + std::to_string(j) + " ('" + job.name + "') ";
        if (job.domains < 1 || job.domains > grantable) {
            throw std::invalid_argument(which + "needs " + std::to_string(job.domains) +
                                        " domains; the pool grants 1 to " +
                                        std::to_string(grantable));
        }
        if (job.steps < 1 || job.step <= Duration::zero() || job.checkpoint_steps < 1 ||
            job.tenant < 0) {
            throw std::invalid_argument(which + "needs steps >= 1, a positive step time, "
                                                "checkpoint steps >= 1 and a tenant >= 0");
        }
        if (ix(job.tenant) < spec_.quotas.size() && spec_.quotas[ix(job.tenant)] > 0 &&
            job.domains > spec_.quotas[ix(job.tenant)]) {
            throw std::invalid_argument(which + "needs more domains than its tenant's quota");
        }
        for (std::size_t k = 0; k < job.shapes.size(); ++k) {
            const JobShape& x = job.shapes[k];
            const bool first_is_own = k > 0 || (x.domains == job.domains && x.step == job.step &&
                                                x.checkpoint_steps == job.checkpoint_steps);
            if (!first_is_own || x.domains > grantable || x.step <= Duration::zero() ||
                x.checkpoint_steps < 1 || (k > 0 && x.domains <= job.shapes[k - 1].domains)) {
                throw std::invalid_argument(
                    which + "has shapes that do not start with its own, grow, fit the pool "
                            "and have positive step times");
            }
        }
        tenants = std::max(tenants, job.tenant + 1);
    }
    for (const ServiceClaim& c : spec_.services) {
        if (c.tenant < 0) {
            throw std::invalid_argument("fleet: a service needs a tenant >= 0");
        }
        tenants = std::max(tenants, c.tenant + 1);
    }
    records_.resize(jobs_.size());
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
        records_[j].submit = jobs_[j].submit;
    }
    run_.resize(jobs_.size());
    queued_since_.resize(jobs_.size());
    held_by_tenant_.assign(ix(tenants), 0);
}

Scheduler::Key Scheduler::key(std::int64_t job) const {
    const JobSpec& j = jobs_[ix(job)];
    const std::int64_t first = spec_.policy == Policy::priority ? -j.priority : 0;
    return {first, j.submit.ns(), job};
}

void Scheduler::shape(std::int64_t job, std::size_t k) {
    JobSpec& j = jobs_[ix(job)];
    j.set_shape(j.shapes[k]);
}

void Scheduler::widen(std::int64_t job) {
    const JobSpec& j = jobs_[ix(job)];
    const std::int64_t room = std::min(pool_.count(DomainUse::idle), quota_room(j.tenant));
    std::size_t best = 0;
    for (std::size_t k = 0; k < j.shapes.size(); ++k) {
        if (j.shapes[k].domains <= room) {
            best = k;
        }
    }
    if (!j.shapes.empty() && j.shapes[best].domains != j.domains) {
        shape(job, best);
    }
}

void Scheduler::enqueue(SimTime t, std::int64_t job) {
    ++version_;
    if (const JobSpec& j = jobs_[ix(job)]; !j.shapes.empty() && j.domains != j.shapes[0].domains) {
        shape(job, 0); // it waits as its smallest shape
    }
    queued_since_[ix(job)] = t;
    const Key k = key(job);
    queue_.insert(k);
    by_gang_[jobs_[ix(job)].domains].insert(k);
    pool_.set_smallest_wait(t, by_gang_.begin()->first);
}

std::set<Scheduler::Key>::iterator Scheduler::dequeue(SimTime t, std::set<Key>::iterator it) {
    const auto bucket = by_gang_.find(jobs_[ix(std::get<2>(*it))].domains);
    bucket->second.erase(*it);
    if (bucket->second.empty()) {
        by_gang_.erase(bucket);
    }
    pool_.set_smallest_wait(t, by_gang_.empty() ? 0 : by_gang_.begin()->first);
    return queue_.erase(it);
}

void Scheduler::submit(SimTime t, std::int64_t job) { enqueue(t, job); }

bool Scheduler::may_hold(std::int64_t job) const {
    const JobSpec& j = jobs_[ix(job)];
    if (ix(j.tenant) >= spec_.quotas.size() || spec_.quotas[ix(j.tenant)] <= 0) {
        return true;
    }
    return held_by_tenant_[ix(j.tenant)] + j.domains <= spec_.quotas[ix(j.tenant)];
}

Start Scheduler::start(SimTime t, std::int64_t job, std::vector<std::int64_t> domains) {
    const JobSpec& j = jobs_[ix(job)];
    JobRecord& r = records_[ix(job)];
    Running& run = run_[ix(job)];
    TRNSIM_CHECK(!run.active, "fleet: starting a running job");
    pool_.grant(t, domains, job);
    r.waiting += t - queued_since_[ix(job)];
    r.first_start = std::min(r.first_start, t);
    if (r.starts > 0 && r.gang != j.domains) {
        ++r.resizes;
    }
    r.gang = j.domains;
    ++r.starts;
    run.active = true;
    run.domains = std::move(domains);
    run.segment.granted = t;
    run.segment.steps = j.steps - r.steps_done;
    run.segment.setup = j.launch + (r.steps_done > 0 ? j.restore : Duration::zero());
    if (run.after_failure) { // the failure that sent it back is noticed first
        run.segment.setup += spec_.detection;
        run.after_failure = false;
    }
    ++run.epoch;
    held_by_tenant_[ix(j.tenant)] += j.domains;
    active_.insert(job);
    run.end = run.segment.end(j);
    ends_.insert({run.end, job});
    return {job, run.end, run.epoch};
}

bool Scheduler::end(SimTime t, std::int64_t job, std::uint32_t epoch) {
    Running& run = run_[ix(job)];
    if (!run.active || run.epoch != epoch) {
        return false;
    }
    const JobSpec& j = jobs_[ix(job)];
    JobRecord& r = records_[ix(job)];
    TRNSIM_CHECK(t == run.segment.end(j), "fleet: a segment ended off its time");
    const Duration held = t - run.segment.granted;
    r.held += held;
    r.domain_seconds += held.seconds() * static_cast<double>(j.domains);
    r.overhead += held - j.step * run.segment.steps;
    r.steps_done = j.steps;
    r.end = t;
    ++finished_;
    pool_.release(t, run.domains);
    ++version_;
    run.active = false;
    run.domains.clear();
    held_by_tenant_[ix(j.tenant)] -= j.domains;
    active_.erase(job);
    ends_.erase({run.end, job});
    return true;
}

void Scheduler::interrupt(SimTime t, std::int64_t job, bool release) {
    Running& run = run_[ix(job)];
    TRNSIM_CHECK(run.active, "fleet: interrupting a job that is not running");
    const JobSpec& j = jobs_[ix(job)];
    JobRecord& r = records_[ix(job)];
    const Segment::Cut c = run.segment.cut(j, t);
    r.held += t - run.segment.granted;
    r.domain_seconds += (t - run.segment.granted).seconds() * static_cast<double>(j.domains);
    r.overhead += c.overhead;
    r.lost += c.lost;
    r.steps_done += c.durable_steps;
    ++run.epoch; // the segment's end event is stale now
    ends_.erase({run.end, job});
    if (!release) {
        return; // the caller restarts it on the same domains but one
    }
    pool_.release(t, run.domains);
    ++version_;
    run.active = false;
    run.domains.clear();
    held_by_tenant_[ix(j.tenant)] -= j.domains;
    active_.erase(job);
}

Scheduler::Down Scheduler::domain_down(SimTime t, std::int64_t domain) {
    Down out;
    const std::int64_t holder = pool_.use(domain) == DomainUse::busy ? pool_.holder(domain) : -1;
    const auto jobs = static_cast<std::int64_t>(jobs_.size());
    if (holder < 0) {
        pool_.fail(t, domain);
        return out;
    }
    const std::int64_t spare = pool_.first_spare();
    if (holder >= jobs) { // a service's: replaced from the spare pool when it can be
        out.service = holder - jobs;
        const std::int64_t tenant = spec_.services[ix(out.service)].tenant;
        pool_.release(t, {domain});
        pool_.fail(t, domain);
        if (spare >= 0) {
            pool_.grant(t, {spare}, holder);
            out.replacement = spare;
        } else {
            --held_by_tenant_[ix(tenant)];
        }
        return out;
    }
    const std::int64_t job = holder;
    ++records_[ix(job)].failures;
    if (spare < 0) {
        interrupt(t, job);
        pool_.fail(t, domain); // released to idle by interrupt, then down
        run_[ix(job)].after_failure = true;
        enqueue(t, job);
        return out;
    }
    interrupt(t, job, false);
    Running& run = run_[ix(job)];
    pool_.release(t, {domain});
    pool_.fail(t, domain);
    std::replace(run.domains.begin(), run.domains.end(), domain, spare);
    std::sort(run.domains.begin(), run.domains.end());
    pool_.grant(t, {spare}, job);
    // A new segment on the same gang with the spare: restore included.
    const JobSpec& j = jobs_[ix(job)];
    JobRecord& r = records_[ix(job)];
    ++r.starts;
    run.segment.granted = t;
    run.segment.steps = j.steps - r.steps_done;
    run.segment.setup =
        spec_.detection + j.launch + (r.steps_done > 0 ? j.restore : Duration::zero());
    ++run.epoch;
    run.end = run.segment.end(j);
    ends_.insert({run.end, job});
    out.starts.push_back({job, run.end, run.epoch});
    return out;
}

std::int64_t Scheduler::quota_room(std::int64_t tenant) const {
    if (ix(tenant) >= spec_.quotas.size() || spec_.quotas[ix(tenant)] <= 0) {
        return std::numeric_limits<std::int64_t>::max();
    }
    return std::max<std::int64_t>(0, spec_.quotas[ix(tenant)] - held_by_tenant_[ix(tenant)]);
}

std::vector<std::int64_t> Scheduler::acquire(SimTime t, std::int64_t s, std::int64_t n) {
    const ServiceClaim& c = spec_.services[ix(s)];
    n = std::min(n, quota_room(c.tenant));
    if (n <= 0) {
        return {};
    }
    if (c.borrow && pool_.count(DomainUse::idle) < n) {
        preempt(t, c.priority, n, true);
    }
    n = std::min(n, pool_.count(DomainUse::idle));
    if (n <= 0) {
        return {};
    }
    std::optional<std::vector<std::int64_t>> place = pool_.place(n);
    TRNSIM_CHECK(place.has_value(), "fleet: enough idle domains but no placement");
    pool_.grant(t, *place, static_cast<std::int64_t>(jobs_.size()) + s);
    ++version_; // fewer idle domains can move EASY's reservation later, and let a job backfill
    held_by_tenant_[ix(c.tenant)] += n;
    return std::move(*place);
}

void Scheduler::release(SimTime t, std::int64_t s, const std::vector<std::int64_t>& domains) {
    if (domains.empty()) {
        return;
    }
    pool_.release(t, domains);
    ++version_;
    held_by_tenant_[ix(spec_.services[ix(s)].tenant)] -=
        static_cast<std::int64_t>(domains.size());
}

void Scheduler::domain_up(SimTime t, std::int64_t domain) { (void)pool_.repair(t, domain); }

void Scheduler::preempt(SimTime t, int priority, std::int64_t need, bool partial) {
    std::vector<std::int64_t> victims;
    for (const std::int64_t v : active_) {
        if (jobs_[ix(v)].priority < priority) {
            victims.push_back(v);
        }
    }
    // Lowest priority first, then the most recently started, then the highest index.
    std::sort(victims.begin(), victims.end(), [&](std::int64_t a, std::int64_t b) {
        const auto rank = [&](std::int64_t v) {
            return std::make_tuple(jobs_[ix(v)].priority, -run_[ix(v)].segment.granted.ns(), -v);
        };
        return rank(a) < rank(b);
    });
    std::int64_t freed = pool_.count(DomainUse::idle);
    std::size_t needed = 0;
    while (freed < need && needed < victims.size()) {
        freed += jobs_[ix(victims[needed])].domains;
        ++needed;
    }
    if (freed < need && !partial) {
        return;
    }
    for (std::size_t i = 0; i < needed; ++i) {
        ++records_[ix(victims[i])].preemptions;
        interrupt(t, victims[i]);
        enqueue(t, victims[i]);
    }
}

bool Scheduler::preempt_for(SimTime t, std::int64_t job) {
    const JobSpec& head = jobs_[ix(job)];
    preempt(t, head.priority, head.domains, false);
    return pool_.count(DomainUse::idle) >= head.domains;
}

std::pair<SimTime, std::int64_t> Scheduler::reservation(SimTime t, std::int64_t head) const {
    std::int64_t free = pool_.count(DomainUse::idle);
    const std::int64_t need = jobs_[ix(head)].domains;
    SimTime at = t;
    for (auto it = ends_.begin(); it != ends_.end() && free < need; ++it) {
        free += jobs_[ix(it->second)].domains;
        at = it->first;
    }
    if (free < need) {
        // Running jobs' ends do not free enough (domains are down): no reservation can be
        // made, and later jobs backfill freely until one can.
        return {SimTime::max(), std::numeric_limits<std::int64_t>::max()};
    }
    return {at, free - need};
}

std::vector<Start> Scheduler::schedule(SimTime t) {
    std::vector<Start> out;
    // In queue order until a job cannot start (the head): fifo and priority stop there.
    // The cheap tests (quota, idle count) come before placing: a long queue is scanned on
    // every event.
    auto it = queue_.begin();
    while (it != queue_.end()) {
        const std::int64_t job = std::get<2>(*it);
        const JobSpec& j = jobs_[ix(job)];
        if (!may_hold(job)) {
            ++it;
            continue;
        }
        bool fits = j.domains <= pool_.count(DomainUse::idle);
        if (!fits && spec_.policy == Policy::priority && preempt_for(t, job)) {
            fits = true;
            it = queue_.lower_bound(key(job)); // the victims went back into the queue
        }
        if (!fits) {
            break;
        }
        it = dequeue(t, it);
        widen(job); // an elastic job takes the largest shape the idle domains allow
        std::optional<std::vector<std::int64_t>> place = pool_.place(jobs_[ix(job)].domains);
        TRNSIM_CHECK(place.has_value(), "fleet: enough idle domains but no placement");
        out.push_back(start(t, job, std::move(*place)));
    }
    if (it == queue_.end() || spec_.policy != Policy::backfill) {
        return out;
    }
    // EASY backfill behind the head: the later jobs in queue order, each started when it
    // fits the idle domains and does not delay the head's reservation.
    const Key head = *it;
    auto [shadow, extra] = reservation(t, std::get<2>(head));
    // Whether `job` (which fits the idle domains) may start now; starts it if so.
    const auto backfill = [&](std::int64_t job) {
        const JobSpec& j = jobs_[ix(job)];
        if (!may_hold(job)) {
            return false;
        }
        const JobRecord& r = records_[ix(job)];
        const Segment s{t, j.launch + (r.steps_done > 0 ? j.restore : Duration::zero()),
                        j.steps - r.steps_done};
        if (s.end(j) > shadow) {
            if (j.domains > extra) {
                return false;
            }
            extra -= j.domains;
        }
        std::optional<std::vector<std::int64_t>> place = pool_.place(j.domains);
        TRNSIM_CHECK(place.has_value(), "fleet: enough idle domains but no placement");
        out.push_back(start(t, job, std::move(*place)));
        return true;
    };
    // Idle domains only fall during the scan, so a job larger than them now never fits. When
    // most waiting jobs are of gangs that fit, the queue is walked in order, testing each;
    // else only the per-gang queues of the gangs that fit are merged in queue order (a
    // gang dropped once it no longer fits), passing over the rest unseen.
    std::size_t fitting = 0;
    for (const auto& [gang, jobs] : by_gang_) {
        if (gang > pool_.count(DomainUse::idle)) {
            break;
        }
        fitting += jobs.size();
    }
    if (2 * fitting >= queue_.size()) {
        for (++it; it != queue_.end();) {
            const std::int64_t idle = pool_.count(DomainUse::idle);
            if (idle == 0 || idle < by_gang_.begin()->first) {
                break; // nothing left to backfill with: every waiting job needs more
            }
            const std::int64_t job = std::get<2>(*it);
            if (jobs_[ix(job)].domains <= idle && backfill(job)) {
                it = dequeue(t, it);
            } else {
                ++it;
            }
        }
        return out;
    }
    struct Cursor {
        std::int64_t gang;
        std::set<Key>* jobs;
        std::set<Key>::iterator at;
    };
    std::vector<Cursor> cursors;
    for (auto& [gang, jobs] : by_gang_) {
        if (gang > pool_.count(DomainUse::idle)) {
            break;
        }
        cursors.push_back({gang, &jobs, jobs.upper_bound(head)});
    }
    bool started = false;
    while (true) {
        const std::int64_t idle = pool_.count(DomainUse::idle);
        Cursor* next = nullptr;
        for (Cursor& c : cursors) {
            if (c.gang <= idle && c.at != c.jobs->end() && (next == nullptr || *c.at < *next->at)) {
                next = &c;
            }
        }
        if (next == nullptr) {
            break; // nothing left that fits the idle domains
        }
        const Key k = *next->at;
        ++next->at;
        if (backfill(std::get<2>(k))) {
            // Its cursor has moved past it; empty gangs are dropped after the scan.
            next->jobs->erase(k);
            queue_.erase(k);
            started = true;
        }
    }
    if (started) {
        for (auto g = by_gang_.begin(); g != by_gang_.end();) {
            g = g->second.empty() ? by_gang_.erase(g) : std::next(g);
        }
        pool_.set_smallest_wait(t, by_gang_.empty() ? 0 : by_gang_.begin()->first);
    }
    return out;
}

void Scheduler::close(SimTime t) {
    for (const Key& k : queue_) { // still waiting at the end: their waits so far
        const std::int64_t job = std::get<2>(k);
        if (t > queued_since_[ix(job)]) {
            records_[ix(job)].waiting += t - queued_since_[ix(job)];
            queued_since_[ix(job)] = t;
        }
    }
    for (const std::int64_t job : active_) {
        const auto v = ix(job);
        Running& run = run_[v];
        const Segment::Cut c = run.segment.cut(jobs_[v], t);
        JobRecord& r = records_[v];
        r.held += t - run.segment.granted;
        r.domain_seconds +=
            (t - run.segment.granted).seconds() * static_cast<double>(jobs_[v].domains);
        r.overhead += c.overhead;
        r.unsaved = c.lost;
        r.steps_done += c.durable_steps;
        run.active = false; // its end event, if any, is past the run's end
        ++run.epoch;
    }
    active_.clear(); // a second close adds nothing
    ends_.clear();
}

} // namespace trnsim::fleet
