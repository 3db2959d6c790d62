#include "trnsim/config/load.hpp"
#include "trnsim/config/study.hpp"

#include "trnsim/compute/cost_model.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/core/input_file.hpp"

#include "tables.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <charconv>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include <yaml-cpp/eventhandler.h>

#ifndef TRNSIM_DEFAULT_DATA_DIR
#define TRNSIM_DEFAULT_DATA_DIR "."
#endif

namespace trnsim::config {

namespace fs = std::filesystem;
using detail::Context;

/// The installed data beside the binary: <prefix>/share/trnsim for <prefix>/bin/trnsim.
fs::path installed_data_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) {
        return {};
    }
    const fs::path share = exe.parent_path().parent_path() / "share" / "trnsim";
    return fs::is_directory(share / "topologies", ec) ? share : fs::path();
}

fs::path data_dir() {
    if (const char* env = std::getenv("TRNSIM_DATA_DIR"); env != nullptr && *env != '\0') {
        return fs::path(env);
    }
    if (const fs::path installed = installed_data_dir(); !installed.empty()) {
        return installed;
    }
    return fs::path(TRNSIM_DEFAULT_DATA_DIR);
}

std::vector<fs::path> preset_roots(const fs::path& beside) {
    std::vector<fs::path> roots;
    const auto add = [&](const fs::path& p) {
        if (p.empty()) {
            return;
        }
        std::error_code ec;
        const fs::path c = fs::weakly_canonical(p, ec);
        const fs::path key = ec ? p : c;
        if (std::find(roots.begin(), roots.end(), key) == roots.end()) {
            roots.push_back(key);
        }
    };
    add(beside);
    if (const char* env = std::getenv("TRNSIM_DATA_DIR"); env != nullptr && *env != '\0') {
        add(fs::path(env));
    }
    std::error_code ec;
    add(fs::current_path(ec));
    add(installed_data_dir());
    add(fs::path(TRNSIM_DEFAULT_DATA_DIR));
    return roots;
}

namespace detail {

SourceLocation Context::locate(const std::string& full_path, const YAML::Mark& mark) const {
    // A value set (or a mapping created) by --set reports the command line, not the file.
    std::string p = full_path;
    while (true) {
        if (auto it = overrides.find(p); it != overrides.end()) {
            return it->second;
        }
        const auto cut = p.find_last_of(".[");
        if (cut == std::string::npos) {
            break;
        }
        p.resize(cut);
    }
    // A value merged in from a preset file: its mark points into that file. List elements
    // ("a.b[2].c") belong to their list ("a.b").
    for (std::string q = full_path; !q.empty();) {
        if (auto it = merged_from.find(q); it != merged_from.end() && !mark.is_null()) {
            return {it->second, mark.line + 1, mark.column + 1};
        }
        const auto cut = q.find_last_of(".[");
        q.resize(cut == std::string::npos ? 0 : cut);
    }
    if (mark.is_null()) {
        const std::string below = full_path + ".";
        for (const auto& [path, origin] : overrides) {
            if (path.compare(0, below.size(), below) == 0) {
                return origin;
            }
        }
        return {file, 0, 0};
    }
    return {file, mark.line + 1, mark.column + 1};
}

std::string scalar_text(const YAML::Node& n, const std::string& path, const SourceLocation& loc) {
    if (!n.IsDefined() || n.IsNull()) {
        throw InputError(path, "has no value", loc);
    }
    if (n.IsSequence()) {
        throw InputError(path, "expected a single value, got a list", loc);
    }
    if (n.IsMap()) {
        throw InputError(path, "expected a single value, got a mapping", loc);
    }
    return n.Scalar();
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    std::iota(prev.begin(), prev.end(), std::size_t{0});
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) {
        out += (out.empty() ? "" : ", ") + s;
    }
    return out;
}

bool is_file_ref(const std::string& ref) {
    return ref.find('/') != std::string::npos ||
           (ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".yaml") == 0) ||
           (ref.size() > 4 && ref.compare(ref.size() - 4, 4, ".yml") == 0);
}

} // namespace

std::vector<std::string> presets_in(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() == ".yaml") {
            names.push_back(entry.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

namespace {

/// Reads a YAML file; syntax errors become InputErrors at the offending position. The file is
/// noted in `ctx` (Context::note_read).
YAML::Node read_yaml_file(const fs::path& file, const std::string& what, const std::string& path,
                          const SourceLocation& referenced_at, const Context& ctx) {
    const std::string text = read_input_file(file, what, path, referenced_at);
    YAML::Node root = parse_yaml(text, file.string());
    ctx.note_read(file, text);
    return root;
}

} // namespace

namespace {

/// Records where each document of a YAML stream starts (yaml-cpp's events, nothing built).
class DocumentStarts : public YAML::EventHandler {
public:
    std::vector<YAML::Mark> starts;
    void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
};

} // namespace

namespace {

/// Whether `text` may hold a second document: a document marker ("---" or "...", at the start
/// of a line, alone or before a space) after the first document's content. Markers cannot
/// appear inside scalars at the start of a line, so a text without one holds one document.
bool may_hold_documents(const std::string& text) {
    bool content = false;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string_view line(text.data() + start, end - start);
        const bool marker = line.size() >= 3 && (line.substr(0, 3) == "---" ||
                                                 line.substr(0, 3) == "...") &&
                            (line.size() == 3 || line[3] == ' ' || line[3] == '\t' ||
                             line[3] == '\r');
        if (marker && (content || line[0] == '.')) {
            return true;
        }
        const auto first = line.find_first_not_of(" \t\r");
        if (!marker && first != std::string_view::npos && line[first] != '#' &&
            line[first] != '%') {
            content = true;
        }
        start = end + 1;
    }
    return false;
}

} // namespace

YamlDocument load_one_document(const std::string& text) {
    YamlDocument d;
    try {
        d.node = YAML::Load(text);
        if (!may_hold_documents(text)) {
            return d;
        }
        // YAML::Load keeps the first document and drops the others without a word: count
        // them. (Not with YAML::LoadAll: on a stray ',' it returns empty documents forever.)
        std::istringstream in(text);
        YAML::Parser parser(in);
        DocumentStarts docs;
        if (parser.HandleNextDocument(docs) && parser.HandleNextDocument(docs) &&
            docs.starts.size() > 1) {
            d.mark = docs.starts[1];
            if (docs.starts[1].pos == docs.starts[0].pos) {
                // The parser did not move: a character no document can start with.
                const auto at = static_cast<std::size_t>(std::max(0, d.mark.pos));
                d.error = "YAML syntax error: unexpected '" +
                          (at < text.size() ? std::string(1, text[at]) : std::string()) + "'";
            } else {
                d.error = "holds more than one YAML document (a second one begins with ---); "
                          "trnsim reads exactly one";
            }
            d.node = YAML::Node();
        }
    } catch (const YAML::ParserException& e) {
        d.error = "YAML syntax error: " + e.msg;
        d.mark = e.mark;
        d.node = YAML::Node();
    }
    return d;
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
    YamlDocument d = load_one_document(text);
    if (!d.error.empty()) {
        const bool marked = !d.mark.is_null();
        throw InputError("", d.error.rfind("holds", 0) == 0 ? "the file " + d.error : d.error,
                         {file, marked ? d.mark.line + 1 : 1, marked ? d.mark.column + 1 : 1});
    }
    return d.node;
}

YAML::Node read_yaml(const fs::path& file, const std::string& what, const std::string& path,
                     const SourceLocation& referenced_at, const Context& ctx) {
    return read_yaml_file(file, what, path, referenced_at, ctx);
}

namespace {

std::int64_t product(const std::vector<int>& v) {
    std::int64_t p = 1;
    for (int x : v) {
        p *= x;
    }
    return p;
}

} // namespace

std::vector<std::string> split_key_path(const std::string& path) {
    std::vector<std::string> keys;
    std::size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        keys.push_back(path.substr(start, dot - start));
        if (dot == std::string::npos) {
            return keys;
        }
        start = dot + 1;
    }
}

