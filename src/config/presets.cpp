// Where presets are found: the data directories, a preset name or file reference resolved to
// a file ("did you mean" for an unknown name), and the presets the command line loads by name.
#include "trnsim/config/load.hpp"

#include "tables.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

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

} // namespace detail

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

fs::path preset_file(PresetKind kind, const std::string& name_or_path, const fs::path& beside) {
    Context ctx;
    ctx.file = "<command line>";
    ctx.base_dir = beside.empty() ? fs::current_path() : beside;
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

} // namespace trnsim::config
