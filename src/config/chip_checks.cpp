// A chip file's cross-key checks (validate_chip) and loading a chip preset or file.
#include "trnsim/cluster/hierarchy.hpp"
#include "trnsim/compute/cost_model.hpp"

#include "load_ref.hpp"
#include "tables.hpp"

#include <algorithm>
#include <filesystem>
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
        if (c.neuronlink_inter_instance.bytes_per_s() > 0.0 && !c.ultraserver) {
            throw InputError("interconnect.neuronlink_inter_instance",
                             "a switched instance has one NeuronLink bandwidth per chip, to any "
                             "chip of it: give it as neuronlink_intra_instance (a second switch "
                             "level joins the servers of an UltraServer)",
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
    for (const char* key : {"ultraserver.racks", "ultraserver.neuronswitches"}) {
        if (ctx.sources && ctx.sources->contains(key) &&
            !ctx.sources->contains("ultraserver.instances")) {
            throw InputError("ultraserver.instances", std::string("required with ") + key,
                             at(key));
        }
    }
    const int us_switches = c.ultraserver ? c.ultraserver->neuronswitches : 0;
    if (!switched && (c.instance.neuronswitches > 0 || us_switches > 0)) {
        const char* key = c.instance.neuronswitches > 0 ? "instance.neuronswitches"
                                                        : "ultraserver.neuronswitches";
        throw InputError(key, "NeuronLink switches belong to a switched domain "
                              "(instance.scale_up: switched)",
                         at(key));
    }
    const int racks = c.ultraserver ? c.ultraserver->racks : 1;
    if (racks > 1) {
        if (!switched || c.neuronlink_inter_instance.bytes_per_s() <= 0.0) {
            throw InputError("ultraserver.racks",
                             "racks joined by direct links need a switched UltraServer of two "
                             "switch levels (instance.scale_up: switched and "
                             "interconnect.neuronlink_inter_instance)",
                             at("ultraserver.racks"));
        }
        const std::int64_t instances = cluster::Hierarchy::instances_per_ultraserver(c);
        if (instances % racks != 0) {
            throw InputError("ultraserver.racks",
                             "the " + std::to_string(instances) +
                                 " instances of an UltraServer do not fill " +
                                 std::to_string(racks) + " racks in equal shares",
                             at("ultraserver.racks"));
        }
        if (c.neuronlink_inter_rack.bytes_per_s() <= 0.0) {
            throw InputError("interconnect.neuronlink_inter_rack",
                             "required when ultraserver.racks > 1: the direct links between "
                             "the racks",
                             at("interconnect"));
        }
    } else if (c.neuronlink_inter_rack.bytes_per_s() > 0.0) {
        throw InputError("interconnect.neuronlink_inter_rack",
                         "only for an UltraServer of more than one rack (ultraserver.racks)",
                         at("interconnect.neuronlink_inter_rack"));
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

namespace {

/// The chip files a chain of `extends` may pass through (a longer chain is a cycle), and how
/// deep this thread is in one.
constexpr int kMaxExtends = 8;
thread_local int extends_depth = 0;

struct ExtendsLevel {
    ExtendsLevel() { ++extends_depth; }
    ~ExtendsLevel() { --extends_depth; }
    ExtendsLevel(const ExtendsLevel&) = delete;
    ExtendsLevel& operator=(const ExtendsLevel&) = delete;
};

/// The document of chip file `file` (in context `c`) with the file it extends merged under it:
/// `extends: NAME` (a chip preset or path, found as any chip reference) gives every key this
/// file leaves out; mappings merge key by key, a value or list given here replaces the base's
/// whole. Each inherited key is noted in c.merged_from, so errors about it (a key the schema
/// does not know, or a check of the merged chip) point into the file that gave it.
YAML::Node chip_document(const std::filesystem::path& file, Context& c, const std::string& path,
                         const SourceLocation& loc) {
    YAML::Node root = read_yaml(file, "chip", path, loc, c);
    if (!root.IsMap() || !root["extends"].IsDefined()) {
        return root;
    }
    const YAML::Node ref = root["extends"];
    const SourceLocation at = c.locate("extends", ref.Mark());
    if (!ref.IsScalar()) {
        throw InputError("extends", "expected the chip preset or file this one extends", at);
    }
    const ExtendsLevel level;
    if (extends_depth > kMaxExtends) {
        throw InputError("extends", "more than " + std::to_string(kMaxExtends) +
                                        " chip files extend one another (a cycle?)",
                         at);
    }
    const std::filesystem::path base_file =
        find_preset(ref.Scalar(), "topologies/chips", "chip", c, "extends", at);
    Context base_ctx = c;
    base_ctx.file = base_file.string();
    base_ctx.base_dir = base_file.parent_path();
    base_ctx.merged_from.clear();
    const YAML::Node base = chip_document(base_file, base_ctx, "extends", at);
    root.remove("extends");
    const auto merge = [&](auto&& self, YAML::Node into, const YAML::Node& from,
                           const std::string& prefix) -> void {
        for (auto it = from.begin(); it != from.end(); ++it) {
            const std::string key = it->first.Scalar();
            const YAML::Node& cinto = into;
            const YAML::Node mine = cinto[key];
            const std::string sub = prefix.empty() ? key : prefix + "." + key;
            if (!mine.IsDefined() || mine.IsNull()) {
                into[key] = it->second;
                // The base's own file, or the file it inherited the key (or keys below) from.
                const auto deeper = base_ctx.merged_from.find(sub);
                c.merged_from[sub] =
                    deeper != base_ctx.merged_from.end() ? deeper->second : base_ctx.file;
                for (auto b = base_ctx.merged_from.lower_bound(sub + ".");
                     b != base_ctx.merged_from.end() && b->first.rfind(sub + ".", 0) == 0; ++b) {
                    c.merged_from[b->first] = b->second;
                }
            } else if (mine.IsMap() && it->second.IsMap()) {
                self(self, into[key], it->second, sub);
            }
        }
    };
    merge(merge, root, base, "");
    return root;
}

} // namespace

compute::ChipSpec load_chip_ref(const std::string& ref, const Context& ctx,
                                const std::string& path, const SourceLocation& loc) {
    const std::filesystem::path file = find_preset(ref, "topologies/chips", "chip", ctx, path, loc);
    return cached_preset<compute::ChipSpec>("chip:" + file.string(), ctx, [&](const Context& in) {
        SourceMap sources;
        Context c = preset_context(file, in, sources);
        const YAML::Node root = chip_document(file, c, path, loc);
        compute::ChipSpec spec;
        chip_schema().load(spec, root, c, {c.file, 1, 1});
        validate_chip(spec, c, SourceLocation{c.file, 1, 1});
        return spec;
    });
}

} // namespace trnsim::config::detail