void set_key_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
                  const YAML::Node& value) {
    if (i + 1 == keys.size()) {
        node[keys[i]] = value;
        return;
    }
    if (!node[keys[i]].IsMap()) {
        node[keys[i]] = YAML::Node(YAML::NodeType::Map);
    }
    set_key_path(node[keys[i]], keys, i + 1, value);
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
    for (const auto& c : candidates) {
        const std::size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    return best;
}

namespace {

/// Whether `p` names an existing file; a name the file system cannot hold (too long, an
/// unreadable directory on the way) is an InputError at `path`, never a filesystem_error.
bool present(const fs::path& p, const std::string& path, const SourceLocation& loc) {
    std::error_code ec;
    const bool there = fs::exists(p, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
        throw InputError(path, "cannot look up '" + p.string() + "': " + ec.message(), loc);
    }
    return there;
}

} // namespace

fs::path find_preset(const std::string& ref, const char* kind_dir, const char* kind_name,
                     const Context& ctx, const std::string& path, const SourceLocation& loc) {
    if (ref.empty()) {
        throw InputError(path, std::string("empty ") + kind_name + " reference", loc);
    }
    if (is_file_ref(ref)) {
        fs::path p(ref);
        if (p.is_relative()) {
            const fs::path beside = ctx.base_dir / p;
            if (present(beside, path, loc)) {
                return beside;
            }
        }
        if (present(p, path, loc)) {
            return p;
        }
        throw InputError(path, std::string(kind_name) + " file '" + ref + "' not found", loc);
    }
    // A name: beside the scenario, TRNSIM_DATA_DIR, the working directory, the installed data,
    // then the data of the build (docs/user-guide.md, "Presets").
    for (const fs::path& root : preset_roots(ctx.base_dir)) {
        const fs::path file = root / kind_dir / (ref + ".yaml");
        if (present(file, path, loc)) {
            return file;
        }
    }
    const fs::path dir = ctx.data_dir / kind_dir;
    const auto names = presets_in(dir);
    std::string msg = "unknown " + std::string(kind_name) + " preset '" + ref + "'";
    const std::string guess = closest(ref, names);
    if (!guess.empty()) {
        msg += "; did you mean '" + guess + "'?";
    }
    msg += names.empty() ? " (no presets found in " + dir.string() + ")"
                         : " (presets: " + join(names) + "; or give a .yaml file path)";
    throw InputError(path, msg, loc);
}

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
    if (product(c.instance.torus) != c.instance.chips) {
        throw InputError("instance.torus", "the torus shape must multiply to instance.chips = " +
                                               std::to_string(c.instance.chips),
                         at("instance.torus"));
    }
    if (c.ultraserver && c.neuronlink_inter_instance.bytes_per_s() <= 0.0) {
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

namespace {

/// Loads the file a scenario names by `ref` (a preset in `dir` or a path) into a `Spec` with
/// `schema`, in a context of its own (keys located in that file), then checks it.
template <class Spec, class Schema, class Check>
Spec load_ref(const std::string& ref, const char* dir, const char* kind, const Schema& schema,
              Check check, const Context& ctx, const std::string& path,
              const SourceLocation& loc) {
    const fs::path file = find_preset(ref, dir, kind, ctx, path, loc);
    return cached_preset<Spec>(std::string(kind) + ":" + file.string(), ctx, [&](const Context& in) {
        const YAML::Node root = read_yaml_file(file, kind, path, loc, in);
        SourceMap sources;
        Context c;
        c.file = file.string();
        c.base_dir = file.parent_path();
        c.data_dir = in.data_dir;
        c.sources = &sources;
        c.files_read = in.files_read;
        c.texts_read = in.texts_read;
        c.presets = in.presets;
        Spec spec;
        schema.load(spec, root, c, {c.file, 1, 1});
        check(spec, c, SourceLocation{c.file, 1, 1});
        return spec;
    });
}

} // namespace

compute::ChipSpec load_chip_ref(const std::string& ref, const Context& ctx,
                                const std::string& path, const SourceLocation& loc) {
    return load_ref<compute::ChipSpec>(ref, "topologies/chips", "chip", chip_schema(),
                                       validate_chip, ctx, path, loc);
}

namespace {

bool close_to(double a, double b) { return std::fabs(a - b) <= 0.01 * std::max(std::fabs(a), std::fabs(b)); }

/// Cross-key checks of a fabric file and its agreement with the chip it is made of (the chip
/// file gives per-chip totals, the fabric file per-link values: they must agree).
void validate_fabric(topology::FabricSpec& f, const Context& ctx, const SourceLocation& top) {
    const auto at = [&](const std::string& key) {
        const SourceLocation l = ctx.sources ? ctx.sources->find(key) : SourceLocation{};
        return l.known() ? l : top;
    };
    const auto fail = [&](const std::string& key, const std::string& msg) {
        throw InputError(key, msg, at(key));
    };
    auto& up = f.scale_up;
    auto& out = f.scale_out;
    if (up.ultraserver_instances == 1) {
        fail("scale_up.ultraserver_instances", "an UltraServer has at least 2 instances (0: none)");
    }
    if (up.ultraserver_instances > 1 && up.ultraserver_link.bandwidth.bytes_per_s() <= 0.0) {
        fail("scale_up.ultraserver_link.bandwidth",
             "required when scale_up.ultraserver_instances is set");
    }
    out.present = out.nics_per_instance > 0;
    if (out.present) {
        const std::pair<const char*, double> needed[] = {
            {"scale_out.nic_bandwidth", out.nic_bandwidth.bytes_per_s()},
            {"scale_out.host_bandwidth", out.host_bandwidth.bytes_per_s()},
            {"scale_out.leaf.down_ports", out.leaf.down_ports},
            {"scale_out.spine.down_ports", out.spine.down_ports},
        };
        for (const auto& [key, value] : needed) {
            if (value <= 0.0) {
                fail(key, "required when scale_out is given");
            }
        }
        if (out.leaf.up_ports > 0 && out.leaf.up_bandwidth.bytes_per_s() <= 0.0) {
            fail("scale_out.leaf.up_bandwidth", "required when scale_out.leaf.up_ports > 0");
        }
        if (out.spine.up_ports > 0 && out.spine.up_bandwidth.bytes_per_s() <= 0.0) {
            fail("scale_out.spine.up_bandwidth", "required when scale_out.spine.up_ports > 0");
        }
        if (out.spine.up_ports > 0 && out.core.down_ports <= 0) {
            fail("scale_out.core.down_ports", "required when scale_out.spine.up_ports > 0");
        }
    }
    const compute::ChipSpec chip = load_chip_ref(f.chip, ctx, "chip", at("chip"));
    const std::string source = " (chip '" + chip.name + "' says ";
    if (f.chips_per_instance() != chip.instance.chips) {
        fail("scale_up.instance_torus",
             "holds " + std::to_string(f.chips_per_instance()) + " chips but an instance has " +
                 std::to_string(chip.instance.chips) + source + "instance.chips)");
    }
    const double links = 2.0 * static_cast<double>(up.instance_torus.size());
    if (!close_to(up.instance_link.bandwidth.bytes_per_s() * links,
                  chip.neuronlink_intra_instance.bytes_per_s())) {
        fail("scale_up.instance_link.bandwidth",
             "x " + std::to_string(static_cast<int>(links)) +
                 " links per chip does not match the chip's NeuronLink bandwidth" + source +
                 "interconnect.neuronlink_intra_instance)");
    }
    if (up.instance_link.latency != chip.neuronlink_hop_latency) {
        fail("scale_up.instance_link.latency",
             "differs from the chip's NeuronLink hop latency" + source +
                 "interconnect.neuronlink_hop_latency)");
    }
    if (up.ultraserver_instances > 1) {
        if (!chip.ultraserver || chip.ultraserver->instances != up.ultraserver_instances) {
            fail("scale_up.ultraserver_instances",
                 "does not match the chip's UltraServer" + source + "ultraserver.instances)");
        }
        if (!close_to(up.ultraserver_link.bandwidth.bytes_per_s() * 2.0,
                      chip.neuronlink_inter_instance.bytes_per_s())) {
            fail("scale_up.ultraserver_link.bandwidth",
                 "x 2 links per chip does not match the chip's NeuronLink bandwidth between "
                 "instances" + source + "interconnect.neuronlink_inter_instance)");
        }
    }
    if (out.present) {
        if (!close_to(out.nic_bandwidth.bytes_per_s() * out.nics_per_instance,
                      chip.instance.efa_bandwidth.bytes_per_s())) {
            fail("scale_out.nic_bandwidth",
                 "x scale_out.nics_per_instance does not match the instance's EFA bandwidth" +
                     source + "instance.efa_bandwidth)");
        }
        if (out.nics_per_instance != chip.instance.efa_interfaces) {
            fail("scale_out.nics_per_instance",
                 "does not match the instance's EFA interfaces" + source +
                     "instance.efa_interfaces)");
        }
    }
}

} // namespace

topology::FabricSpec load_fabric_ref(const std::string& ref, const Context& ctx,
                                     const std::string& path, const SourceLocation& loc) {
    return load_ref<topology::FabricSpec>(ref, "topologies", "fabric", fabric_schema(),
                                          validate_fabric, ctx, path, loc);
}

void validate_model(workload::ModelSpec& m, const std::string& prefix, const Context& ctx,
                    const SourceLocation& loc) {
    const auto key = [&](const std::string& k) { return prefix.empty() ? k : prefix + "." + k; };
    const auto at = [&](const std::string& k) {
        const SourceLocation l = ctx.sources ? ctx.sources->find(key(k)) : SourceLocation{};
        return l.known() ? l : loc;
    };
    const auto need = [&](std::int64_t v, const char* k, const char* what) {
        if (v <= 0) {
            throw InputError(key(k), std::string("required key is missing (") + what + ")", loc);
        }
    };
    need(m.layers, "layers", "transformer blocks");
    need(m.hidden, "hidden", "model width");
    need(m.heads, "heads", "attention heads");
    need(m.ffn_hidden, "ffn_hidden", "MLP inner width");
    need(m.vocab, "vocab", "vocabulary size");
    if (m.kv_heads == 0) {
        m.kv_heads = m.heads;
    }
    if (m.attention == workload::AttentionKind::gqa && m.heads % m.kv_heads != 0) {
        throw InputError(key("kv_heads"),
                         std::to_string(m.kv_heads) + " key/value heads must divide the " +
                             std::to_string(m.heads) + " query heads",
                         at("kv_heads"));
    }
    if (m.head_dim == 0) {
        if (m.hidden % m.heads != 0) {
            throw InputError(key("head_dim"),
                             "hidden (" + std::to_string(m.hidden) + ") is not a multiple of heads (" +
                                 std::to_string(m.heads) + "): give head_dim",
                             at("heads"));
        }
        m.head_dim = m.hidden / m.heads;
    }
    if (m.position == workload::PositionKind::learned && m.max_positions <= 0) {
        throw InputError(key("max_positions"), "learned positions need max_positions",
                         at("position"));
    }
    if (m.is_moe()) {
        if (m.moe.expert_ffn_hidden == 0) {
            m.moe.expert_ffn_hidden = m.ffn_hidden;
        }
        if (m.moe.top_k > m.moe.experts) {
            throw InputError(key("moe.top_k"),
                             "top_k = " + std::to_string(m.moe.top_k) + " exceeds the " +
                                 std::to_string(m.moe.experts) + " experts",
                             at("moe.top_k"));
        }
        if (m.moe.first_dense_layers >= m.layers) {
            throw InputError(key("moe.first_dense_layers"),
                             "must be below the " + std::to_string(m.layers) + " layers",
                             at("moe.first_dense_layers"));
        }
    }
}

namespace {

workload::ModelSpec load_model_mapping(const YAML::Node& map, const Context& ctx,
                                       const SourceLocation& loc, int depth, std::string name) {
    workload::ModelSpec m;
    if (map.IsMap()) {
        const YAML::Node preset = map["preset"];
        if (preset.IsDefined()) {
            const std::string p = ctx.full("preset");
            m = load_model_node(preset, p, ctx.locate(p, preset.Mark()), ctx, depth + 1);
            name = m.name;
        }
    }
    model_schema().load(m, map, ctx, loc);
    if (m.name.empty()) {
        m.name = name;
    }
    validate_model(m, ctx.prefix, ctx, loc);
    return m;
}

} // namespace

workload::ModelSpec load_model_node(const YAML::Node& node, const std::string& path,
                                    const SourceLocation& loc, const Context& ctx, int depth) {
    if (depth > 8) {
        throw InputError(path, "model presets refer to each other too deeply (a cycle?)", loc);
    }
    if (node.IsScalar()) {
        const std::string ref = node.Scalar();
        const fs::path file = find_preset(ref, "scenarios/models", "model", ctx, path, loc);
        const std::string name = fs::path(ref).stem().string();
        return cached_preset<workload::ModelSpec>(
            "model:" + file.string() + ":" + name + ":" + std::to_string(depth), ctx,
            [&](const Context& in) {
                const YAML::Node root = read_yaml_file(file, "model", path, loc, in);
                SourceMap model_sources;
                Context c;
                c.file = file.string();
                c.base_dir = file.parent_path();
                c.data_dir = in.data_dir;
                c.sources = &model_sources;
                c.files_read = in.files_read;
                c.texts_read = in.texts_read;
                c.presets = in.presets;
                return load_model_mapping(root, c, {c.file, 1, 1}, depth, name);
            });
    }
    if (node.IsMap()) {
        Context c = ctx;
        c.prefix = path;
        return load_model_mapping(node, c, loc, depth, "inline");
    }
    throw InputError(path,
                     "expected a model preset name (such as llama3-70b), a model file, or a "
                     "mapping of model keys",
                     loc);
}

} // namespace detail

namespace {

/// An override with its value parsed.
struct ParsedOverride {
    std::string path;
    YAML::Node value;
    SourceLocation origin;
};

/// Checks a key path's spelling: dotted names of letters, digits, '_' and '-'.
void check_key_path_text(const std::string& path, const SourceLocation& origin) {
    bool ok = !path.empty() && path.front() != '.' && path.back() != '.' &&
              path.find("..") == std::string::npos;
    for (char c : path) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-');
    }
    if (!ok) {
        throw InputError(path, "is not a key path such as workload.parallelism.tp", origin);
    }
}

ParsedOverride parse_override(const Override& o) {
    check_key_path_text(o.path, o.origin);
    ParsedOverride p;
    p.path = o.path;
    p.origin = o.origin;
    detail::YamlDocument d = detail::load_one_document(o.value);
    if (!d.error.empty()) {
        throw InputError(o.path, "the value " + d.error, o.origin);
    }
    p.value = d.node;
    return p;
}

/// "key.path=value" from the command line.
Override command_line_override(const std::string& text) {
    const auto eq = text.find('=');
    const SourceLocation origin{"command line (--set " + text + ")", 0, 0};
    if (eq == std::string::npos || eq == 0) {
        throw InputError("", "--set needs key.path=value, got '" + text + "'", origin);
    }
    return {text.substr(0, eq), text.substr(eq + 1), origin};
}

/// Sets `path` in `node`, creating mappings on the way.
void apply_override(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
                    const ParsedOverride& o) {
    if (!node.IsMap()) {
        throw InputError(o.path, "cannot set a key below a value that is not a mapping",
                         o.origin);
    }
    if (i + 1 == keys.size()) {
        if (o.value.IsNull()) {
            node.remove(keys[i]); // key=null removes the key: its default applies again
        } else {
            node[keys[i]] = o.value;
        }
        return;
    }
    if (!node[keys[i]].IsDefined() || node[keys[i]].IsNull()) {
        node[keys[i]] = YAML::Node(YAML::NodeType::Map);
    }
    apply_override(node[keys[i]], keys, i + 1, o);
}

/// The shortest text that reads back as exactly `v` ("35.76", not "35.759999999999998").
std::string exact_number(double v) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return std::string(buf.data(), res.ptr);
}

