// Failure processes compiled from the scenario, and the draws of each component's next failure.
//
// Every component of a class runs every process of that class (FailureSpec). A process's
// lifetime distribution has the process's mean (mtbf), divided by `bad_multiplier` for a bad
// component:
//   exponential  mean m
//   Weibull      shape k, scale m / Gamma(1 + 1/k)            (shape 1 is the exponential)
//   lognormal    sigma s, mu = ln m - s^2 / 2                  (so that the mean is m)
// A component fails at the earliest of its processes' draws, with that process as the cause;
// after repair (or at once, for software and power) all its processes start anew: a renewal
// process per component. With exponential lifetimes this is exactly a Poisson process of rate
// sum(1/m) per component.
//
// Bad components (rate heterogeneity, the lemon nodes of reliability.md §2 and AIReSim's bad
// servers, §3): component e is bad for a process with bad fraction f when u_e < f, where u_e is
// one uniform draw per component. The same u_e serves every process, so a lemon is a lemon for
// all its causes, and it stays bad after repairs.
//
// Determinism: every draw comes from the engine's counter-based streams keyed by (run seed,
// stream kind, entity id); a component keeps the number of Philox blocks it has used, so its
// k-th lifetime is the same whatever happens elsewhere (other components, partitions, threads).
// Replication r uses stream kinds of its own (stream_kind below), so replications are
// independent and each is reproducible alone.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/engine/event.hpp"
#include "trnsim/engine/rng.hpp"
#include "trnsim/reliability/spec.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::reliability {

/// Purposes of random streams; stream_kind() combines them with the replication.
enum class StreamPurpose : std::uint32_t { lifetime = 1, badness = 2, repair = 3 };

inline engine::StreamKind stream_kind(StreamPurpose p, std::uint32_t replication) {
    return (replication << 4) | static_cast<std::uint32_t>(p);
}

/// One compiled failure process (a FailureSpec, or a cause that only appears in the trace).
struct Process {
    ComponentClass cls = ComponentClass::chip;
    std::string cause;
    Effect effect = Effect::automatic;
    bool random = true; ///< false: trace-only cause, never drawn
    LifetimeKind kind = LifetimeKind::exponential;
    Seconds mean; ///< lifetime of a good component
    double shape = 1.0;
    double sigma = 1.0;
    double bad_fraction = 0.0;
    double bad_multiplier = 1.0;
    double weibull_scale = 1.0; ///< 1 / Gamma(1 + 1/shape): scale per unit of mean

    /// Mean failure rate of one component averaged over good and bad ones (per second).
    double population_rate() const {
        return random ? (1.0 - bad_fraction + bad_fraction * bad_multiplier) / mean.seconds() : 0.0;
    }
};

class FailureModel {
public:
    /// Processes of `failures` (in order), then one trace-only process per distinct
    /// (class, cause) of `trace` not already named by a failure entry.
    FailureModel(const std::vector<FailureSpec>& failures, const TraceSpec& trace);

    const std::vector<Process>& processes() const { return processes_; }
    /// Process ids (indices into processes()) of a class that draw lifetimes.
    const std::vector<std::uint16_t>& random_processes(ComponentClass c) const {
        return random_[static_cast<std::size_t>(c)];
    }
    /// The class has processes (random or from the trace), so its components are entities.
    bool present(ComponentClass c) const { return present_[static_cast<std::size_t>(c)]; }
    std::array<bool, kClassCount> present_classes() const { return present_; }
    /// The process a trace failure of (class, cause) is attributed to.
    std::uint16_t trace_process(ComponentClass c, const std::string& cause) const;

    struct Draw {
        Seconds lifetime; ///< +inf when the class has no random process
        std::uint16_t process = 0;
    };

    /// The next lifetime of component `entity` of class `c`, from block `blocks` of its
    /// lifetime stream; advances `blocks` past the words used.
    Draw draw(ComponentClass c, engine::EntityId entity, std::uint64_t seed,
              std::uint32_t replication, std::uint32_t& blocks) const;

    /// One lifetime of process `p` for a good (or bad) component, from `stream`.
    double sample(const Process& p, bool bad, engine::RandomStream& stream) const;

private:
    std::vector<Process> processes_;
    std::array<std::vector<std::uint16_t>, kClassCount> random_;
    std::array<bool, kClassCount> present_{};
    bool any_bad_ = false;
};

} // namespace trnsim::reliability
