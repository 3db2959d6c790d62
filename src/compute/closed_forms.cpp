// The closed forms of the matmul and attention kernels (forward and backward), the chip
// rates they share and `terms`, the entry for any kernel piece (closed_forms.hpp). The
// streaming kernels' plans and terms are in closed_forms_stream.cpp.
#include "closed_forms.hpp"

#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::compute::detail {

namespace {

/// Bytes a streamed matmul DMA aims for (lower_matmul.cpp).
constexpr double kChunkBytes = 256.0 * 1024.0;

double d(std::int64_t v) { return static_cast<double>(v); }

} // namespace

ChipRates::ChipRates(const ChipSpec& c) : chip(&c) {
    const auto& core = c.core;
    partitions = core.sbuf_partitions;
    const std::array<const VectorEngineSpec*, 3> specs{&core.vector, &core.scalar, &core.gpsimd};
    for (std::size_t e = 0; e < 3; ++e) {
        cycle[e] = 1.0 / specs[e]->clock.hz();
        inv_lanes[e] = 1.0 / std::max(1.0, d(specs[e]->elements_per_cycle) / partitions);
        overhead[e] = specs[e]->instruction_overhead_cycles;
    }
    perf_mode = core.vector.perf_mode_elements_per_cycle > 0;
    inv_perf_lanes =
        perf_mode ? 1.0 / std::max(1.0, d(core.vector.perf_mode_elements_per_cycle) / partitions)
                  : inv_lanes[0];
    pe_cycle = 1.0 / core.tensor.clock.hz();
    usable = dma_engines_usable(c);
    inv_usable = 1.0 / usable;
    inv_bandwidth = 1.0 / core.dma_engine_bandwidth.bytes_per_s();
    descriptor = core.dma_descriptor_overhead.seconds();
    latency = core.dma_issue_time.seconds() + core.dma_setup_latency.seconds();
    issue = core.dma_issue_time.seconds() / std::max(1, core.dma_generators);
    warmup = (1.0 - core.tensor.warmup_fraction) * core.tensor.warmup_window.seconds() / 2.0;
    sbuf = core.sbuf_partition_bytes();
}

