// Instruction costs shared by the program builder (detailed model) and the closed forms of the
// analytic model, so both read the chip data the same way (private to the compute module).
// Formulas and sources: core_program.hpp.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_program.hpp"

#include <algorithm>
#include <cstdint>

namespace trnsim::compute::detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// TensorE cycles of a LoadStationary of `cols` columns.
inline std::int64_t load_stationary_cycles(const ChipSpec& chip, std::int64_t cols, Precision p) {
    const auto& t = chip.core.tensor;
    const std::int64_t base = std::max<std::int64_t>(cols, t.min_matmul_cycles);
    const std::int64_t c = ceil_div(base, t.load_stationary_speedup);
    return p == Precision::fp32 ? c * t.fp32_rate_divisor : c;
}

/// TensorE cycles of a MultiplyMoving of `cols` moving columns.
inline std::int64_t multiply_moving_cycles(const ChipSpec& chip, std::int64_t cols, Precision p) {
    const auto& t = chip.core.tensor;
    const std::int64_t c = std::max<std::int64_t>(cols, t.min_matmul_cycles);
    return p == Precision::fp32 ? c * t.fp32_rate_divisor : c;
}

inline const VectorEngineSpec& engine_spec(const ChipSpec& chip, Queue q) {
    return q == Queue::scalar ? chip.core.scalar
           : q == Queue::gpsimd ? chip.core.gpsimd
                                : chip.core.vector;
}

/// Elements per cycle of an instruction on queue `q`: VectorE's performance-mode rate when the
/// instruction qualifies (`mode`) and the chip has one, else the engine's rate.
inline int engine_elements_per_cycle(const ChipSpec& chip, Queue q, VectorMode mode) {
    const VectorEngineSpec& e = engine_spec(chip, q);
    return q == Queue::vector && mode == VectorMode::perf && e.perf_mode_elements_per_cycle > 0
               ? e.perf_mode_elements_per_cycle
               : e.elements_per_cycle;
}

/// Cycles of a VectorE / ScalarE / GpSimdE instruction over `free_elements` per partition with
/// `tensor_inputs` streamed inputs.
inline std::int64_t engine_cycles(const ChipSpec& chip, Queue q, std::int64_t free_elements,
                                  int tensor_inputs, VectorMode mode = VectorMode::standard) {
    const VectorEngineSpec& e = engine_spec(chip, q);
    const std::int64_t lanes = std::max<std::int64_t>(
        1, engine_elements_per_cycle(chip, q, mode) / chip.core.sbuf_partitions);
    const std::int64_t streamed = free_elements * std::max(1, tensor_inputs);
    return e.instruction_overhead_cycles + ceil_div(streamed, lanes);
}

/// Seconds of such an instruction.
inline double engine_seconds(const ChipSpec& chip, Queue q, std::int64_t free_elements,
                             int tensor_inputs, VectorMode mode = VectorMode::standard) {
    return static_cast<double>(engine_cycles(chip, q, free_elements, tensor_inputs, mode)) /
           engine_spec(chip, q).clock.hz();
}

/// Engine-seconds the DMA engines spend on `bytes` in `descriptors` runs.
inline double dma_engine_seconds(const ChipSpec& chip, double bytes, double descriptors) {
    return descriptors * chip.core.dma_descriptor_overhead.seconds() +
           bytes / chip.core.dma_engine_bandwidth.bytes_per_s();
}

/// DMA engines usable at once by one core when every core of the chip moves data.
inline double dma_engines_usable(const ChipSpec& chip) {
    return std::min(static_cast<double>(chip.core.dma_engines),
                    chip.hbm_bandwidth.bytes_per_s() / chip.physical_cores /
                        chip.core.dma_engine_bandwidth.bytes_per_s());
}

} // namespace trnsim::compute::detail
