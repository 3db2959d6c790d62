// The run simulation's engine model (private to the reliability module; run.hpp describes it).
//
// Entities: the controller (entity 0), power domains, domains and components (layout.hpp).
// Handlers are non-template functions that schedule through a small Sink interface, so the
// model's logic lives in the .cpp files and the engine template only forwards (one virtual
// call per scheduled event; the run simulation handles a few events per failure, not per step):
// Setup and RunModel in run_model.cpp, the Controller's job state machine in
// run_controller.cpp, how failures reach the job in run_failures.cpp. The controller's parts,
// each with its own tests (tests/unit/reliability/run_parts_test.cpp): JobLedger (the job's
// states, progress and kept or lost time, job_ledger.cpp), JobDomains (slots, spares and
// vacancies, job_domains.cpp), JobFabric (degraded network elements and the job's share of
// its bandwidth, job_fabric.cpp), ReplicaSlots (replica scope's failed slots and replicas,
// replica_slots.cpp).
#pragma once

#include "trnsim/engine/event.hpp"
#include "trnsim/engine/simulator.hpp"
#include "trnsim/reliability/checkpoint.hpp"
#include "trnsim/reliability/failure_model.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/run.hpp"

#include "job_domains.hpp"
#include "job_fabric.hpp"
#include "job_ledger.hpp"
#include "replica_slots.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace trnsim::reliability::detail {

/// The engine's lookahead, and how far behind the true time the controller runs: every report
/// reaches it this long after it happened and its own timers fire this long after their time,
/// so it handles everything in true-time order and accounts for it at its true time. The value
/// has no effect on results; a long one lets a window hold many events (an hour of them).
inline constexpr std::int64_t kReportLatencyNs = std::int64_t{3600} * 1'000'000'000;

/// Schedules events on behalf of the entity being handled (or, before a run, of the target).
class Sink {
public:
    virtual ~Sink() = default;
    virtual void at(engine::EntityId target, std::int64_t time, engine::EventType type,
                    std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) = 0;
};

template <class Queue>
class ContextSink final : public Sink {
public:
    explicit ContextSink(engine::Context<Queue>& ctx) : ctx_(ctx) {}
    void at(engine::EntityId target, std::int64_t time, engine::EventType type,
            std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) override {
        ctx_.schedule_at_ns(target, time, type, payload, aux, priority);
    }

private:
    engine::Context<Queue>& ctx_;
};

template <class Simulator>
class SimulatorSink final : public Sink {
public:
    explicit SimulatorSink(Simulator& sim) : sim_(sim) {}
    void at(engine::EntityId target, std::int64_t time, engine::EventType type,
            std::uint64_t payload, std::uint16_t aux, std::uint32_t priority) override {
        sim_.schedule(target, SimTime::from_ns(time), type, payload, aux, priority);
    }

private:
    Simulator& sim_;
};

/// Everything fixed across replications, derived once from the RunInput.
class Setup {
public:
    explicit Setup(const RunInput& input);

    const RunInput& input;
    FailureModel failures;
    Layout layout;
    std::vector<Impact> impact;  ///< per process
    std::int64_t work_ns = 0;    ///< failure-free training time
    std::int64_t step_ns = 0;    ///< one full step
    struct TraceEvent {
        std::int64_t time_ns;
        engine::EntityId entity;
        std::uint16_t process;
    };
    std::vector<TraceEvent> trace;

    /// Failure rate (per second) of everything that interrupts a job on `domains` domains.
    double job_failure_rate(std::int64_t domains) const;
    CheckpointCosts costs(std::int64_t domains) const;
    Duration interval(std::int64_t domains) const;
    /// Step time on `domains` domains at EFA factor `f` (cached), or nothing. Thread-safe:
    /// replications running at once share the cache.
    std::optional<double> step_time(std::int64_t domains, double f) const;
    /// The largest count <= `domains` the job can run on (0: none).
    std::int64_t runnable_domains(std::int64_t domains) const;
    /// The run's fixed facts on the full job (what simulate() and expect() report).
    RunFacts facts() const;

private:
    mutable std::mutex step_mutex_;
    mutable std::map<std::pair<std::int64_t, double>, std::optional<double>> step_cache_;
};

/// The job's state machine (run.hpp), at the controller entity. Times are the true
/// ("semantic") times of what happened; events reach it kReportLatencyNs later.
class Controller {
public:
    Controller(const Setup& setup, bool record, bool record_checkpoints);

