// A chip file's cross-key checks (validate_chip) and loading a chip preset or file.
#include "trnsim/compute/cost_model.hpp"

#include "load_ref.hpp"
#include "tables.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::config::detail {

namespace {

std::int64_t product(const std::vector<int>& v) {
    std::int64_t p = 1;
    for (int x : v) {
        p *= x;
    }
    return p;
}

} // namespace

void validate_chip(const compute::ChipSpec& c, const Context& ctx, const SourceLocation& loc) {
    const auto at = [&](const std::string& key) {
        const SourceLocation l = ctx.sources ? ctx.sources->find(key) : SourceLocation{};
        return l.known() ? l : loc;
    };
    if (std::find(c.lnc_allowed.begin(), c.lnc_allowed.end(), c.lnc_default) ==
        c.lnc_allowed.end()) {
        throw InputError("cores.lnc_default", "must be one of cores.lnc_allowed",
                         at("cores.lnc_default"));
    }
    for (int lnc : c.lnc_allowed) {
        if (c.physical_cores % lnc != 0) {
            throw InputError("cores.lnc_allowed",
                             "lnc " + std::to_string(lnc) + " does not divide the " +
                                 std::to_string(c.physical_cores) + " physical cores",
                             at("cores.lnc_allowed"));
        }
    }
    const auto& v = c.core.vector;
    if (v.perf_mode_elements_per_cycle != 0 &&
        v.perf_mode_elements_per_cycle < v.elements_per_cycle) {
        throw InputError("core.vector_engine.perf_mode_elements_per_cycle",
                         "the performance mode cannot be slower than elements_per_cycle (" +
                             std::to_string(v.elements_per_cycle) + "); 0 for none",
                         at("core.vector_engine.perf_mode_elements_per_cycle"));
    }
    if (c.instance.efa_bandwidth.bytes_per_s() > 0.0 && c.efa_latency == Duration::zero()) {
        throw InputError("interconnect.efa_latency",
                         "required when the instance has EFA (instance.efa_bandwidth > 0)",
                         at("interconnect.efa_latency"));
    }
    const bool switched = c.instance.scale_up == ScaleUpKind::switched;
    if (switched) {
        if (!c.instance.torus.empty()) {
            throw InputError("instance.torus",
                             "a switched instance has no torus (instance.scale_up: switched)",
                             at("instance.torus"));
        }
        if (c.neuronlink_inter_instance.bytes_per_s() > 0.0) {
            throw InputError("interconnect.neuronlink_inter_instance",
                             "a switched domain has one NeuronLink bandwidth per chip, to any "
                             "chip of it: give it as neuronlink_intra_instance",
                             at("interconnect.neuronlink_inter_instance"));
        }
    } else if (c.instance.torus.empty()) {
        throw InputError("instance.torus",
                         "required: the NeuronLink torus of the instance (or instance.scale_up: "
                         "switched)",
                         at("instance"));
    } else if (product(c.instance.torus) != c.instance.chips) {
        throw InputError("instance.torus", "the torus shape must multiply to instance.chips = " +
                                               std::to_string(c.instance.chips),
                         at("instance.torus"));
    }
    if (c.ultraserver && !switched && c.neuronlink_inter_instance.bytes_per_s() <= 0.0) {
        throw InputError("interconnect.neuronlink_inter_instance",
                         "an UltraServer needs NeuronLink bandwidth between its instances",
                         at("interconnect.neuronlink_inter_instance"));
    }
    for (compute::KernelClass k : compute::all_kernel_classes()) {
        const auto& coefficients = c.kernel_model.fit(k).coefficients;
        const std::size_t want = compute::kernel_feature_count(k);
        if (!coefficients.empty() && coefficients.size() != want) {
            const std::string key =
                std::string("kernel_model.") + compute::to_string(k) + ".coefficients";
            throw InputError(key,
                             "expected " + std::to_string(want) + " coefficients, got " +
                                 std::to_string(coefficients.size()) +
                                 " (recalibrate with trnsim calibrate)",
                             at(key));
        }
    }
}

compute::ChipSpec load_chip_ref(const std::string& ref, const Context& ctx,
                                const std::string& path, const SourceLocation& loc) {
    return load_ref<compute::ChipSpec>(ref, "topologies/chips", "chip", chip_schema(),
                                       validate_chip, ctx, path, loc);
}

} // namespace trnsim::config::detail
