// The description of a Trainium chip, its NeuronCores and the instance / UltraServer it is sold
// in. Values come from the chip data files topologies/chips/<name>.yaml (loaded by the config
// module), each of which cites its sources (shared reference keys such as T2, NKI2, TRN2).
//
// Terms: a *physical core* is one NeuronCore; a *rank* is a logical NeuronCore (LNC): with
// LNC=2 two physical cores act as one rank, so a Trainium2 chip (8 cores) holds 4 ranks.
#pragma once

#include "trnsim/compute/kernel_model_spec.hpp"
#include "trnsim/core/enum_names.hpp"
#include "trnsim/core/scale_up.hpp"
#include "trnsim/core/units.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::compute {

/// Numeric formats of the compute path. Weights, activations and gradients use the precision;
/// optimizer master weights and moments are always FP32.
enum class Precision { fp8, bf16, fp32 };

constexpr std::array<EnumName<Precision>, 3> enum_names(Precision) {
    return {{
        {Precision::bf16, "bf16"},
        {Precision::fp8, "fp8"},
        {Precision::fp32, "fp32"},
    }};
}
inline const char* to_string(Precision v) { return enum_name(v); }
/// Bytes per element of activations and weights at this precision (fp8: 1, bf16: 2, fp32: 4).
int element_bytes(Precision p);

/// TensorE: a systolic array (rows = contraction/partition dim, cols = stationary free dim).
struct TensorEngineSpec {
    int rows = 128;
    int cols = 128;
    Frequency clock;
    /// Largest moving-tile free size (columns streamed per MultiplyMoving).
    int moving_free_max = 512;
    /// Minimum cycles of one MultiplyMoving instruction (MM_INIT_LATENCY).
    int min_matmul_cycles = 64;
    /// FP8 "double row": contraction of 2 x rows in the time of rows.
    int fp8_rate_multiplier = 2;
    /// Microscaling (MXFP8, MXFP4) matmuls at the FP8 rate (NeuronCore-v4: NKI3).
    bool mx_matmul = false;
    /// FP32 matmul costs this many times a BF16 one.
    int fp32_rate_divisor = 4;
    /// LoadStationary is this many times faster than a MultiplyMoving of the same free size
    /// (NKI1, PERF: "up to 4x"; 128 columns in ~32 cycles). It runs on its own path, so the
    /// next stationary tile loads while the current MultiplyMoving streams.
    int load_stationary_speedup = 4;
    /// Warm-up throttling (THR): when the array's utilisation over the last `warmup_window`
    /// falls below `warmup_fraction` (and before its first instruction), the array restarts at
    /// `warmup_fraction` of its rate and ramps linearly to full rate over `warmup_window`.
    double warmup_fraction = 0.5;
    Duration warmup_window = Duration::from_ns(3000);
};

/// VectorE, ScalarE or GpSimdE: a clock and elements processed per cycle.
struct VectorEngineSpec {
    Frequency clock;
    int elements_per_cycle = 128;
    /// VectorE performance mode (NeuronCore-v3, NKI2): elements per cycle of the instructions
    /// that qualify for it, single-input copies and scalar maps (tensor_copy, tensor_scalar)
    /// whose input and output are BF16/FP16 tiles in SBUF. 0: no such mode (NeuronCore-v2),
    /// every instruction at elements_per_cycle. Only VectorE has one.
    int perf_mode_elements_per_cycle = 0;
    /// Fixed cost of one instruction, in engine cycles.
    int instruction_overhead_cycles = 0;
};

/// One physical NeuronCore.
struct CoreSpec {
    TensorEngineSpec tensor;
    VectorEngineSpec vector;
    VectorEngineSpec scalar;
    VectorEngineSpec gpsimd;
    Bytes sbuf;
    int sbuf_partitions = 128;
    Bytes psum;
    int psum_banks = 8;
    int dma_engines = 16;
    Bandwidth dma_engine_bandwidth;
    /// Fixed latency from issuing a DMA to its first byte (descriptor fetch, semaphores; DMAG).
    /// Pipelined: DMAs queued behind one another overlap their latencies.
    Duration dma_setup_latency;
    /// Time a DMA engine spends per descriptor (one contiguous run of bytes, typically one
    /// partition's row) besides moving its bytes: the per-packet cost that makes transfers
    /// below 2-4 KiB per partition inefficient (DMAG).
    Duration dma_descriptor_overhead = Duration::from_ns(16);
    /// Descriptor generators shared by the core's DMA queues, and the time one needs to issue
    /// a DMA instruction (NKI2: 2 DGEs per core, ~600 ns per DGE-issued instruction).
    int dma_generators = 2;
    Duration dma_issue_time = Duration::zero();
    /// The engines can round their outputs stochastically (NeuronCore-v2 and later): what lets
    /// an optimizer keep no FP32 master copy (workload.optimizer.master_weights: none).
    bool stochastic_rounding = false;

