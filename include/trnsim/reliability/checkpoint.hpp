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
// stall cost, never below one step. With no failure rate, auto takes no periodic checkpoint.
#pragma once

#include "trnsim/core/units.hpp"
#include "trnsim/reliability/spec.hpp"

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

/// The interval in running time between checkpoints; Duration::max() for none.
Duration checkpoint_interval(const CheckpointSpec& spec, const CheckpointCosts& costs,
                             double job_failure_rate, double step_s);

} // namespace trnsim::reliability
