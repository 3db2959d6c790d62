// Outages of the units of a fleet that keeps no state worth a checkpoint (a serving fleet):
// when each unit (an UltraServer or instance holding replicas) goes down and comes back, from
// the reliability section's failure processes, spares and repairs.
//
// Domains are the layout's (layout.hpp): the cluster's domains 0 .. D-1, then the spares. Unit u
// starts on domain u; the cluster's domains beyond the units that hold replicas and the spare
// domains form the spare pool (they age and fail while idle, as in the run model). Every
// component of a domain class (chip, hbm, host, nic, neuronlink, software) and every power
// domain runs its failure processes (FailureModel, the same random streams as the run model's
// replication 0). A failure has the blast radius of Layout::impact:
//   replace_domain  the domain goes to repair (RepairSpec); a unit on it goes down, and comes
//                   back on a spare at failure + detection + restart (the lowest-numbered free
//                   spare), or, when none is free, on the first domain to finish its repair,
//                   restart after it (units wait in the order they went down);
//   restart_only    a unit on the domain goes down and comes back at failure + detection +
//                   restart on the same domain; nothing is repaired;
//   power           every domain of the power domain is hit as by replace_domain.
// Switch classes and `degrade` effects do not take replicas down (requests reach replicas over
// the front-end network, which trnsim does not model): they are not drawn here.
// A failure trace (ReliabilitySpec::trace) is replayed beside the processes: at its time, the
// named component fails with the blast radius of its cause's process (FailureModel::
// trace_process), as a drawn failure would; a trace failure on a domain already in repair, or
// of a switch, takes nothing down. It does not re-arm or delay the component's own processes,
// except that a repair re-arms them all, as for a drawn failure.
// A domain's components are re-armed when its repair ends (its processes start anew); a failure
// of a domain already in repair is not drawn. A spare that fails while it is being brought up for
// a unit goes to repair, and the unit takes the next spare (its restart starts again).
//
// Determinism: a function of (spec, layout, units, seed) only; transitions come in time order,
// ties by unit.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/reliability/failure_model.hpp"
#include "trnsim/reliability/layout.hpp"
#include "trnsim/reliability/spec.hpp"

#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

namespace trnsim::reliability {

/// The time a failed domain spends in repair (automatic, manual, or automatic escalated to
/// manual; RepairSpec), drawn from `stream`.
Duration draw_repair_time(const RepairSpec& repair, engine::RandomStream& stream);

struct UnitTransition {
    SimTime time;
    std::uint32_t unit = 0;
    bool up = false;           ///< false: the unit goes down; true: it serves again
    std::uint16_t process = 0; ///< down: the failure's process (FailureModel::processes())
};

class OutageSchedule {
public:
    /// `units`: units 0 .. units-1 hold replicas (at most the layout's job domains).
    OutageSchedule(const ReliabilitySpec& spec, const Layout& layout, std::int64_t units,
                   std::uint64_t seed);

    /// Failures, repairs and returns in a row that change no unit before next() gives up:
    /// failures that outpace recovery (a domain failing again while every unit on it is
    /// brought up, a lemon in repair after repair) would otherwise be drawn up to the end of
    /// representable time, and a serving fleet would never finish.
    static constexpr std::uint64_t kMaxQuietSteps = 10'000'000;

    /// The next transition, in time order; nothing when no component can fail any more, or
    /// after kMaxQuietSteps draws without a transition (gave_up()); nothing ever after.
    std::optional<UnitTransition> next();
    /// Whether next() gave up (see kMaxQuietSteps).
    bool gave_up() const { return gave_up_; }
    const FailureModel& model() const { return model_; }

private:
    enum class Kind : std::uint8_t { fail, trace, repaired, back };
    struct Item {
        std::int64_t t;
        Kind kind;
        std::uint32_t a;   ///< fail: component slot; trace: trace failure; repaired: domain;
                           ///< back: unit
        std::uint32_t gen; ///< must match the target's generation
        bool operator>(const Item& o) const {
            if (t != o.t) {
                return t > o.t;
            }
            if (kind != o.kind) {
                return kind > o.kind;
            }
            return a > o.a;
        }
    };
    struct Component {
        ComponentClass cls = ComponentClass::chip;
        std::int64_t index = 0;   ///< within the class
        std::int64_t domain = -1; ///< power: the power domain
        std::uint32_t blocks = 0;
        std::uint32_t gen = 0;
        std::uint16_t process = 0; ///< of the pending failure
    };
    struct Domain {
        std::int64_t unit = -1;   ///< the unit it serves (or is brought up for), -1: spare
        bool repairing = false;
        std::uint32_t repair_blocks = 0;
        std::vector<std::uint32_t> components;
    };
    struct Unit {
        std::int64_t domain = -1; ///< -1: waiting for a domain
        bool down = false;
        std::uint32_t gen = 0;
        SimTime down_since; ///< when it last went down
    };

    /// A replayed failure: where it strikes and with which process.
    struct TraceHit {
        std::int64_t domain = -1; ///< power: the power domain; -1: a switch (no replica)
        std::uint16_t process = 0;
    };

    void arm(std::uint32_t slot, std::int64_t now);
    void fail(const Item& it);
    /// The blast radius of a failure of `process` on `domain` (a power domain for power) at
    /// `now`; true when the failed component keeps running its processes (it is not in repair).
    bool strike(std::int64_t domain, std::uint16_t process, std::int64_t now);
    void hit(std::int64_t domain, std::int64_t now, std::uint16_t process);
    void go_down(std::int64_t unit, std::int64_t now, std::uint16_t process);
    /// Gives `unit` (down, without a domain) a free spare, or queues it.
    void place(std::int64_t unit, std::int64_t now);
    void push(std::int64_t t, Kind k, std::uint32_t a, std::uint32_t gen);

    ReliabilitySpec spec_;
    const Layout& layout_;
    FailureModel model_;
    std::uint64_t seed_;
    std::vector<Impact> impact_; ///< by process
    std::vector<Component> comps_;
    std::vector<TraceHit> trace_;
    std::vector<Domain> domains_;
    std::vector<Unit> units_;
    std::vector<std::int64_t> spares_;  ///< free spare domains, kept sorted
    std::vector<std::int64_t> waiting_; ///< units without a domain, in the order they went down
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap_;
    std::vector<UnitTransition> out_;   ///< transitions produced, not yet returned
    std::size_t out_pos_ = 0;
    bool gave_up_ = false;
};

} // namespace trnsim::reliability
