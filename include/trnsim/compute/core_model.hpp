// The detailed NeuronCore model: a discrete-event simulation of one physical NeuronCore
// executing a Program (core_program.hpp), cycle-approximate, from the chip's data
// (topologies/chips/*.yaml; sources in shared/reference/trainium.md §1-2).
//
// What runs:
//   - Each compute engine (TensorE, VectorE, ScalarE, GpSimdE) runs its own instruction stream.
//     An instruction starts when its unit is free and every instruction it depends on has
//     finished (semaphore waits, NKI1), and lasts its cycles over the engine's clock. TensorE
//     issues strictly in program order. The streams of VectorE, ScalarE and GpSimdE are what the
//     compiler's scheduler would emit: each engine starts the oldest ready instruction among the
//     next 16 of its stream (a list schedule with a bounded lookahead), so a lowering need not
//     interleave its tiles by hand to keep them busy.
//   - TensorE has two units: LoadStationary runs on the weight-load path, so the next weights
//     load while the array streams the current MultiplyMoving (NKI1, PERF: background
//     LoadStationary). A MultiplyMoving waits for the array and for its LoadStationary.
//   - TensorE warm-up throttling (THR): before its first MultiplyMoving, and whenever the
//     array's busy fraction over the last warmup_window (3 us) has fallen below
//     warmup_fraction (50%), the array restarts at warmup_fraction of its rate and ramps
//     linearly back to full rate over warmup_window. A MultiplyMoving of W ns at full rate
//     started tau after the ramp began ends at tau1 with
//         integral_tau^tau1 (f + (1 - f) s / window) ds = W   (rate 1 after the ramp).
//   - DMA queues issue their transfers in order once each transfer's dependencies are done;
//     issuing occupies one of the core's dma_generators descriptor generators for
//     dma_issue_time (NKI2: 2 DGEs, ~600 ns per DGE-issued instruction). A transfer is ready
//     dma_setup_latency later (DMAG: ~1.3 us; queued transfers overlap their latencies) and
//     then moves its bytes, after the previous transfer of its queue. Moving a descriptor of b
//     bytes occupies one DMA engine for b / dma_engine_bandwidth + dma_descriptor_overhead,
//     so small descriptors (below 2-4 KiB) waste engine time (DMAG). A transfer spreads over up
//     to min(dma_engines, descriptors) engines (DMAO: "parallelized up to 16 DMA engines").
//   - The transfers in flight share the core's DMA engines max-min fairly (progressive
//     filling). The chip's HBM bandwidth is shared by its physical cores, all assumed as busy as
//     this one, so the engines usable at once are min(dma_engines, HBM bandwidth / cores /
//     dma_engine_bandwidth) (Trainium2: 2.9 TB/s / 8 / 23 GB/s = 15.8 of 16).
// Time is double nanoseconds inside the model (the engine's integer ticks are too coarse for
// 27 ns instructions); results are deterministic: the same Program gives the same CoreRun.
//
// The PSUM and SBUF capacities are checked when the Program is built (ProgramBuilder::fits);
// accumulation into PSUM banks and their evacuation are ordinary dependencies.
//
// Complexity: O(instructions x queues) per run; a 4096x8192x8192 BF16 matmul (about 100,000
// instructions per core) simulates in tens of milliseconds.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_program.hpp"
#include "trnsim/core/enum_names.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace trnsim::compute {

/// Engines reported separately; DMA aggregates the core's DMA engines.
enum class EngineKind { tensor, vector, scalar, gpsimd, dma };
inline constexpr std::size_t kEngineKinds = 5;
constexpr std::array<EnumName<EngineKind>, 5> enum_names(EngineKind) {
    return {{
        {EngineKind::tensor, "TensorE"},
        {EngineKind::vector, "VectorE"},
        {EngineKind::scalar, "ScalarE"},
        {EngineKind::gpsimd, "GpSimdE"},
        {EngineKind::dma, "DMA"},
    }};
}
inline const char* to_string(EngineKind v) { return enum_name(v); }

/// The outcome of running one Program.
struct CoreRun {
    double seconds = 0.0;
    /// seconds x TensorE clock.
    double tensor_cycles = 0.0;
    /// Busy time per engine, in seconds: TensorE counts the array; DMA counts engine-seconds
    /// over the engines usable at once (so 1.0 x seconds means the HBM share was saturated).
    std::array<double, kEngineKinds> busy_seconds{};
    /// Instructions executed per unit.
    std::array<std::int64_t, kUnitCount> instructions{};
    double flops = 0.0;
    double hbm_bytes = 0.0;
    /// Simulation events processed.
    std::int64_t events = 0;

    double busy_fraction(EngineKind e) const {
        return seconds > 0.0 ? busy_seconds[static_cast<std::size_t>(e)] / seconds : 0.0;
    }
    double flops_per_s() const { return seconds > 0.0 ? flops / seconds : 0.0; }
    double bytes_per_s() const { return seconds > 0.0 ? hbm_bytes / seconds : 0.0; }
    /// The busiest engine.
    EngineKind bottleneck() const;
};

/// Runs Programs on one NeuronCore of `chip`.
class CoreSimulator {
public:
    explicit CoreSimulator(const ChipSpec& chip);

    /// Start and end (seconds) of every instruction of a run, in program order; for a DMA,
    /// from its issue to the end of its transfer.
    struct Span {
        double start = 0.0;
        double end = 0.0;
    };

    /// Simulates `p` from an idle core (cold TensorE) to its last instruction's end; fills
    /// `timeline` when given.
    /// Thread-safety: const; concurrent runs on one simulator are safe.
    CoreRun run(const Program& p, std::vector<Span>* timeline = nullptr) const;

    /// DMA engines usable at once (fractional when HBM is the limit).
    double dma_engines_usable() const { return dma_usable_; }

private:
    const ChipSpec* chip_;
    double dma_usable_;
};

} // namespace trnsim::compute
