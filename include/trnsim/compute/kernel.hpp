// Kernel descriptors: the shapes of the work one rank executes. The workload module describes a
// training step as a list of these; a CostModel turns each into time, FLOPs and HBM traffic.
//
// All shapes are per rank (after tensor/expert/sequence parallel splitting) and per invocation.
#pragma once

#include "trnsim/compute/chip_spec.hpp"

#include <cstdint>

namespace trnsim::compute {

/// C[m, n] = A[m, k] * B[k, n], `batch` independent times.
struct MatmulShape {
    std::int64_t m = 0;
    std::int64_t k = 0;
    std::int64_t n = 0;
    std::int64_t batch = 1;
    Precision precision = Precision::bf16;
};

/// Fused (flash-style) attention: softmax(Q K^T) V over `batch` sequences, `heads` query heads
/// sharing `kv_heads` key/value heads (GQA; kv_heads == heads is plain multi-head attention).
struct AttentionShape {
    std::int64_t batch = 1;
    std::int64_t heads = 1;
    std::int64_t kv_heads = 1;
    std::int64_t q_len = 0;
    std::int64_t kv_len = 0;
    std::int64_t qk_dim = 128;
    std::int64_t v_dim = 128;
    bool causal = true;
    Precision precision = Precision::bf16;
};

/// Which engine executes a streaming operation.
enum class StreamEngine { vector, scalar };

/// A streaming (elementwise or row-reduction) operation over `elements` values: reads `inputs`
/// tensors and writes `outputs` tensors of `element_bytes` each from/to HBM, with `passes`
/// engine instructions over the data (a norm needs a reduction pass and a scaling pass).
struct StreamShape {
    std::int64_t elements = 0;
    int inputs = 1;
    int outputs = 1;
    int element_bytes = 2;
    int passes = 1;
    StreamEngine engine = StreamEngine::vector;
};

/// AdamW update of `params` parameters held by this rank: FP32 master weight, two FP32 moments,
/// a gradient of `grad_bytes` per element, and a refreshed working copy of `weight_bytes`.
struct OptimizerShape {
    std::int64_t params = 0;
    int grad_bytes = 4;
    int weight_bytes = 2;
};

/// The cost of one kernel on one rank.
struct KernelCost {
    double seconds = 0.0;
    /// FLOPs the hardware executes (including tile padding and causal-mask waste).
    double flops = 0.0;
    /// Bytes read from and written to HBM.
    double hbm_bytes = 0.0;
};

} // namespace trnsim::compute