/// workload.type: inference: the model, max_context, sizes and SLO required; the training
/// keys refused; the draft and the sizes against the compiled context checked.
void check_inference(ScenarioSpec& spec, const Context& ctx) {
    const SourceLocation workload = spec.sources.find("workload");
    const auto at = [&](const std::string& key) { return spec.sources.find(key); };
    const auto given = [&](const std::string& key) { return spec.sources.contains(key); };
    for (const char* key : {"workload.sequence_length", "workload.global_batch", "workload.tokens",
                            "workload.steps", "workload.parallelism", "workload.moe_imbalance",
                            "workload.collective"}) {
        if (given(key)) {
            throw InputError(key,
                             "is for workload.type: training or collective, not inference (a "
                             "replica's layout is workload.serving)",
                             at(key));
        }
    }
    const char* needs = " (needed by workload.type: inference)";
    for (const char* key : {"workload.model", "workload.serving.max_context",
                            "workload.requests.input_tokens", "workload.requests.output_tokens",
                            "workload.slo.ttft", "workload.slo.tpot"}) {
        if (!given(key)) {
            throw InputError(key, std::string("required key is missing") + needs, workload);
        }
    }
    serving::InferenceSpec& inf = spec.inference;
    inf.model = spec.training.model;
    serving::ServingSpec& sv = inf.serving;
    sv.precision = spec.training.precision;
    if (sv.weight_bytes == 0) {
        sv.weight_bytes = sv.precision == compute::Precision::fp8    ? 1
                          : sv.precision == compute::Precision::fp32 ? 4
                                                                     : 2;
    }
    if (sv.speculative) {
        const serving::SpeculativeSpec& sp = *sv.speculative;
        const std::string base = "workload.serving.speculative";
        if (!given(base + ".draft")) {
            throw InputError(base + ".draft", "required key is missing (the draft model)",
                             at(base));
        }
        if (!given(base + ".k")) {
            throw InputError(base + ".k", "required key is missing (draft tokens per iteration)",
                             at(base));
        }
        if (sp.acceptance.size() != static_cast<std::size_t>(sp.k)) {
            throw InputError(base + ".acceptance",
                             "needs one rate per draft position: k is " + std::to_string(sp.k) +
                                 ", the list has " + std::to_string(sp.acceptance.size()),
                             at(base + ".acceptance"));
        }
        for (std::size_t i = 1; i < sp.acceptance.size(); ++i) {
            if (sp.acceptance[i] > sp.acceptance[i - 1]) {
                throw InputError(base + ".acceptance[" + std::to_string(i) + "]",
                                 "rates must not increase: a position is accepted only after "
                                 "every earlier one",
                                 at(base + ".acceptance"));
            }
        }
    }
    if (!sv.buckets.empty()) {
        for (std::size_t i = 0; i < sv.buckets.size(); ++i) {
            if ((i > 0 && sv.buckets[i] <= sv.buckets[i - 1]) || sv.buckets[i] > sv.max_context) {
                throw InputError("workload.serving.buckets",
                                 "must ascend strictly and end at max_context (" +
                                     std::to_string(sv.max_context) + ")",
                                 at("workload.serving.buckets"));
            }
        }
        if (sv.buckets.back() != sv.max_context) {
            throw InputError("workload.serving.buckets",
                             "the last bucket must be max_context (" +
                                 std::to_string(sv.max_context) + "), got " +
                                 std::to_string(sv.buckets.back()),
                             at("workload.serving.buckets"));
        }
    }
    serving::RequestSpec& rq = inf.requests;
    using K = serving::TokenDistribution::Kind;
    const bool trace_arrivals = rq.arrival.kind == serving::ArrivalSpec::Kind::trace;
    for (const auto& [key, d] : {std::pair<const char*, const serving::TokenDistribution*>{
                                     "workload.requests.input_tokens", &rq.input},
                                 {"workload.requests.output_tokens", &rq.output}}) {
        if (d->kind == K::trace && !trace_arrivals) {
            throw InputError(key,
                             "sizes from the trace need arrivals from it: workload.requests."
                             "arrival: {trace: FILE}",
                             at(key));
        }
    }
    if (rq.input.kind == K::fixed && rq.output.kind == K::fixed) {
        const auto total = static_cast<std::int64_t>(rq.input.a + rq.output.a) +
                           (rq.prefix.groups > 0 ? rq.prefix.tokens : 0);
        if (total > sv.max_context) {
            throw InputError("workload.requests.output_tokens",
                             "input + output tokens (" + std::to_string(total) +
                                 ") exceed workload.serving.max_context (" +
                                 std::to_string(sv.max_context) + ")",
                             at("workload.requests.output_tokens"));
        }
    }
    if (given("workload.requests.count") && given("workload.requests.duration")) {
        throw InputError("workload.requests.duration",
                         "give only one of workload.requests.count or duration, not both",
                         at("workload.requests.duration"));
    }
    if (!given("workload.requests.count") && !given("workload.requests.duration") &&
        !trace_arrivals) {
        throw InputError("workload.requests",
                         "give workload.requests.count or workload.requests.duration (a trace "
                         "alone replays every row once)",
                         at("workload.requests"));
    }
    if (rq.prefix.groups > 0 && rq.prefix.tokens == 0) {
        throw InputError("workload.requests.prefix.tokens",
                         "shared prefixes need their length in tokens",
                         at("workload.requests.prefix"));
    }
    if (sv.disaggregated.prefill_replicas > 0 && !spec.has_fabric) {
        // The KV caches of disaggregated prefills move over the fabric.
        spec.fabric_ref = spec.hardware.chip.name + "-ultracluster";
        spec.fabric = detail::load_fabric_ref(spec.fabric_ref, ctx, "cluster.fabric",
                                              spec.sources.find("cluster"));
        spec.has_fabric = true;
    }
}

