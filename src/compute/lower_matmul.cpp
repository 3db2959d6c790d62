// The matmul lowering, its candidate tilings and its closed-form costs.
#include "trnsim/compute/lowering.hpp"

#include "trnsim/core/assert.hpp"

#include "instruction_costs.hpp"
#include "nominal.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace trnsim::compute {

namespace {

using detail::ceil_div;

/// Bytes a streamed DMA chunk aims for: large enough to amortise the issue and setup costs.
constexpr std::int64_t kChunkBytes = 256 * 1024;
/// DMA queues of the lowering.
constexpr int kStationaryQueue = 0;
constexpr int kMovingQueue = 1;
constexpr int kStoreQueue = 2;
constexpr int kConstQueue = 3;
/// PSUM banks kept for the transposes of a swapped matmul.
constexpr int kTransposeBanks = 2;

double d(std::int64_t v) { return static_cast<double>(v); }

/// The tile geometry of one tiling of one matmul on one core.
struct Geometry {
    Precision p = Precision::bf16;
    std::int64_t batch = 1;
    std::int64_t k = 0;       ///< contraction
    std::int64_t kt_rows = 0; ///< contraction rows per tile (128; 256 with FP8 double row)
    std::int64_t kt = 0;      ///< contraction tiles
    std::int64_t part_rows = 1; ///< contraction rows per partition per tile
    std::int64_t kc = 1;      ///< contraction tiles per DMA chunk
    std::int64_t chunks = 1;  ///< DMA chunks over the contraction
    // Stationary operand (A^T; B when swapped): s_dim columns in tiles of s_tile.
    std::int64_t s_dim = 0, s_tile = 0, s_tiles = 0, s_block = 0, s_blocks = 0;
    // Moving operand (B; A^T when swapped).
    std::int64_t v_dim = 0, v_tile = 0, v_tiles = 0, v_block = 0, v_blocks = 0;
    std::int64_t eb = 2;     ///< input element bytes
    std::int64_t out_eb = 2; ///< output element bytes
    bool swapped = false;
    bool s_outer = false;
    bool resident = false; ///< the outer operand's panel stays in SBUF
    /// Buffers per stream (and resident panels in flight): deeper when small tiles leave room,
    /// so that a DMA's fixed latency hides behind the work on earlier buffers.
    std::int64_t depth = 2;
    std::int64_t partitions = 128;

