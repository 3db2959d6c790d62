// The flash-attention backward lowering (lowering_common.hpp, AttentionBackwardGeometry, has
// the algorithm).
#include "trnsim/compute/lowering.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"
#include "lowering_common.hpp"

#include <algorithm>
#include <array>

namespace trnsim::compute::detail {

namespace {

constexpr int kQueryQueue = 0;
constexpr int kKeyQueue = 1;
constexpr int kValueQueue = 2;
constexpr int kStoreQueue = 3;
/// Slots of 16 bytes per partition for the row statistics (log-sum-exp and D per query tile).
constexpr int kStatSlotBytes = 16;
/// Pipeline stages behind an item's scores: its gradients, its dQ.
constexpr int kGradLag = 3;
constexpr int kDqLag = 5;
constexpr int kRing = kDqLag + 1;
/// Slots of the pools whose transfers wait for an engine (O rows, the casts before stores).
constexpr int kDeep = 8;
constexpr int kKeySlots = kDqLag + 3;

double d(std::int64_t v) { return static_cast<double>(v); }

/// SBUF bytes per partition of everything but the resident query tiles.
std::int64_t fixed_bytes(const AttentionShape& s, const AttentionBackwardGeometry& g) {
    const std::int64_t pe = g.p == Precision::fp32 ? 4 : 2; // P, dS, dS^T
    std::int64_t total =
        kKeySlots * ((g.qk_ctiles + g.v_ctiles) * g.k_tile * g.eb + s.qk_dim * g.eb);
    total += kDeep * s.v_dim * g.eb;                          // O rows (for D)
    total += 2 * (kGradLag + 2) * g.k_tile * pe;              // P, dS
    total += (kDqLag - kGradLag + 2) * g.q_tile * pe;         // dS^T
    total += kDeep * std::max(s.qk_dim, s.v_dim) * g.eb;      // casts of dK, dV, dQ
    total += 4 * std::max(s.qk_dim, s.v_dim) * 4;             // partial dK, dV of earlier blocks
    total += g.partitions * 2;                                // identity
    return total;
}

/// A query tile of the resident block.
struct Resident {
    std::int64_t rows = 0;
    std::int64_t first_query = 0;
    std::int64_t key_tiles = 0;
    std::int64_t keys = 0;
    ProgramBuilder::Buffer q_t = 0, q = 0, do_t = 0, d_o = 0, acc = 0, lse = 0, dsum = 0;
};

/// One (query tile, key tile) item in flight.
struct Item {
    std::size_t tile = 0;
    std::int64_t j = 0;
    std::int64_t w = 0;
    int slot = 0; ///< its place in the pipeline's ring (the key tile's buffers)
    bool last_of_key_tile = false;
    ProgramBuilder::Buffer p = 0, ds = 0, ds_t = 0;
};

} // namespace

AttentionBackwardGeometry attention_backward_geometry(const AttentionShape& s,
                                                      const ChipSpec& chip) {
    const auto& te = chip.core.tensor;
    AttentionBackwardGeometry g;
    g.p = s.precision == Precision::fp32 ? Precision::fp32 : Precision::bf16;
    g.eb = s.precision == Precision::fp32 ? 4 : 2;
    g.partitions = chip.core.sbuf_partitions;
    g.q_tile = te.cols;
    g.k_tile = te.cols;
    g.qk_ctiles = ceil_div(s.qk_dim, te.rows);
    g.v_ctiles = ceil_div(s.v_dim, te.rows);
    g.moving = te.moving_free_max;
    g.q_tiles = ceil_div(s.q_len, g.q_tile);
    g.k_tiles = ceil_div(s.kv_len, g.k_tile);
    g.group = ceil_div(s.heads, s.kv_heads);
    g.offset = s.kv_len - s.q_len;
    const std::int64_t bank_fp32 = chip.core.psum_bank_bytes() / 4;
    if (s.qk_dim > bank_fp32 || s.v_dim > bank_fp32) {
        throw InputError("attention", "the backward pass accumulates dK, dV and dQ rows in one "
                                      "PSUM bank: head dimensions up to " +
                                          std::to_string(bank_fp32));
    }
    g.tile_bytes = (g.qk_ctiles + g.v_ctiles) * g.q_tile * g.eb + (s.qk_dim + s.v_dim) * g.eb +
                   4 * s.qk_dim + 2 * kStatSlotBytes;
    const std::int64_t room =
        chip.core.sbuf_partition_bytes() - fixed_bytes(s, g) - 64 * kStatSlotBytes;
    const std::int64_t tiles = g.group * g.q_tiles;
    g.block_tiles = std::min(tiles, room > 0 ? room / g.tile_bytes : 0);
    const bool several = s.batch * s.kv_heads > 1 || g.block_tiles < tiles;
    g.resident_slots =
        several && 2 * g.block_tiles * g.tile_bytes <= room ? 2 * g.block_tiles : g.block_tiles;
    if (g.block_tiles < 1) {
        throw InputError("attention", "head dimensions " + std::to_string(s.qk_dim) + "/" +
                                          std::to_string(s.v_dim) +
                                          " do not fit one core's SBUF in the backward pass");
    }
    return g;
}

Program lower_attention_backward(const AttentionShape& s, const ChipSpec& chip) {
    const AttentionBackwardGeometry g = attention_backward_geometry(s, chip);
    const std::int64_t pe = g.p == Precision::fp32 ? 4 : 2;
    const int block = static_cast<int>(g.block_tiles);
    const int slots = static_cast<int>(g.resident_slots);
    ProgramBuilder b(chip);
    // Key tiles stay in use until their last item leaves the pipeline (kDqLag items later):
    // enough slots that the next ones load meanwhile.
    const auto kt_pool = b.sbuf_pool(g.qk_ctiles * g.k_tile * g.eb, kKeySlots);
    const auto vt_pool = b.sbuf_pool(g.v_ctiles * g.k_tile * g.eb, kKeySlots);
    const auto k_pool = b.sbuf_pool(s.qk_dim * g.eb, kKeySlots);
    // Loads and stores behind a dependency do not overlap their setup latency with the
    // previous transfer: deep pools keep several in flight.
    const auto o_pool = b.sbuf_pool(s.v_dim * g.eb, kDeep);
    const auto p_pool = b.sbuf_pool(g.k_tile * pe, kGradLag + 2);
    const auto ds_pool = b.sbuf_pool(g.k_tile * pe, kGradLag + 2);
    const auto dst_pool = b.sbuf_pool(g.q_tile * pe, kDqLag - kGradLag + 2);
    const auto cast_pool = b.sbuf_pool(std::max(s.qk_dim, s.v_dim) * g.eb, kDeep);
    const auto partial_pool = b.sbuf_pool(std::max(s.qk_dim, s.v_dim) * 4, 4);
    const auto identity = b.alloc(b.sbuf_pool(g.partitions * 2, 1));
    const auto spare_stats = b.sbuf_pool(kStatSlotBytes, 64);
    (void)spare_stats; // room the fixed budget keeps for statistics
    const auto qt_pool = b.sbuf_pool(g.qk_ctiles * g.q_tile * g.eb, slots);
    const auto q_pool = b.sbuf_pool(s.qk_dim * g.eb, slots);
    const auto dot_pool = b.sbuf_pool(g.v_ctiles * g.q_tile * g.eb, slots);
    const auto do_pool = b.sbuf_pool(s.v_dim * g.eb, slots);
    const auto acc_pool = b.sbuf_pool(s.qk_dim * 4, slots);
    const auto stat_pool = b.sbuf_pool(kStatSlotBytes, 2 * slots);
    const bool shared_bank = s.qk_dim + s.v_dim <= chip.core.psum_bank_bytes() / 4;
    const auto grad_banks = b.psum_pool(2); // dK and dV of the key tile (or of two)
    const auto s_banks = b.psum_pool(2);    // S
    const auto dp_banks = b.psum_pool(2);   // dP
    const auto t_banks = b.psum_pool(1);    // dS^T
    const auto dq_banks = b.psum_pool(1);   // dS K
    TRNSIM_CHECK(b.fits(), "attention backward pools exceed the core");
    // The identity (for the transposes) first, on the first queue (the descriptor generators
    // serve the queues in order, core_model.hpp).
    b.dma(kQueryQueue, d(g.partitions * g.partitions * 2), g.partitions, Direction::hbm_to_sbuf,
          {}, {identity});

    const std::int64_t qk_moving = ceil_div(s.qk_dim, g.moving);
    const std::int64_t v_moving = ceil_div(s.v_dim, g.moving);
    const auto width = [&](std::int64_t dim, std::int64_t m) {
        return std::min(g.moving, dim - m * g.moving);
    };

    std::vector<Resident> tiles(static_cast<std::size_t>(block));
    ProgramBuilder::Buffer kt = 0, vt = 0, krow = 0, dk = 0, dv = 0;
    std::int64_t blocks = 0;
    bool first_block = true;
    bool last_block = true;
    std::int64_t key_tile_width = 0;
    std::array<Item, kRing> ring{};
    int evacuations = 0;
    std::int64_t items = 0;
    // dK and dV of the key tile whose last item just left stage B: into SBUF (plus the partial
    // sums of earlier blocks), then out.
    const auto evacuate = [&](ProgramBuilder::Buffer k_bank, ProgramBuilder::Buffer v_bank,
                              std::int64_t kw) {
        const std::int64_t out_bytes = last_block ? g.eb : 4;
        for (const auto& [bank, dim, q] : {std::tuple{k_bank, s.qk_dim, Queue::vector},
                                           std::tuple{v_bank, s.v_dim, Queue::scalar}}) {
            const auto out = b.alloc(cast_pool);
            if (!first_block) {
                const auto partial = b.alloc(partial_pool);
                b.dma(kValueQueue, d(kw * dim * 4), kw, Direction::hbm_to_sbuf, {}, {partial});
                b.engine(q, dim, 2, {bank, partial}, {out});
            } else {
                b.engine(q, dim, 1, {bank}, {out});
            }
            b.dma(kStoreQueue, d(kw * dim * out_bytes), kw, Direction::sbuf_to_hbm, {out}, {});
        }
    };
    struct Banks {
        ProgramBuilder::Buffer dk = 0, dv = 0;
        std::int64_t kw = 0;
    };
    std::array<Banks, kRing> item_banks{};
    std::array<ProgramBuilder::Buffer, kRing> item_k{};
    std::array<ProgramBuilder::Buffer, kRing> item_kt{}, item_vt{};
    const auto stage_scores = [&](Item& it) {
        const Resident& t = tiles[it.tile];
        const auto sb = b.alloc(s_banks);
        for (std::int64_t c = 0; c < g.qk_ctiles; ++c) {
            const auto ls = b.load_stationary(t.rows, g.p, t.q_t);
            b.multiply_moving(it.w, g.p, ls, item_kt[static_cast<std::size_t>(it.slot)], sb);
        }
        it.p = b.alloc(p_pool);
        b.engine(Queue::scalar, it.w, 1, {sb, t.lse}, {it.p}); // P = exp(S - LSE)
        if (s.causal && it.j * g.k_tile + it.w > t.first_query + g.offset + 1) {
            b.engine(Queue::gpsimd, it.w, 1, {it.p}, {it.p}); // the diagonal's mask
        }
        const auto pb = b.alloc(dp_banks);
        for (std::int64_t c = 0; c < g.v_ctiles; ++c) {
            const auto ls = b.load_stationary(t.rows, g.p, t.do_t);
            b.multiply_moving(it.w, g.p, ls, item_vt[static_cast<std::size_t>(it.slot)], pb);
        }
        it.ds = b.alloc(ds_pool);
        b.engine(Queue::vector, it.w, 2, {pb, it.p, t.dsum}, {it.ds}); // dS = P (dP - D)
    };
    const auto stage_grads = [&](Item& it, const Banks& banks) {
        const Resident& t = tiles[it.tile];
        for (std::int64_t m = 0; m < v_moving; ++m) { // dV += P^T dO
            const auto ls = b.load_stationary(it.w, g.p, it.p);
            b.multiply_moving(width(s.v_dim, m), g.p, ls, t.d_o, banks.dv);
        }
        for (std::int64_t m = 0; m < qk_moving; ++m) { // dK += dS^T Q
            const auto ls = b.load_stationary(it.w, g.p, it.ds);
            b.multiply_moving(width(s.qk_dim, m), g.p, ls, t.q, banks.dk);
        }
        const auto tb = b.alloc(t_banks); // dS^T
        const auto ls = b.load_stationary(it.w, g.p, it.ds);
        b.multiply_moving(t.rows, g.p, ls, identity, tb);
        it.ds_t = b.alloc(dst_pool);
        // ScalarE and GpSimdE take turns evacuating the transposes.
        b.engine(evacuations++ % 2 == 0 ? Queue::scalar : Queue::gpsimd, t.rows, 1, {tb},
                 {it.ds_t});
        if (it.last_of_key_tile) {
            evacuate(banks.dk, banks.dv, banks.kw);
        }
    };
    const auto stage_dq = [&](const Item& it, ProgramBuilder::Buffer k_rows) {
        const Resident& t = tiles[it.tile];
        const auto qb = b.alloc(dq_banks);
        const auto ls = b.load_stationary(t.rows, g.p, it.ds_t);
        for (std::int64_t m = 0; m < qk_moving; ++m) {
            b.multiply_moving(width(s.qk_dim, m), g.p, ls, k_rows, qb);
        }
        b.engine(Queue::gpsimd, s.qk_dim, 2, {qb, t.acc}, {t.acc}); // dQ += dS K
    };
    // Items flow through a software pipeline, as TensorE runs in order: the scores,
    // probabilities and dS of item n, the gradients of item n - kGradLag (so that ScalarE and
    // VectorE have a few items' time to produce P and dS while TensorE goes on), dQ of item
    // n - kDqLag (after the transpose's evacuation).
    const auto slot = [](std::int64_t n) { return static_cast<std::size_t>(n % kRing); };
    const auto step = [&](std::int64_t t, std::int64_t count) {
        if (t < count) {
            stage_scores(ring[slot(t)]);
        }
        if (t >= kGradLag && t - kGradLag < count) {
            stage_grads(ring[slot(t - kGradLag)], item_banks[slot(t - kGradLag)]);
        }
        if (t >= kDqLag && t - kDqLag < count) {
            stage_dq(ring[slot(t - kDqLag)], item_k[slot(t - kDqLag)]);
        }
    };
    const auto advance = [&](Item it) {
        it.slot = static_cast<int>(slot(items));
        ring[slot(items)] = it;
        item_banks[slot(items)] = Banks{dk, dv, key_tile_width};
        item_k[slot(items)] = krow;
        item_kt[slot(items)] = kt;
        item_vt[slot(items)] = vt;
        step(items, items + 1);
        ++items;
    };
    const auto drain = [&] {
        for (std::int64_t t = items; t < items + kDqLag; ++t) {
            step(t, items);
        }
        items = 0;
    };

    for (std::int64_t bi = 0; bi < s.batch; ++bi) {
        for (std::int64_t kvh = 0; kvh < s.kv_heads; ++kvh) {
            const std::int64_t heads = std::min(g.group, s.heads - kvh * g.group);
            const std::int64_t flat = heads * g.q_tiles;
            blocks = ceil_div(flat, g.block_tiles);
            for (std::int64_t blk = 0; blk < blocks; ++blk) {
                first_block = blk == 0;
                last_block = blk == blocks - 1;
                const std::int64_t f0 = blk * g.block_tiles;
                const std::int64_t f1 = std::min(flat, f0 + g.block_tiles);
                // The block's query tiles; their inputs load when the first key tile reaches
                // them (Q^T, dO^T and statistics in groups, the rows per tile), then
                // D = rowsum(dO O) and a zeroed dQ.
                std::int64_t key_tiles = 0;
                for (std::int64_t f = f0; f < f1; ++f) {
                    Resident& t = tiles[static_cast<std::size_t>(f - f0)];
                    const std::int64_t i = f % g.q_tiles;
                    t.rows = std::min(g.q_tile, s.q_len - i * g.q_tile);
                    t.first_query = i * g.q_tile;
                    t.keys = g.keys(s, i);
                    t.key_tiles = g.key_tiles(s, i);
                    key_tiles = std::max(key_tiles, t.key_tiles);
                    t.q_t = b.alloc(qt_pool);
                    t.q = b.alloc(q_pool);
                    t.do_t = b.alloc(dot_pool);
                    t.d_o = b.alloc(do_pool);
                    t.acc = b.alloc(acc_pool);
                    t.lse = b.alloc(stat_pool);
                    t.dsum = b.alloc(stat_pool);
                }
                // A group: up to query_group consecutive query tiles of one head, loaded by
                // one DMA per tensor (rows of several tiles side by side in each partition).
                const auto group_of = [&](std::int64_t f) {
                    const std::int64_t i = f % g.q_tiles;
                    return std::min({g.query_group, g.q_tiles - i, f1 - f});
                };
                const auto starts_group = [&](std::int64_t f) {
                    return f == f0 || f % g.q_tiles == 0 || (f - f0) % g.query_group == 0;
                };
                const auto load_tile = [&](std::int64_t f) {
                    if (!starts_group(f)) {
                        return;
                    }
                    const std::int64_t i = f % g.q_tiles;
                    const std::int64_t n = group_of(f);
                    const std::int64_t cols = std::min(n * g.q_tile, s.q_len - i * g.q_tile);
                    const std::int64_t rows = cols; // a descriptor per query row
                    std::vector<ProgramBuilder::Buffer> qt, dot, lse, q, d_o, o;
                    for (std::int64_t k = f; k < f + n; ++k) {
                        const Resident& t = tiles[static_cast<std::size_t>(k - f0)];
                        qt.push_back(t.q_t);
                        dot.push_back(t.do_t);
                        lse.push_back(t.lse);
                        q.push_back(t.q);
                        d_o.push_back(t.d_o);
                        o.push_back(b.alloc(o_pool));
                    }
                    b.dma(kQueryQueue, d(s.qk_dim * cols * g.eb), s.qk_dim, Direction::hbm_to_sbuf,
                          {}, qt);
                    b.dma(kQueryQueue, d(s.v_dim * cols * g.eb), s.v_dim, Direction::hbm_to_sbuf,
                          {}, dot);
                    b.dma(kQueryQueue, d(cols * 4), std::min(cols, g.partitions),
                          Direction::hbm_to_sbuf, {}, lse);
                    b.dma(kQueryQueue, d(cols * s.qk_dim * g.eb), rows, Direction::hbm_to_sbuf,
                          {}, q);
                    b.dma(kValueQueue, d(cols * s.v_dim * g.eb), rows, Direction::hbm_to_sbuf,
                          {}, d_o);
                    b.dma(kKeyQueue, d(cols * s.v_dim * g.eb), rows, Direction::hbm_to_sbuf, {},
                          o);
                    for (std::int64_t k = f; k < f + n; ++k) {
                        const Resident& t = tiles[static_cast<std::size_t>(k - f0)];
                        b.engine(Queue::vector, s.v_dim, 2,
                                 {t.d_o, o[static_cast<std::size_t>(k - f)]}, {t.dsum});
                        b.engine(Queue::gpsimd, s.qk_dim, 1, {}, {t.acc});
                    }
                };
                for (std::int64_t j = 0; j < std::max<std::int64_t>(key_tiles, 1); ++j) {
                    if (key_tiles > 0) {
                        key_tile_width = std::min(g.k_tile, s.kv_len - j * g.k_tile);
                        kt = b.alloc(kt_pool);
                        b.dma(kKeyQueue, d(s.qk_dim * key_tile_width * g.eb), s.qk_dim,
                              Direction::hbm_to_sbuf, {}, {kt});
                        vt = b.alloc(vt_pool);
                        b.dma(kValueQueue, d(s.v_dim * key_tile_width * g.eb), s.v_dim,
                              Direction::hbm_to_sbuf, {}, {vt});
                        krow = b.alloc(k_pool);
                        b.dma(kKeyQueue, d(key_tile_width * s.qk_dim * g.eb), key_tile_width,
                              Direction::hbm_to_sbuf, {}, {krow});
                        // dK and dV share a bank when both rows fit one (head dims up to
                        // 256), so that two key tiles accumulate at once.
                        dk = b.alloc(grad_banks);
                        dv = shared_bank ? dk : b.alloc(grad_banks);
                    }
                    std::int64_t last = -1;
                    for (std::int64_t f = f0; f < f1; ++f) {
                        if (tiles[static_cast<std::size_t>(f - f0)].key_tiles > j) {
                            last = f;
                        }
                    }
                    for (std::int64_t f = f0; f < f1; ++f) {
                        if (j == 0) {
                            load_tile(f);
                        }
                        const Resident& t = tiles[static_cast<std::size_t>(f - f0)];
                        if (t.key_tiles <= j) {
                            continue;
                        }
                        Item it;
                        it.tile = static_cast<std::size_t>(f - f0);
                        it.j = j;
                        it.w = std::min(g.k_tile, t.keys - j * g.k_tile);
                        it.last_of_key_tile = f == last;
                        advance(it);
                    }
                }
                drain();
                // dQ cast and stored, a group of query tiles per DMA.
                for (std::int64_t f = f0; f < f1;) {
                    const std::int64_t n = group_of(f);
                    std::vector<ProgramBuilder::Buffer> out;
                    std::int64_t rows = 0;
                    for (std::int64_t k = f; k < f + n; ++k) {
                        const Resident& t = tiles[static_cast<std::size_t>(k - f0)];
                        out.push_back(b.alloc(cast_pool));
                        b.engine(Queue::scalar, s.qk_dim, 1, {t.acc}, {out.back()});
                        rows += t.rows;
                    }
                    b.dma(kStoreQueue, d(rows * s.qk_dim * g.eb), rows, Direction::sbuf_to_hbm,
                          out, {});
                    f += n;
                }
            }
        }
    }
    return b.finish(useful_flops(Kernel{s}),
                    g.block_tiles >= g.group * g.q_tiles
                        ? "queries resident per kv head, keys streamed once"
                        : "queries in blocks of " + std::to_string(g.block_tiles) +
                              " tiles, keys streamed per block");
}

} // namespace trnsim::compute::detail