/// Checks that depend on workload.type: the training keys are required for training and
/// meaningless for a collective; a collective needs a fabric (default: <chip>-ultracluster).
void check_workload(ScenarioSpec& spec, const Context& ctx) {
    const SourceLocation workload = spec.sources.find("workload");
    const auto at = [&](const std::string& key) { return spec.sources.find(key); };
    auto& t = spec.training;
    const std::pair<const char*, bool> training_keys[] = {
        {"workload.model", !spec.model_ref.empty()},
        {"workload.sequence_length", t.sequence_length > 0},
        {"workload.global_batch", t.global_batch > 0},
        {"workload.tokens", t.tokens > 0},
        {"workload.steps", t.steps > 0},
    };
    if (spec.workload_type == WorkloadType::inference) {
        check_inference(spec, ctx);
        return;
    }
    for (const char* key : {"workload.serving", "workload.requests", "workload.slo"}) {
        if (spec.sources.contains(key)) {
            throw InputError(key,
                             std::string("is for workload.type: inference, not ") +
                                 to_string(spec.workload_type),
                             at(key));
        }
    }
    if (spec.workload_type == WorkloadType::collective) {
        for (const auto& [key, given] : training_keys) {
            if (given) {
                throw InputError(key, "is for workload.type: training, not collective", at(key));
            }
        }
        if (spec.reliability.enabled) {
            throw InputError("reliability", "is for workload.type: training, not collective",
                             at("reliability"));
        }
        if (!spec.has_fabric) {
            spec.fabric_ref = spec.hardware.chip.name + "-ultracluster";
            spec.fabric = detail::load_fabric_ref(spec.fabric_ref, ctx, "cluster.fabric",
                                                  spec.sources.find("cluster"));
            spec.has_fabric = true;
        }
        return;
    }
    const char* needs = " (needed by workload.type: training)";
    if (spec.model_ref.empty()) {
        throw InputError("workload.model", std::string("required key is missing") + needs, workload);
    }
    if (t.sequence_length == 0) {
        throw InputError("workload.sequence_length", std::string("required key is missing") + needs,
                         workload);
    }
    if (t.global_batch == 0) {
        throw InputError("workload.global_batch", std::string("required key is missing") + needs,
                         workload);
    }
    if (t.tokens > 0 && t.steps > 0) {
        throw InputError("workload.steps",
                         "give only one of workload.tokens or workload.steps, not both",
                         at("workload.steps"));
    }
    if (t.tokens == 0 && t.steps == 0) {
        throw InputError("workload", "give one of workload.tokens or workload.steps", workload);
    }
    if (spec.sources.contains("workload.parallelism.stage_layers") &&
        spec.sources.contains("workload.parallelism.balance")) {
        throw InputError("workload.parallelism.balance",
                         "give only one of workload.parallelism.stage_layers (the layers of "
                         "each stage) or workload.parallelism.balance (a rule for them)",
                         at("workload.parallelism.balance"));
    }
    if (!spec.output.trace.empty() && spec.simulation.fidelity != Fidelity::step) {
        throw InputError("output.trace", "a timeline needs simulation.fidelity: step",
                         at("output.trace"));
    }
    if (spec.simulation.fidelity == Fidelity::step && !spec.has_fabric) {
        // The step simulation runs its communication over the fabric.
        spec.fabric_ref = spec.hardware.chip.name + "-ultracluster";
        spec.fabric = detail::load_fabric_ref(spec.fabric_ref, ctx, "cluster.fabric",
                                              spec.sources.find("cluster"));
        spec.has_fabric = true;
    }
}