    std::int64_t s_cols(std::int64_t tile) const { return std::min(s_tile, s_dim - tile * s_tile); }
    std::int64_t v_cols(std::int64_t tile) const { return std::min(v_tile, v_dim - tile * v_tile); }
    std::int64_t s_block_cols() const { return std::min(s_block * s_tile, s_dim); }
    std::int64_t v_block_cols() const { return std::min(v_block * v_tile, v_dim); }
    std::int64_t chunk_rows(std::int64_t c) const { return std::min(kc * kt_rows, k - c * kc * kt_rows); }
    /// Descriptors of a chunk of `rows` rows of a block of `cols` of an operand `dim` wide: one
    /// per row, or one per partition when the block spans whole rows (the contraction is laid
    /// out partition-major, so a partition's rows are contiguous in HBM).
    std::int64_t descriptors(std::int64_t rows, std::int64_t cols, std::int64_t dim) const {
        return cols == dim ? std::min(rows, partitions) : rows;
    }
    /// Descriptors of all chunks of one block.
    std::int64_t block_descriptors(std::int64_t cols, std::int64_t dim) const {
        if (cols != dim) {
            return k;
        }
        const std::int64_t rows = kc * kt_rows;
        return (k / rows) * std::min(rows, partitions) + std::min(k % rows, partitions);
    }
    /// SBUF bytes per partition of one chunk of `cols` columns.
    std::int64_t chunk_bytes(std::int64_t cols) const { return kc * part_rows * cols * eb; }
};

Geometry geometry(const MatmulShape& s, const MatmulTiling& t, const ChipSpec& chip) {
    const auto& te = chip.core.tensor;
    Geometry g;
    g.p = s.precision;
    g.batch = s.batch;
    g.k = s.k;
    g.part_rows = s.precision == Precision::fp8 ? te.fp8_rate_multiplier : 1;
    g.kt_rows = std::int64_t{te.rows} * g.part_rows;
    g.kt = ceil_div(s.k, g.kt_rows);
    g.eb = element_bytes(s.precision);
    g.out_eb = s.precision == Precision::fp32 ? 4 : 2;
    g.swapped = t.swapped;
    g.s_outer = t.stationary_outer;
    g.partitions = chip.core.sbuf_partitions;
    g.s_dim = t.swapped ? s.n : s.m;
    g.v_dim = t.swapped ? s.m : s.n;
    g.s_tile = te.cols;
    g.v_tile = t.swapped ? s.m : te.moving_free_max;
    g.s_tiles = ceil_div(g.s_dim, g.s_tile);
    g.v_tiles = ceil_div(g.v_dim, g.v_tile);
    g.s_block = std::min<std::int64_t>(t.block_stationary, g.s_tiles);
    g.v_block = std::min<std::int64_t>(t.block_moving, g.v_tiles);
    g.s_blocks = ceil_div(g.s_tiles, g.s_block);
    g.v_blocks = ceil_div(g.v_tiles, g.v_block);
    const std::int64_t per_tile = g.kt_rows * (g.s_block_cols() + g.v_block_cols()) * g.eb;
    g.kc = std::clamp<std::int64_t>(ceil_div(kChunkBytes, per_tile), 1, g.kt);
    g.chunks = ceil_div(g.kt, g.kc);
    return g;
}

/// SBUF bytes per partition of the lowering's pools.
std::int64_t sbuf_bytes(const Geometry& g) {
    const std::int64_t outer_cols = g.s_outer ? g.s_block_cols() : g.v_block_cols();
    const std::int64_t inner_cols = g.s_outer ? g.v_block_cols() : g.s_block_cols();
    const std::int64_t outer_iterations = g.batch * (g.s_outer ? g.s_blocks : g.v_blocks);
    const std::int64_t outer_sets = std::min(g.depth, outer_iterations);
    std::int64_t total = g.depth * g.chunk_bytes(inner_cols);
    total += g.resident ? g.chunks * outer_sets * g.chunk_bytes(outer_cols)
                        : g.depth * g.chunk_bytes(outer_cols);
    if (g.swapped) {
        total += g.depth * g.s_block * g.v_dim * 2; // C^T tiles before the transposes
        total += g.depth * g.s_block_cols() * g.out_eb; // C rows
        total += g.partitions * 2;                      // the identity matrix
    } else {
        total += g.depth * g.s_block * g.v_block_cols() * g.out_eb;
    }
    return total;
}

/// Chooses residency and buffer depth: the deepest buffering that fits, with the outer panel
/// resident if possible. False when nothing fits.
bool choose_buffers(Geometry& g, const ChipSpec& chip) {
    for (bool resident : {true, false}) {
        for (std::int64_t depth : {4, 3, 2}) {
            g.resident = resident;
            g.depth = depth;
            if (sbuf_bytes(g) <= chip.core.sbuf_partition_bytes()) {
                return true;
            }
        }
    }
    return false;
}

/// PSUM banks for the accumulation blocks (0 when a block does not fit).
int accumulation_banks(const Geometry& g, const ChipSpec& chip) {
    const int available = chip.core.psum_banks - (g.swapped ? kTransposeBanks : 0);
    const auto tiles = static_cast<int>(g.s_block * g.v_block);
    return tiles <= available ? std::min(available, 2 * tiles) : 0;
}

/// Calls f(tiling) for every candidate, in the fixed order of matmul_tilings.
template <class F>
void for_each_tiling(const MatmulShape& s, const ChipSpec& chip, F&& f) {
    const auto& te = chip.core.tensor;
    const std::int64_t s_tiles = ceil_div(s.m, te.cols);
    const std::int64_t v_tiles = ceil_div(s.n, te.moving_free_max);
    constexpr std::array<std::pair<int, int>, 10> kBlocks{{{8, 1}, {4, 2}, {2, 4}, {1, 8}, {4, 1},
                                                           {2, 2}, {1, 4}, {2, 1}, {1, 2}, {1, 1}}};
    for (bool s_outer : {false, true}) {
        std::array<std::pair<std::int64_t, std::int64_t>, kBlocks.size()> seen{};
        std::size_t n_seen = 0;
        for (auto [bs, bv] : kBlocks) {
            const std::pair<std::int64_t, std::int64_t> c{std::min<std::int64_t>(bs, s_tiles),
                                                          std::min<std::int64_t>(bv, v_tiles)};
            if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(n_seen), c) !=
                seen.begin() + static_cast<std::ptrdiff_t>(n_seen)) {
                continue;
            }
            seen[n_seen++] = c;
            f(MatmulTiling{false, static_cast<int>(c.first), static_cast<int>(c.second), s_outer});
        }
    }
    if (s.m < te.cols && s.m <= te.moving_free_max) {
        const std::int64_t n_tiles = ceil_div(s.n, te.cols);
        std::int64_t last = 0;
        for (int bs : {6, 4, 2, 1}) {
            const std::int64_t c = std::min<std::int64_t>(bs, n_tiles);
            if (c == last) {
                continue;
            }
            last = c;
            for (bool s_outer : {false, true}) {
                f(MatmulTiling{true, static_cast<int>(c), 1, s_outer});
            }
        }
    }
}

} // namespace

