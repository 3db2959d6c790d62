// Checkpoint costs and the checkpoint interval.
//
// Costs for a job on `chips` chips in `instances` instances, with checkpoint size S (weights and
// optimizer state; see sim/run.cpp for the default):
//   sync     stall  = S / storage bandwidth
//   async    stall  = (S / chips) / snapshot bandwidth per chip     (HBM to host memory)
//            upload = S / storage bandwidth, in the background; durable when it completes
//   memory   stall  as async; peer copy = (S / instances) / EFA bandwidth per instance
//            (each instance sends its share to a peer's host memory), durable when done
// Restore after a job restart: S / restore bandwidth from storage (sync, async); for memory,
// max(host-to-HBM reload per chip, the replaced instances' share from their peers over EFA).
// A replica-scope restart loads the failed domain's share (S / domains) from a healthy replica
// over the domain's EFA bandwidth.
//
// Interval: a fixed duration, or auto: Daly's higher-order optimum (theory.hpp) for the job's
// current failure rate (sum over every component whose failure interrupts the job) and the
// stall cost, then raised to the two bounds a real job cannot go below:
//   - one step (a checkpoint is taken between steps);
//   - the background copy (async upload, memory peer copy): the next snapshot overwrites the
//     host buffer the previous one is still copying from, so snapshots cannot come faster
//     than their copies finish (the buffer holds one snapshot; the check below makes sure the
//     host has room for it).
// A fixed interval is raised the same way. With no failure rate, auto takes no periodic
// checkpoint. The chosen interval says which rule set it (CheckpointInterval::reason).
//
// Host memory: async and memory snapshots keep the instance's share of the checkpoint
// (S / instances) in host memory until copied; memory mode also holds a peer's copy (twice
// that). A share larger than the instance's host memory is an InputError at
// reliability.checkpoint.mode.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/reliability/spec.hpp"

#include <array>
#include <cstdint>

namespace trnsim::reliability {

struct CheckpointCosts {
    Duration stall;       ///< the job stops for this long
    Duration background;  ///< then, until durable (zero for sync)
    Duration restore;     ///< job-scope restore
    Duration replica_restore;
};

CheckpointCosts checkpoint_costs(const CheckpointSpec& spec, Bytes size, std::int64_t chips,
                                 std::int64_t instances, std::int64_t domains,
                                 Bandwidth efa_per_instance);

/// Why the interval is what it is.
enum class IntervalReason : std::uint8_t { fixed, daly, one_step, copy_bound, no_failures };

constexpr std::array<EnumName<IntervalReason>, 5> enum_names(IntervalReason) {
    return {{
        {IntervalReason::fixed, "fixed"},
        {IntervalReason::daly, "daly"},
        {IntervalReason::one_step, "one_step"},
        {IntervalReason::copy_bound, "copy_bound"},
        {IntervalReason::no_failures, "no_failures"},
    }};
}
inline const char* to_string(IntervalReason v) { return enum_name(v); }

struct CheckpointInterval {
    Duration every;        ///< running time between checkpoints; Duration::max(): none
    IntervalReason reason = IntervalReason::fixed;
    Duration daly;         ///< auto: Daly's optimum before the bounds (zero otherwise)
};

/// The interval in running time between checkpoints.
CheckpointInterval checkpoint_interval(const CheckpointSpec& spec, const CheckpointCosts& costs,
                                       double job_failure_rate, double step_s);

/// Host memory per instance that checkpoints keep: S / instances for async, twice that for
/// memory (its own snapshot and a peer's copy), nothing for sync.
Bytes checkpoint_host_bytes(const CheckpointSpec& spec, Bytes size, std::int64_t instances);

} // namespace trnsim::reliability
