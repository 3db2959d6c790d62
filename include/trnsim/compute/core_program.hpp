// Instruction streams for the detailed NeuronCore model (core_model.hpp), and the builder the
// kernel lowerings (lowering.hpp) use to write them.
//
// A NeuronCore runs one in-order instruction queue per engine (NKI1, NKI2): TensorE, VectorE,
// ScalarE and GpSimdE, plus DMA queues that hand transfers to the core's DMA engines. Engines
// synchronise through hardware semaphores: an instruction waits until the instructions whose
// results it reads, and the readers of the buffer it overwrites, have finished. Here each such
// wait is a dependency on an earlier instruction; the builder derives them from the buffers an
// instruction reads and writes, as the NKI compiler does from tile accesses:
//   - read after write: wait for the buffer's last writer;
//   - write after read and write after write: wait for the buffer's readers since its last
//     write, and for that writer.
// TensorE and the DMA queues execute in order, so a dependency on an earlier instruction of the
// same unit is implied and dropped, and of several dependencies on one such unit only the last
// is kept. VectorE, ScalarE and GpSimdE streams are the compiler's list schedule (see
// core_model.hpp): the simulator lets them take a ready instruction from a small window ahead,
// so every dependency on them is kept, including those on their own earlier instructions.
//
// Buffers come from pools, like NKI tile pools: a pool of `bufs` slots hands them out round
// robin, so a tile allocated `bufs` allocations later reuses a slot and its first write waits for
// the readers of the old contents. That is how double (triple) buffering appears, and how the
// builder accounts SBUF per partition and PSUM banks against the core's capacity.
#pragma once

#include "trnsim/compute/chip_spec.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace trnsim::compute {

/// The largest program the detailed model builds and simulates on one core: 2^23
/// instructions (about 350 MB with their dependencies, and seconds of simulation). A program
/// that would grow past it is refused with an InputError instead of exhausting memory (the
/// instruction ids are 32-bit; a 1Mx1Mx1M matmul would need about 10^11 instructions).
inline constexpr std::int64_t kMaxProgramInstructions = std::int64_t{1} << 23;

/// Instruction queues of one core (in-order each).
enum class Queue : std::uint8_t { tensor, vector, scalar, gpsimd, dma0, dma1, dma2, dma3 };
inline constexpr std::size_t kQueueCount = 8;
inline constexpr int kDmaQueues = 4;

/// Execution units. Each queue feeds one unit except TensorE's, whose LoadStationary runs on the
/// weight-load path while the array executes the previous MultiplyMoving (NKI1, PERF).
enum class Unit : std::uint8_t {
    tensor_load,
    tensor_array,
    vector,
    scalar,
    gpsimd,
    dma0,
    dma1,
    dma2,
    dma3
};
inline constexpr std::size_t kUnitCount = 9;

Queue queue_of(Unit u);
const char* to_string(Unit u);
/// TensorE units and DMA queues run strictly in program order.
bool in_order(Unit u);

enum class Op : std::uint8_t { load_stationary, multiply_moving, engine, dma };

/// Which VectorE rate an engine instruction runs at. `perf`: it qualifies for NeuronCore-v3's
/// performance mode (NKI2, "Vector Engine Performance Mode": tensor_copy and tensor_scalar whose
/// input and output are BF16/FP16 tiles in SBUF with a contiguous inner dimension), so it
/// streams at vector_engine.perf_mode_elements_per_cycle where the chip has one. Two-input
/// instructions, reductions, PSUM evacuations and FP32 or FP8 data are `standard` (NKI2's 2x
/// cases over NeuronCore-v2 are the standard 256 of NeuronCore-v3). Ignored on other engines
/// and on chips without the mode.
enum class VectorMode : std::uint8_t { standard, perf };

/// Where a DMA moves data.
enum class Direction : std::uint8_t { hbm_to_sbuf, sbuf_to_hbm, sbuf_to_sbuf };

/// One instruction. 32 bytes.
struct Instruction {
    Op op = Op::engine;
    Unit unit = Unit::vector;
    /// DMA: reads or writes HBM (SBUF-to-SBUF transfers do not).
    bool hbm = false;
    /// Dependencies: Program::deps[dep_begin, dep_begin + dep_count).
    std::uint16_t dep_count = 0;
    std::uint32_t dep_begin = 0;
    /// Engine instructions: cycles of the engine's clock (TensorE: at full rate, before warm-up
    /// throttling). DMA: bytes moved.
    double amount = 0.0;
    /// DMA: descriptors (contiguous runs; one engine moves one descriptor at a time).
    std::uint32_t descriptors = 0;
};