Nominal matmul_terms(const MatmulShape& s, const ChipRates& r) {
    const ChipSpec& chip = *r.chip;
    const auto& te = chip.core.tensor;
    const double partitions = r.partitions;
    const double part_rows = s.precision == Precision::fp8 ? te.fp8_rate_multiplier : 1.0;
    const double kt_rows = te.rows * part_rows;
    const double k = d(s.k);
    const double kt = std::ceil(k / kt_rows);
    const double eb = element_bytes(s.precision);
    const double out_eb = s.precision == Precision::fp32 ? 4.0 : 2.0;
    const double rate = s.precision == Precision::fp32 ? te.fp32_rate_divisor : 1.0;
    const double min_mm = te.min_matmul_cycles;
    const auto mm = [&](double cols) { return std::max(cols, min_mm) * rate; };
    const double batch = d(s.batch);
    const double m = d(s.m);
    const double nn = d(s.n);
    const double cols = te.cols;
    const double nmax = te.moving_free_max;
    const double store_bytes = batch * m * nn * out_eb;

    // The candidates of the lowering's search, in closed form: A stationary, or (M < 128) B
    // stationary with a transposed result; the largest PSUM blocks of each shape; either panel
    // resident. The one with the least time on its busiest resource stands for the search.
    // What depends only on the orientation is computed once per orientation.
    struct Orientation {
        bool swapped = false;
        double s_dim = 0, v_dim = 0, s_tile = 0, v_tile = 0, s_tiles = 0, v_tiles = 0;
        double tensor = 0.0;
    };
    struct Candidate {
        const Orientation* o = nullptr;
        double bs = 1, bv = 1, s_blocks = 1, v_blocks = 1;
        double loads = 0.0, load_engine = 0.0, store_engine = 0.0, dmas = 0.0;
        double bound = 0.0;
    };
    const auto orientation = [&](bool swapped) {
        Orientation o;
        o.swapped = swapped;
        o.s_dim = swapped ? nn : m;
        o.v_dim = swapped ? m : nn;
        o.s_tile = cols;
        o.v_tile = swapped ? m : nmax;
        o.s_tiles = std::ceil(o.s_dim / o.s_tile);
        o.v_tiles = std::ceil(o.v_dim / o.v_tile);
        const double v_last = o.v_dim - (o.v_tiles - 1.0) * o.v_tile;
        o.tensor = batch * kt * o.s_tiles * ((o.v_tiles - 1.0) * mm(o.v_tile) + mm(v_last));
        if (swapped) {
            const double s_last = o.s_dim - (o.s_tiles - 1.0) * o.s_tile;
            o.tensor += batch * ((o.s_tiles - 1.0) * std::max(cols, min_mm) + std::max(s_last, min_mm));
        }
        o.tensor *= r.pe_cycle;
        return o;
    };
    const double first_rows = std::min(kt_rows, k);
    Candidate best;
    const auto consider = [&](const Orientation& o, double bs, double bv) {
        Candidate c;
        c.o = &o;
        c.bs = std::min(bs, o.s_tiles);
        c.bv = std::min(bv, o.v_tiles);
        c.s_blocks = std::ceil(o.s_tiles / c.bs);
        c.v_blocks = std::ceil(o.v_tiles / c.bv);
        const double sbc = std::min(c.bs * o.s_tile, o.s_dim);
        const double vbc = std::min(c.bv * o.v_tile, o.v_dim);
        const double kc = std::clamp(std::ceil(kChunkBytes / (kt_rows * (sbc + vbc) * eb)), 1.0, kt);
        const double chunks = std::ceil(kt / kc);
        const double chunk_rows = kc * kt_rows;
        // Descriptors of one operand block: a run per contraction row of each chunk when the
        // operand has several blocks, one per partition row of a chunk otherwise.
        const double full_chunks = std::floor(k / chunk_rows);
        const double single = full_chunks * std::min(chunk_rows, partitions) +
                              std::min(k - full_chunks * chunk_rows, partitions);
        const double s_descriptors = c.s_blocks * (c.s_blocks > 1.0 ? k : single);
        const double v_descriptors = c.v_blocks * (c.v_blocks > 1.0 ? k : single);
        const double stores = batch * (o.swapped ? c.s_blocks : o.s_tiles * c.v_blocks);
        const double store_descriptors = batch * m * (o.swapped ? c.s_blocks : c.v_blocks);
        c.store_engine = store_descriptors * r.descriptor + store_bytes * r.inv_bandwidth;
        if (o.swapped) {
            c.store_engine += partitions * partitions * 2.0 * r.inv_bandwidth + partitions * r.descriptor;
        }
        // This block's fill and drain: its first operand tiles, their multiplications and the
        // store of its first slab.
        const double slab = std::min(o.s_tile, o.s_dim);
        const double fill =
            (first_rows * (sbc + vbc) * eb + slab * vbc * out_eb) * r.inv_bandwidth * r.inv_usable +
            c.bs * c.bv * mm(std::min(o.v_tile, o.v_dim)) * r.pe_cycle;
        // Each operand is read once per block of the other unless its panel stays resident:
        // with one resident panel, its order wins; with none, both orders read the same.
        // The outer operand's panel stays resident when, double-buffered (one panel in use,
        // the next loading, unless there is only one), it fits beside two chunks of the inner
        // operand and the output tiles (the lowering's SBUF pools at depth 2).
        const auto chunk_bytes = [&](double width) { return kc * part_rows * width * eb; };
        const double out_bytes = o.swapped ? 4.0 * c.bs * o.v_dim + 2.0 * sbc * out_eb + 2.0 * partitions
                                           : 2.0 * c.bs * vbc * out_eb;
        const auto fits = [&](double outer_cols, double outer_blocks, double inner_cols) {
            return 2.0 * chunk_bytes(inner_cols) +
                       chunks * std::min(2.0, batch * outer_blocks) * chunk_bytes(outer_cols) +
                       out_bytes <=
                   d(r.sbuf);
        };
        const bool s_kept = fits(sbc, c.s_blocks, vbc);
        const bool v_kept = fits(vbc, c.v_blocks, sbc);
        const auto order = [&](double reads_s, double reads_v) {
            const double bytes = batch * k * (reads_s * o.s_dim + reads_v * o.v_dim) * eb;
            const double descriptors = batch * (reads_s * s_descriptors + reads_v * v_descriptors);
            const double loads = batch * (reads_s * c.s_blocks + reads_v * c.v_blocks) * chunks;
            const double engine = descriptors * r.descriptor + bytes * r.inv_bandwidth;
            const double dma = std::max((engine + c.store_engine) * r.inv_usable,
                                        (loads + stores) * r.issue);
            const double bound = std::max(o.tensor, dma) + fill;
            if (best.o == nullptr || bound < best.bound) {
                c.bound = bound;
                c.load_engine = engine;
                c.loads = bytes;
                c.dmas = loads + stores;
                best = c;
            }
        };
        if (v_kept) {
            order(c.v_blocks, 1.0);
        }
        if (s_kept) {
            order(1.0, c.s_blocks);
        }
        if (!s_kept && !v_kept) {
            order(c.v_blocks, c.s_blocks);
        }
    };
    const Orientation plain = orientation(false);
    // Block shapes clipped to the tile counts; a shape equal to an earlier one adds nothing.
    std::array<std::pair<double, double>, 3> seen{};
    std::size_t n_seen = 0;
    for (const auto& [bs, bv] : {std::pair{8.0, 1.0}, {1.0, 8.0}, {1.0, 4.0}}) {
        const std::pair<double, double> clipped{std::min(bs, plain.s_tiles), std::min(bv, plain.v_tiles)};
        if (std::find(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(n_seen), clipped) ==
            seen.begin() + static_cast<std::ptrdiff_t>(n_seen)) {
            seen[n_seen++] = clipped;
            consider(plain, bs, bv);
        }
    }
    Orientation swapped;
    if (s.m < te.cols && s.m <= te.moving_free_max) {
        swapped = orientation(true);
        consider(swapped, 6.0, 1.0);
    }
    const Candidate& c = best;
    const Orientation& o = *c.o;
    Nominal n;
    n.tensor = o.tensor;
    // Evacuations alternate between VectorE and ScalarE.
    const auto evacuate = [&](double count, double free) {
        n.vector += 0.5 * count * (r.overhead[0] + free * r.inv_lanes[0]) * r.cycle[0];
        n.scalar += 0.5 * count * (r.overhead[1] + free * r.inv_lanes[1]) * r.cycle[1];
    };
    if (o.swapped) {
        evacuate(batch * o.s_tiles, o.v_dim);
        evacuate(batch * std::ceil(o.s_tiles / 4.0), std::min(4.0 * o.s_tile, o.s_dim));
    } else {
        evacuate(batch * o.s_tiles * (o.v_tiles - 1.0), o.v_tile);
        evacuate(batch * o.s_tiles, o.v_dim - (o.v_tiles - 1.0) * o.v_tile);
    }
    n.dma = std::max((c.load_engine + c.store_engine) * r.inv_usable, c.dmas * r.issue);
    n.hbm_bytes = c.loads + store_bytes;
    n.steps = batch * c.s_blocks * c.v_blocks * kt;
    // The path of one step: the first contraction tile of a block's operands, its
    // multiplications, an evacuation and a store.
    const double sbc = std::min(c.bs * o.s_tile, o.s_dim);
    const double vbc = std::min(c.bv * o.v_tile, o.v_dim);
    const double rows = std::min(kt_rows, k);
    const double first = (rows * (sbc + vbc) * eb * r.inv_bandwidth + 2.0 * std::min(rows, partitions) * r.descriptor) *
                         r.inv_usable;
    const double tile_mm = c.bs * c.bv * mm(std::min(o.v_tile, o.v_dim)) * r.pe_cycle;
    const double evac = (r.overhead[0] + std::min(o.v_tile, o.v_dim) * r.inv_lanes[0]) * r.cycle[0];
    const double slab = std::min(o.s_tile, o.s_dim);
    const double store = (slab * vbc * out_eb * r.inv_bandwidth + slab * r.descriptor) * r.inv_usable;
    n.warmup = std::min(n.tensor, r.warmup);
    n.path = 2.0 * r.latency + first + tile_mm + evac + store;
    n.fixed = 2.0 * r.latency;
    const double tail = evac + r.latency + store;
    n.pipeline = std::max({r.latency + c.load_engine * r.inv_usable + tile_mm + tail,
                           r.latency + first + n.tensor + n.warmup + tail,
                           r.latency + first + tile_mm + n.vector + r.latency + store,
                           n.scalar,
                           r.latency + first + tile_mm + evac + r.latency + c.store_engine * r.inv_usable,
                           r.latency + n.dma});
    return n;
}

