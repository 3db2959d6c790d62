#include "closed_forms.hpp"

#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"

#include <algorithm>
#include <cmath>

namespace trnsim::compute::detail {

namespace {

/// SBUF bytes per partition of one data tile of a flat (elementwise) kernel.
constexpr std::int64_t kFlatTileBytes = 8 * 1024;
/// AdamW keeps four inputs and nine intermediate values per tile in flight: smaller tiles.
constexpr std::int64_t kAdamwTileBytes = 4 * 1024;
/// Row chunk of row kernels: wider rows take two passes.
constexpr std::int64_t kRowChunkBytes = 16 * 1024;
/// Slots for per-row statistics, 16 bytes each (see lower_recipe).
constexpr std::int64_t kStatBytes = 256 * 16;
/// VectorE bn_stats handles up to 512 elements per instruction.
constexpr double kBnStatsWidth = 512.0;
/// Bytes a streamed matmul DMA aims for (lower_matmul.cpp).
constexpr double kChunkBytes = 256.0 * 1024.0;

double d(std::int64_t v) { return static_cast<double>(v); }

/// `elements` laid out flat as [partitions x f] tiles of at most f_max per partition, balanced.
void flat_groups(TileGroups& g, std::int64_t elements, std::int64_t partitions, std::int64_t f_max) {
    const std::int64_t tiles = ceil_div(elements, partitions * f_max);
    const std::int64_t f = std::max<std::int64_t>(1, ceil_div(elements, partitions * tiles));
    g.clear();
    const std::int64_t per_tile = partitions * f;
    if (elements / per_tile > 0) {
        g.push_back({elements / per_tile, partitions, 1, f, 0});
    }
    const std::int64_t rest = elements % per_tile;
    if (rest > 0) {
        const std::int64_t last_f = ceil_div(rest, partitions);
        g.push_back({1, ceil_div(rest, last_f), 1, last_f, 0});
    }
}

/// `rows` rows of `width` elements, one row per partition, each row cut into equal chunks of at
/// most `chunk` elements.
void row_groups(TileGroups& g, std::int64_t rows, std::int64_t width, std::int64_t partitions,
                std::int64_t chunk) {
    const std::int64_t chunks = ceil_div(width, chunk);
    const std::int64_t c = ceil_div(width, chunks);
    const std::int64_t full_chunks = width / c;
    const std::int64_t last = width % c;
    g.clear();
    if (rows / partitions > 0) {
        g.push_back({rows / partitions, partitions, full_chunks, c, last});
    }
    if (rows % partitions > 0) {
        g.push_back({1, rows % partitions, full_chunks, c, last});
    }
}

void engine(PassProfile& p, std::size_t e, double ops, double streamed) {
    p.engines[e].ops += ops;
    p.engines[e].streamed += streamed;
}

/// Instructions that qualify for VectorE's performance mode when `perf` (BF16/FP16 tiles),
/// else standard ones.
void copy_maps(PassProfile& p, double ops, bool perf) {
    p.engines[0].ops += ops;
    (perf ? p.engines[0].perf_streamed : p.engines[0].streamed) += ops;
}

void tiny(PassProfile& p, std::size_t e, double inputs) {
    p.engines[e].tiny += 1.0;
    p.engines[e].tiny_inputs += inputs;
}

constexpr std::size_t kV = 0;
constexpr std::size_t kS = 1;
constexpr std::size_t kG = 2;

/// The per-pass work of a row kernel (the step lists of lower_stream.cpp, summed) into a plan
/// whose profiles are empty.
void row_profile(StreamPlan& plan, StreamKind kind, int eb, bool two_pass) {
    PassProfile& a = plan.first;
    PassProfile& m = plan.between;
    PassProfile& b = plan.second;
    a.loads = 1;
    a.load_bytes = eb;
    switch (kind) {
    case StreamKind::softmax:
        if (!two_pass) {
            engine(a, kV, 1, 1);         // row max
            copy_maps(a, 1, eb == 2);    // scale
            tiny(a, kV, 1);
            tiny(a, kV, 1);
            engine(a, kS, 1, 1); // exp with row sums
            a.maps = 2;
            a.stores = 1;
            a.store_bytes = eb;
        } else {
            engine(a, kV, 1, 1);
            tiny(a, kV, 2);
            tiny(a, kV, 2);
            engine(a, kS, 1, 1);
            tiny(a, kS, 1);
            a.maps = 1;
            tiny(m, kV, 1);
            b.loads = 1;
            b.load_bytes = eb;
            engine(b, kS, 1, 1);
            b.maps = 1;
            b.stores = 1;
            b.store_bytes = eb;
        }
        break;
    case StreamKind::rms_norm:
        engine(a, kS, 1, 1); // sum of squares
        if (!two_pass) {
            tiny(a, kV, 1);
            engine(a, kV, 1, 2); // x / rms x weight
            a.maps = 1;
            a.stores = 1;
            a.store_bytes = eb;
        } else {
            tiny(a, kV, 2);
            tiny(m, kV, 1);
            b.loads = 1;
            b.load_bytes = eb;
            b.params = 1;
            b.param_bytes = eb;
            engine(b, kV, 1, 2);
            b.maps = 1;
            b.stores = 1;
            b.store_bytes = eb;
        }
        break;
    case StreamKind::layer_norm: {
        a.bn_stats = 1;
        PassProfile& out = two_pass ? b : a;
        (two_pass ? m : a).bn_aggr = 1;
        tiny(two_pass ? m : a, kV, 1);
        if (two_pass) {
            b.loads = 1;
            b.load_bytes = eb;
            b.params = 2;
            b.param_bytes = 2.0 * eb;
        }
        engine(out, kS, 1, 1); // normalise
        engine(out, kV, 1, 2); // x weight
        engine(out, kG, 1, 2); // + bias
        out.maps = 3;
        out.stores = 1;
        out.store_bytes = eb;
        break;
    }
    default:
        TRNSIM_CHECK(false, "not a row kernel");
    }
}

/// The work per tile of an elementwise, reduce or gather kernel.
void flat_profile(StreamPlan& plan, const StreamShape& s) {
    PassProfile& a = plan.first;
    const int eb = s.element_bytes;
    switch (s.kind) {
    case StreamKind::elementwise: {
        a.loads = s.inputs;
        a.load_bytes = s.inputs * eb;
        const int combine = s.inputs - 1;
        if (s.engine == StreamEngine::vector) {
            // The passes fold in the other inputs first (two-input maps), then map one input.
            const int ops = s.passes + std::max(0, combine - s.passes);
            const int single = std::max(0, s.passes - combine);
            engine(a, kV, ops - single, ops + combine - single);
            copy_maps(a, single, eb == 2);
            a.maps = ops;
        } else {
            engine(a, kS, s.passes, s.passes);
            engine(a, kV, combine, 2.0 * combine);
            a.maps = s.passes + combine;
        }
        a.stores = s.outputs;
        a.store_bytes = s.outputs * eb;
        break;
    }
    case StreamKind::reduce: {
        const int inputs = std::max(2, s.inputs);
        a.loads = inputs;
        a.load_bytes = inputs * eb;
        const int adds = inputs - 1;
        engine(a, kV, (adds + 1) / 2, 2.0 * ((adds + 1) / 2));
        engine(a, kG, adds / 2, 2.0 * (adds / 2));
        a.maps = adds;
        a.stores = 1;
        a.store_bytes = eb;
        break;
    }
    case StreamKind::gather:
        a.loads = 1;
        a.load_bytes = eb;
        a.indirect = true;
        a.stores = 1;
        a.store_bytes = eb;
        break;
    case StreamKind::scatter_add:
        a.loads = 2; // the indexed FP32 rows and the gradient rows
        a.load_bytes = 4.0 + eb;
        a.indirect = true;
        engine(a, kV, 1, 2);
        a.maps = 1;
        a.stores = 1;
        a.store_bytes = 4.0;
        break;
    default:
        TRNSIM_CHECK(false, "not a flat kernel");
    }
}

/// The deepest buffering (16, 8, 4, 3, 2) whose pools fit; 0 when none does. The pools grow
/// linearly with the depth (plan_sbuf_bytes).
int fit_depth(const StreamPlan& plan, const ChipRates& r) {
    const auto partitions = static_cast<std::int64_t>(r.partitions);
    const std::int64_t at_zero = plan_sbuf_bytes(plan, 0, partitions);
    const std::int64_t per_depth = plan_sbuf_bytes(plan, 1, partitions) - at_zero;
    const std::int64_t most = per_depth > 0 ? (r.sbuf - at_zero) / per_depth : 16;
    for (int depth : {16, 8, 4, 3, 2}) {
        if (depth <= most) {
            return depth;
        }
    }
    return 0;
}

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

std::int64_t plan_sbuf_bytes(const StreamPlan& plan, int depth, std::int64_t partitions) {
    const std::int64_t data = depth * std::max(1, plan.first.loads + plan.second.loads) + 1;
    const std::int64_t work = depth * std::max(1, plan.first.maps + plan.second.maps) + 1;
    const std::int64_t params = plan.params_per_chunk ? 4 * plan.buffer_bytes : plan.buffer_bytes;
    std::int64_t once = 64;
    for (const OnceLoad& o : plan.once) {
        once = std::max(once, static_cast<std::int64_t>(o.bytes) / partitions + 1);
    }
    return (data + work) * plan.buffer_bytes + params +
           static_cast<std::int64_t>(std::max<std::size_t>(1, plan.once.size())) * once +
           kStatBytes + plan.accumulators * plan.accumulator_bytes;
}

StreamPlan plan_stream(const StreamShape& s, const ChipRates& r) {
    if (s.element_bytes < 1 || s.element_bytes > 8 || s.inputs < 1 || s.inputs > 8 ||
        s.outputs < 0 || s.outputs > 4 || s.passes < 1 || s.passes > 8 || s.row < 0) {
        throw InputError("kernel", "unsupported streaming kernel " + describe(Kernel{s}) +
                                       " (1 to 8 inputs and passes, up to 4 outputs, 1 to 8 "
                                       "bytes per element)");
    }
    const auto partitions = static_cast<std::int64_t>(r.partitions);
    const int eb = s.element_bytes;
    const std::int64_t width = s.row > 0 ? s.row : s.elements;
    const std::int64_t rows = ceil_div(s.elements, width);
    StreamPlan plan;
    const bool profiled_kind = s.kind == StreamKind::softmax || s.kind == StreamKind::rms_norm ||
                               s.kind == StreamKind::layer_norm;
    const bool stepped_kind = is_row_kind(s.kind) && !profiled_kind &&
                              s.kind != StreamKind::gather && s.kind != StreamKind::scatter_add;
    if (profiled_kind || stepped_kind) {
        // The widest chunk (halving from kRowChunkBytes) whose pools fit.
        const std::int64_t type_bytes = std::max(eb, 2);
        const int params = s.kind == StreamKind::layer_norm ? 2
                           : s.kind == StreamKind::rms_norm ? 1
                                                            : row_kind_params(s.kind);
        plan.param_width = width;
        if (stepped_kind) {
            plan.accumulators = row_kind_accumulators(s.kind);
            plan.accumulator_bytes = 4 * width;
        }
        bool profiled = false;
        for (std::int64_t chunk = std::max<std::int64_t>(1, kRowChunkBytes / type_bytes);;
             chunk /= 2) {
            const bool two_pass = width > chunk;
            if (!profiled || two_pass != plan.two_pass) {
                if (profiled) {
                    plan.first = plan.between = plan.second = PassProfile{};
                }
                profiled = true;
                plan.two_pass = two_pass;
                if (stepped_kind) {
                    Steps first, between, second;
                    row_kind_steps(s.kind, eb, two_pass, first, between, second);
                    plan.first = profile_of(first);
                    plan.between = profile_of(between);
                    plan.second = profile_of(second);
                } else {
                    row_profile(plan, s.kind, eb, two_pass);
                }
            }
            row_groups(plan.groups, rows, width, partitions, chunk);
            plan.buffer_bytes = std::min(width, chunk) * type_bytes;
            plan.params_per_chunk = two_pass;
            plan.once.clear();
            if (!two_pass) {
                // Parameter rows broadcast once to the partitions a tile uses.
                const std::int64_t p = std::min(rows, partitions);
                for (int i = 0; i < params; ++i) {
                    plan.once.push_back({3, i, d(p * width * eb), p});
                }
            }
            if (s.kind == StreamKind::cross_entropy) {
                // The target token of every row, loaded once.
                plan.once.push_back({3, -1, 4.0 * d(rows), std::min(rows, partitions)});
            }
            plan.depth = fit_depth(plan, r);
            if (plan.depth > 0 || chunk == 1) {
                break;
            }
        }
    } else {
        flat_profile(plan, s);
        const bool indexed = s.kind == StreamKind::gather || s.kind == StreamKind::scatter_add;
        if (indexed) {
            plan.once.push_back({3, -1, 4.0 * d(rows), std::min(rows, partitions)});
        }
        // The largest tile (halving from kFlatTileBytes) whose pools fit.
        for (std::int64_t tile = kFlatTileBytes;; tile /= 2) {
            if (s.kind == StreamKind::scatter_add) {
                // FP32 rows: chunks of up to two tiles of 4-byte elements.
                const std::int64_t chunk = std::max<std::int64_t>(1, 2 * tile / 4);
                row_groups(plan.groups, rows, width, partitions, chunk);
                plan.buffer_bytes = std::min(width, chunk) * 4;
            } else if (s.kind == StreamKind::gather) {
                const std::int64_t chunk = std::max<std::int64_t>(1, 4 * tile / eb);
                row_groups(plan.groups, rows, width, partitions, chunk);
                plan.buffer_bytes = std::min(width, chunk) * eb;
            } else {
                const std::int64_t f = std::max<std::int64_t>(1, tile / eb);
                flat_groups(plan.groups, s.elements, partitions, f);
                plan.buffer_bytes = std::min(f, ceil_div(s.elements, partitions)) * std::max(eb, 2);
            }
            plan.depth = fit_depth(plan, r);
            if (plan.depth > 0 || tile <= 64) {
                break;
            }
        }
    }
    if (plan.depth == 0) {
        throw InputError("kernel", "the tiles of " + describe(Kernel{s}) +
                                       " do not fit one core's SBUF");
    }
    return plan;
}

StreamPlan plan_adamw(const OptimizerShape& s, const ChipRates& r) {
    if (s.grad_bytes < 1 || s.grad_bytes > 8 || s.weight_bytes < 1 || s.weight_bytes > 8) {
        throw InputError("kernel", "AdamW gradient and weight types take 1 to 8 bytes");
    }
    const auto partitions = static_cast<std::int64_t>(r.partitions);
    StreamPlan plan;
    const std::int64_t f = kAdamwTileBytes / 4;
    flat_groups(plan.groups, s.params, partitions, f);
    plan.buffer_bytes = std::min(f, ceil_div(s.params, partitions)) * 4;
    PassProfile& a = plan.first;
    a.loads = 4; // gradient, moments, master weight
    a.load_bytes = s.grad_bytes + 12.0;
    engine(a, kG, 2, 3); // (1 - beta1) g; the weight update
    engine(a, kV, 4, 7); // moments, reciprocal, update
    engine(a, kS, 3, 3); // g^2, sqrt, the working copy
    a.maps = 9;
    a.stores = 4;
    a.store_bytes = 12.0 + s.weight_bytes;
    plan.depth = std::max(2, fit_depth(plan, r));
    return plan;
}

namespace {

/// A pass's engine time per chunk as a + b w (+ the bn_stats pieces), per engine.
struct PassRates {
    std::array<double, 3> a{};
    std::array<double, 3> b{};
    double pieces = 0.0; ///< VectorE overhead seconds per 512-element piece (bn_stats)
    double aggr = 0.0;   ///< VectorE seconds of bn_aggr per row piece
    bool active = false;

