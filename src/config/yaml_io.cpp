// Reading YAML: one document per file or value (a second document or a syntax error is an
// InputError at its position), the location of a value (the file, a preset it was merged from,
// or the --set that gave it), scalars, and key paths.
#include "trnsim/core/input_file.hpp"

#include "tables.hpp"

#include <algorithm>
#include <sstream>
#include <string_view>

#include <yaml-cpp/eventhandler.h>

namespace trnsim::config::detail {

namespace fs = std::filesystem;

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

} // namespace trnsim::config::detail