Nominal attention_terms(const AttentionShape& s, const ChipRates& r) {
    const ChipSpec& chip = *r.chip;
    const AttentionGeometry g = attention_geometry(s, chip);
    const double heads = d(s.batch * s.heads);
    const double q_tiles = d(g.q_tiles);
    const double partitions = r.partitions;
    // Keys visited per head (summed over query tiles), 512-key tiles and 128-key blocks; for
    // causal masks the tile counts use the mean padding of a prefix that grows by 128 per
    // query tile.
    double keys = 0.0;
    double tiles = 0.0;
    double blocks = 0.0;
    double diagonal = 0.0;
    if (s.causal) {
        const ArithmeticClamp a = arithmetic_clamp(g.offset + g.q_tile, g.q_tile, g.q_tiles, s.kv_len);
        keys = a.sum;
        const bool aligned = g.offset % g.q_tile == 0;
        tiles = a.linear_sum / d(g.kv_tile) + (aligned ? 0.375 : 0.5) * d(a.linear_count) +
                d(a.capped_count * g.kv_tiles);
        blocks = a.linear_sum / partitions + (aligned ? 0.0 : 0.5) * d(a.linear_count) +
                 d(a.capped_count) * std::ceil(d(s.kv_len) / partitions);
        diagonal = d(a.linear_count + a.capped_count);
    } else {
        keys = q_tiles * d(s.kv_len);
        tiles = q_tiles * d(g.kv_tiles);
        blocks = q_tiles * std::ceil(d(s.kv_len) / partitions);
    }
    const double rows = std::min(d(g.q_tile), d(s.q_len));
    const auto& te = chip.core.tensor;
    const double pv_rate = g.pv_p == Precision::fp32 ? te.fp32_rate_divisor : 1.0;
    const double qk_rate = g.qk_p == Precision::fp32 ? te.fp32_rate_divisor : 1.0;
    const double min_mm = te.min_matmul_cycles;
    const double dv_cycles = d(g.dv_tiles - 1) * std::max(d(g.dv_tile), min_mm) +
                             std::max(d(s.v_dim - (g.dv_tiles - 1) * g.dv_tile), min_mm);
    // One key tile of the mean width, on each engine (seconds).
    const double width = tiles > 0.0 ? keys / tiles : 0.0;
    const double tile_blocks = tiles > 0.0 ? blocks / tiles : 0.0;
    const double masked = tiles > 0.0 ? diagonal / tiles : 0.0;
    const auto vec = [&](std::size_t e, double instructions, double free) {
        return (instructions * r.overhead[e] + free * r.inv_lanes[e]) * r.cycle[e];
    };
    const double t_qk = d(g.dq_tiles) * qk_rate * std::max(width, min_mm) * r.pe_cycle;
    const double t_transpose = tile_blocks * pv_rate * std::max(rows, min_mm) * r.pe_cycle;
    const double t_pv = tile_blocks * pv_rate * dv_cycles * r.pe_cycle;
    const double v_max = vec(0, 1.0, width);
    const double v_tiny = vec(0, 1.0, 2.0);
    const double v_update = vec(0, 1.0, 2.0 * d(s.v_dim));
    const double v_evac = vec(0, 1.0, tile_blocks * rows);
    const double v_mask = masked * vec(0, 1.0, width);
    const double s_exp = vec(1, 1.0, width);
    const double s_tiny = vec(1, 1.0, 1.0);
    const double s_evac = vec(1, 1.0, tile_blocks * rows);
    const double g_mask = masked * vec(2, 1.0, width);
    const double tile_tensor = t_qk + t_transpose + t_pv;
    const double tile_vector = v_max + 2.0 * v_tiny + v_update + 0.5 * v_evac + v_mask;
    const double tile_scalar = s_exp + s_tiny + 0.5 * s_evac;
    // Per query tile: the initialisation (GpSimdE), the final scaling (VectorE) and the store.
    const double q_vector = vec(0, 2.0, 1.0 + d(s.v_dim));
    const double q_gpsimd = vec(2, 1.0, d(s.v_dim));
    Nominal n;
    n.tensor = heads * tiles * tile_tensor;
    n.vector = heads * (tiles * tile_vector + q_tiles * q_vector);
    n.scalar = heads * tiles * tile_scalar;
    n.gpsimd = heads * (tiles * g_mask + q_tiles * q_gpsimd);
    // DMA: Q in and O out per head; K and V per key/value head when resident, per key tile
    // otherwise.
    const double eb = d(g.eb);
    const double q_groups = std::ceil(q_tiles / d(g.query_group));
    const double kv_loads = g.resident ? d(s.batch * s.kv_heads) * d(g.kv_tiles) : heads * tiles;
    const double kv_keys = g.resident ? d(s.batch * s.kv_heads) * d(s.kv_len) : heads * keys;
    const double load_bytes = heads * d(s.q_len) * d(s.qk_dim) * eb +
                              kv_keys * d(s.qk_dim + s.v_dim) * eb + partitions * partitions * 2.0;
    const double load_descriptors = heads * q_groups * d(s.qk_dim) +
                                    kv_loads * d(s.qk_dim) + kv_keys + partitions;
    const double store_bytes = heads * d(s.q_len) * d(s.v_dim) * eb;
    const double store_descriptors = heads * d(s.q_len);
    const double load_engine = load_descriptors * r.descriptor + load_bytes * r.inv_bandwidth;
    const double store_engine = store_descriptors * r.descriptor + store_bytes * r.inv_bandwidth;
    const double dmas = heads * (q_groups + q_tiles) + 2.0 * kv_loads + 1.0;
    n.dma = std::max((load_engine + store_engine) * r.inv_usable, dmas * r.issue);
    n.hbm_bytes = load_bytes + store_bytes;
    n.steps = heads * tiles;
    // The chain of one key tile: the first loads, S = Q K^T, max, exp, transposes, evacuation,
    // P V, the update and the query tile's end, then the store.
    const double first_loads = (std::min(d(g.kv_tile), d(s.kv_len)) * d(s.qk_dim) * eb * r.inv_bandwidth +
                                d(s.qk_dim) * r.descriptor) /
                               std::min(r.usable, d(s.qk_dim));
    const double store = (rows * d(s.v_dim) * eb * r.inv_bandwidth + rows * r.descriptor) /
                         std::min(r.usable, rows);
    const double chain = t_qk + v_max + v_tiny + s_exp + t_transpose + 0.5 * (v_evac + s_evac) +
                         t_pv + v_update + q_vector;
    n.warmup = std::min(n.tensor, r.warmup);
    n.path = 2.0 * r.latency + first_loads + chain + store;
    n.fixed = 2.0 * r.latency;
    const double start = r.latency + first_loads;
    const double tail = r.latency + store;
    n.pipeline = std::max({r.latency + load_engine * r.inv_usable + chain + tail,
                           start + n.tensor + n.warmup + (v_update + q_vector) + tail,
                           start + t_qk + n.vector + tail,
                           start + t_qk + v_max + v_tiny + n.scalar + (chain - t_qk - v_max - v_tiny - s_exp) + tail,
                           start + n.gpsimd + tail,
                           start + chain + r.latency + store_engine * r.inv_usable,
                           r.latency + n.dma});
    return n;
}

