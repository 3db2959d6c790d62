// The analytic closed forms against the lowerings they describe (private compute headers).
#include "closed_forms.hpp"
#include "lowering_common.hpp"

#include "trnsim/compute/cost_model.hpp"
#include "trnsim/compute/detailed_model.hpp"
#include "trnsim/config/load.hpp"

#include <gtest/gtest.h>

namespace trnsim::compute {
namespace {

bool same(const detail::PassProfile& a, const detail::PassProfile& b) {
    if (a.loads != b.loads || a.load_bytes != b.load_bytes || a.params != b.params ||
        a.param_bytes != b.param_bytes || a.stores != b.stores || a.store_bytes != b.store_bytes ||
        a.bn_stats != b.bn_stats || a.bn_aggr != b.bn_aggr || a.maps != b.maps ||
        a.indirect != b.indirect) {
        return false;
    }
    for (std::size_t e = 0; e < 3; ++e) {
        const auto& x = a.engines[e];
        const auto& y = b.engines[e];
        if (x.ops != y.ops || x.streamed != y.streamed || x.perf_streamed != y.perf_streamed ||
            x.tiny != y.tiny || x.tiny_inputs != y.tiny_inputs) {
            return false;
        }
    }
    return true;
}

TEST(ClosedForms, ProfilesMatchTheLoweringsSteps) {
    const ChipSpec chip = config::load_chip("trn2");
    std::vector<StreamShape> shapes;
    for (StreamKind kind : {StreamKind::softmax, StreamKind::rms_norm, StreamKind::layer_norm,
                            StreamKind::gather, StreamKind::softmax_backward,
                            StreamKind::rms_norm_backward, StreamKind::layer_norm_backward,
                            StreamKind::scatter_add, StreamKind::cross_entropy}) {
        // The norm backward kinds keep their FP32 scale gradients resident: rows up to about
        // 20,000 elements.
        const bool norm_backward =
            kind == StreamKind::rms_norm_backward || kind == StreamKind::layer_norm_backward;
        for (std::int64_t row : {std::int64_t{64}, std::int64_t{4096},
                                 std::int64_t{norm_backward ? 16384 : 40000}}) {
            for (int eb : {1, 2, 4}) {
                StreamShape s;
                s.kind = kind;
                s.row = row;
                s.elements = 300 * row;
                s.element_bytes = eb;
                shapes.push_back(s);
            }
        }
    }
    for (int inputs = 1; inputs <= 8; ++inputs) {
        for (int passes = 1; passes <= 4; ++passes) {
            for (StreamEngine e : {StreamEngine::vector, StreamEngine::scalar}) {
                for (int outputs : {1, 2}) {
                    for (int eb : {2, 4}) {
                        shapes.push_back(StreamShape{100000, inputs, outputs, eb, passes, e});
                    }
                }
            }
        }
        StreamShape r{100000, inputs, 1, 2, 1, StreamEngine::vector, StreamKind::reduce};
        shapes.push_back(r);
    }
    for (const StreamShape& s : shapes) {
        const detail::Recipe r = detail::stream_recipe(s, chip);
        EXPECT_TRUE(same(detail::profile_of(r.first), r.plan.first)) << describe(Kernel{s});
        EXPECT_TRUE(same(detail::profile_of(r.between), r.plan.between)) << describe(Kernel{s});
        EXPECT_TRUE(same(detail::profile_of(r.second), r.plan.second)) << describe(Kernel{s});
        EXPECT_EQ(r.second.empty(), !r.plan.two_pass) << describe(Kernel{s});
    }
    for (int g : {2, 4}) {
        const detail::Recipe r = detail::adamw_recipe({1000000, g, 2}, chip);
        EXPECT_TRUE(same(detail::profile_of(r.first), r.plan.first));
    }
}

TEST(ClosedForms, EngineTotalsMatchTheSimulation) {
    // The closed forms' busy times are the lowering's instructions added up: equal to what the
    // detailed model keeps each engine busy, up to the per-instruction rounding of cycles (and,
    // for TensorE, the warm-up ramp).
    const ChipSpec chip = config::load_chip("trn2");
    const CostModel analytic(chip, 1);
    const DetailedModel detailed(chip, 1);
    std::vector<Kernel> kernels{
        MatmulShape{4096, 4096, 4096, 1, Precision::bf16},
        StreamShape{8192 * 4096, 1, 1, 2, 2, StreamEngine::vector, StreamKind::rms_norm, 4096},
        StreamShape{1000 * 30000, 1, 1, 4, 1, StreamEngine::vector, StreamKind::softmax, 30000},
        // BF16: VectorE performance mode for the softmax scale and the single-input maps.
        StreamShape{4096 * 2048, 1, 1, 2, 1, StreamEngine::vector, StreamKind::softmax, 2048},
        StreamShape{20000000, 2, 1, 2, 3, StreamEngine::vector},
        StreamShape{1024 * 4096, 1, 1, 2, 1, StreamEngine::vector, StreamKind::cross_entropy,
                    4096},
        StreamShape{3000 * 2048, 1, 1, 2, 2, StreamEngine::vector, StreamKind::layer_norm, 2048},
        StreamShape{20000000, 2, 1, 2, 1, StreamEngine::scalar},
        StreamShape{20000000, 4, 1, 2, 1, StreamEngine::vector, StreamKind::reduce},
        OptimizerShape{30000000, 4, 2},
    };
    for (const Kernel& k : kernels) {
        const auto nominal = analytic.engine_seconds(k);
        const DetailedResult d = detailed.run(k);
        for (EngineKind e : {EngineKind::tensor, EngineKind::vector, EngineKind::scalar,
                             EngineKind::gpsimd}) {
            const double sim = d.core.busy_seconds[static_cast<std::size_t>(e)];
            const double tolerance = 0.02 * sim + (e == EngineKind::tensor ? 1e-6 : 1e-9);
            EXPECT_NEAR(nominal[static_cast<std::size_t>(e)], sim, tolerance)
                << describe(k) << " " << to_string(e);
        }
    }
}

} // namespace
} // namespace trnsim::compute