    std::array<double, 3> at(double w, double row) const {
        std::array<double, 3> t{a[0] + b[0] * w, a[1] + b[1] * w, a[2] + b[2] * w};
        if (pieces > 0.0) {
            t[0] += pieces * std::ceil(w / kBnStatsWidth) + aggr * std::ceil(row / kBnStatsWidth);
        }
        return t;
    }
};

PassRates pass_rates(const PassProfile& p, const ChipRates& r) {
    PassRates x;
    for (std::size_t e = 0; e < 3; ++e) {
        const EngineWork& w = p.engines[e];
        x.a[e] = ((w.ops + w.tiny) * r.overhead[e] + w.tiny_inputs * r.inv_lanes[e]) * r.cycle[e];
        // Without a performance mode the qualifying inputs stream like the others (the sum of
        // the two counts is exact: whole numbers).
        x.b[e] = e == kV && r.perf_mode
                     ? (w.streamed * r.inv_lanes[e] + w.perf_streamed * r.inv_perf_lanes) *
                           r.cycle[e]
                     : (w.streamed + w.perf_streamed) * r.inv_lanes[e] * r.cycle[e];
    }
    x.a[0] += p.bn_aggr * r.overhead[0] * r.cycle[0];
    x.b[0] += p.bn_stats * r.inv_lanes[0] * r.cycle[0];
    x.pieces = p.bn_stats * r.overhead[0] * r.cycle[0];
    x.aggr = p.bn_aggr * r.inv_lanes[0] * r.cycle[0];
    x.active = p.loads + p.params + p.stores > 0 || x.a[0] + x.a[1] + x.a[2] > 0.0 || x.pieces > 0.0;
    return x;
}

} // namespace

Nominal stream_terms(const StreamPlan& plan, const ChipRates& r) {
    // One-pass plans leave the other two profiles empty.
    const std::array<PassRates, 3> rates{
        pass_rates(plan.first, r), plan.two_pass ? pass_rates(plan.between, r) : PassRates{},
        plan.two_pass ? pass_rates(plan.second, r) : PassRates{}};
    const std::array<const PassProfile*, 3> profiles{&plan.first, &plan.between, &plan.second};
    // DMA engine-seconds of bytes in descriptors, and the time they take alone (at most one
    // engine per partition).
    const auto engine_seconds = [&](double bytes, double descriptors) {
        return descriptors * r.descriptor + bytes * r.inv_bandwidth;
    };
    const auto alone = [&](double bytes, double descriptors, double partitions) {
        return engine_seconds(bytes, descriptors) / std::min(r.usable, std::max(1.0, partitions));
    };
    Nominal n;
    std::array<double, 3> busy{};
    double in_engine = 0.0;  // engine-seconds of loads
    double out_engine = 0.0; // and of stores
    double serial = 0.0;     // transfers limited by their partitions
    double issues = 0.0;
    double steps = 0.0;
    double row_tiles = 0.0;
    const auto add_pass = [&](std::size_t i, double times, double partitions, double w,
                              double row) {
        const PassProfile& p = *profiles[i];
        const std::array<double, 3> t = rates[i].at(w, row);
        for (std::size_t e = 0; e < 3; ++e) {
            busy[e] += times * t[e];
        }
        if (p.loads + p.params + p.stores == 0) {
            return;
        }
        const double in = engine_seconds(partitions * w * (p.load_bytes + p.param_bytes),
                                         partitions * (p.loads + p.params));
        const double out = engine_seconds(partitions * w * p.store_bytes, partitions * p.stores);
        in_engine += times * in;
        out_engine += times * out;
        serial += times * std::max(in, out) / std::min(r.usable, std::max(1.0, partitions));
        issues += times * (p.loads + p.params + p.stores);
    };
    const double bytes_per_element = plan.first.load_bytes + plan.first.param_bytes +
                                     plan.first.store_bytes + plan.second.load_bytes +
                                     plan.second.param_bytes + plan.second.store_bytes;
    for (const TileGroup& g : plan.groups) {
        const double count = d(g.count);
        const double p = d(g.partitions);
        const double row = d(g.width());
        for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
            if (!rates[i].active) {
                continue;
            }
            add_pass(i, count * d(g.full_chunks), p, d(g.chunk), row);
            if (g.last_chunk > 0) {
                add_pass(i, count, p, d(g.last_chunk), row);
            }
        }
        if (rates[1].active) {
            add_pass(1, count, p, 1.0, row);
        }
        steps += count * d(g.chunks());
        row_tiles += count;
        n.hbm_bytes += count * p * row * bytes_per_element;
    }
    double once_path = 0.0;
    for (const OnceLoad& o : plan.once) {
        in_engine += engine_seconds(o.bytes, d(o.descriptors));
        issues += 1.0;
        n.hbm_bytes += o.bytes;
        if (o.param < 0) {
            // A gather's row indices come first.
            once_path += r.latency + alone(o.bytes, d(o.descriptors), d(o.descriptors));
        }
    }
    // The accumulated parameter gradients: summed over the partitions on GpSimdE, stored.
    const double acc = plan.accumulators;
    busy[kG] += acc * (r.overhead[kG] + d(plan.param_width) * r.inv_lanes[kG]) * r.cycle[kG];
    out_engine += acc * engine_seconds(4.0 * d(plan.param_width), 1.0);
    issues += acc;
    n.hbm_bytes += acc * 4.0 * d(plan.param_width);
    n.vector = busy[kV];
    n.scalar = busy[kS];
    n.gpsimd = busy[kG];
    n.dma = std::max({(in_engine + out_engine) * r.inv_usable, issues * r.issue, serial});
    n.steps = std::max(1.0, steps);
    // One chunk of the first tile through the pipeline: its loads stream while the chain of
    // instructions runs on the first one; then the store; then the second pass the same way.
    const TileGroup& g = plan.groups.front();
    const double p = d(g.partitions);
    const double w = d(g.chunk);
    const double row = d(g.width());
    struct PassPath {
        std::array<double, 3> engines{};
        double loads = 0.0;
        double chain = 0.0;
        double store = 0.0;
        double first_load = 0.0;
        double seconds = 0.0;
    };
    const auto pass_path = [&](std::size_t i, bool prefetched) {
        const PassProfile& pass = *profiles[i];
        PassPath pp;
        pp.engines = rates[i].at(w, row);
        pp.loads = alone(p * w * (pass.load_bytes + pass.param_bytes), p * (pass.loads + pass.params), p);
        pp.chain = pp.engines[0] + pp.engines[1] + pp.engines[2];
        pp.store = alone(p * w * pass.store_bytes, p * pass.stores, p);
        pp.first_load = pp.loads / std::max(1, pass.loads + pass.params);
        pp.seconds = (prefetched ? 0.0 : r.latency) + std::max(pp.loads, pp.first_load + pp.chain) +
                     (pass.stores > 0 ? r.latency + pp.store : 0.0);
        return pp;
    };
    const PassPath one = pass_path(0, false);
    PassPath two;
    double between = 0.0;
    n.path = once_path + one.seconds;
    if (plan.two_pass) {
        const std::array<double, 3> mid = rates[1].at(1.0, row);
        between = mid[0] + mid[1] + mid[2];
        two = pass_path(2, true);
        n.path += between + two.seconds;
    }
    n.fixed = 2.0 * r.latency + (once_path > 0.0 ? r.latency : 0.0);
    // Per resource: before its first use + its total + after its last use, on that path.
    const double tail = r.latency + (plan.two_pass ? two.store : one.store);
    const double start = once_path + r.latency;
    n.pipeline = std::max({start + in_engine * r.inv_usable +
                               one.chain / std::max(1, plan.first.loads) + tail,
                           start + one.first_load + std::max({n.vector, n.scalar, n.gpsimd}) + tail,
                           start + one.loads + one.chain + r.latency + out_engine * r.inv_usable,
                           start + n.dma});
    // Two passes: a row tile's second pass waits for its first, so row tiles overlap one pass
    // with the other at best.
    if (plan.two_pass) {
        const double chunks = d(g.chunks());
        const auto& t1 = one.engines;
        const auto& t2 = two.engines;
        const double first_pass = chunks * std::max({t1[0], t1[1], t1[2], one.loads}) + between;
        const double second_pass = chunks * std::max({t2[0], t2[1], t2[2], two.loads + two.store});
        n.passes = 2.0 * r.latency + first_pass + second_pass +
                   (row_tiles - 1.0) * std::max(first_pass, second_pass);
    }
    // Buffers bound the chunks in flight: each holds its slot for about a path (Little's law).
    n.buffers = n.steps / plan.depth * n.path;
    return n;
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

// The closed forms are chains of floating-point divisions, roundings and conversions. Where the
// compiler supports it, `terms`, with everything it calls inlined, is also compiled for AVX2 and
// chosen when the program is loaded on a CPU that has it (about 1.7 times faster on the
// benchmark of docs/performance.md). AVX2 without FMA rounds every operation as SSE2 does, so
// both versions give the same bits. Not in sanitizer builds: the loader runs the clones'
// resolver before the sanitizer's runtime starts, and the instrumented resolver crashes.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define TRNSIM_CLOSED_FORMS_CLONES __attribute__((target_clones("avx2", "default"), flatten))
#else
#define TRNSIM_CLOSED_FORMS_CLONES
#endif

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
