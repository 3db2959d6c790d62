// Loading a file a scenario names (a chip or fabric preset, or a path) with its schema and
// checks (private to the config module).
#pragma once

#include "tables.hpp"

#include <filesystem>
#include <string>

namespace trnsim::config::detail {

/// The context of a preset file read for a document in context `in`: keys located in `file`,
/// relative references beside it, sources recorded in `sources`, reads noted as `in`'s.
inline Context preset_context(const std::filesystem::path& file, const Context& in,
                              SourceMap& sources) {
    Context c;
    c.file = file.string();
    c.base_dir = file.parent_path();
    c.data_dir = in.data_dir;
    c.sources = &sources;
    c.files_read = in.files_read;
    c.texts_read = in.texts_read;
    c.presets = in.presets;
    return c;
}

/// Loads the file a scenario names by `ref` (a preset in `dir` or a path) into a `Spec` with
/// `schema`, in a context of its own (keys located in that file), then checks it.
template <class Spec, class Schema, class Check>
Spec load_ref(const std::string& ref, const char* dir, const char* kind, const Schema& schema,
              Check check, const Context& ctx, const std::string& path,
              const SourceLocation& loc) {
    const std::filesystem::path file = find_preset(ref, dir, kind, ctx, path, loc);
    return cached_preset<Spec>(std::string(kind) + ":" + file.string(), ctx, [&](const Context& in) {
        const YAML::Node root = read_yaml(file, kind, path, loc, in);
        SourceMap sources;
        const Context c = preset_context(file, in, sources);
        Spec spec;
        schema.load(spec, root, c, {c.file, 1, 1});
        check(spec, c, SourceLocation{c.file, 1, 1});
        return spec;
    });
}

} // namespace trnsim::config::detail