/// Settings without effect here, requests the scenario cannot fulfil (issue 18: a warning
/// for each, `--strict` refuses them), and a layout chosen for the user (pipeline stages of
/// unequal layers when pp does not divide them and no layout key is given).
void collect_warnings(ScenarioSpec& spec) {
    const auto given = [&](const std::string& key) { return spec.sources.contains(key); };
    const auto warn = [&](const std::string& key, const std::string& message) {
        spec.warnings.push_back({key, message, spec.sources.find(key)});
    };
    const bool training = spec.workload_type == WorkloadType::training;
    const bool step = training && spec.simulation.fidelity == Fidelity::step;
    if (!step) {
        const char* why = training ? "has no effect at simulation.fidelity: analytic (the step "
                                     "simulation models it)"
                                   : "has no effect outside a training step simulation";
        for (const char* key : {"hardware.speed", "simulation.step_entities",
                                "simulation.fabric_collectives", "simulation.tp_collectives",
                                "workload.parallelism.grad_bucket"}) {
            if (given(key)) {
                warn(key, why);
            }
        }
    }
    if (training && !given("workload.parallelism.stage_layers") &&
        !given("workload.parallelism.balance")) {
        const auto& par = spec.training.parallelism;
        const std::int64_t layers = spec.training.model.layers;
        if (par.pp > 1 && par.pp <= layers && layers % par.pp != 0) {
            const std::int64_t q = layers / par.pp, r = layers % par.pp;
            const std::string stages =
                r == 1 ? "stage 1 holds " : "stages 1 to " + std::to_string(r) + " hold ";
            warn("workload.parallelism.pp",
                 "pp = " + std::to_string(par.pp) + " does not divide the model's " +
                     std::to_string(layers) + " layers: " + stages + std::to_string(q + 1) +
                     " layers, the others " + std::to_string(q) +
                     " (balance: even); set workload.parallelism.balance or stage_layers to "
                     "choose the layout");
        }
    }
    if (given("output.trace_ranks") && spec.output.trace.empty()) {
        warn("output.trace_ranks", "has no effect without output.trace (or --trace)");
    }
    if (spec.reliability.enabled && spec.workload_type == WorkloadType::inference) {
        for (const char* key : {"reliability.checkpoint", "reliability.recovery.scope",
                                "reliability.recovery.run_degraded", "simulation.replications",
                                "simulation.duration", "simulation.time_limit",
                                "output.timeline"}) {
            if (given(key)) {
                warn(key, "has no effect on a serving fleet (nothing is checkpointed; one run "
                          "until every request has finished; docs/serving.md, \"Failures\")");
            }
        }
        std::string ignored;
        for (const reliability::FailureSpec& f : spec.reliability.failures) {
            if (reliability::is_switch(f.component) || f.effect == reliability::Effect::degrade) {
                const std::string name = f.cause.empty() ? to_string(f.component) : f.cause;
                if (ignored.find(name) == std::string::npos) {
                    ignored += (ignored.empty() ? "" : ", ") + name;
                }
            }
        }
        bool trace_switches = false;
        for (const reliability::TraceFailure& f : spec.reliability.trace.failures) {
            trace_switches = trace_switches || reliability::is_switch(f.component);
        }
        if (trace_switches) {
            warn("reliability.trace",
                 "its switch failures do not take serving replicas down (requests reach them "
                 "over the front-end network, which is not modelled): they are not simulated");
        }
        if (!ignored.empty()) {
            warn("reliability.failures",
                 "switch failures and degrading failures (" + ignored +
                     ") do not take serving replicas down (requests reach them over the "
                     "front-end network, which is not modelled): they are not simulated");
        }
    }
    if (!spec.reliability.enabled) {
        for (const char* key : {"simulation.replications", "simulation.duration",
                                "simulation.time_limit", "output.timeline"}) {
            if (given(key)) {
                warn(key, "has no effect without a reliability section (nothing is replicated "
                          "or run over time)");
            }
        }
    } else if (spec.reliability.failures.empty() && spec.reliability.trace.failures.empty()) {
        warn("reliability", "has no failure processes (no preset, failures or trace): the run "
                            "simulation has nothing to fail, only checkpoints to take");
    }
    if (given("cost.pricing") && given("cost.instance_hour")) {
        warn("cost.pricing", "has no effect: cost.instance_hour sets the price");
    }
    if (spec.workload_type == WorkloadType::inference) {
        const serving::ServingSpec& sv = spec.inference.serving;
        if (given("workload.serving.ep") && sv.ep > 1 && !spec.inference.model.is_moe()) {
            warn("workload.serving.ep", "has no effect: the model has no experts");
        }
        if (given("workload.serving.prefix_caching") && sv.prefix_caching &&
            spec.inference.requests.prefix.groups == 0) {
            warn("workload.serving.prefix_caching",
                 "finds nothing to reuse: the requests have no shared prefixes "
                 "(workload.requests.prefix)");
        }
        if (given("simulation.router_window") && sv.disaggregated.prefill_replicas == 0 &&
            spec.simulation.router_window <= sv.router_latency) {
            warn("simulation.router_window", "has no effect at or below the router latency");
        }
    }
}

