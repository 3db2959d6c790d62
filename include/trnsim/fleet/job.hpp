// A training job of a fleet, at rate level: it runs its steps at a fixed step time on the gang
// of domains it holds, takes a checkpoint every few steps, and when preempted or hit by a
// failure loses the work since its last checkpoint and pays a restore when it starts again.
//
// One start of a job (a "segment"): from its grant it spends `launch` (processes, runtime and
// compiled graphs loaded; every start) and, if it has durable progress to resume from,
// `restore` (the checkpoint read back); then it runs its R remaining steps. Every
// `checkpoint_steps` steps it stops for `save` (a synchronous checkpoint; none after the last
// step). With s the step time and c the checkpoint steps, the segment ends after
//   launch [+ restore] + R s + floor((R - 1) / c) save.
// Interrupted at time e after the start of its steps, it has made k = min(floor(e / (c s +
// save)), floor((R - 1) / c)) checkpoints durable: k c steps are kept, the time after the last
// of them is lost. These are the costs of reliability/checkpoint.hpp's sync
// mode, computed by the caller for the job's size.
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace trnsim::fleet {

/// One gang a job may run on (an elastic job's allowed shapes): its domains and what its plan
/// gives there.
struct JobShape {
    std::int64_t domains = 1;
    Duration step;
    std::int64_t checkpoint_steps = std::numeric_limits<std::int64_t>::max();
    Duration save;
    Duration restore;
    Duration launch;
};

struct JobSpec {
    std::string name;
    /// Index of the tenant whose quota the job counts against (0 when there are no quotas).
    std::int64_t tenant = 0;
    SimTime submit;
    std::int64_t domains = 1; ///< gang size, whole domains
    std::int64_t steps = 1;
    Duration step;            ///< step time on `domains` domains
    /// Higher runs first under the priority policy, and may preempt lower.
    int priority = 0;
    /// Steps between checkpoints (a huge value: none).
    std::int64_t checkpoint_steps = std::numeric_limits<std::int64_t>::max();
    Duration save;    ///< stall of one checkpoint
    Duration restore; ///< reading the last checkpoint back, on a restart
    Duration launch;  ///< from the grant to the first step, every start
    /// An elastic job's allowed gangs, in increasing domains, the first being the fields
    /// above; empty: it runs on `domains` only. At each start (the first, and after a
    /// preemption or a failure sent it back to the queue) it takes the largest that the idle
    /// domains and its tenant's quota allow, its steps kept (docs/fleet.md, "Elastic jobs").
    std::vector<JobShape> shapes;

    /// Runs on `x`: its gang, step time and checkpoint costs become x's.
    void set_shape(const JobShape& x) {
        domains = x.domains;
        step = x.step;
        checkpoint_steps = x.checkpoint_steps;
        save = x.save;
        restore = x.restore;
        launch = x.launch;
    }
};

/// One start of a job, computed in closed form (see the header comment).
struct Segment {
    SimTime granted;
    Duration setup;          ///< launch, plus restore when resuming
    std::int64_t steps = 0;  ///< the steps left at the grant
    /// When the segment's last step ends (no interruption); SimTime::max() past the range of
    /// simulated time (it never ends).
    SimTime end(const JobSpec& j) const;
    /// Cut short at `t` (granted <= t <= end). The time held, t - granted, is split three ways:
    /// the durable steps' running time, the overhead (the setup or the part of it paid, and the
    /// completed checkpoints' stalls) and the lost time (everything after the last durable
    /// checkpoint: steps not kept, a checkpoint cut short).
    struct Cut {
        std::int64_t durable_steps = 0;
        Duration overhead;
        Duration lost;
    };
    Cut cut(const JobSpec& j, SimTime t) const;
};

/// What happened to a job (the per-job table).
struct JobRecord {
    SimTime submit;
    /// Domains of its latest start (its gang; an elastic job's shape).
    std::int64_t gang = 0;
    /// Starts on another gang than the start before (an elastic job's resizes).
    std::int64_t resizes = 0;
    /// Domain time held (s): each grant's time x its gang.
    double domain_seconds = 0.0;
    SimTime first_start = SimTime::max(); ///< max: never started
    SimTime end = SimTime::max();         ///< max: not finished
    Duration waiting;                     ///< in the queue, over all its waits
    std::int64_t starts = 0;
    std::int64_t preemptions = 0;
    std::int64_t failures = 0;            ///< interruptions by a failed domain
    std::int64_t steps_done = 0;          ///< durable or finished steps
    /// The time it held domains = steps_done x step + overhead + lost + unsaved (a test checks
    /// it).
    Duration overhead;                    ///< launch, restore and completed checkpoint stalls
    Duration lost;                        ///< held time whose work was lost
    /// Running at the end of the run: the time since its last durable checkpoint.
    Duration unsaved;
    Duration held;                        ///< from each grant to its release or the run's end
    bool finished() const { return end != SimTime::max(); }
};

} // namespace trnsim::fleet