    void start(Sink& sink);
    void handle(Sink& sink, const engine::Event& e);
    bool finished() const { return finished_; }
    std::int64_t end_ns() const { return end_ns_; }
    /// Closes the accounting at `end` (the job's end when finished) into `out`.
    void finish(std::int64_t end, ReplicationResult& out);

private:
    // Reports.
    void on_failure(Sink& s, std::int64_t t, const engine::Event& e);
    void on_repaired(Sink& s, std::int64_t t, std::int64_t domain);
    void on_restored(Sink& s, std::int64_t t, engine::EntityId element);
    // Timers.
    void on_job_timer(Sink& s, std::int64_t t);
    void on_upload_timer(Sink& s, std::int64_t t);
    void on_slot_timer(Sink& s, std::int64_t t, std::int64_t slot);

    // The job as a whole (its account over time is JobLedger's).
    void resume(Sink& s, std::int64_t t);
    void schedule_next(Sink& s, std::int64_t t);
    void begin_checkpoint(Sink& s, std::int64_t t);
    void commit(Sink& s, std::int64_t t);
    void abort_checkpoint(std::int64_t t);
    void interrupt(Sink& s, std::int64_t t);
    void after_detection(Sink& s, std::int64_t t);
    void begin_restart(Sink& s, std::int64_t t, std::int64_t domains);
    void complete(std::int64_t t);
    double current_rate();
    void rate_changed(Sink& s, std::int64_t t);

    // Domains, slots and spares (the bookkeeping is JobDomains').
    void domain_down(Sink& s, std::int64_t t, std::int64_t domain, int process, bool count);
    void fill_vacancies(std::int64_t t);
    std::int64_t take_spare(std::int64_t t, std::int64_t slot);
    void serve_waiting_slots(Sink& s, std::int64_t t);

    // Replica scope.
    void replica_failure(Sink& s, std::int64_t t, std::int64_t slot, bool needs_domain);
    void stall(Sink& s, std::int64_t t);

    void timer(Sink& s, std::int64_t at, std::uint16_t kind, std::uint64_t payload);
    void record(std::int64_t t, EventKind kind, engine::EntityId entity, std::int64_t domain,
                int process);
    void count_interruption(int process);

    const Setup& setup_;
    const bool record_;
    const bool record_checkpoints_;
    ReplicationResult r_;
    JobLedger ledger_; // accounts into r_

    bool finished_ = false;
    std::int64_t end_ns_ = 0;
    std::int64_t done_at_ = 0;
    std::uint64_t epoch_ = 0;
    std::uint64_t upload_epoch_ = 0;
    bool upload_in_flight_ = false;
    bool checkpoint_deferred_ = false;
    std::int64_t stall_until_ = 0; ///< replica scope: the whole job hangs until then
    bool job_recovery_ = false;    ///< replica scope fell back to a job restart

    JobDomains domains_;
    std::int64_t active_domains_ = 0;
    Duration interval_;
    CheckpointCosts costs_;

    ReplicaSlots replicas_; // replica scope

    JobFabric fabric_;
    double fabric_factor_ = 1.0;

    std::pair<engine::EntityId, std::int64_t> last_power_ = {0, -1};
};

/// The engine model: components, domains, power domains and the controller.
class RunModel {
public:
    RunModel(const Setup& setup, std::uint64_t seed, std::uint32_t replication, bool record,
             bool record_checkpoints = true);

    template <class Queue>
    void handle(engine::Context<Queue>& ctx, const engine::Event& e) {
        ContextSink<Queue> sink(ctx);
        dispatch(sink, ctx.self(), ctx.now_ns(), e);
    }
    void prefetch(engine::EntityId e) const { __builtin_prefetch(&comps_[e], 1); }

    /// Failures before `horizon` (ns, exclusive) are queued; set before each chunk.
    void set_horizon(std::int64_t horizon) { horizon_ = horizon; }
    /// Draws every component's first failure, queues the trace and starts the controller.
    void prime(Sink& sink, std::int64_t end);
    /// Queues the failures that now fall before the horizon.
    void queue_due(Sink& sink);

    bool finished() const { return controller_.finished(); }
    std::int64_t end_ns() const { return controller_.end_ns(); }
    void finish(std::int64_t end, ReplicationResult& out) { controller_.finish(end, out); }

private:
    struct Component {
        std::int64_t next_ns = engine::kNever; ///< pending failure time
        std::uint32_t generation = 0;          ///< invalidates queued failures
        std::uint32_t blocks = 0;              ///< Philox blocks of its lifetime stream used
        std::uint32_t domain = 0;              ///< physical domain (domain classes)
        std::uint16_t process = 0;             ///< cause of the pending failure
        ComponentClass cls = ComponentClass::chip;
        std::uint8_t flags = 0;
    };
    static constexpr std::uint8_t kFailed = 1;
    static constexpr std::uint8_t kQueued = 2;
    static constexpr std::uint8_t kIsComponent = 4;

