// The streaming kernels' closed forms (closed_forms.hpp): their plans (geometry, buffering
// depth, per-pass profile, shared with the lowering in lower_stream.cpp), AdamW's plan and
// the terms of a plan. The matmul and attention closed forms and `terms` are in
// closed_forms.cpp, whose AVX2 clone calls these through their own clones.
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

TRNSIM_CLOSED_FORMS_CLONES
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

TRNSIM_CLOSED_FORMS_CLONES
StreamPlan plan_adamw(const OptimizerShape& s, const ChipRates& r) {
    if (s.grad_bytes < 1 || s.grad_bytes > 8 || s.weight_bytes < 1 || s.weight_bytes > 8 ||
        s.master_bytes < 0 || s.master_bytes > 8 || s.moment_bytes < 1 || s.moment_bytes > 8) {
        throw InputError("kernel", "AdamW gradient, weight and moment types take 1 to 8 bytes, "
                                   "the master copy 0 to 8");
    }
    const bool master = s.master_bytes > 0;
    const auto partitions = static_cast<std::int64_t>(r.partitions);
    StreamPlan plan;
    const std::int64_t f = kAdamwTileBytes / 4;
    flat_groups(plan.groups, s.params, partitions, f);
    plan.buffer_bytes = std::min(f, ceil_div(s.params, partitions)) * 4;
    PassProfile& a = plan.first;
    a.loads = 4; // gradient, moments, master weight (or the weight itself)
    a.load_bytes = s.grad_bytes + 2.0 * s.moment_bytes + (master ? s.master_bytes : s.weight_bytes);
    engine(a, kG, 2, 3); // (1 - beta1) g; the weight update
    engine(a, kV, 4, 7); // moments, reciprocal, update
    engine(a, kS, 3, 3); // g^2, sqrt, the working copy
    a.maps = 9;
    a.stores = master ? 4 : 3;
    a.store_bytes = 2.0 * s.moment_bytes + s.master_bytes + s.weight_bytes;
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

TRNSIM_CLOSED_FORMS_CLONES
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

} // namespace trnsim::compute::detail
