// Helpers shared by the lowerings and the analytic closed forms (private to the compute module).
#pragma once

#include "trnsim/compute/chip_spec.hpp"
#include "trnsim/compute/core_program.hpp"
#include "trnsim/compute/kernel.hpp"
#include "trnsim/core/assert.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace trnsim::compute::detail {

/// sum over i in [0, count) of clamp(first + step i, 0, cap), split into the terms strictly
/// between 0 and cap (linear) and those at cap.
struct ArithmeticClamp {
    double sum = 0.0;
    double linear_sum = 0.0;
    std::int64_t linear_count = 0;
    std::int64_t capped_count = 0;
};

inline ArithmeticClamp arithmetic_clamp(std::int64_t first, std::int64_t step, std::int64_t count,
                                        std::int64_t cap) {
    ArithmeticClamp a;
    // First index with a positive value, first index at or above the cap.
    const std::int64_t lo = first > 0 ? 0 : (-first) / step + 1;
    const std::int64_t hi = first >= cap ? 0 : (cap - first + step - 1) / step;
    const std::int64_t end = std::min(hi, count);
    a.linear_count = std::max<std::int64_t>(0, end - lo);
    const double lc = static_cast<double>(a.linear_count);
    a.linear_sum = lc * static_cast<double>(first) +
                   static_cast<double>(step) * (lc * static_cast<double>(lo) + lc * (lc - 1.0) / 2.0);
    a.capped_count = std::max<std::int64_t>(0, count - std::max(hi, lo));
    a.sum = a.linear_sum + static_cast<double>(cap) * static_cast<double>(a.capped_count);
    return a;
}

/// A vector of at most N elements stored inline (recipes are built on every analytic
/// evaluation; this keeps them off the heap).
template <class T, std::size_t N>
class Fixed {
public:
    Fixed() = default;
    Fixed(std::initializer_list<T> items) {
        for (const T& x : items) {
            push_back(x);
        }
    }
    void push_back(const T& x) {
        TRNSIM_CHECK(size_ < N, "fixed-capacity list overflow");
        items_[size_++] = x;
    }
    void clear() { size_ = 0; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const T& front() const { return items_[0]; }
    const T& operator[](std::size_t i) const { return items_[i]; }
    const T* begin() const { return items_.data(); }
    const T* end() const { return items_.data() + size_; }

private:
    std::array<T, N> items_;
    std::size_t size_ = 0;
};

/// The tiles of a streaming kernel: groups of `count` identical tiles of `partitions` rows, each
/// cut along its free dimension into `full_chunks` chunks of `chunk` elements and a last chunk
/// of `last_chunk` (0: none).
struct TileGroup {
    std::int64_t count = 0;
    std::int64_t partitions = 0;
    std::int64_t full_chunks = 0;
    std::int64_t chunk = 0;
    std::int64_t last_chunk = 0;

