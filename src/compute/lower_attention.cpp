// The flash-attention lowering and its closed-form costs.
#include "trnsim/compute/lowering.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"
#include "lowering_common.hpp"
#include "nominal.hpp"

#include <algorithm>
#include <array>

namespace trnsim::compute {

namespace {

using detail::ceil_div;

constexpr int kQueryQueue = 0;
constexpr int kKeyQueue = 1;
constexpr int kValueQueue = 2;
constexpr int kStoreQueue = 3;
/// Query tiles loaded by one DMA.
constexpr std::int64_t kQueryGroup = 4;

double d(std::int64_t v) { return static_cast<double>(v); }

/// A key tile in flight through the software pipeline.
struct KeyTile {
    std::int64_t w = 0;
    std::int64_t blocks = 0;
    ProgramBuilder::Buffer v_slot = 0;
    ProgramBuilder::Buffer probs = 0;
    ProgramBuilder::Buffer alpha = 0;
    ProgramBuilder::Buffer pt = 0;
};

/// A query tile being computed: its rows, the keys it attends to and its running state.
struct QueryTile {
    std::int64_t rows = 0;
    std::int64_t first_query = 0;
    std::int64_t keys = 0;
    std::int64_t tiles = 0;
    ProgramBuilder::Buffer q_slot = 0;
    ProgramBuilder::Buffer acc = 0;
    ProgramBuilder::Buffer running_max = 0;
    ProgramBuilder::Buffer running_sum = 0;
};

/// One (query tile, key tile) item of the pipeline.
struct Item {
    std::size_t query = 0;
    std::int64_t j = 0;
    KeyTile key;
};

std::int64_t sbuf_bytes(const AttentionShape& s, const detail::AttentionGeometry& g, bool resident,
                        bool double_buffer) {
    const std::int64_t k_slot = g.dq_tiles * g.kv_tile * g.eb;
    const std::int64_t v_slot = ceil_div(g.kv_tile, g.partitions) * s.v_dim * 2;
    const std::int64_t kv_slots = resident ? g.kv_tiles * (double_buffer ? 2 : 1) : 3;
    std::int64_t total = kv_slots * (k_slot + v_slot);
    total += 3 * g.dq_tiles * kQueryGroup * g.q_tile * g.eb; // Q^T groups
    total += 2 * g.kv_tile * 4;                            // masked scores
    total += 7 * g.kv_tile * 2;                            // P and P^T
    total += 4 * s.v_dim * 4 + 3 * s.v_dim * g.eb;         // O accumulator and output
    total += 32 * 16 + g.partitions * 2;                   // statistics, identity
    return total;
}

} // namespace

namespace detail {

AttentionGeometry attention_geometry(const AttentionShape& s, const ChipSpec& chip) {
    const auto& te = chip.core.tensor;
    AttentionGeometry g;
    g.qk_p = s.precision;
    g.pv_p = s.precision == Precision::fp32 ? Precision::fp32 : Precision::bf16;
    g.eb = element_bytes(s.precision);
    g.partitions = chip.core.sbuf_partitions;
    g.q_tile = te.cols;
    g.kv_tile = te.moving_free_max;
    g.dq_rows = std::int64_t{te.rows} * (s.precision == Precision::fp8 ? te.fp8_rate_multiplier : 1);
    g.dq_tiles = ceil_div(s.qk_dim, g.dq_rows);
    g.dv_tile = te.moving_free_max;
    g.dv_tiles = ceil_div(s.v_dim, g.dv_tile);
    g.q_tiles = ceil_div(s.q_len, g.q_tile);
    g.kv_tiles = ceil_div(s.kv_len, g.kv_tile);
    g.group = ceil_div(s.heads, s.kv_heads);
    g.offset = s.kv_len - s.q_len;
    g.query_group = kQueryGroup;
    const bool double_buffer = s.batch * s.kv_heads > 1;
    g.resident = sbuf_bytes(s, g, true, double_buffer) <= chip.core.sbuf_partition_bytes();
    if (!g.resident && sbuf_bytes(s, g, false, false) > chip.core.sbuf_partition_bytes()) {
        throw InputError("attention", "head dimensions " + std::to_string(s.qk_dim) + "/" +
                                          std::to_string(s.v_dim) +
                                          " do not fit one core's SBUF");
    }
    return g;
}

Program lower_attention(const AttentionShape& s, const ChipSpec& chip) {
    const AttentionGeometry g = attention_geometry(s, chip);
    ProgramBuilder b(chip);
    const bool double_buffer = s.batch * s.kv_heads > 1;
    const std::int64_t kv_slots = g.resident ? g.kv_tiles * (double_buffer ? 2 : 1) : 3;
    const auto k_pool = b.sbuf_pool(g.dq_tiles * g.kv_tile * g.eb, static_cast<int>(kv_slots));
    const auto v_pool = b.sbuf_pool(ceil_div(g.kv_tile, g.partitions) * s.v_dim * 2,
                                    static_cast<int>(kv_slots));
    const auto q_pool = b.sbuf_pool(g.dq_tiles * kQueryGroup * g.q_tile * g.eb, 3);
    const auto masked_pool = b.sbuf_pool(g.kv_tile * 4, 2);
    const auto p_pool = b.sbuf_pool(g.kv_tile * 2, 4);
    const auto pt_pool = b.sbuf_pool(g.kv_tile * 2, 3);
    const auto acc_pool = b.sbuf_pool(s.v_dim * 4, 4);
    const auto out_pool = b.sbuf_pool(s.v_dim * g.eb, 3);
    const auto stat_pool = b.sbuf_pool(16, 32);
    const auto identity = b.alloc(b.sbuf_pool(g.partitions * 2, 1));
    const auto score_banks = b.psum_pool(2);
    const auto transpose_banks = b.psum_pool(2);
    const auto output_banks = b.psum_pool(2);
    TRNSIM_CHECK(b.fits(), "attention pools exceed the core");
    b.dma(kStoreQueue, d(g.partitions * g.partitions * 2), g.partitions, Direction::hbm_to_sbuf,
          {}, {identity});

    int evacuations = 0;
    std::vector<ProgramBuilder::Buffer> k_slots(static_cast<std::size_t>(g.kv_tiles));
    std::vector<ProgramBuilder::Buffer> v_slots(static_cast<std::size_t>(g.kv_tiles));
    const auto load_kv = [&](std::int64_t j) {
        const std::int64_t w = std::min(g.kv_tile, s.kv_len - j * g.kv_tile);
        const auto k = b.alloc(k_pool);
        b.dma(kKeyQueue, d(s.qk_dim * w * g.eb), s.qk_dim, Direction::hbm_to_sbuf, {}, {k});
        const auto v = b.alloc(v_pool);
        b.dma(kValueQueue, d(w * s.v_dim * g.eb), w, Direction::hbm_to_sbuf, {}, {v});
        k_slots[static_cast<std::size_t>(j)] = k;
        v_slots[static_cast<std::size_t>(j)] = v;
    };
    // (query tile, key tile) items flow through a three-stage software pipeline, as TensorE
    // runs in order: S = Q K^T and the softmax statistics of item n, the transposes of P of
    // item n - 1, O += P V of item n - 2. Query tiles follow one another without draining it.
    std::array<QueryTile, 4> queries{};
    std::array<Item, 3> ring{};
    std::size_t next_query = 0;
    std::int64_t items = 0;
    const auto finalize = [&](const QueryTile& qt) {
        const auto inverse = b.alloc(stat_pool);
        b.engine(Queue::vector, 1, 1, {qt.running_sum}, {inverse});
        const auto out = b.alloc(out_pool);
        b.engine(Queue::vector, s.v_dim, 1, {qt.acc, inverse}, {out});
        b.dma(kStoreQueue, d(qt.rows * s.v_dim * g.eb), qt.rows, Direction::sbuf_to_hbm, {out},
              {});
    };
    const auto stage_scores = [&](Item& it) {
        QueryTile& qt = queries[it.query];
        KeyTile& kt = it.key;
        kt.w = std::min(g.kv_tile, qt.keys - it.j * g.kv_tile);
        kt.blocks = ceil_div(kt.w, g.partitions);
        if (!g.resident) {
            load_kv(it.j);
        }
        kt.v_slot = v_slots[static_cast<std::size_t>(it.j)];
        const auto scores = b.alloc(score_banks);
        for (std::int64_t dt = 0; dt < g.dq_tiles; ++dt) {
            const auto ls = b.load_stationary(qt.rows, g.qk_p, qt.q_slot);
            b.multiply_moving(kt.w, g.qk_p, ls, k_slots[static_cast<std::size_t>(it.j)], scores);
        }
        // Causal diagonal: copy out of PSUM and mask on GpSimdE.
        ProgramBuilder::Buffer src = scores;
        if (s.causal && it.j * g.kv_tile + kt.w > qt.first_query + g.offset + 1) {
            src = b.alloc(masked_pool);
            b.engine(Queue::vector, kt.w, 1, {scores}, {src});
            b.engine(Queue::gpsimd, kt.w, 1, {src}, {src});
        }
        // Row max, new running max, exp with row sums, rescale factor, new running sum.
        const auto row_max = b.alloc(stat_pool);
        b.engine(Queue::vector, kt.w, 1, {src}, {row_max});
        const auto new_max = b.alloc(stat_pool);
        b.engine(Queue::vector, 1, 2, {row_max, qt.running_max}, {new_max});
        kt.probs = b.alloc(p_pool);
        const auto row_sum = b.alloc(stat_pool);
        b.engine(Queue::scalar, kt.w, 1, {src, new_max}, {kt.probs, row_sum});
        kt.alpha = b.alloc(stat_pool);
        b.engine(Queue::scalar, 1, 1, {qt.running_max, new_max}, {kt.alpha});
        const auto new_sum = b.alloc(stat_pool);
        b.engine(Queue::vector, 1, 2, {kt.alpha, row_sum, qt.running_sum}, {new_sum});
        qt.running_max = new_max;
        qt.running_sum = new_sum;
    };
    // P^T on TensorE, 128 keys at a time, into one bank; evacuated to SBUF.
    const auto stage_transpose = [&](Item& it) {
        const QueryTile& qt = queries[it.query];
        KeyTile& kt = it.key;
        const auto transposed = b.alloc(transpose_banks);
        for (std::int64_t bl = 0; bl < kt.blocks; ++bl) {
            const std::int64_t bw = std::min(g.partitions, kt.w - bl * g.partitions);
            const auto ls = b.load_stationary(bw, g.pv_p, kt.probs);
            b.multiply_moving(qt.rows, g.pv_p, ls, identity, transposed);
        }
        kt.pt = b.alloc(pt_pool);
        b.engine(evacuations++ % 2 == 0 ? Queue::vector : Queue::scalar, kt.blocks * qt.rows, 1,
                 {transposed}, {kt.pt});
    };
    // O = P V, then O_acc = O_acc x alpha + O; the query tile's last key tile finishes it.
    const auto stage_output = [&](const Item& it) {
        const QueryTile& qt = queries[it.query];
        const KeyTile& kt = it.key;
        const auto o = b.alloc(output_banks);
        for (std::int64_t bl = 0; bl < kt.blocks; ++bl) {
            const auto ls = b.load_stationary(qt.rows, g.pv_p, kt.pt);
            for (std::int64_t dt = 0; dt < g.dv_tiles; ++dt) {
                b.multiply_moving(std::min(g.dv_tile, s.v_dim - dt * g.dv_tile), g.pv_p, ls,
                                  kt.v_slot, o);
            }
        }
        b.engine(Queue::vector, s.v_dim, 2, {o, qt.acc, kt.alpha}, {qt.acc});
        if (it.j == qt.tiles - 1) {
            finalize(qt);
        }
    };
    const auto slot = [](std::int64_t n) { return static_cast<std::size_t>(n % 3); };
    const auto advance = [&](std::size_t query, std::int64_t j) {
        ring[slot(items)] = Item{query, j, {}};
        stage_scores(ring[slot(items)]);
        if (items >= 1) {
            stage_transpose(ring[slot(items - 1)]);
        }
        if (items >= 2) {
            stage_output(ring[slot(items - 2)]);
        }
        ++items;
    };
    for (std::int64_t bi = 0; bi < s.batch; ++bi) {
        for (std::int64_t kvh = 0; kvh < s.kv_heads; ++kvh) {
            if (g.resident) {
                for (std::int64_t j = 0; j < g.kv_tiles; ++j) {
                    load_kv(j);
                }
            }
            const std::int64_t first_head = kvh * g.group;
            const std::int64_t heads = std::min(g.group, s.heads - first_head);
            for (std::int64_t h = 0; h < heads; ++h) {
                ProgramBuilder::Buffer q_slot = 0;
                for (std::int64_t i = 0; i < g.q_tiles; ++i) {
                    if (i % kQueryGroup == 0) {
                        const std::int64_t cols =
                            std::min(kQueryGroup * g.q_tile, s.q_len - i * g.q_tile);
                        q_slot = b.alloc(q_pool);
                        b.dma(kQueryQueue, d(s.qk_dim * cols * g.eb), s.qk_dim,
                              Direction::hbm_to_sbuf, {}, {q_slot});
                    }
                    const std::size_t q = next_query++ % queries.size();
                    QueryTile& qt = queries[q];
                    qt.rows = std::min(g.q_tile, s.q_len - i * g.q_tile);
                    qt.first_query = i * g.q_tile;
                    qt.keys = g.keys(s, i);
                    qt.tiles = ceil_div(qt.keys, g.kv_tile);
                    qt.q_slot = q_slot;
                    qt.acc = b.alloc(acc_pool);
                    qt.running_max = b.alloc(stat_pool);
                    qt.running_sum = b.alloc(stat_pool);
                    b.engine(Queue::gpsimd, s.v_dim, 1, {},
                             {qt.acc, qt.running_max, qt.running_sum});
                    if (qt.tiles == 0) {
                        finalize(qt);
                    }
                    for (std::int64_t j = 0; j < qt.tiles; ++j) {
                        advance(q, j);
                    }
                }
            }
        }
    }
    if (items >= 1) {
        stage_transpose(ring[slot(items - 1)]);
    }
    if (items >= 2) {
        stage_output(ring[slot(items - 2)]);
    }
    if (items >= 1) {
        stage_output(ring[slot(items - 1)]);
    }
    return b.finish(useful_flops(Kernel{s}),
                    g.resident ? "keys and values resident per kv head"
                               : "keys and values streamed per query tile");
}

} // namespace detail

} // namespace trnsim::compute
