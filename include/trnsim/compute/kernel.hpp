// Kernel descriptors: the shapes of the work one rank executes. The workload module describes a
// training step as a list of these; a CostModel (analytic) or a DetailedModel (simulated) turns
// each into time, FLOPs and HBM traffic.
//
// All shapes are per rank (after tensor/expert/sequence parallel splitting) and per invocation.
// A rank of `lnc` physical NeuronCores splits each kernel into `lnc` equal pieces
// (split_across_cores) that run side by side.
//
// Memory layouts are the ones a kernel author would choose (NKI tutorials): matmul operands
// with the contraction dimension leading (A^T as [K, M], B as [K, N]), C as [M, N]; attention
// Q and K as [head_dim, sequence] per head, V and the output as [sequence, head_dim]; row
// kernels (softmax, norms) row-major with one row per SBUF partition.
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/kernel_model_spec.hpp"

#include <cstdint>
#include <string>
#include <variant>

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
/// With `causal`, query i sees keys up to i + kv_len - q_len.
///
/// With `backward`, the flash-attention backward pass of the same shape (FlashAttention-2, Dao
/// 2023): from Q, K, V, the output O, its gradient dO and the saved row statistics (log-sum-exp)
/// it recomputes the probabilities P = exp(Q K^T - LSE) tile by tile and forms
/// dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)), dK = dS^T Q and dQ = dS K: five
/// matmuls per tile against the forward's two.
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
    bool backward = false;
};

/// Which engine executes a streaming operation's passes.
enum class StreamEngine { vector, scalar };

/// What a streaming kernel computes (the kernel class it belongs to).
enum class StreamKind {
    /// `passes` instructions per tile on `engine`; inputs beyond the first are combined by
    /// two-input VectorE instructions (the first inputs - 1 passes when the engine is VectorE,
    /// extra VectorE instructions after a ScalarE pass otherwise). SiLU/GELU: 1 input, 1 pass,
    /// scalar. SwiGLU product: 2 inputs, 1 pass, scalar (SiLU, then the multiply). Addition:
    /// 2 inputs, 1 pass, vector.
    elementwise,
    /// Softmax over rows of `row` elements.
    softmax,
    /// RMSNorm / LayerNorm over rows of `row` elements (with a learned scale, and shift).
    rms_norm,
    layer_norm,
    /// Gathers elements / row rows of `row` elements (an embedding lookup).
    gather,
    /// Sums `inputs` buffers of `elements` values into one.
    reduce,
    /// Backward of a row softmax: from the output y and its gradient dy (rows of `row`),
    /// dx = y (dy - rowsum(y dy)).
    softmax_backward,
    /// Backward of RMSNorm / LayerNorm over rows of `row`: from the input x, the output gradient
    /// dy and the learned scale, the input gradient dx (the row statistics recomputed from x)
    /// and the scale (and shift) gradients accumulated over the rows.
    rms_norm_backward,
    layer_norm_backward,
    /// Backward of an embedding lookup: elements / row gradient rows of `row` elements added
    /// into the rows of the (FP32) embedding gradient their tokens index.
    scatter_add,
    /// Vocabulary-parallel cross-entropy over rows of `row` logits: the row maximum and sum of
    /// exponentials (the loss), then the gradient softmax - one-hot written in place of the
    /// logits (Megatron's fused cross-entropy).
    cross_entropy,
};

/// A streaming (elementwise or row) operation over `elements` values: reads `inputs` tensors
/// and writes `outputs` tensors of `element_bytes` each from/to HBM, with `passes` engine
/// instructions over the data. Row kinds (softmax, norms, gather) need `row`; for them the
/// instruction mix follows from the kind and inputs/outputs/passes/engine are ignored (the
/// backward kinds, scatter_add and cross_entropy are row kinds too).
struct StreamShape {
    std::int64_t elements = 0;
    int inputs = 1;
    int outputs = 1;
    int element_bytes = 2;
    int passes = 1;
    StreamEngine engine = StreamEngine::vector;
    StreamKind kind = StreamKind::elementwise;
    /// Elements per row for row kinds (0: one row of all elements).
    std::int64_t row = 0;
};

/// AdamW update of `params` parameters held by this rank: FP32 master weight, two FP32 moments,
/// a gradient of `grad_bytes` per element, and a refreshed working copy of `weight_bytes`.
struct OptimizerShape {
    std::int64_t params = 0;
    int grad_bytes = 4;
    int weight_bytes = 2;
    /// The FP32 master copy (0: none, the weights updated in place with stochastic rounding)
    /// and each of the two moments.
    int master_bytes = 4;
    int moment_bytes = 4;
};

/// Any kernel.
using Kernel = std::variant<MatmulShape, AttentionShape, StreamShape, OptimizerShape>;

/// The analytic model's class of a kernel.
KernelClass class_of(const Kernel& k);

/// True for the streaming kinds that work on rows of StreamShape::row elements (every kind but
/// elementwise and reduce).
bool is_row_kind(StreamKind k);

/// Useful FLOPs of a kernel (no tile padding, causal-masked work excluded): 2 M K N for a
/// matmul; for streaming kernels one FLOP per element per instruction.
double useful_flops(const Kernel& k);

/// Bytes a kernel must move between HBM and the core at least (each operand once).
double minimum_hbm_bytes(const Kernel& k);

/// A shape in the notation of `trnsim kernel` ("4096x8192x8192 bf16", "rows x row").
std::string describe(const Kernel& k);

/// True when the shape has no work (a zero dimension).
bool is_empty(const Kernel& k);

/// The piece of `k` one of `cores` physical cores runs when a rank spreads a kernel over its
/// cores: the batch (or heads) when they divide evenly, else the larger of the free dimensions,
/// rounded up. cores == 1 returns k.
Kernel split_across_cores(const Kernel& k, int cores);

/// The cost of one kernel on one rank.
struct KernelCost {
    double seconds = 0.0;
    /// FLOPs the kernel performs (useful_flops: without tile padding and causal-mask waste).
    double flops = 0.0;
    /// Bytes read from and written to HBM.
    double hbm_bytes = 0.0;
    /// Nominal busy seconds of the engines other than the busiest one (TensorE, VectorE,
    /// ScalarE, GpSimdE, DMA; CostModel::engine_seconds): the work the kernel hides under its
    /// bottleneck when its engines overlap perfectly.
    double beside_seconds = 0.0;
};

} // namespace trnsim::compute