    std::int64_t chunks() const { return full_chunks + (last_chunk > 0 ? 1 : 0); }
    std::int64_t chunk_width(std::int64_t c) const { return c < full_chunks ? chunk : last_chunk; }
    std::int64_t width() const { return full_chunks * chunk + last_chunk; }
};

/// What one step of a streaming recipe does.
enum class StepKind : std::uint8_t {
    load,     ///< HBM -> SBUF of the chunk (or of a parameter row, `param`)
    store,    ///< SBUF -> HBM of the current value
    map,      ///< an engine instruction over the chunk writing a new value
    reduce,   ///< an engine instruction over the chunk writing per-row statistics
    tiny,     ///< an engine instruction over the per-row statistics (one element per row)
    bn_stats, ///< VectorE statistics per 512-element piece of the chunk (LayerNorm)
    bn_aggr,  ///< VectorE aggregation of the pieces' statistics
};

/// One step of a recipe. 10 bytes.
struct Step {
    StepKind kind = StepKind::map;
    Queue engine = Queue::vector;
    std::int8_t inputs = 1;
    std::int8_t queue = 0;
    /// Bytes per element moved by a load or store.
    std::int8_t element_bytes = 2;
    /// Loads: parameter row `param` (broadcast to the tile's partitions). Two-input
    /// instructions: read parameter `param` as the second input (-1: the tile's next loaded
    /// input).
    std::int8_t param = -1;
    /// A map that also writes the row statistics (ScalarE activation with accumulation).
    bool also_stats = false;
    /// A gather: one descriptor per row, reading the row indices loaded once.
    bool indirect = false;
    /// A map that adds into one of the plan's accumulators (a parameter gradient summed over
    /// the rows) instead of writing a new value: it reads and writes the accumulator.
    bool accumulate = false;
    /// A single-input VectorE map of BF16/FP16 SBUF tiles (a copy or a scalar map): it runs in
    /// VectorE's performance mode where the chip has one (VectorMode::perf).
    bool perf = false;
};

/// A transfer run once before the tiles (parameter rows, row indices).
struct OnceLoad {
    int queue = 3;
    int param = -1; ///< parameter index, or -1 for the row indices of a gather
    double bytes = 0.0;
    std::int64_t descriptors = 0;
};

/// A recipe's work per chunk on one engine: instructions over the chunk, their streamed inputs
/// (cycles = instructions x overhead + streamed x width / lanes + perf_streamed x width /
/// performance-mode lanes) and instructions over the per-row statistics. `perf_streamed`
/// counts the inputs of the VectorE instructions that qualify for the performance mode
/// (Step::perf); on a chip without it they stream at the standard rate like `streamed`.
struct EngineWork {
    double ops = 0.0;
    double streamed = 0.0;
    double perf_streamed = 0.0;
    double tiny = 0.0;
    double tiny_inputs = 0.0;
};

/// A pass's work per chunk, summed over its steps.
struct PassProfile {
    int loads = 0;          ///< data loads
    double load_bytes = 0;  ///< sum of their element bytes
    int params = 0;         ///< parameter loads
    double param_bytes = 0;
    int stores = 0;
    double store_bytes = 0;
    std::array<EngineWork, 3> engines{}; ///< VectorE, ScalarE, GpSimdE
    int bn_stats = 0;                    ///< bn_stats steps (an instruction per 512 elements)
    int bn_aggr = 0;
    int maps = 0;
    bool indirect = false;
};

using Steps = Fixed<Step, 32>;
using TileGroups = Fixed<TileGroup, 2>;

/// The work of a step list, summed (the closed forms' profile of a pass).
PassProfile profile_of(const Steps& steps);

/// The plan of a streaming kernel or AdamW: its tiles, buffers and work per pass, shared by the
/// lowering and the closed forms (closed_forms.hpp builds it).
struct StreamPlan {
    TileGroups groups;
    /// SBUF bytes per partition of one data buffer (the widest chunk at the widest type).
    std::int64_t buffer_bytes = 0;
    /// Chunks in flight per step: the deepest of 16, 8, 4, 3, 2 that fits, so that small
    /// tiles keep enough transfers in flight to hide the DMA latency.
    int depth = 2;
    bool two_pass = false;
    /// Width of one parameter row and whether parameters are loaded per chunk in the second
    /// pass instead of once (rows too wide to keep them resident).
    std::int64_t param_width = 0;
    bool params_per_chunk = false;
    Fixed<OnceLoad, 2> once;
    /// FP32 accumulators of a whole row each (parameter gradients of the norm backward kinds),
    /// resident for the whole kernel.
    int accumulators = 0;
    std::int64_t accumulator_bytes = 0;
    PassProfile first;
    PassProfile between;
    PassProfile second;
};

/// A streaming kernel for the lowering: its plan, then per tile the first pass's steps over
/// its chunks, the per-row steps between the passes and the second pass (empty for one-pass
/// kernels).
struct Recipe {
    StreamPlan plan;
    Steps first;
    Steps between;
    Steps second;

    /// How the kernel is tiled (for reports).
    std::string description() const;
};

/// The tiling of an attention kernel on one core.
struct AttentionGeometry {
    Precision qk_p = Precision::bf16; ///< QK^T: the kernel's precision
    Precision pv_p = Precision::bf16; ///< transposes and P V: BF16 (P), FP32 for FP32 kernels
    std::int64_t eb = 2;
    std::int64_t partitions = 128;
    std::int64_t q_tile = 128;  ///< queries per tile (stationary columns)
    std::int64_t kv_tile = 512; ///< keys per tile (moving columns)
    std::int64_t dq_rows = 128; ///< head-dim rows per contraction tile
    std::int64_t dq_tiles = 1;
    std::int64_t dv_tile = 512;
    std::int64_t dv_tiles = 1;
    std::int64_t q_tiles = 0;
    std::int64_t kv_tiles = 0;
    std::int64_t group = 1; ///< query heads per key/value head
    std::int64_t offset = 0; ///< kv_len - q_len: query i sees keys up to i + offset
    std::int64_t query_group = 4; ///< query tiles loaded by one DMA
    /// K and V of a key/value head stay in SBUF for all its query heads (else they stream per
    /// query tile).
    bool resident = true;