/// A kernel lowered for one core: instructions in program order (every dependency points to
/// an earlier instruction) and the resources it allocated.
struct Program {
    std::vector<Instruction> instructions;
    std::vector<std::uint32_t> deps;
    /// SBUF bytes per partition and PSUM banks allocated by the program's pools.
    std::int64_t sbuf_bytes = 0;
    int psum_banks = 0;
    /// Useful FLOPs of the kernel piece, and bytes its DMAs read from / write to HBM.
    double flops = 0.0;
    double hbm_read_bytes = 0.0;
    double hbm_write_bytes = 0.0;
    /// How the kernel was tiled (for reports).
    std::string description;
};

/// Writes a Program. The cost of each instruction follows the chip's engine data:
///   LoadStationary of c columns: ceil(max(c, min_matmul_cycles) / load_stationary_speedup)
///     TensorE cycles;
///   MultiplyMoving of n moving columns: max(n, min_matmul_cycles) cycles (NKI1, PERF), times
///     fp32_rate_divisor for FP32; the contraction may use rows x fp8_rate_multiplier
///     partitions' worth of FP8 at the same cost (NKI2 double row);
///   VectorE / ScalarE / GpSimdE instruction over f elements per partition with i tensor
///     inputs: instruction_overhead_cycles + ceil(i f / (elements_per_cycle / partitions))
///     cycles (NKI1: ~N cycles per input, ~100 cycles static overhead); a VectorE instruction
///     in VectorMode::perf uses perf_mode_elements_per_cycle instead when the chip has it;
///   DMA: bytes over descriptors (see core_model.hpp).
class ProgramBuilder {
public:
    using Id = std::uint32_t;
    using Buffer = std::uint32_t;
    using PoolId = std::uint32_t;
    static constexpr Id kNone = 0xffffffffu;

    explicit ProgramBuilder(const ChipSpec& chip);

    /// An SBUF pool of `bufs` slots of `bytes_per_partition` each.
    PoolId sbuf_pool(std::int64_t bytes_per_partition, int bufs);
    /// A PSUM pool of `banks` banks (one accumulation tile of up to 2 KiB per partition each).
    PoolId psum_pool(int banks);
    /// The next slot of a pool (round robin).
    Buffer alloc(PoolId pool);

    /// A DMA on queue `queue` (0 .. kDmaQueues-1) of `bytes` in `descriptors` runs.
    Id dma(int queue, double bytes, std::int64_t descriptors, Direction dir,
           std::span<const Buffer> reads, std::span<const Buffer> writes);
    Id dma(int queue, double bytes, std::int64_t descriptors, Direction dir,
           std::initializer_list<Buffer> reads, std::initializer_list<Buffer> writes) {
        return dma(queue, bytes, descriptors, dir, span(reads), span(writes));
    }
    /// LoadStationary of a tile of `cols` columns from `source`.
    Id load_stationary(std::int64_t cols, Precision p, Buffer source);
    /// MultiplyMoving of `cols` moving columns from `moving` against the weights loaded by
    /// `stationary`, accumulating into the PSUM buffer `out`.
    Id multiply_moving(std::int64_t cols, Precision p, Id stationary, Buffer moving, Buffer out);
    /// An instruction on VectorE, ScalarE or GpSimdE over `free_elements` per partition with
    /// `tensor_inputs` (1 or 2) streamed inputs, at the VectorE rate `mode`.
    Id engine(Queue q, std::int64_t free_elements, int tensor_inputs,
              std::span<const Buffer> reads, std::span<const Buffer> writes,
              VectorMode mode = VectorMode::standard);
    Id engine(Queue q, std::int64_t free_elements, int tensor_inputs,
              std::initializer_list<Buffer> reads, std::initializer_list<Buffer> writes,
              VectorMode mode = VectorMode::standard) {
        return engine(q, free_elements, tensor_inputs, span(reads), span(writes), mode);
    }

    /// SBUF bytes per partition and PSUM banks allocated so far.
    std::int64_t sbuf_bytes() const { return sbuf_bytes_; }
    int psum_banks() const { return psum_banks_; }
    /// True when the pools fit the core's SBUF and PSUM.
    bool fits() const;

    std::size_t size() const { return program_.instructions.size(); }

    /// The program; the builder is left empty.
    Program finish(double flops, std::string description);

private:
    struct Pool {
        Buffer first = 0;
        std::uint32_t slots = 0;
        std::uint32_t next = 0;
    };
    struct Slot {
        Slot() { readers.fill(kNone); }
        Id writer = kNone;
        /// The last reader on each in-order unit, every reader on the others, since the write.
        std::array<Id, kUnitCount> readers;
        std::vector<Id> scheduled_readers;
    };

    static std::span<const Buffer> span(std::initializer_list<Buffer> l) {
        return {l.begin(), l.size()};
    }
    Id add(Instruction ins, std::span<const Buffer> reads, std::span<const Buffer> writes,
           Id extra = kNone);

    const ChipSpec* chip_;
    Program program_;
    std::vector<Pool> pools_;
    std::vector<Slot> slots_;
    std::vector<Id> scratch_;
    std::int64_t sbuf_bytes_ = 0;
    int psum_banks_ = 0;
};

} // namespace trnsim::compute