    struct DomainState {
        bool in_service = true;
        std::uint32_t repair_blocks = 0;
        std::vector<engine::EntityId> failed;
    };

    void dispatch(Sink& s, engine::EntityId self, std::int64_t now, const engine::Event& e);
    void fail(Sink& s, engine::EntityId self, std::int64_t now, std::uint16_t process);
    void domain_hit(Sink& s, std::int64_t now, std::int64_t domain, engine::EntityId source,
                    std::uint16_t aux);
    void arm(Sink& s, engine::EntityId id, std::int64_t now);
    void queue(Sink& s, engine::EntityId id);
    Duration repair_time(engine::RandomStream& stream) const;
    void report(Sink& s, std::int64_t now, engine::EventType type, std::uint64_t payload,
                std::uint16_t aux);

    const Setup& setup_;
    const std::uint64_t seed_;
    const std::uint32_t replication_;
    std::int64_t horizon_ = 0;
    std::vector<Component> comps_;   ///< by entity id (unused for non-components)
    std::vector<DomainState> domains_;
    Controller controller_;
};

// Event types and report flags.
inline constexpr engine::EventType kFail = 1;            ///< payload: generation
inline constexpr engine::EventType kTraceFail = 2;       ///< payload: process
inline constexpr engine::EventType kDomainHit = 3;       ///< payload: source entity; aux: process | flags
inline constexpr engine::EventType kRepairDone = 4;
inline constexpr engine::EventType kElementRepaired = 5; ///< payload: generation
inline constexpr engine::EventType kReportFailure = 6;   ///< payload: domain << 32 | entity; aux: process | flags
inline constexpr engine::EventType kReportRepaired = 7;  ///< payload: domain
inline constexpr engine::EventType kReportRestored = 8;  ///< payload: entity
inline constexpr engine::EventType kTimer = 9;           ///< aux: timer kind

inline constexpr std::uint16_t kProcessMask = 0x0fff;
inline constexpr std::uint16_t kWentDown = 0x8000;  ///< the failure took its domain out of service
inline constexpr std::uint16_t kSecondary = 0x4000; ///< a power failure's hit on a domain
inline constexpr std::uint32_t kNoDomain = 0xffffffffu;

inline constexpr std::uint16_t kJobTimer = 0;
inline constexpr std::uint16_t kUploadTimer = 1;
inline constexpr std::uint16_t kSlotTimer = 2;
inline constexpr std::uint32_t kTimerPriority = 1; ///< after reports of the same time

/// Simulated time per chunk: failures due within a chunk are queued at its start.
inline constexpr std::int64_t kChunkNs = std::int64_t{2} * 86400 * 1'000'000'000;

/// One replication's model and its chunks: the engine runs up to pause(), then advance()
/// queues the next chunk's failures, until the job is done or the run's end is reached.
/// simulate() drives it on an engine of its own, RunTenant on a shared one; both make the
/// same calls in the same order, so their results are identical.
class Replication {
public:
    Replication(const Setup& setup, const RunControl& control, std::uint32_t replication,
                std::int64_t end)
        : model(setup, control.seed, replication, control.record && replication == 0,
                control.record_checkpoints),
          end_(end), horizon_(std::min(kChunkNs, end)) {}

    /// The engine handles every event before this time, then calls advance().
    std::int64_t pause() const { return horizon_ + kReportLatencyNs; }
    void prime(Sink& sink) {
        model.set_horizon(pause());
        model.prime(sink, end_);
    }
    /// After a run up to pause(): false when the replication is over, else queues the next
    /// chunk's failures.
    bool advance(Sink& sink) {
        if (model.finished() || horizon_ >= end_) {
            return false;
        }
        horizon_ = std::min(horizon_ + kChunkNs, end_);
        model.set_horizon(pause());
        model.queue_due(sink);
        return true;
    }
    ReplicationResult result(std::uint64_t engine_events) {
        ReplicationResult r;
        model.finish(model.finished() ? model.end_ns() : end_, r);
        r.engine_events = engine_events;
        return r;
    }

    RunModel model;

private:
    std::int64_t end_;
    std::int64_t horizon_;
};

/// The end of a run: its duration, else its time limit.
inline std::int64_t run_end(const RunControl& control) {
    return control.duration > Duration::zero() ? control.duration.ns() : control.time_limit.ns();
}

/// Fills a summary's metrics, estimates and per-process means from its replications.
void summarize(RunSummary& out, const RunInput& input);

} // namespace trnsim::reliability::detail
