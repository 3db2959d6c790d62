#include "trnsim/compute/kernel.hpp"

#include "trnsim/core/assert.hpp"

#include <algorithm>

namespace trnsim::compute {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

double d(std::int64_t v) { return static_cast<double>(v); }

/// sum over t = 1..x of clamp(t, 0, cap); 0 for x <= 0.
double clamped_sum(std::int64_t x, std::int64_t cap) {
    if (x <= 0) {
        return 0.0;
    }
    if (x <= cap) {
        return d(x) * d(x + 1) / 2.0;
    }
    return d(cap) * d(cap + 1) / 2.0 + d(x - cap) * d(cap);
}

/// Query-key pairs one head computes: all of them, or those on or below the causal diagonal.
double visible_pairs(const AttentionShape& s) {
    if (!s.causal) {
        return d(s.q_len) * d(s.kv_len);
    }
    // Query i sees keys 0 .. i + offset (offset = kv_len - q_len), at most kv_len of them.
    const std::int64_t offset = s.kv_len - s.q_len;
    return clamped_sum(s.q_len + offset, s.kv_len) - clamped_sum(offset, s.kv_len);
}

double stream_flops_per_element(const StreamShape& s) {
    switch (s.kind) {
    case StreamKind::elementwise:
        return std::max(s.passes, s.inputs - 1);
    case StreamKind::softmax:
        return 4.0; // max, subtract-and-exponentiate, sum, scale
    case StreamKind::rms_norm:
        return 4.0; // square, sum, scale, multiply by the weight
    case StreamKind::layer_norm:
        return 7.0; // mean, variance (2), normalise (2), weight and bias
    case StreamKind::gather:
        return 0.0;
    case StreamKind::reduce:
        return std::max(1, s.inputs - 1);
    case StreamKind::softmax_backward:
        return 4.0; // product, row sum, subtract, scale
    case StreamKind::rms_norm_backward:
        return 9.0; // sum of squares (2), dy g, dy g x (2), x c - dy g (2), scale, dgamma
    case StreamKind::layer_norm_backward:
        return 13.0; // statistics (3), normalise, dy g, two row sums (3), two updates, scale,
                     // dgamma, dbeta
    case StreamKind::scatter_add:
        return 1.0;
    case StreamKind::cross_entropy:
        return 6.0; // max, subtract-and-exponentiate, sum, scale, target pick, one-hot
    }
    return 1.0;
}


} // namespace

bool is_row_kind(StreamKind k) {
    return k != StreamKind::elementwise && k != StreamKind::reduce;
}

KernelClass class_of(const Kernel& k) {
    if (std::holds_alternative<MatmulShape>(k)) {
        return KernelClass::matmul;
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        return a->backward ? KernelClass::attention_backward : KernelClass::attention;
    }
    if (std::holds_alternative<OptimizerShape>(k)) {
        return KernelClass::adamw;
    }
    switch (std::get<StreamShape>(k).kind) {
    case StreamKind::elementwise:
        return KernelClass::elementwise;
    case StreamKind::softmax:
        return KernelClass::softmax;
    case StreamKind::rms_norm:
        return KernelClass::rms_norm;
    case StreamKind::layer_norm:
        return KernelClass::layer_norm;
    case StreamKind::gather:
        return KernelClass::gather;
    case StreamKind::reduce:
        return KernelClass::reduce;
    case StreamKind::softmax_backward:
        return KernelClass::softmax_backward;
    case StreamKind::rms_norm_backward:
        return KernelClass::rms_norm_backward;
    case StreamKind::layer_norm_backward:
        return KernelClass::layer_norm_backward;
    case StreamKind::scatter_add:
        return KernelClass::scatter_add;
    case StreamKind::cross_entropy:
        return KernelClass::cross_entropy;
    }
    return KernelClass::elementwise;
}