    /// Keys query tile i attends to (a prefix of the keys).
    std::int64_t keys(const AttentionShape& s, std::int64_t i) const {
        if (!s.causal) {
            return s.kv_len;
        }
        const std::int64_t last_query = std::min(s.q_len, (i + 1) * q_tile) - 1;
        return std::clamp<std::int64_t>(last_query + offset + 1, 0, s.kv_len);
    }
};

/// The tiling of `s` (lower_attention.cpp). Throws InputError when it cannot fit SBUF.
AttentionGeometry attention_geometry(const AttentionShape& s, const ChipSpec& chip);

/// The tiling of a flash-attention backward pass on one core (lower_attention_backward.cpp).
///
/// Per (sequence, key/value head) the query tiles of its query heads, flattened head-major, go
/// in blocks of `block_tiles` whose Q (both layouts), dO (both layouts), row statistics and FP32
/// dQ accumulators stay in SBUF. For each block the key tiles (128 keys) stream once: K (both
/// layouts) and V^T in, dK and dV accumulated in PSUM over the block's query tiles, then
/// stored (as FP32 partial sums added across blocks when there are several). Per (query tile,
/// key tile) item: S = Q K^T and dP = dO V^T on TensorE, P = exp(S - LSE) on ScalarE (the
/// causal diagonal masked on GpSimdE), dS = P (dP - D) on VectorE, dV += P^T dO and
/// dK += dS^T Q on TensorE, dS transposed on TensorE (evacuated by ScalarE), dQ += dS K on
/// TensorE, added into the query tile's accumulator on GpSimdE. Before its key tiles, each
/// query tile's D = rowsum(dO O) (VectorE) and log-sum-exp are loaded or computed; after them,
/// dQ is cast (ScalarE) and stored.
struct AttentionBackwardGeometry {
    Precision p = Precision::bf16; ///< matmuls: BF16, or FP32 for FP32 kernels
    std::int64_t eb = 2;
    std::int64_t partitions = 128;
    std::int64_t q_tile = 128;
    std::int64_t k_tile = 128;
    std::int64_t qk_ctiles = 1; ///< contraction tiles over qk_dim (S)
    std::int64_t v_ctiles = 1;  ///< contraction tiles over v_dim (dP)
    std::int64_t moving = 512;  ///< moving tile width (dV, dK, dQ over the head dims)
    std::int64_t q_tiles = 0;
    std::int64_t k_tiles = 0;
    std::int64_t group = 1;
    std::int64_t offset = 0;
    std::int64_t query_group = 4; ///< query tiles per Q^T / dO^T / statistics load
    std::int64_t block_tiles = 1; ///< query tiles resident at once
    /// Slots of the resident pools: twice the block when two blocks fit, so that the next
    /// block's (or key/value head's) queries load while this one computes.
    std::int64_t resident_slots = 1;
    std::int64_t tile_bytes = 0;  ///< SBUF bytes per partition of one resident query tile

    /// Keys query tile i attends to (a prefix of the keys).
    std::int64_t keys(const AttentionShape& s, std::int64_t i) const {
        if (!s.causal) {
            return s.kv_len;
        }
        const std::int64_t last_query = std::min(s.q_len, (i + 1) * q_tile) - 1;
        return std::clamp<std::int64_t>(last_query + offset + 1, 0, s.kv_len);
    }
    std::int64_t key_tiles(const AttentionShape& s, std::int64_t i) const {
        return (keys(s, i) + k_tile - 1) / k_tile;
    }
};

AttentionBackwardGeometry attention_backward_geometry(const AttentionShape& s,
                                                      const ChipSpec& chip);
Program lower_attention_backward(const AttentionShape& s, const ChipSpec& chip);

/// The steps of the row kinds that have no hand-written profile (the backward kinds and
/// cross_entropy; lower_stream.cpp): one pass or two, their steps per chunk of the first pass,
/// between the passes and of the second pass.
void row_kind_steps(StreamKind kind, int element_bytes, bool two_pass, Steps& first,
                    Steps& between, Steps& second);
/// Parameter rows (learned scales) and accumulators such a kind uses.
int row_kind_params(StreamKind kind);
int row_kind_accumulators(StreamKind kind);

/// Builds the recipe of a streaming kernel or of AdamW (lower_stream.cpp). O(1).
Recipe stream_recipe(const StreamShape& s, const ChipSpec& chip);
Recipe adamw_recipe(const OptimizerShape& s, const ChipSpec& chip);
/// SBUF bytes per partition of a plan's pools at `depth` (closed_forms_stream.cpp).
std::int64_t plan_sbuf_bytes(const StreamPlan& plan, int depth, std::int64_t partitions);

/// The program of a recipe.
Program lower_recipe(const Recipe& r, double flops, const ChipSpec& chip);
Program lower_attention(const AttentionShape& s, const ChipSpec& chip);

} // namespace trnsim::compute::detail