    /// Bytes of one partition of SBUF, and of one PSUM bank in one partition.
    std::int64_t sbuf_partition_bytes() const { return sbuf.count() / sbuf_partitions; }
    std::int64_t psum_bank_bytes() const { return psum.count() / (sbuf_partitions * psum_banks); }
};

/// The instance that holds the chips (trn2.48xlarge, trn1.32xlarge).
struct InstanceSpec {
    std::string name;
    int chips = 16;
    /// How its chips (and its UltraServer's) are connected.
    ScaleUpKind scale_up = ScaleUpKind::torus;
    /// NeuronLink torus shape inside the instance, e.g. {4, 4}; empty when switched.
    std::vector<int> torus;
    /// NeuronLink switches inside one instance (a switched server's first-level NeuronSwitch;
    /// 0 for a torus): failing components of the reliability model.
    int neuronswitches = 0;
    int vcpus = 0;
    Bytes host_memory;
    /// Total EFA bandwidth of the instance and the number of interfaces it is split over.
    Bandwidth efa_bandwidth;
    int efa_interfaces = 1;
    /// On-demand price, USD per instance-hour.
    Money price_per_hour;
    /// Other published prices per instance-hour (zero: none sourced): the effective hourly
    /// rate of a 1-year and a 3-year reservation, and an EC2 Capacity Block.
    Money price_reserved_1y;
    Money price_reserved_3y;
    Money price_capacity_block;
};

/// A group of instances joined by NeuronLink (Trn2 UltraServer: 4 instances, 4x4x4 torus).
struct UltraServerSpec {
    int instances = 4;
    /// Racks the instances fill in equal shares, the same chip position of every rack joined by
    /// direct links (Trn3 Gen2: 2 racks of 18 servers); 1 for an UltraServer in one rack.
    int racks = 1;
    /// NeuronLink switches joining its instances, beyond the instances' own (Trn3 Gen2: the two
    /// second-level NeuronSwitch-v1): failing components of the reliability model.
    int neuronswitches = 0;
};

/// What a compiled inference graph costs besides its kernels and collectives (the chip file's
/// `serving` section; docs/serving.md): fixed costs that the calibrated kernel model does not
/// see. Zero (and efficiency 1) when a chip file has no `serving` section. The values in the
/// presets are fitted by serving::fit_serving_costs (tests/support/serving_published.hpp) to
/// named published rows.
struct ServingCosts {
    /// Per kernel of a compiled inference graph: the semaphore wait, instruction fetch and issue
    /// between one fused operator and the next (each kernel already pays its own DMA latencies
    /// in the kernel model).
    Duration kernel_overhead;
    /// Per graph execution (one context-encoding or token-generation graph, or one draft step):
    /// host-side dispatch, copying the step's inputs, reading back and sampling the logits.
    Duration iteration_overhead;
    /// Fraction of the rank's TensorE peak that the matmuls and attention of a compiled
    /// context-encoding (prefill) graph reach at most: a prefill kernel costs at least its
    /// useful FLOPs / (prefill_efficiency x peak). Weight-bound prefills of a few tokens are
    /// unaffected; long prompts are compute-bound at this fraction.
    double prefill_efficiency = 1.0;
    /// Per context-encoding (prefill) graph, beyond iteration_overhead: the NeuronCores switch
    /// from the token-generation executable to the context-encoding one (the bucket-switching
    /// latency of the Transformers NeuronX developer guide, the profiler's model-switch event)
    /// and the host prepares the prompt (embedding on the host, the hidden states written to
    /// every rank). A decode step repeats the executable of the step before it and pays none.
    Duration prefill_graph_overhead;
};