Nominal attention_backward_terms(const AttentionShape& s, const ChipRates& r) {
    const ChipSpec& chip = *r.chip;
    const AttentionBackwardGeometry g = attention_backward_geometry(s, chip);
    const double heads = d(s.batch * s.heads);
    const double q_tiles = d(g.q_tiles);
    const double kt = d(g.k_tile);
    // Per query head: keys visited (summed over query tiles), key tiles (items) and diagonal
    // items. With causal masks, query tile i sees the first offset + 128 (i + 1) keys (at most
    // kv_len), so its key tiles are (i + 1) + ceil(offset / 128) below the cap.
    double keys = 0.0;
    double tiles = 0.0;
    double diagonal = 0.0;
    if (s.causal) {
        const ArithmeticClamp a =
            arithmetic_clamp(g.offset + g.q_tile, g.q_tile, g.q_tiles, s.kv_len);
        keys = a.sum;
        const double off = d(g.offset) / kt;
        tiles = a.linear_sum / kt + d(a.linear_count) * (std::ceil(off) - off) +
                d(a.capped_count * g.k_tiles);
        diagonal = d(a.linear_count + a.capped_count);
    } else {
        keys = q_tiles * d(s.kv_len);
        tiles = q_tiles * d(g.k_tiles);
    }
    const double items = heads * tiles;
    const double w = tiles > 0.0 ? keys / tiles : 0.0;
    const double rows = d(s.q_len) / q_tiles;
    const auto& tensor_engine = chip.core.tensor;
    // Mean TensorE cycles of a tile of `n` columns when the last of `count` tiles holds the
    // rest: each costs max(columns, min_matmul_cycles).
    const auto mean_cycles = [&](std::int64_t total, std::int64_t tile, std::int64_t count) {
        const std::int64_t last = total - (count - 1) * tile;
        const double min_cycles = tensor_engine.min_matmul_cycles;
        return (d(count - 1) * std::max(d(tile), min_cycles) + std::max(d(last), min_cycles)) /
               d(count);
    };
    // Key tiles: exact without a mask (full tiles and the rest); with one, the mean width.
    const double w_cycles = s.causal ? std::max(w, d(tensor_engine.min_matmul_cycles))
                                     : mean_cycles(s.kv_len, g.k_tile, g.k_tiles);
    const double row_cycles = mean_cycles(s.q_len, g.q_tile, g.q_tiles);
    const double masked = tiles > 0.0 ? diagonal / tiles : 0.0;
    const auto& te = chip.core.tensor;
    const double rate = g.p == Precision::fp32 ? te.fp32_rate_divisor : 1.0;
    const double min_mm = te.min_matmul_cycles;
    const auto mm = [&](double cols) { return std::max(cols, min_mm) * rate * r.pe_cycle; };
    // Moving tiles over a head dimension: full 512-column tiles and the rest.
    const auto over = [&](std::int64_t dim) {
        const double full = std::floor(d(dim) / d(g.moving));
        const double rest = d(dim) - full * d(g.moving);
        return full * mm(d(g.moving)) + (rest > 0.0 ? mm(rest) : 0.0);
    };
    const auto vec = [&](std::size_t e, double instructions, double free) {
        return (instructions * r.overhead[e] + free * r.inv_lanes[e]) * r.cycle[e];
    };
    const double t_s = d(g.qk_ctiles) * mm(w_cycles);
    const double t_dp = d(g.v_ctiles) * mm(w_cycles);
    const double t_dv = over(s.v_dim);
    const double t_dk = over(s.qk_dim);
    const double t_t = mm(row_cycles);
    const double t_dq = over(s.qk_dim);
    const double v_ds = vec(0, 1.0, 2.0 * w);
    const double s_exp = vec(1, 1.0, w);
    // The transposes' evacuations alternate between ScalarE and GpSimdE.
    const double s_evac = 0.5 * vec(1, 1.0, rows);
    const double g_evac = 0.5 * vec(2, 1.0, rows);
    const double g_acc = vec(2, 1.0, 2.0 * d(s.qk_dim));
    const double g_mask = masked * vec(2, 1.0, w);
    // Per query tile: D = rowsum(dO O), dQ zeroed, dQ cast.
    const double query_tiles = heads * q_tiles;
    const double v_tile = vec(0, 1.0, 2.0 * d(s.v_dim));
    const double g_tile = vec(2, 1.0, d(s.qk_dim));
    const double s_tile = vec(1, 1.0, d(s.qk_dim));
    // Key tiles visited per block (the block's farthest-reaching query tile), and those of
    // blocks after the first, which add the earlier blocks' partial dK and dV.
    const std::int64_t flat = g.group * g.q_tiles;
    const std::int64_t nb = ceil_div(flat, g.block_tiles);
    double visits = 0.0;
    double later_visits = 0.0;
    for (std::int64_t blk = 0; blk < nb; ++blk) {
        const std::int64_t f0 = blk * g.block_tiles;
        const std::int64_t f1 = std::min(flat, f0 + g.block_tiles);
        const bool spans = f0 / g.q_tiles != (f1 - 1) / g.q_tiles;
        const double v =
            d(g.key_tiles(s, spans ? g.q_tiles - 1 : (f1 - 1) % g.q_tiles));
        visits += v;
        later_visits += blk > 0 ? v : 0.0;
    }
    const double kv_groups = d(s.batch * s.kv_heads);
    visits *= kv_groups;
    later_visits *= kv_groups;
    const double kw = d(s.kv_len) / d(g.k_tiles);
    const double v_evac = vec(0, 1.0, d(s.qk_dim));
    const double s_evac_dv = vec(1, 1.0, d(s.v_dim));
    Nominal n;
    n.tensor = items * (t_s + t_dp + t_dv + t_dk + t_t + t_dq);
    n.vector = items * v_ds + query_tiles * v_tile + visits * v_evac +
               later_visits * vec(0, 0.0, d(s.qk_dim));
    n.scalar = items * (s_exp + s_evac) + query_tiles * s_tile + visits * s_evac_dv +
               later_visits * vec(1, 0.0, d(s.v_dim));
    n.gpsimd = items * (g_acc + g_mask + g_evac) + query_tiles * g_tile;
    // DMA. Per query tile: Q, dO and O rows in, dQ rows out; per group of four query tiles:
    // Q^T, dO^T and the log-sum-exp; per visit: K^T, V^T and K rows in, dK and dV out (FP32
    // partial sums but for the last block), plus the partial sums in after the first block.
    const double eb = d(g.eb);
    const double qk = d(s.qk_dim);
    const double vd = d(s.v_dim);
    const double q_groups = heads * std::ceil(q_tiles / d(g.query_group));
    const double q_rows = heads * d(s.q_len);
    const double identity = r.partitions * r.partitions * 2.0;
    const double out_bytes = nb > 1 ? (eb + 4.0 * d(nb - 1)) / d(nb) : eb;
    const double load_bytes = q_rows * (qk + 2.0 * vd) * eb + q_rows * (qk + vd) * eb +
                              q_rows * 4.0 + visits * kw * (2.0 * qk + vd) * eb +
                              later_visits * kw * (qk + vd) * 4.0 + identity;
    const double load_descriptors = q_rows * 3.0 + q_groups * (qk + vd) +
                                    heads * std::min(d(s.q_len), r.partitions * q_tiles) +
                                    visits * (qk + vd + kw) + later_visits * 2.0 * kw +
                                    r.partitions;
    const double store_bytes = q_rows * qk * eb + visits * kw * (qk + vd) * out_bytes;
    const double store_descriptors = q_rows + visits * 2.0 * kw;
    const double load_engine = load_descriptors * r.descriptor + load_bytes * r.inv_bandwidth;
    const double store_engine = store_descriptors * r.descriptor + store_bytes * r.inv_bandwidth;
    // What the query tiles load: during their first key tile, the only one they overlap.
    const double resident_engine =
        (q_rows * 3.0 + q_groups * (qk + vd) + heads * std::min(d(s.q_len), r.partitions * q_tiles)) *
            r.descriptor +
        (q_rows * (qk + 2.0 * vd) * eb + q_rows * (qk + vd) * eb + q_rows * 4.0) * r.inv_bandwidth;
    const double resident_dmas = q_groups * 6.0;
    const double dmas = q_groups * 7.0 + visits * 5.0 + later_visits * 2.0 + 1.0;
    n.dma = std::max((load_engine + store_engine) * r.inv_usable, dmas * r.issue);
    n.hbm_bytes = load_bytes + store_bytes;
    n.steps = std::max(1.0, items);
    // One item's chain, after the first key tile's and query tile's loads.
    const double first_loads =
        (std::min(kt, d(s.kv_len)) * qk * eb * r.inv_bandwidth + qk * r.descriptor) /
            std::min(r.usable, qk) +
        (rows * (qk + 2.0 * vd) * eb * r.inv_bandwidth + rows * r.descriptor) /
            std::min(r.usable, rows);
    const double store =
        (rows * qk * eb * r.inv_bandwidth + rows * r.descriptor) / std::min(r.usable, rows);
    const double chain =
        t_s + s_exp + t_dp + v_ds + t_dv + t_dk + t_t + s_evac + g_evac + t_dq + g_acc;
    // TensorE below half busy restarts at the warm-up rate again and again (THR): when the
    // other engines keep it that idle, its work takes up to 1 / warmup_fraction as long.
    const double others = std::max({n.vector, n.scalar, n.gpsimd, n.dma});
    const double f = chip.core.tensor.warmup_fraction;
    const double tensor = n.tensor < f * others ? std::min(others, n.tensor / f) : n.tensor;
    const double per_item =
        items > 0.0 ? std::max({tensor, n.vector, n.scalar, n.gpsimd}) / items : 0.0;
    // The first block's share of the query tiles.
    const double first = d(std::min(g.block_tiles, flat)) / (kv_groups * d(flat));
    n.warmup = std::min(n.tensor, r.warmup);
    n.resident_wait =
        std::max(first * resident_engine * r.inv_usable, first * resident_dmas * r.issue);
    // Each block fills and drains the pipeline.
    const double blocks = kv_groups * d(nb);
    n.path = 2.0 * r.latency + first_loads + v_tile + chain + s_tile + store +
             (blocks - 1.0) * chain;
    n.fixed = 2.0 * r.latency;
    const double start = r.latency + first_loads + v_tile;
    const double tail = r.latency + store;
    n.pipeline = std::max({r.latency + load_engine * r.inv_usable + chain + tail,
                           start + tensor + n.warmup + g_acc + tail,
                           start + t_s + s_exp + t_dp + n.vector + (chain - t_s - s_exp - t_dp - v_ds) + tail,
                           start + t_s + n.scalar + (chain - t_s - s_exp - s_evac) + tail,
                           start + t_s + s_exp + t_dp + v_ds + t_dv + t_dk + t_t + s_evac + t_dq + n.gpsimd + tail,
                           start + chain + r.latency + store_engine * r.inv_usable,
                           r.latency + n.dma,
                           // The first block's query tiles wait for their loads in their
                           // first key tile (later blocks load while the one before
                           // computes); the rest runs at the pace of the busiest engine.
                           r.latency + std::max({first * resident_engine * r.inv_usable,
                                                 first * resident_dmas * r.issue,
                                                 first * query_tiles * per_item}) +
                               (items - first * query_tiles) * per_item + tail,
                           // DMA-bound: every transfer, then the last block's later key
                           // tiles, which have nothing left to load.
                           r.latency + n.dma + (items - query_tiles) / blocks * per_item + tail});
    return n;
}

TRNSIM_CLOSED_FORMS_CLONES
Nominal terms(const Kernel& piece, const ChipRates& rates) {
    switch (class_of(piece)) {
    case KernelClass::matmul:
        return matmul_terms(std::get<MatmulShape>(piece), rates);
    case KernelClass::attention:
        return attention_terms(std::get<AttentionShape>(piece), rates);
    case KernelClass::attention_backward:
        return attention_backward_terms(std::get<AttentionShape>(piece), rates);
    case KernelClass::adamw:
        return stream_terms(plan_adamw(std::get<OptimizerShape>(piece), rates), rates);
    default:
        return stream_terms(plan_stream(std::get<StreamShape>(piece), rates), rates);
    }
}

} // namespace trnsim::compute::detail
