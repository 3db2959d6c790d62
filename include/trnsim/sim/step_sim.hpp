// The step simulation (simulation.fidelity: step): one training step of a plan on the event
// engine, with every pipeline stage of every data-parallel replica as an entity and the
// communication between them through the network module.
//
// Entities. By default one entity per tensor-parallel group: the ranks of a TP group meet in a
// collective in every layer, so they move at the pace of their slowest member and one entity
// stands for all of them (its compute runs at the speed of its slowest chip). With
// entities = rank, every rank is an entity and each TP collective is a barrier of its group;
// the tests check that both give the same step. A context-parallel group spans several entities
// (cp TP groups), which therefore meet through the network in every layer.
//
// What each entity runs. Its stage's pipeline schedule (workload/schedule.hpp): for each task,
// wait for the activation (forward) or gradient (backward) from the neighbouring virtual stage,
// run the chunk's blocks op by op with the costs of the calibrated kernel model divided by the
// chip's speed factor, then send the result on. TP collectives cost their closed form
// (network/collective_cost.hpp; they run on the group's own NeuronLink or on-chip links), or
// with tp_collectives = flows run the phases network/collectives.hpp plans for the group's
// chips as flows, from the moment the entity (in rank mode, the group's last rank) reaches
// them, with no control latency (the group's ranks sit in one partition): they then share
// links with the pipeline, data- and expert-parallel flows. Every
// collective between entities runs through the network: pipeline transfers are flows between
// the two stages' chips (each context-parallel rank sends its own tokens to the same CP index
// of the next stage); context-parallel collectives (the key/value exchange of every layer, among
// the cp consecutive TP groups of one replica and stage), data-parallel collectives (over the
// dp x cp TP groups of a stage: gradient buckets, ZeRO-3 gathers, parameter all-gather) and
// expert-parallel ones (MoE all-to-all, expert gradients) are planned by
// network/collectives.hpp and their phases run as flows with max-min sharing, so that they
// contend with each other and with pipeline traffic. During the last microbatch's backward
// pass, each chunk's gradients go out in buckets of `grad_bucket` bytes as soon as their
// layers are done; the optimizer waits for all of them.
//
// A collective between entities starts one control latency after its last member reaches it
// and its members learn of its end one control latency after it (a notification crossing the
// fabric). The control latency is the chip's EFA latency when the cluster has several NeuronLink
// domains (the NeuronLink hop latency otherwise); it is also the engine's lookahead, so flow
// rates follow changes at most one control latency late (docs/adr/0001).
//
// Each entity's step divides into compute, exposed communication (TP collectives, waits for
// blocking collectives and for gradient reduction), bubble (waits for pipeline input) and idle
// (after its own end until the slowest entity's end); they sum to the step time.
//
// Determinism: the result does not depend on the thread count.
//
// The implementation is private to src/sim/ (step_layout.hpp lists its parts).
#pragma once

#include "trnsim/config/scenario.hpp"
#include "trnsim/sim/analytic.hpp"
#include "trnsim/topology/fabric.hpp"
#include "trnsim/workload/plan.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::sim {

/// One entity per tensor-parallel group or per rank (simulation.step_entities); collectives
/// between replicas as flows or in closed form (simulation.fabric_collectives). The scenario's
/// own enums, so that one spelling serves the schema, the options and the summary.
using StepEntities = config::StepEntityMode;
using FabricCollectives = config::FabricCollectiveMode;
using TpCollectives = config::TpCollectiveMode;

struct StepSimOptions {
    int threads = 1;
    StepEntities entities = StepEntities::tp_group;
    /// flows: collectives between replicas run through the flow model; closed_form: they cost
    /// their uncongested closed form (for comparisons and very large sweeps).
    FabricCollectives collectives = FabricCollectives::flows;
    /// closed_form: a TP collective costs its uncongested closed form inside its entity;
    /// flows: it runs the phases network::plan_collective gives for the group's chips as flows
    /// on the fabric, sharing links with every other transfer (simulation.tp_collectives).
    TpCollectives tp_collectives = TpCollectives::closed_form;
    /// With tp_collectives = flows: a TP group whose collectives cross only links that no
    /// other transfer can use runs each phase for its time alone on the fabric, without flows
    /// (the same max-min rates: nothing can share those links). false: every TP phase runs as
    /// flows (tests compare the two).
    bool lone_tp_groups = true;
    /// Repeated identical phases of a collective (the p - 1 steps of a ring) run as one phase
    /// moving all their bytes, plus one route latency (or on-chip step) per further repeat:
    /// the same time when the rates hold over the phase, and p - 1 times fewer flows. false:
    /// every step is its own set of flows.
    bool merge_repeats = true;
    /// Shards of the fabric solver: its work at window edges splits into this many pieces that
    /// run on all threads (network/flow_network.hpp). The shard count, never the thread count,
    /// fixes the floating-point path, so results do not depend on the threads.
    std::uint32_t fabric_shards = 64;
    /// Gradient bucket size (bytes per rank).
    double grad_bucket = 512.0 * 1024 * 1024;
    /// Speed factor of each chip (1 = nominal, 0.5 = takes twice as long); empty: all 1.
    std::vector<double> chip_speed;
    /// Ranks whose timeline is recorded (StepSimResult::trace).
    std::vector<std::int64_t> trace_ranks;
};