std::string MatmulTiling::describe() const {
    std::string t = swapped ? "B stationary (transposed output)" : "A stationary";
    t += ", blocks of " + std::to_string(block_stationary) + "x" + std::to_string(block_moving) +
         " tiles, " + (stationary_outer ? "stationary" : "moving") + " panel outer";
    return t;
}

std::vector<MatmulTiling> matmul_tilings(const MatmulShape& s, const ChipSpec& chip) {
    std::vector<MatmulTiling> out;
    for_each_tiling(s, chip, [&](const MatmulTiling& t) { out.push_back(t); });
    return out;
}

std::optional<Program> lower_matmul(const MatmulShape& s, const MatmulTiling& t,
                                    const ChipSpec& chip) {
    TRNSIM_CHECK(s.m > 0 && s.k > 0 && s.n > 0 && s.batch > 0, "empty matmul");
    Geometry g = geometry(s, t, chip);
    const int banks = accumulation_banks(g, chip);
    if (banks == 0 || !choose_buffers(g, chip)) {
        return std::nullopt;
    }
    ProgramBuilder b(chip);
    const std::int64_t outer_cols = g.s_outer ? g.s_block_cols() : g.v_block_cols();
    const std::int64_t inner_cols = g.s_outer ? g.v_block_cols() : g.s_block_cols();
    const std::int64_t outer_blocks = g.s_outer ? g.s_blocks : g.v_blocks;
    const std::int64_t inner_blocks = g.s_outer ? g.v_blocks : g.s_blocks;
    const auto depth = static_cast<int>(g.depth);
    const auto outer_sets = static_cast<int>(std::min(g.depth, g.batch * outer_blocks));
    const auto inner_pool = b.sbuf_pool(g.chunk_bytes(inner_cols), depth);
    const auto outer_pool =
        g.resident ? b.sbuf_pool(g.chunk_bytes(outer_cols), static_cast<int>(g.chunks) * outer_sets)
                   : b.sbuf_pool(g.chunk_bytes(outer_cols), depth);
    const auto acc_pool = b.psum_pool(banks);
    ProgramBuilder::PoolId out_pool = 0;
    ProgramBuilder::PoolId tmp_pool = 0;
    ProgramBuilder::PoolId transpose_pool = 0;
    ProgramBuilder::Buffer identity = 0;
    if (g.swapped) {
        tmp_pool = b.sbuf_pool(g.v_dim * 2, static_cast<int>(g.depth * g.s_block));
        out_pool = b.sbuf_pool(g.s_block_cols() * g.out_eb, depth);
        transpose_pool = b.psum_pool(kTransposeBanks);
        identity = b.alloc(b.sbuf_pool(g.partitions * 2, 1));
        b.dma(kConstQueue, static_cast<double>(g.partitions * g.partitions * 2), g.partitions,
              Direction::hbm_to_sbuf, {}, {identity});
    } else {
        out_pool = b.sbuf_pool(g.v_block_cols() * g.out_eb, static_cast<int>(g.depth * g.s_block));
    }
    TRNSIM_CHECK(b.fits(), "matmul pools exceed the core");

    const int outer_queue = g.s_outer ? kStationaryQueue : kMovingQueue;
    const int inner_queue = g.s_outer ? kMovingQueue : kStationaryQueue;
    int evacuations = 0;
    const auto evacuation_engine = [&] {
        return evacuations++ % 2 == 0 ? Queue::vector : Queue::scalar;
    };
    // Loads chunk c of an operand block of `cols` columns (of an operand `dim` wide).
    const auto load = [&](int queue, ProgramBuilder::PoolId pool, std::int64_t c,
                          std::int64_t cols, std::int64_t dim) {
        const ProgramBuilder::Buffer slot = b.alloc(pool);
        const std::int64_t rows = g.chunk_rows(c);
        b.dma(queue, d(rows * cols * g.eb), g.descriptors(rows, cols, dim),
              Direction::hbm_to_sbuf, {}, {slot});
        return slot;
    };
    std::vector<ProgramBuilder::Buffer> panel(static_cast<std::size_t>(g.chunks));
    std::vector<ProgramBuilder::Buffer> acc;
    for (std::int64_t bi = 0; bi < g.batch; ++bi) {
        for (std::int64_t ob = 0; ob < outer_blocks; ++ob) {
            const std::int64_t ob_cols =
                g.s_outer ? std::min(g.s_block * g.s_tile, g.s_dim - ob * g.s_block * g.s_tile)
                          : std::min(g.v_block * g.v_tile, g.v_dim - ob * g.v_block * g.v_tile);
            const std::int64_t outer_dim = g.s_outer ? g.s_dim : g.v_dim;
            if (g.resident) {
                for (std::int64_t c = 0; c < g.chunks; ++c) {
                    panel[static_cast<std::size_t>(c)] =
                        load(outer_queue, outer_pool, c, ob_cols, outer_dim);
                }
            }
            for (std::int64_t ib = 0; ib < inner_blocks; ++ib) {
                const std::int64_t sb = g.s_outer ? ob : ib;
                const std::int64_t vb = g.s_outer ? ib : ob;
                const std::int64_t s0 = sb * g.s_block;
                const std::int64_t v0 = vb * g.v_block;
                const std::int64_t s_n = std::min(g.s_block, g.s_tiles - s0);
                const std::int64_t v_n = std::min(g.v_block, g.v_tiles - v0);
                const std::int64_t sbc = std::min(g.s_block * g.s_tile, g.s_dim - s0 * g.s_tile);
                const std::int64_t vbc = std::min(g.v_block * g.v_tile, g.v_dim - v0 * g.v_tile);
                acc.clear();
                for (std::int64_t i = 0; i < s_n * v_n; ++i) {
                    acc.push_back(b.alloc(acc_pool));
                }
                ProgramBuilder::Buffer s_slot = 0;
                ProgramBuilder::Buffer v_slot = 0;
                for (std::int64_t kk = 0; kk < g.kt; ++kk) {
                    const std::int64_t c = kk / g.kc;
                    if (kk % g.kc == 0) {
                        const ProgramBuilder::Buffer inner =
                            load(inner_queue, inner_pool, c, g.s_outer ? vbc : sbc,
                                 g.s_outer ? g.v_dim : g.s_dim);
                        const ProgramBuilder::Buffer outer =
                            g.resident ? panel[static_cast<std::size_t>(c)]
                                       : load(outer_queue, outer_pool, c, g.s_outer ? sbc : vbc,
                                              g.s_outer ? g.s_dim : g.v_dim);
                        s_slot = g.s_outer ? outer : inner;
                        v_slot = g.s_outer ? inner : outer;
                    }
                    for (std::int64_t si = 0; si < s_n; ++si) {
                        const auto ls = b.load_stationary(g.s_cols(s0 + si), g.p, s_slot);
                        for (std::int64_t vi = 0; vi < v_n; ++vi) {
                            b.multiply_moving(g.v_cols(v0 + vi), g.p, ls, v_slot,
                                              acc[static_cast<std::size_t>(si * v_n + vi)]);
                        }
                    }
                }
                if (!g.swapped) {
                    for (std::int64_t si = 0; si < s_n; ++si) {
                        const auto out = b.alloc(out_pool);
                        for (std::int64_t vi = 0; vi < v_n; ++vi) {
                            b.engine(evacuation_engine(), g.v_cols(v0 + vi), 1,
                                     {acc[static_cast<std::size_t>(si * v_n + vi)]}, {out});
                        }
                        const std::int64_t rows = g.s_cols(s0 + si);
                        b.dma(kStoreQueue, d(rows * vbc * g.out_eb), rows,
                              Direction::sbuf_to_hbm, {out}, {});
                    }
                    continue;
                }
                // Swapped: the block holds C^T tiles [128 n x M]; transpose them on TensorE
                // (LoadStationary of the tile, MultiplyMoving of the identity), four per bank.
                const auto out = b.alloc(out_pool);
                ProgramBuilder::Buffer bank = 0;
                for (std::int64_t si = 0; si < s_n; ++si) {
                    const auto tmp = b.alloc(tmp_pool);
                    b.engine(evacuation_engine(), g.v_dim, 1,
                             {acc[static_cast<std::size_t>(si)]}, {tmp});
                    if (si % 4 == 0) {
                        bank = b.alloc(transpose_pool);
                    }
                    const auto ls = b.load_stationary(g.v_dim, Precision::bf16, tmp);
                    b.multiply_moving(g.s_cols(s0 + si), Precision::bf16, ls, identity, bank);
                    if (si % 4 == 3 || si == s_n - 1) {
                        const std::int64_t first = si - si % 4;
                        const std::int64_t cols =
                            std::min(4 * g.s_tile, sbc - first * g.s_tile);
                        b.engine(evacuation_engine(), cols, 1, {bank}, {out});
                    }
                }
                b.dma(kStoreQueue, d(g.v_dim * sbc * g.out_eb), g.v_dim, Direction::sbuf_to_hbm,
                      {out}, {});
            }
        }
    }
    return b.finish(useful_flops(Kernel{s}), t.describe());
}