ScenarioSpec load_root(YAML::Node root, const std::string& file, const fs::path& base_dir,
                       const std::string& default_name, const std::vector<Override>& overrides,
                       detail::PresetCache* presets = nullptr, const LoadOptions& options = {}) {
    ScenarioSpec spec;
    spec.source_file = file;
    const SourceLocation top{file, 1, 1};
    if (!root.IsDefined() || root.IsNull()) {
        throw InputError("", "the scenario is empty; it needs at least cluster and workload "
                             "sections (see docs/scenario-schema.md)",
                         top);
    }
    if (!root.IsMap()) {
        throw InputError("", "a scenario is a mapping of sections (name, hardware, cluster, "
                             "workload, ...), not a single value or a list",
                         top);
    }
    Context ctx;
    ctx.file = file;
    ctx.base_dir = base_dir;
    ctx.data_dir = data_dir();
    ctx.sources = &spec.sources;
    ctx.files_read = &spec.input_files;
    ctx.presets = presets;
    for (const auto& given : overrides) {
        const ParsedOverride o = parse_override(given);
        apply_override(root, detail::split_key_path(o.path), 0, o);
        ctx.overrides[o.path] = o.origin;
    }
    detail::merge_reliability_preset(root, ctx);
    spec.sources.add("", top);
    // Sentinels for defaults that come from the chip (values given in the file are >= 0).
    spec.hardware.hbm_reserve = Bytes(-1);
    spec.cost.instance_hour = Money::usd(-1.0);
    detail::scenario_schema().load(spec, root, ctx, top);
    spec.reliability.enabled = static_cast<const YAML::Node&>(root)["reliability"].IsDefined();

    // Defaults that depend on other values.
    const auto& chip = spec.hardware.chip;
    if (spec.name.empty()) {
        spec.name = default_name;
    }
    if (spec.hardware.lnc == 0) {
        spec.hardware.lnc = chip.lnc_default;
    }
    if (spec.hardware.hbm_reserve < Bytes(0)) {
        spec.hardware.hbm_reserve = chip.hbm_runtime_reserve;
    }
    if (spec.cost.instance_hour < Money::usd(0.0)) {
        const auto& in = chip.instance;
        const Money prices[] = {in.price_per_hour, in.price_reserved_1y, in.price_reserved_3y,
                                in.price_capacity_block};
        const Money price = prices[static_cast<std::size_t>(spec.cost.pricing)];
        if (spec.cost.pricing != Pricing::on_demand && !(price > Money::usd(0.0))) {
            throw InputError("cost.pricing",
                             std::string("the chip file of ") + chip.name + " has no " +
                                 to_string(spec.cost.pricing) +
                                 " price; give cost.instance_hour or another cost.pricing",
                             spec.sources.find("cost.pricing"));
        }
        spec.cost.instance_hour = price;
        spec.cost.origin = in.name + " " + to_string(spec.cost.pricing) + ", chip file " +
                           spec.hardware.chip_ref;
    } else {
        spec.cost.origin = "cost.instance_hour";
    }
    if (spec.output.file.empty()) {
        spec.output.file = "results/" + spec.name + ".h5";
    }
    check_workload(spec, ctx);
    collect_warnings(spec);
    if (!options.resolved_text) {
        return spec;
    }

    YAML::Node resolved = detail::scenario_schema().resolved(root);
    using detail::set_key_path;
    set_key_path(resolved, {"name"}, 0, YAML::Node(spec.name));
    set_key_path(resolved, {"hardware", "lnc"}, 0, YAML::Node(spec.hardware.lnc));
    set_key_path(resolved, {"hardware", "hbm_reserve"}, 0,
                 YAML::Node(std::to_string(spec.hardware.hbm_reserve.count()) + "B"));
    set_key_path(resolved, {"cost", "instance_hour"}, 0,
                 YAML::Node(exact_number(spec.cost.instance_hour.usd()) + "USD"));
    set_key_path(resolved, {"output", "file"}, 0, YAML::Node(spec.output.file));
    if (spec.has_fabric) {
        set_key_path(resolved, {"cluster", "fabric"}, 0, YAML::Node(spec.fabric_ref));
    }
    // Re-emit in schema order (the computed keys were appended at the end).
    YAML::Node ordered = detail::scenario_schema().resolved(resolved);
    if (!spec.reliability.enabled) {
        ordered.remove("reliability"); // only defaults: the scenario has no reliability section
    }
    // Only the keys of the scenario's workload type: the others are defaults that a reload
    // would refuse (workload.serving in a training scenario, workload.parallelism in a
    // serving one).
    const bool inference = spec.workload_type == WorkloadType::inference;
    const std::vector<std::string> other_workload =
        inference ? std::vector<std::string>{"parallelism", "collective", "moe_imbalance"}
                  : std::vector<std::string>{"serving", "requests", "slo"};
    const std::vector<std::string> other_simulation =
        inference ? std::vector<std::string>{"fidelity", "step_entities", "fabric_collectives",
                                           "tp_collectives"}
                  : std::vector<std::string>{"router_window", "kv_sample"};
    if (YAML::Node w = ordered["workload"]; w.IsMap()) {
        for (const std::string& key : other_workload) {
            w.remove(key);
        }
    }
    if (YAML::Node sim = ordered["simulation"]; sim.IsMap()) {
        for (const std::string& key : other_simulation) {
            sim.remove(key);
        }
    }
    if (!inference) {
        if (YAML::Node o = ordered["output"]; o.IsMap()) {
            o.remove("requests");
        }
    }
    YAML::Emitter out;
    out << ordered;
    spec.resolved_yaml = std::string(out.c_str()) + "\n";
    return spec;
}

