// Streaming kernels (elementwise, reduce, softmax, norms, gather) and AdamW: recipes, their
// lowering and their closed-form costs.
#include "trnsim/compute/lowering.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"
#include "lowering_common.hpp"
#include "closed_forms.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace trnsim::compute {

namespace detail {

namespace {

/// Slots for per-row statistics (16 bytes each): enough for every chunk in flight.
constexpr int kStatSlots = 256;
/// VectorE bn_stats handles up to 512 elements per instruction.
constexpr std::int64_t kBnStatsWidth = 512;

double d(std::int64_t v) { return static_cast<double>(v); }

Step load(int queue, int eb, int param = -1) {
    Step s;
    s.kind = StepKind::load;
    s.queue = static_cast<std::int8_t>(queue);
    s.element_bytes = static_cast<std::int8_t>(eb);
    s.param = static_cast<std::int8_t>(param);
    return s;
}

Step store(int queue, int eb) {
    Step s;
    s.kind = StepKind::store;
    s.queue = static_cast<std::int8_t>(queue);
    s.element_bytes = static_cast<std::int8_t>(eb);
    return s;
}

Step op(StepKind kind, Queue engine, int inputs = 1, int param = -1, bool also_stats = false) {
    Step s;
    s.kind = kind;
    s.engine = engine;
    s.inputs = static_cast<std::int8_t>(inputs);
    s.param = static_cast<std::int8_t>(param);
    s.also_stats = also_stats;
    return s;
}

Step map(Queue engine, int inputs = 1, int param = -1) {
    return op(StepKind::map, engine, inputs, param);
}

/// A single-input VectorE map (a copy or a scale) over tiles of `eb`-byte elements: it
/// qualifies for the performance mode when they are BF16/FP16 (NKI2: tensor_copy and
/// tensor_scalar with both tiles in SBUF).
Step copy_map(int eb) {
    Step s = map(Queue::vector);
    s.perf = eb == 2;
    return s;
}

Step tiny(Queue engine, int inputs = 1) { return op(StepKind::tiny, engine, inputs); }

Step reduce(Queue engine, int inputs = 1) { return op(StepKind::reduce, engine, inputs); }

/// acc[index] += the chunk's value times the next input (one instruction streaming both and the
/// accumulator).
Step accumulate(Queue engine, int index) {
    Step s = op(StepKind::map, engine, 3, index);
    s.accumulate = true;
    return s;
}

std::size_t engine_index(Queue q) { return q == Queue::vector ? 0 : q == Queue::scalar ? 1 : 2; }

/// The steps of a row kernel (softmax, RMSNorm, LayerNorm), one pass or two. The second
/// pass's loads share the first pass's queue, so they wait behind it (first in, first out)
/// instead of taking DMA bandwidth from it.
void row_steps(Recipe& r, const StreamShape& s, bool one_pass) {
    const int eb = s.element_bytes;
    switch (s.kind) {
    case StreamKind::softmax:
        if (one_pass) {
            r.first = {load(0, eb),
                       op(StepKind::reduce, Queue::vector),           // row max
                       tiny(Queue::vector),                           // -max
                       op(StepKind::map, Queue::scalar, 1, -1, true), // exp, row sums
                       tiny(Queue::vector),                           // 1 / sum
                       copy_map(eb),                                  // scale
                       store(2, eb)};
        } else {
            r.first = {load(0, eb),
                       op(StepKind::reduce, Queue::vector),           // chunk max
                       tiny(Queue::vector, 2),                        // running max
                       op(StepKind::map, Queue::scalar, 1, -1, true), // exp, chunk sum
                       tiny(Queue::scalar),                           // rescale factor
                       tiny(Queue::vector, 2)};                       // running sum
            r.between = {tiny(Queue::vector)};                        // bias = -max - log sum
            r.second = {load(0, eb), map(Queue::scalar), store(2, eb)};
        }
        break;
    case StreamKind::rms_norm:
        if (one_pass) {
            r.first = {load(0, eb),
                       op(StepKind::reduce, Queue::scalar), // sum of squares (ScalarE, accumulate)
                       tiny(Queue::vector),                 // 1 / rms
                       map(Queue::vector, 2, 0),            // x / rms x weight
                       store(2, eb)};
        } else {
            r.first = {load(0, eb), op(StepKind::reduce, Queue::scalar), tiny(Queue::vector, 2)};
            r.between = {tiny(Queue::vector)};
            r.second = {load(0, eb), load(0, eb, 0), map(Queue::vector, 2, 0), store(2, eb)};
        }
        break;
    case StreamKind::layer_norm:
        if (one_pass) {
            r.first = {load(0, eb),
                       op(StepKind::bn_stats, Queue::vector),
                       op(StepKind::bn_aggr, Queue::vector),
                       tiny(Queue::vector),      // 1 / std, -mean / std
                       map(Queue::scalar),       // normalise
                       map(Queue::vector, 2, 0), // x weight
                       map(Queue::gpsimd, 2, 1), // + bias
                       store(2, eb)};
        } else {
            r.first = {load(0, eb), op(StepKind::bn_stats, Queue::vector)};
            r.between = {op(StepKind::bn_aggr, Queue::vector), tiny(Queue::vector)};
            r.second = {load(0, eb),        load(0, eb, 0),           load(0, eb, 1),
                        map(Queue::scalar), map(Queue::vector, 2, 0), map(Queue::gpsimd, 2, 1),
                        store(2, eb)};
        }
        break;
    default:
        TRNSIM_CHECK(false, "not a row kernel");
    }
}

/// The steps of an elementwise, reduce or gather kernel.
void flat_steps(Recipe& r, const StreamShape& s) {
    const int eb = s.element_bytes;
    switch (s.kind) {
    case StreamKind::elementwise: {
        for (int i = 0; i < s.inputs; ++i) {
            r.first.push_back(load(i % 2, eb));
        }
        int combined = 0; // inputs folded in so far
        if (s.engine == StreamEngine::vector) {
            for (int p = 0; p < s.passes; ++p) {
                const int inputs = combined < s.inputs - 1 ? 2 : 1;
                combined += inputs - 1;
                r.first.push_back(inputs == 1 ? copy_map(eb) : map(Queue::vector, inputs));
            }
        } else {
            for (int p = 0; p < s.passes; ++p) {
                r.first.push_back(map(Queue::scalar));
            }
        }
        for (; combined < s.inputs - 1; ++combined) {
            r.first.push_back(map(Queue::vector, 2));
        }
        for (int o = 0; o < s.outputs; ++o) {
            r.first.push_back(store(2 + o % 2, eb));
        }
        break;
    }
    case StreamKind::reduce: {
        const int inputs = std::max(2, s.inputs);
        for (int i = 0; i < inputs; ++i) {
            r.first.push_back(load(i % 2, eb));
        }
        for (int i = 0; i + 1 < inputs; ++i) {
            r.first.push_back(map(i % 2 == 0 ? Queue::vector : Queue::gpsimd, 2));
        }
        r.first.push_back(store(2, eb));
        break;
    }
    case StreamKind::gather: {
        Step gather = load(0, eb);
        gather.indirect = true;
        r.first = {gather, store(2, eb)};
        break;
    }
    case StreamKind::scatter_add: {
        // The FP32 rows of the embedding gradient the tokens index (a gather), plus the tokens'
        // gradient rows, written back to the same rows.
        Step rows = load(0, 4);
        rows.indirect = true;
        r.first = {rows, load(1, eb), map(Queue::vector, 2), store(2, 4)};
        break;
    }
    default:
        TRNSIM_CHECK(false, "not a flat kernel");
    }
}

} // namespace

int row_kind_params(StreamKind kind) {
    return kind == StreamKind::rms_norm_backward || kind == StreamKind::layer_norm_backward ? 1
                                                                                           : 0;
}

int row_kind_accumulators(StreamKind kind) {
    return kind == StreamKind::rms_norm_backward     ? 1  // dgamma
           : kind == StreamKind::layer_norm_backward ? 2  // dgamma, dbeta
                                                     : 0;
}

void row_kind_steps(StreamKind kind, int eb, bool two_pass, Steps& first, Steps& between,
                    Steps& second) {
    first.clear();
    between.clear();
    second.clear();
    const Queue V = Queue::vector;
    const Queue S = Queue::scalar;
    const Queue G = Queue::gpsimd;
    switch (kind) {
    case StreamKind::softmax_backward:
        // dx = y (dy - sum(y dy)): the row sum of the product, then one fused update.
        if (!two_pass) {
            first = {load(0, eb), load(1, eb), reduce(V, 2), tiny(V), map(V, 2), store(2, eb)};
        } else {
            first = {load(0, eb), load(1, eb), reduce(V, 2), tiny(V, 2)}; // running sum
            between = {tiny(V)};
            second = {load(0, eb), load(1, eb), map(V, 2), store(2, eb)};
        }
        break;
    case StreamKind::rms_norm_backward:
        // dy (0), x (1), the scale g (parameter 0). r = 1 / rms(x) recomputed;
        // dx = r (dy g - x r^2 mean(dy g x)); dgamma += dy x r.
        if (!two_pass) {
            first = {load(0, eb),  load(1, eb),   reduce(S),           tiny(V),
                     map(V, 2, 0), reduce(V, 2),  tiny(V, 2),          map(V, 2),
                     map(S),       store(2, eb),  accumulate(V, 0)};
        } else {
            first = {load(0, eb),  load(1, eb),  load(0, eb, 0), reduce(S),
                     map(V, 2, 0), reduce(V, 2), tiny(V, 2),     tiny(V, 2)};
            between = {tiny(V), tiny(V, 2)};
            second = {load(0, eb), load(1, eb), load(0, eb, 0), map(V, 2, 0),
                      map(V, 2),   map(S),      store(2, eb),   accumulate(V, 0)};
        }
        break;
    case StreamKind::layer_norm_backward:
        // dy (0), x (1), g. Mean and variance of x (bn_stats), x^ = (x - mean) r;
        // dx = r (dy g - mean(dy g) - x^ mean(dy g x^)); dgamma += dy x^, dbeta += dy.
        if (!two_pass) {
            first = {load(0, eb),      load(1, eb),      op(StepKind::bn_stats, V),
                     op(StepKind::bn_aggr, V), tiny(V),   map(S),
                     map(V, 2, 0),     reduce(V),        reduce(V, 2),
                     tiny(V, 2),       map(V, 2),        map(V, 2),
                     map(S),           store(2, eb),     accumulate(V, 0),
                     accumulate(G, 1)};
        } else {
            // Both row sums are linear in x: sum(dy g) and sum(dy g x) in the first pass.
            first = {load(0, eb),  load(1, eb), load(0, eb, 0), op(StepKind::bn_stats, V),
                     map(V, 2, 0), reduce(V),   reduce(V, 2),   tiny(V, 2),
                     tiny(V, 2)};
            between = {op(StepKind::bn_aggr, V), tiny(V), tiny(V, 2)};
            second = {load(0, eb), load(1, eb),  load(0, eb, 0),   map(S),
                      map(V, 2, 0), map(V, 2),   map(V, 2),        map(S),
                      store(2, eb), accumulate(V, 0), accumulate(G, 1)};
        }
        break;
    case StreamKind::cross_entropy:
        // Row max, exponentials with their sum (ScalarE), the target's logit (GpSimdE picks it
        // by index), then the gradient softmax - one-hot written over the logits.
        if (!two_pass) {
            first = {load(0, eb),
                     reduce(V),                            // row max
                     tiny(V),                              // -max
                     op(StepKind::map, S, 1, -1, true),    // exp, row sums
                     tiny(V),                              // 1 / sum, log sum
                     reduce(G),                            // target logit
                     copy_map(eb),                         // softmax
                     map(G),                               // - one-hot
                     store(2, eb)};
        } else {
            first = {load(0, eb),
                     reduce(V),                            // chunk max
                     tiny(V, 2),                           // running max
                     op(StepKind::map, S, 1, -1, true),    // exp, chunk sum
                     tiny(S),                              // rescale factor
                     tiny(V, 2),                           // running sum
                     reduce(G)};                           // target logit, if in the chunk
            between = {tiny(V)};                           // bias = -max - log sum
            second = {load(0, eb), map(S), map(G), store(2, eb)};
        }
        break;
    default:
        TRNSIM_CHECK(false, "not a row kind without a hand-written profile");
    }
}

PassProfile profile_of(const Steps& steps) {
    PassProfile p;
    for (const Step& s : steps) {
        EngineWork& e = p.engines[engine_index(s.engine)];
        switch (s.kind) {
        case StepKind::load:
            if (s.param >= 0) {
                ++p.params;
                p.param_bytes += s.element_bytes;
            } else {
                ++p.loads;
                p.load_bytes += s.element_bytes;
                p.indirect = p.indirect || s.indirect;
            }
            break;
        case StepKind::store:
            ++p.stores;
            p.store_bytes += s.element_bytes;
            break;
        case StepKind::map:
            p.maps += s.accumulate ? 0 : 1; // an accumulation writes no new value
            e.ops += 1.0;
            (s.perf ? e.perf_streamed : e.streamed) += s.inputs;
            break;
        case StepKind::reduce:
            e.ops += 1.0;
            e.streamed += s.inputs;
            break;
        case StepKind::tiny:
            e.tiny += 1.0;
            e.tiny_inputs += s.inputs;
            break;
        case StepKind::bn_stats:
            ++p.bn_stats;
            break;
        case StepKind::bn_aggr:
            ++p.bn_aggr;
            break;
        }
    }
    return p;
}

std::string Recipe::description() const {
    const TileGroup& g = plan.groups.front();
    std::string t = "[" + std::to_string(g.partitions) + " x " + std::to_string(g.chunk) + "] tiles";
    if (g.chunks() > 1) {
        t += ", " + std::to_string(g.chunks()) + " chunks per row";
    }
    if (plan.two_pass) {
        t += ", two passes";
    }
    return t + ", " + std::to_string(plan.depth) + " deep";
}

Recipe stream_recipe(const StreamShape& s, const ChipSpec& chip) {
    Recipe r;
    r.plan = plan_stream(s, ChipRates(chip));
    if (s.kind == StreamKind::softmax || s.kind == StreamKind::rms_norm ||
        s.kind == StreamKind::layer_norm) {
        row_steps(r, s, !r.plan.two_pass);
    } else if (is_row_kind(s.kind) && s.kind != StreamKind::gather &&
               s.kind != StreamKind::scatter_add) {
        row_kind_steps(s.kind, s.element_bytes, r.plan.two_pass, r.first, r.between, r.second);
    } else {
        flat_steps(r, s);
    }
    return r;
}

Recipe adamw_recipe(const OptimizerShape& s, const ChipSpec& chip) {
    Recipe r;
    r.plan = plan_adamw(s, ChipRates(chip));
    const bool master = s.master_bytes > 0;
    r.first = {load(1, s.grad_bytes),                               // gradient
               load(0, s.moment_bytes),                             // first moment
               load(1, s.moment_bytes),                             // second moment
               load(0, master ? s.master_bytes : s.weight_bytes),   // master (or the weight)
               map(Queue::gpsimd),    // (1 - beta1) g
               map(Queue::vector, 2), // m = beta1 m + (1 - beta1) g
               map(Queue::scalar),    // (1 - beta2) g^2
               map(Queue::vector, 2), // v = beta2 v + (1 - beta2) g^2
               map(Queue::scalar),    // sqrt(v / (1 - beta2^t))
               map(Queue::vector),    // 1 / (sqrt + eps)
               map(Queue::vector, 2), // update = m / (1 - beta1^t) / (sqrt + eps)
               map(Queue::gpsimd, 2), // w = w - lr (update + wd w)
               map(Queue::scalar)};   // working copy in the weight type (rounded stochastically
                                      // without a master)
    if (master) {
        r.first.push_back(store(2, s.master_bytes)); // master weight
    }
    r.first.push_back(store(3, s.moment_bytes)); // first moment
    r.first.push_back(store(2, s.moment_bytes)); // second moment
    r.first.push_back(store(3, s.weight_bytes));
    return r;
}

Program lower_recipe(const Recipe& r, double flops, const ChipSpec& chip) {
    ProgramBuilder b(chip);
    const StreamPlan& plan = r.plan;
    const int data_buffers = plan.depth * std::max(1, plan.first.loads + plan.second.loads) + 1;
    const int work_buffers = plan.depth * std::max(1, plan.first.maps + plan.second.maps) + 1;
    const auto data_pool = b.sbuf_pool(r.plan.buffer_bytes, data_buffers);
    const auto work_pool = b.sbuf_pool(r.plan.buffer_bytes, work_buffers);
    const auto stat_pool = b.sbuf_pool(16, kStatSlots);
    std::int64_t once_bytes = 64;
    for (const OnceLoad& o : plan.once) {
        once_bytes = std::max(once_bytes,
                              static_cast<std::int64_t>(o.bytes) / chip.core.sbuf_partitions + 1);
    }
    const auto once_pool =
        b.sbuf_pool(once_bytes, std::max(1, static_cast<int>(plan.once.size())));
    const auto param_pool = b.sbuf_pool(plan.buffer_bytes, plan.params_per_chunk ? 4 : 1);
    std::vector<ProgramBuilder::Buffer> acc_slots;
    if (plan.accumulators > 0) {
        const auto acc_pool = b.sbuf_pool(plan.accumulator_bytes, plan.accumulators);
        for (int i = 0; i < plan.accumulators; ++i) {
            acc_slots.push_back(b.alloc(acc_pool));
        }
    }
    TRNSIM_CHECK(b.fits() && b.sbuf_bytes() == plan_sbuf_bytes(plan, plan.depth,
                                                                  chip.core.sbuf_partitions),
                 "the recipe's pools differ from its plan");
    std::vector<ProgramBuilder::Buffer> param_slots(2);
    ProgramBuilder::Buffer index_slot = 0;
    for (const OnceLoad& s : plan.once) {
        const auto slot = b.alloc(once_pool);
        const ProgramBuilder::Buffer w[] = {slot};
        b.dma(s.queue, s.bytes, s.descriptors, Direction::hbm_to_sbuf, {}, w);
        if (s.param >= 0) {
            param_slots[static_cast<std::size_t>(s.param)] = slot;
        } else {
            index_slot = slot;
        }
    }
    std::int64_t pieces = 0; // bn_stats pieces per row (LayerNorm)
    std::vector<ProgramBuilder::Buffer> loaded;
    // Per-row statistics live in small slots: the running ones (`stats`) and the last partial
    // result of a reduction (`partial`); every update writes a fresh slot, so a chunk's
    // statistics never wait for the readers of the previous chunk's.
    ProgramBuilder::Buffer stats = 0;
    ProgramBuilder::Buffer partial = 0;
    const auto run = [&](const Steps& steps, std::int64_t partitions, std::int64_t w) {
        loaded.clear();
        std::size_t consumed = 1;
        ProgramBuilder::Buffer cur = stats;
        bool have_cur = false;
        for (const Step& s : steps) {
            switch (s.kind) {
            case StepKind::load: {
                const bool is_param = s.param >= 0;
                const auto slot = b.alloc(is_param ? param_pool : data_pool);
                const ProgramBuilder::Buffer idx[] = {index_slot};
                const ProgramBuilder::Buffer wr[] = {slot};
                b.dma(s.queue, d(partitions * w * s.element_bytes), partitions,
                      Direction::hbm_to_sbuf,
                      s.indirect ? std::span<const ProgramBuilder::Buffer>(idx)
                                 : std::span<const ProgramBuilder::Buffer>(),
                      wr);
                if (is_param) {
                    param_slots[static_cast<std::size_t>(s.param)] = slot;
                } else {
                    loaded.push_back(slot);
                    if (!have_cur) {
                        cur = slot;
                        have_cur = true;
                    }
                }
                break;
            }
            case StepKind::store: {
                const ProgramBuilder::Buffer rd[] = {cur};
                b.dma(s.queue, d(partitions * w * s.element_bytes), partitions,
                      Direction::sbuf_to_hbm, rd, {});
                break;
            }
            case StepKind::map: {
                if (s.accumulate) {
                    const auto acc = acc_slots.at(static_cast<std::size_t>(s.param));
                    const ProgramBuilder::Buffer next =
                        consumed < loaded.size() ? loaded[consumed] : cur;
                    const ProgramBuilder::Buffer rd[] = {cur, stats, next, acc};
                    const ProgramBuilder::Buffer wr[] = {acc};
                    b.engine(s.engine, w, s.inputs, rd, wr);
                    break;
                }
                const auto out = b.alloc(work_pool);
                ProgramBuilder::Buffer second = stats;
                if (s.inputs >= 2) {
                    second = s.param >= 0 ? param_slots[static_cast<std::size_t>(s.param)]
                             : consumed < loaded.size() ? loaded[consumed++]
                                                        : cur;
                }
                const auto sums = s.also_stats ? b.alloc(stat_pool) : partial;
                const ProgramBuilder::Buffer rd[] = {cur, stats, second};
                const ProgramBuilder::Buffer wr[] = {out, sums};
                b.engine(s.engine, w, s.inputs, rd,
                         std::span<const ProgramBuilder::Buffer>(wr, s.also_stats ? 2 : 1),
                         s.perf ? VectorMode::perf : VectorMode::standard);
                partial = sums;
                cur = out;
                have_cur = true;
                break;
            }
            case StepKind::reduce: {
                const auto out = b.alloc(stat_pool);
                // A two-input reduction (a row sum of a product) also reads the next input.
                if (s.inputs >= 2 && consumed < loaded.size()) {
                    b.engine(s.engine, w, s.inputs, {cur, loaded[consumed]}, {out});
                } else {
                    b.engine(s.engine, w, s.inputs, {cur}, {out});
                }
                partial = out;
                break;
            }
            case StepKind::tiny: {
                const auto out = b.alloc(stat_pool);
                b.engine(s.engine, 1, s.inputs, {stats, partial}, {out});
                stats = out;
                break;
            }
            case StepKind::bn_stats:
                for (std::int64_t p = 0; p * kBnStatsWidth < w; ++p) {
                    const auto out = b.alloc(stat_pool);
                    b.engine(Queue::vector, std::min(kBnStatsWidth, w - p * kBnStatsWidth), 1,
                             {cur}, {out});
                    partial = out;
                    ++pieces;
                }
                break;
            case StepKind::bn_aggr: {
                const auto out = b.alloc(stat_pool);
                b.engine(Queue::vector, std::max<std::int64_t>(pieces, 1), 1, {stats, partial},
                         {out});
                stats = out;
                break;
            }
            }
        }
    };
    for (const TileGroup& g : plan.groups) {
        for (std::int64_t t = 0; t < g.count; ++t) {
            stats = b.alloc(stat_pool);
            partial = stats;
            pieces = 0;
            for (std::int64_t c = 0; c < g.chunks(); ++c) {
                run(r.first, g.partitions, g.chunk_width(c));
            }
            run(r.between, g.partitions, 1);
            for (std::int64_t c = 0; c < g.chunks() && !r.second.empty(); ++c) {
                run(r.second, g.partitions, g.chunk_width(c));
            }
        }
    }
    // The parameter gradients: each accumulator's partitions summed on GpSimdE, then stored.
    for (const auto acc : acc_slots) {
        const auto out = b.alloc(stat_pool);
        b.engine(Queue::gpsimd, plan.param_width, 1, {acc}, {out});
        b.dma(2, d(plan.param_width * 4), 1, Direction::sbuf_to_hbm, {out}, {});
    }
    return b.finish(flops, r.description());
}


} // namespace detail

Program lower(const Kernel& k, const ChipSpec& chip) {
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        return a->backward ? detail::lower_attention_backward(*a, chip)
                           : detail::lower_attention(*a, chip);
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        return detail::lower_recipe(detail::adamw_recipe(*o, chip), useful_flops(k), chip);
    }
    if (const auto* s = std::get_if<StreamShape>(&k)) {
        return detail::lower_recipe(detail::stream_recipe(*s, chip), useful_flops(k), chip);
    }
    TRNSIM_CHECK(false, "matmuls are lowered per tiling (lower_matmul)");
    return {};
}

} // namespace trnsim::compute