namespace detail {

Nominal nominal_matmul(const MatmulShape& s, const MatmulTiling& t, const ChipSpec& chip) {
    Geometry g = geometry(s, t, chip);
    Nominal n;
    n.feasible = accumulation_banks(g, chip) > 0 && choose_buffers(g, chip);
    const double f_pe = chip.core.tensor.clock.hz();
    const double batch = d(g.batch);
    // TensorE: every (contraction tile, stationary tile, moving tile) once.
    const double v_last = d(g.v_cols(g.v_tiles - 1));
    const double moving_cycles =
        d(g.v_tiles - 1) * d(multiply_moving_cycles(chip, g.v_tile, g.p)) +
        d(multiply_moving_cycles(chip, static_cast<std::int64_t>(v_last), g.p));
    double tensor_cycles = batch * d(g.kt) * d(g.s_tiles) * moving_cycles;
    // Evacuations alternate between VectorE and ScalarE.
    double evac_vector = 0.0;
    double evac_scalar = 0.0;
    const auto evacuate = [&](double count, std::int64_t free) {
        evac_vector += 0.5 * count * engine_seconds(chip, Queue::vector, free, 1);
        evac_scalar += 0.5 * count * engine_seconds(chip, Queue::scalar, free, 1);
    };
    if (g.swapped) {
        tensor_cycles +=
            batch * (d(g.s_tiles - 1) * d(multiply_moving_cycles(chip, g.s_tile, Precision::bf16)) +
                     d(multiply_moving_cycles(chip, g.s_cols(g.s_tiles - 1), Precision::bf16)));
        evacuate(batch * d(g.s_tiles), g.v_dim);
        evacuate(batch * d(g.s_blocks) * d(ceil_div(g.s_block, 4)), std::min(4 * g.s_tile, g.s_dim));
    } else {
        evacuate(batch * d(g.s_tiles) * d(g.v_tiles - 1), g.v_tile);
        evacuate(batch * d(g.s_tiles), static_cast<std::int64_t>(v_last));
    }
    n.tensor = tensor_cycles / f_pe;
    n.vector = evac_vector;
    n.scalar = evac_scalar;
    // DMA: each operand is loaded once per block of the other unless its panel stays resident.
    const double reads_s = g.s_outer && g.resident ? 1.0 : d(g.v_blocks);
    const double reads_v = !g.s_outer && g.resident ? 1.0 : d(g.s_blocks);
    const double chunks = d(g.chunks);
    DmaTally dma(chip);
    const auto operand = [&](int queue, double reads, std::int64_t blocks, std::int64_t block_cols,
                             std::int64_t dim) {
        const double count = batch * reads * d(blocks) * chunks;
        dma.add(queue, count, batch * reads * d(g.k) * d(dim) * d(g.eb) / count,
                d(g.block_descriptors(block_cols, dim)) / chunks);
    };
    operand(kStationaryQueue, reads_s, g.s_blocks, g.s_block_cols(), g.s_dim);
    operand(kMovingQueue, reads_v, g.v_blocks, g.v_block_cols(), g.v_dim);
    const double stores = batch * (g.swapped ? d(g.s_blocks) : d(g.s_tiles) * d(g.v_blocks));
    const double store_bytes = batch * d(s.m) * d(s.n) * d(g.out_eb) / stores;
    const double store_rows = batch * d(s.m) * d(g.swapped ? g.s_blocks : g.v_blocks) / stores;
    dma.add(kStoreQueue, stores, store_bytes, store_rows);
    if (g.swapped) {
        dma.add(kConstQueue, 1.0, d(g.partitions * g.partitions * 2), d(g.partitions));
    }
    n.dma = dma.seconds();
    n.hbm_bytes = dma.bytes();
    n.steps = batch * d(g.s_blocks) * d(g.v_blocks) * chunks;
    // One step through the pipeline: the first chunks of both operands, one chunk of a block's
    // multiplications, an evacuation and a store.
    const auto& core = chip.core;
    const double rows = d(g.chunk_rows(0));
    const double first = std::max(
        dma.transfer_seconds(rows * d(g.s_block_cols()) * d(g.eb),
                             d(g.descriptors(static_cast<std::int64_t>(rows), g.s_block_cols(), g.s_dim))),
        dma.transfer_seconds(rows * d(g.v_block_cols()) * d(g.eb),
                             d(g.descriptors(static_cast<std::int64_t>(rows), g.v_block_cols(), g.v_dim))));
    const double chunk_mm = d(g.kc) * d(g.s_block) * d(g.v_block) *
                            d(multiply_moving_cycles(chip, std::min(g.v_tile, g.v_dim), g.p)) / f_pe;
    const double latency = core.dma_issue_time.seconds() + core.dma_setup_latency.seconds();
    const auto& te = core.tensor;
    n.warmup = std::min(n.tensor, (1.0 - te.warmup_fraction) * te.warmup_window.seconds() / 2.0);
    n.path = 2.0 * latency + first + chunk_mm +
             engine_seconds(chip, Queue::vector, std::min(g.v_tile, g.v_dim), 1) +
             dma.transfer_seconds(store_bytes, store_rows);
    n.fixed = 2.0 * latency;
    return n;
}

} // namespace detail

} // namespace trnsim::compute