std::vector<Override> command_line_overrides(const std::vector<std::string>& texts) {
    std::vector<Override> out;
    out.reserve(texts.size());
    for (const auto& t : texts) {
        out.push_back(command_line_override(t));
    }
    return out;
}

} // namespace

std::string to_string(const Override& o) { return o.path + "=" + o.value; }

std::string to_string(const Warning& w) {
    return (w.location.known() ? w.location.str() + ": " : std::string()) + "warning: " +
           w.key_path + ": " + w.message;
}

std::vector<Override> set_overrides(const std::vector<std::string>& texts) {
    return command_line_overrides(texts);
}

Override option_override(const std::string& key_path, const std::string& value,
                         const std::string& option) {
    YAML::Emitter quoted;
    quoted << YAML::DoubleQuoted << value;
    // The origin is printed in messages: control characters are shown, not sent.
    std::string shown;
    for (char c : value) {
        const auto b = static_cast<unsigned char>(c);
        if (b < 0x20 || b == 0x7f) {
            const char* digits = "0123456789abcdef";
            shown += std::string("\\x") + digits[b >> 4] + digits[b & 15];
        } else {
            shown += c;
        }
    }
    return {key_path, quoted.c_str(), {"command line (" + option + " " + shown + ")", 0, 0}};
}