/// The Neuron runtime's collective engine on this chip (the chip file's `collectives`
/// section; docs/network.md, "Collectives against measurements"): what the published
/// nccom-test tables show beyond the links. Zero values leave only the links and latencies of
/// the fabric. The presets' values are fitted to named tables by a test helper (tests/support/
/// collective_fit.hpp); every other table is held out.
struct CollectiveEngineSpec {
    /// Fixed cost of one collective launched alone: the runtime's launch of it and the
    /// handshake of its ranks before data moves (nccom-test's small-message floor). The
    /// collectives of a compiled graph do not pay it (workload::CollectiveIssue).
    Duration launch;
    /// Rate at which one rank's collective transfers move its data: the DMA rings the runtime
    /// gives a collective (nccom-test's large-message bus bandwidth). Zero: the links alone.
    Bandwidth rank_bandwidth;
    /// Extra cost of each algorithm step that crosses EFA: the per-message software, queue and
    /// protocol overhead beyond the HBM-to-HBM latency of one message.
    Duration efa_step_overhead;
};

/// What a kernel of a compiled training graph costs beyond the calibrated (hand-scheduled)
/// kernel model (the chip file's `training` section; docs/validation.md, "What a compiled graph
/// loses"). The other mechanisms of that section have no coefficient of their own: the fixed
/// cost per kernel is serving.kernel_overhead (the same semaphore wait and issue between one
/// kernel and the next, fitted on the serving rows), and the HBM traffic and reduction work of
/// overlapped collectives follow from the calibrated kernel model and the HBM bandwidth.
struct TrainingCosts {
    /// Fraction of a kernel's non-bottleneck engine time (the nominal busy time of every
    /// engine but the busiest, KernelCost::beside_seconds) that a compiled graph does not hide
    /// under the bottleneck: its engines synchronise through semaphores around each
    /// instruction the compiler placed, where a hand-scheduled kernel overlaps them. 0 to 1;
    /// fitted to the published Trn1 runs (tests/support/training_fit.hpp).
    double engine_sync = 0.0;
};

struct ChipSpec {
    std::string name;
    std::string description;

    int physical_cores = 8;
    int lnc_default = 2;
    std::vector<int> lnc_allowed;

    Bytes hbm_capacity;
    Bandwidth hbm_bandwidth;
    /// HBM the runtime and allocator keep per chip (not available to the training job).
    Bytes hbm_runtime_reserve;

    /// Dense peak of the whole chip as published (used as the MFU denominator).
    FlopRate peak_fp8;
    FlopRate peak_bf16;
    FlopRate peak_fp32;
    /// Peak with structured-sparse weights as published (zero: no sparse matmul): TensorE
    /// skips the pruned elements of an N:M pattern up to this rate.
    FlopRate peak_sparse;

    CoreSpec core;

    /// NeuronLink bandwidth per chip to chips of the same instance, and to chips of the other
    /// instances of its UltraServer (zero when there is no UltraServer). A switched domain of
    /// one switch level (Trn3 Gen1) has one: intra_instance is what a chip drives into its
    /// switches, to any chip of the domain, and inter_instance is zero; of two levels (Trn3
    /// Gen2) intra_instance is into its server's switch and inter_instance into its rack's.
    Bandwidth neuronlink_intra_instance;
    Bandwidth neuronlink_inter_instance;
    /// Per chip over the direct links to the same position in the UltraServer's other racks
    /// (zero with one rack).
    Bandwidth neuronlink_inter_rack;
    int neuronlink_ports = 4;
    Duration neuronlink_hop_latency;
    /// Latency of one step between ranks on the same chip.
    Duration on_chip_latency;
    /// HBM-to-HBM latency of one message across the EFA fabric.
    Duration efa_latency;

    InstanceSpec instance;
    std::optional<UltraServerSpec> ultraserver;

    /// What a compiled training graph loses against the calibrated kernels (training section).
    TrainingCosts training;

    /// Fixed costs of compiled inference graphs (serving section).
    ServingCosts serving;

    /// The runtime's collective engine (collectives section).
    CollectiveEngineSpec collectives;

    /// Coefficients of the analytic kernel model (written by `trnsim calibrate`).
    KernelModelSpec kernel_model;

    // ---- derived ----
    int ranks_per_chip(int lnc) const { return physical_cores / lnc; }
    FlopRate peak(Precision p) const;
    /// TensorE peak of one physical core from the array size and clock (cycle-model figure,
    /// slightly below the chip's published peak / cores for Trainium2).
    FlopRate tensor_peak_per_core(Precision p) const;
    Bandwidth efa_bandwidth_per_chip() const { return instance.efa_bandwidth / instance.chips; }
};

} // namespace trnsim::compute