double useful_flops(const Kernel& k) {
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        return 2.0 * d(m->m) * d(m->k) * d(m->n) * d(m->batch);
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        // Forward: S = Q K^T (qk_dim) and O = P V (v_dim). Backward: S again, dP = dO V^T and
        // dV = P^T dO (v_dim), dK = dS^T Q and dQ = dS K (qk_dim).
        const double dims = a->backward ? 3.0 * d(a->qk_dim) + 2.0 * d(a->v_dim)
                                        : d(a->qk_dim + a->v_dim);
        return 2.0 * d(a->batch * a->heads) * visible_pairs(*a) * dims;
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        return 12.0 * d(o->params); // about a dozen vector operations per parameter
    }
    const auto& s = std::get<StreamShape>(k);
    return d(s.elements) * stream_flops_per_element(s);
}

double minimum_hbm_bytes(const Kernel& k) {
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        const double eb = element_bytes(m->precision);
        const double out = m->precision == Precision::fp32 ? 4.0 : 2.0;
        return d(m->batch) * ((d(m->m) * d(m->k) + d(m->k) * d(m->n)) * eb + d(m->m) * d(m->n) * out);
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        const double eb = element_bytes(a->precision);
        const double q = d(a->heads) * d(a->q_len) * d(a->qk_dim + a->v_dim);
        const double kv = d(a->kv_heads) * d(a->kv_len) * d(a->qk_dim + a->v_dim);
        if (a->backward) {
            // Read Q, K, V, O, dO and the log-sum-exp per query row; write dQ, dK, dV.
            return eb * d(a->batch) * (2.0 * q + 2.0 * kv) +
                   4.0 * d(a->batch * a->heads) * d(a->q_len);
        }
        return eb * d(a->batch) * (q + kv);
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        // Read master, m, v and the gradient; write master, m, v and the working weights. With
        // no master copy the weights are read and written instead.
        const double state = 2.0 * o->moment_bytes + o->master_bytes;
        return d(o->params) * (o->master_bytes > 0
                                   ? 2.0 * state + o->grad_bytes + o->weight_bytes
                                   : 2.0 * state + o->grad_bytes + 2.0 * o->weight_bytes);
    }
    const auto& s = std::get<StreamShape>(k);
    const double n = d(s.elements);
    const double row = d(s.row > 0 ? s.row : s.elements);
    switch (s.kind) {
    case StreamKind::elementwise:
        return n * (s.inputs + s.outputs) * s.element_bytes;
    case StreamKind::softmax:
        return 2.0 * n * s.element_bytes;
    case StreamKind::rms_norm:
        return 2.0 * n * s.element_bytes + row * s.element_bytes;
    case StreamKind::layer_norm:
        return 2.0 * n * s.element_bytes + 2.0 * row * s.element_bytes;
    case StreamKind::gather:
        return 2.0 * n * s.element_bytes + 4.0 * n / row; // rows read and written, indices
    case StreamKind::reduce:
        return n * (s.inputs + 1) * s.element_bytes;
    case StreamKind::softmax_backward:
        return 3.0 * n * s.element_bytes; // y, dy in; dx out
    case StreamKind::rms_norm_backward:
        return 3.0 * n * s.element_bytes + row * (s.element_bytes + 4.0); // + scale, its grad
    case StreamKind::layer_norm_backward:
        return 3.0 * n * s.element_bytes + row * (s.element_bytes + 8.0);
    case StreamKind::scatter_add:
        return n * (s.element_bytes + 8.0) + 4.0 * n / row; // dy; FP32 rows read and written
    case StreamKind::cross_entropy:
        return 2.0 * n * s.element_bytes + 4.0 * n / row; // logits in, gradient out; targets
    }
    return 0.0;
}

bool is_empty(const Kernel& k) {
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        return m->m <= 0 || m->k <= 0 || m->n <= 0 || m->batch <= 0;
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        return a->batch <= 0 || a->heads <= 0 || a->kv_heads <= 0 || a->q_len <= 0 ||
               a->kv_len <= 0 || a->qk_dim <= 0 || a->v_dim <= 0;
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        return o->params <= 0;
    }
    const auto& s = std::get<StreamShape>(k);
    return s.elements <= 0;
}