struct ScenarioBase::Parsed {
    std::string path;
    /// The file's text, checked to be YAML. Each scenario parses it again: applying overrides
    /// edits the tree, and yaml-cpp's copy of a tree (YAML::Clone) drops the source positions
    /// that error messages point at.
    std::string text;
    /// The presets the scenarios of this base have loaded (thread-safe).
    mutable detail::PresetCache presets;
};

ScenarioBase ScenarioBase::read(const std::string& path) {
    auto parsed = std::make_shared<Parsed>();
    parsed->path = path;
    parsed->text = read_input_file(path, "scenario");
    (void)detail::parse_yaml(parsed->text, path);
    ScenarioBase b;
    b.parsed_ = std::move(parsed);
    return b;
}

const std::string& ScenarioBase::path() const {
    static const std::string none;
    return parsed_ ? parsed_->path : none;
}

ScenarioSpec load_scenario_with(const ScenarioBase& base, const std::vector<Override>& overrides,
                                const LoadOptions& options) {
    const ScenarioBase::Parsed& parsed = base.parsed();
    const YAML::Node root = YAML::Load(parsed.text); // checked by read(): one document
    const fs::path p(parsed.path);
    ScenarioSpec spec = load_root(root, parsed.path, p.parent_path(), p.stem().string(), overrides,
                                  &parsed.presets, options);
    spec.input_files.insert(spec.input_files.begin(), parsed.path);
    return spec;
}

ScenarioSpec load_scenario_with(const std::string& path, const std::vector<Override>& overrides) {
    return load_scenario_with(ScenarioBase::read(path), overrides);
}

ScenarioSpec load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
    return load_scenario_with(path, command_line_overrides(overrides));
}

ScenarioSpec load_scenario_text(const std::string& text, const std::string& name,
                                const std::vector<std::string>& overrides) {
    const YAML::Node root = detail::parse_yaml(text, name);
    return load_root(root, name, fs::current_path(), fs::path(name).stem().string(),
                     command_line_overrides(overrides));
}

compute::ChipSpec load_chip(const std::string& name_or_path) {
    Context ctx;
    ctx.file = "<command line>";
    ctx.base_dir = fs::current_path();
    ctx.data_dir = data_dir();
    return detail::load_chip_ref(name_or_path, ctx, "chip", {});
}

fs::path chip_file(const std::string& name_or_path) {
    return preset_file(PresetKind::chip, name_or_path);
}

fs::path preset_file(PresetKind kind, const std::string& name_or_path) {
    Context ctx;
    ctx.file = "<command line>";
    ctx.base_dir = fs::current_path();
    ctx.data_dir = data_dir();
    switch (kind) {
    case PresetKind::chip:
        return detail::find_preset(name_or_path, "topologies/chips", "chip", ctx, "chip", {});
    case PresetKind::model:
        return detail::find_preset(name_or_path, "scenarios/models", "model", ctx, "model", {});
    case PresetKind::fabric:
        return detail::find_preset(name_or_path, "topologies", "fabric", ctx, "fabric", {});
    }
    return {};
}

workload::ModelSpec load_model(const std::string& name_or_path) {
    Context ctx;
    ctx.file = "<command line>";
    ctx.base_dir = fs::current_path();
    ctx.data_dir = data_dir();
    return detail::load_model_node(YAML::Node(name_or_path), "model", {}, ctx, 0);
}

topology::FabricSpec load_fabric(const std::string& name_or_path) {
    Context ctx;
    ctx.file = "<command line>";
    ctx.base_dir = fs::current_path();
    ctx.data_dir = data_dir();
    return detail::load_fabric_ref(name_or_path, ctx, "fabric", {});
}

std::vector<std::string> fabric_presets() { return detail::presets_in(data_dir() / "topologies"); }

std::vector<std::string> chip_presets() { return detail::presets_in(data_dir() / "topologies/chips"); }

std::vector<std::string> model_presets() { return detail::presets_in(data_dir() / "scenarios/models"); }

std::string schema_markdown() {
    std::string md;
    md += "# Scenario schema\n\n";
    md += "<!-- Generated by `trnsim describe schema`; do not edit by hand. A test checks that "
          "this file matches the schema tables in src/config/. -->\n\n";
    md += "Every key of a scenario file, with its type, default and allowed values. Quantities "
          "carry units as strings (see *Units* below). Unknown keys are errors. Any key can be "
          "overridden on the command line with `--set key.path=value`.\n\n";
    md += "## Units\n\n";
    md += "| type | units | examples |\n|---|---|---|\n";
    md += "| duration | `ns us ms s min h d w y` (y = 365.25 d) | `30min`, `2.5h`, `6y` |\n";
    md += "| bytes | `B KB MB GB TB PB` (powers of 1000), `KiB MiB GiB TiB PiB` (powers of "
          "1024) | `96GiB`, `1.5TB` |\n";
    md += "| bandwidth | bits: `bps Kbps Mbps Gbps Tbps Pbps` (also `Gb/s`); bytes: `B/s KB/s "
          "MB/s GB/s TB/s PB/s KiB/s MiB/s GiB/s TiB/s` | `200Gbps`, `2.9TB/s` |\n";
    md += "| flop rate | `FLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS EFLOPS` (also `TFLOP/s`) | "
          "`667TFLOPS` |\n";
    md += "| frequency | `Hz kHz MHz GHz` | `2.4GHz` |\n";
    md += "| money | `USD` suffix or `$` prefix | `35.76USD`, `$35.76` |\n";
    md += "| count | integer with optional decimal suffix `K M B G T P` | `8192`, `2.5M`, `15T` "
          "|\n";
    md += "| number | plain number or percentage | `0.25`, `25%` |\n\n";
    md += "## " + detail::scenario_schema().title() + " file\n\n";
    md += detail::scenario_schema().markdown();
    md += "\n## " + detail::model_schema().title() +
          " (`workload.model` mapping, or a file in `scenarios/models/`)\n\n";
    md += detail::model_schema().markdown();
    md += "\n## " + detail::chip_schema().title() + " file (`topologies/chips/*.yaml`)\n\n";
    md += detail::chip_schema().markdown();
    md += "\n## " + detail::fabric_schema().title() + " file (`topologies/*.yaml`)\n\n";
    md += detail::fabric_schema().markdown();
    md += study_schema_markdown();
    return md;
}

} // namespace trnsim::config
