#include "trnsim/serving/replica_sim.hpp"

#include "trnsim/core/assert.hpp"

#include <deque>
#include <limits>

namespace trnsim::serving {

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

/// Where the requests come from: the next arrival's time, the request, and the news of a
/// finish (closed-loop clients send their next request then).
class Feed {
public:
    virtual ~Feed() = default;
    virtual std::int64_t next_time() const = 0;
    virtual Request pop() = 0;
    virtual void finished(std::int64_t t) = 0;
};

class SourceFeed final : public Feed {
public:
    explicit SourceFeed(const RequestSource& source) : source_(source) {
        if (source.closed_loop()) {
            for (int c = 0; c < source.spec().arrival.concurrency; ++c) {
                issue(0);
            }
        } else {
            open_time_ = source.next_arrival(0, SimTime::zero());
            open_pending_ = source.issued(0, open_time_);
        }
    }
    std::int64_t next_time() const override {
        if (open_pending_) {
            return open_time_.ns();
        }
        return closed_.empty() ? kNone : closed_.front().first;
    }
    Request pop() override {
        if (open_pending_) {
            const Request r = source_.request(next_id_, open_time_);
            ++next_id_;
            open_time_ = source_.next_arrival(next_id_, open_time_);
            open_pending_ = source_.issued(next_id_, open_time_);
            return r;
        }
        const auto [t, id] = closed_.front();
        closed_.pop_front();
        return source_.request(id, SimTime::from_ns(t));
    }
    void finished(std::int64_t t) override {
        if (source_.closed_loop()) {
            issue(t);
        }
    }

private:
    void issue(std::int64_t t) {
        if (source_.issued(next_id_, SimTime::from_ns(t))) {
            closed_.emplace_back(t, next_id_++);
        }
    }
    const RequestSource& source_;
    std::uint64_t next_id_ = 0;
    SimTime open_time_;
    bool open_pending_ = false;
    std::deque<std::pair<std::int64_t, std::uint64_t>> closed_;
};

class ListFeed final : public Feed {
public:
    explicit ListFeed(const std::vector<Request>& list) : list_(list) {}
    std::int64_t next_time() const override {
        return next_ < list_.size() ? list_[next_].arrival.ns() : kNone;
    }
    Request pop() override { return list_[next_++]; }
    void finished(std::int64_t) override {}

private:
    const std::vector<Request>& list_;
    std::size_t next_ = 0;
};

ReplicaRun run(const InferenceSpec& spec, const IterationCost& cost, std::int64_t kv_blocks,
               Feed& feed, std::uint64_t seed, const ReplicaRunOptions& options) {
    ReplicaScheduler sched(spec.serving, cost, kv_blocks, seed, ReplicaRole::unified,
                           options.fast_forward);
    ReplicaRun out;
    out.capacity_blocks = sched.capacity_blocks();
    const double capacity = static_cast<double>(sched.capacity_blocks());
    const std::int64_t sample_ns = options.kv_sample.ns();
    const auto sample_until = [&](std::int64_t t) { // the samples strictly before t
        if (sample_ns <= 0) {
            return;
        }
        for (auto k = static_cast<std::int64_t>(out.kv_used_fraction.size()); k * sample_ns < t;
             ++k) {
            out.kv_used_fraction.push_back(
                static_cast<double>(sched.used_blocks_at(k * sample_ns)) / capacity);
        }
    };

    std::int64_t kick = kNone; // a step to begin, after the arrivals of its instant
    std::int64_t last = 0;
    while (true) {
        const std::int64_t ta = feed.next_time();
        const std::int64_t tb = sched.busy() ? sched.step_end() : kick;
        if (ta == kNone && tb == kNone) {
            break;
        }
        ++out.events;
        if (ta <= tb) {
            sample_until(ta);
            const Request r = feed.pop();
            TRNSIM_CHECK(r.arrival.ns() == ta, "serving: requests out of arrival order");
            if (out.records.size() <= r.id) {
                out.records.resize(r.id + 1);
            }
            RequestRecord& rec = out.records[r.id];
            rec.id = r.id;
            rec.arrival = SimTime::from_ns(ta);
            rec.input_tokens = static_cast<std::int32_t>(r.input_tokens);
            rec.output_tokens = static_cast<std::int32_t>(r.output_tokens);
            sched.add(r);
            if (sched.busy()) {
                sched.interrupt(ta);
            } else if (kick == kNone) {
                kick = ta;
            }
            continue;
        }
        sample_until(tb);
        if (sched.busy()) {
            for (const Completion& c : sched.end()) {
                RequestRecord& rec = out.records[c.request];
                rec.first_token = c.first_token;
                rec.finish = c.time;
                rec.preemptions = c.preemptions;
                last = c.time.ns();
                feed.finished(tb);
            }
            if (options.check_invariants) {
                sched.check_invariants();
            }
        }
        kick = kNone;
        if (feed.next_time() == tb) {
            kick = tb; // the arrivals of this instant join first
            continue;
        }
        sched.begin(tb);
    }
    sample_until(last + 1);
    out.stats = sched.stats();
    out.summary = summarize(out.records, spec.slo);
    add_itl(out.summary, sched.token_gaps());
    return out;
}

} // namespace

ReplicaRun simulate_replica(const InferenceSpec& spec, const IterationCost& cost,
                            std::int64_t kv_blocks, const RequestSource& source,
                            std::uint64_t seed, const ReplicaRunOptions& options) {
    SourceFeed feed(source);
    return run(spec, cost, kv_blocks, feed, seed, options);
}

ReplicaRun simulate_replica(const InferenceSpec& spec, const IterationCost& cost,
                            std::int64_t kv_blocks, const std::vector<Request>& requests,
                            std::uint64_t seed, const ReplicaRunOptions& options) {
    ListFeed feed(requests);
    return run(spec, cost, kv_blocks, feed, seed, options);
}

} // namespace trnsim::serving