std::string describe(const Kernel& k) {
    const auto x = [](std::int64_t v) { return std::to_string(v); };
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        return x(m->m) + "x" + x(m->k) + "x" + x(m->n) + " " + to_string(m->precision) +
               (m->batch > 1 ? ", batch " + x(m->batch) : "");
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        std::string t = std::string(a->backward ? "backward " : "") + x(a->heads) + "x" + x(a->kv_heads) + "x" + x(a->q_len) + "x" + x(a->qk_dim);
        if (a->kv_len != a->q_len) {
            t += ", kv length " + x(a->kv_len);
        }
        if (a->v_dim != a->qk_dim) {
            t += ", v dim " + x(a->v_dim);
        }
        return t + " " + to_string(a->precision) + (a->causal ? ", causal" : ", not causal") +
               (a->batch > 1 ? ", batch " + x(a->batch) : "");
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        return x(o->params) + " parameters, gradient " + x(o->grad_bytes) + " B, weights " +
               x(o->weight_bytes) + " B";
    }
    const auto& s = std::get<StreamShape>(k);
    const std::string eb = ", " + x(s.element_bytes) + " B/element";
    switch (s.kind) {
    case StreamKind::elementwise:
        return x(s.elements) + " elements, " + x(s.inputs) + " in, " + x(s.outputs) + " out, " +
               x(s.passes) + (s.engine == StreamEngine::scalar ? " ScalarE" : " VectorE") +
               " pass" + (s.passes == 1 ? "" : "es") + eb;
    case StreamKind::reduce:
        return x(s.inputs) + " x " + x(s.elements) + " elements" + eb;
    case StreamKind::softmax:
    case StreamKind::rms_norm:
    case StreamKind::layer_norm:
    case StreamKind::gather:
    case StreamKind::softmax_backward:
    case StreamKind::rms_norm_backward:
    case StreamKind::layer_norm_backward:
    case StreamKind::scatter_add:
    case StreamKind::cross_entropy: {
        const std::int64_t row = s.row > 0 ? s.row : s.elements;
        return x(ceil_div(s.elements, row)) + "x" + x(row) + eb;
    }
    }
    return "";
}

Kernel split_across_cores(const Kernel& k, int cores) {
    TRNSIM_CHECK(cores >= 1, "a rank has at least one core");
    if (cores == 1) {
        return k;
    }
    const std::int64_t c = cores;
    if (const auto* m = std::get_if<MatmulShape>(&k)) {
        MatmulShape s = *m;
        if (s.batch % c == 0) {
            s.batch /= c;
        } else if (s.m >= s.n) {
            s.m = ceil_div(s.m, c);
        } else {
            s.n = ceil_div(s.n, c);
        }
        return s;
    }
    if (const auto* a = std::get_if<AttentionShape>(&k)) {
        AttentionShape s = *a;
        if (s.kv_heads % c == 0) {
            s.kv_heads /= c;
            s.heads /= c;
        } else if (s.batch % c == 0) {
            s.batch /= c;
        } else if (s.heads % c == 0 && s.kv_heads == 1) {
            s.heads /= c; // a shared key/value head is loaded by every core
        } else {
            // The queries are shared out so that causal work stays balanced (each core takes a
            // chunk from the start and one from the end of the sequence); a core's piece costs
            // as much as the middle chunk of q_len / cores queries, which sees the keys up to
            // the middle of the sequence.
            s.q_len = ceil_div(a->q_len, c);
            if (s.causal) {
                s.kv_len = a->kv_len - a->q_len + ceil_div(a->q_len + s.q_len, 2);
            }
        }
        return s;
    }
    if (const auto* o = std::get_if<OptimizerShape>(&k)) {
        OptimizerShape s = *o;
        s.params = ceil_div(s.params, c);
        return s;
    }
    StreamShape s = std::get<StreamShape>(k);
    if (!is_row_kind(s.kind) || s.row <= 0) {
        s.elements = ceil_div(s.elements, c);
    } else {
        s.elements = ceil_div(ceil_div(s.elements, s.row), c) * s.row;
    }
    return s;
}

} // namespace trnsim::compute