/// One entity's step. Times in seconds (the engine's nanoseconds converted for output); the
/// four parts sum to the step time.
struct EntityTimes {
    std::int64_t first_rank = 0;
    std::int32_t ranks = 0;
    std::int32_t stage = 0;
    std::int64_t replica = 0; ///< data-parallel index
    double speed = 1.0;
    Seconds compute; ///< kernels
    Seconds comm;    ///< exposed communication
    Seconds bubble;  ///< waiting for pipeline input
    Seconds idle;    ///< after its own end
    Seconds end;     ///< when its last task ended, from the step's start
};

/// Traffic of one link kind over the step.
struct LinkClassUse {
    std::string kind;
    std::int64_t links = 0;
    double capacity_bytes_per_s = 0.0; ///< sum over the links of the kind
    double bytes = 0.0;                ///< carried (a transfer counts once per link it crosses)
    double utilisation = 0.0;          ///< bytes / (capacity x step time)
};

/// A timeline slice of one rank: lane 0 compute stream, 1 collective engines, 2 pipeline tasks.
struct TraceSpan {
    std::int64_t rank = 0;
    std::int32_t lane = 0;
    SimTime start; ///< from the step's start
    Duration duration;
    std::uint32_t name = 0; ///< index into StepTrace::names
};

struct StepTrace {
    std::vector<std::string> names;
    std::vector<TraceSpan> spans; ///< ordered by rank, lane, start
};

struct StepSimStats {
    std::uint64_t entities = 0;
    std::uint32_t partitions = 0;
    Duration lookahead;
    std::uint64_t events = 0;
    std::uint64_t windows = 0;
    std::uint64_t shared_windows = 0; ///< run with the helper threads (timing-dependent)
    std::uint64_t flows = 0;
    std::uint64_t solves = 0;
    std::uint32_t fabric_shards = 0;
    std::uint64_t migrations = 0;     ///< components moved between fabric shards
    std::uint64_t migrated_flows = 0; ///< their flows
    std::uint64_t fabric_collectives = 0; ///< collective instances between entities
    /// tp_collectives = flows: TP groups whose phases ran for their time alone, without flows
    std::uint64_t lone_tp_groups = 0;
    int threads = 1;
    /// Wall-clock seconds of the fabric's window-edge work (network::FlowNetwork::EdgeTimes):
    /// routing new flows, placing them (beside the shards placement cannot touch, or overlapping
    /// the routing), the other shards' updates, the last completion events. For benchmarks;
    /// never written to results (they vary from run to run).
    Seconds fabric_route, fabric_place, fabric_other_shards;
    Seconds fabric_arrivals;
    /// The shard updates timed one by one (EdgeTimes): all, the largest per edge, and the
    /// least two threads can take for them; and the collective plans made before the run.
    Seconds fabric_updates, fabric_largest_update, fabric_two_thread_bound;
    Seconds plans;
};

struct StepSimResult {
    /// The step's figures. step_time, tokens_per_s, mfu, hfu, mbu, bubble, bubble_fraction and
    /// exposed_comm are the simulation's (bubble and exposed communication of the entity that
    /// ends last); forward, backward and the per-op breakdown are the analytic model's.
    StepEstimate estimate;
    std::vector<EntityTimes> entities;
    std::vector<LinkClassUse> links;
    StepTrace trace;
    StepSimStats stats;
};

/// Simulates one step of `plan` on `fabric` (built for the plan's cluster). Throws
/// std::invalid_argument when the fabric does not match the plan.
StepSimResult simulate_step(const workload::Plan& plan, const topology::Fabric& fabric,
                            const StepSimOptions& options);

} // namespace trnsim::sim
