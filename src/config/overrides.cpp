// Overrides: --set texts and option values turned into Overrides, their key paths checked,
// their values parsed, and their insertion into a scenario's YAML tree.
#include "trnsim/config/study.hpp"

#include "overrides.hpp"
#include "tables.hpp"

#include <string>
#include <vector>

namespace trnsim::config {

namespace detail {

namespace {

/// `text` with its control characters shown as \xNN: messages print it, never send it (a NUL
/// would end the message where a C string ends).
std::string shown(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (b < 0x20 || b == 0x7f) {
            const char* digits = "0123456789abcdef";
            out += std::string("\\x") + digits[b >> 4] + digits[b & 15];
        } else {
            out += c;
        }
    }
    return out;
}

/// Checks a key path's spelling: dotted names of letters, digits, '_' and '-'.
void check_key_path_text(const std::string& path, const SourceLocation& origin) {
    bool ok = !path.empty() && path.front() != '.' && path.back() != '.' &&
              path.find("..") == std::string::npos;
    for (char c : path) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-');
    }
    if (!ok) {
        const std::string visible = shown(path);
        throw InputError(visible,
                         "is not a key path such as workload.parallelism.tp" +
                             std::string(visible != path ? " (it holds control characters, "
                                                           "shown as \\xNN)"
                                                         : ""),
                         origin);
    }
}

/// "key.path=value" from the command line.
Override command_line_override(const std::string& text) {
    const auto eq = text.find('=');
    const SourceLocation origin{"command line (--set " + shown(text) + ")", 0, 0};
    if (eq == std::string::npos || eq == 0) {
        throw InputError("", "--set needs key.path=value, got '" + text + "'", origin);
    }
    return {text.substr(0, eq), text.substr(eq + 1), origin};
}

} // namespace

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

/// Sets `path` in `node`, creating mappings on the way.
void apply_override(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
                    const ParsedOverride& o) {
    if (node.IsSequence()) {
        // A list of named entries (a scenario's tenants): the key names an entry.
        for (YAML::Node item : node) {
            if (item.IsMap() && item["name"].IsScalar() && item["name"].Scalar() == keys[i]) {
                if (i + 1 == keys.size()) {
                    throw InputError(o.path, "set a key of the entry, not the whole entry",
                                     o.origin);
                }
                apply_override(item, keys, i + 1, o);
                return;
            }
        }
        throw InputError(o.path, "the list has no entry named " + keys[i], o.origin);
    }
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

std::vector<Override> command_line_overrides(const std::vector<std::string>& texts) {
    std::vector<Override> out;
    out.reserve(texts.size());
    for (const auto& t : texts) {
        out.push_back(command_line_override(t));
    }
    return out;
}

} // namespace detail

using detail::command_line_overrides;

std::string to_string(const Override& o) { return o.path + "=" + o.value; }

std::vector<Override> set_overrides(const std::vector<std::string>& texts) {
    return command_line_overrides(texts);
}

Override given_override(const std::string& key_path, const std::string& value,
                        const std::string& where) {
    return {key_path, value,
            {where + " (--set " + detail::shown(key_path + "=" + value) + ")", 0, 0}};
}

Override option_override(const std::string& key_path, const std::string& value,
                         const std::string& option) {
    YAML::Emitter quoted;
    quoted << YAML::DoubleQuoted << value;
    // The origin is printed in messages: control characters are shown, not sent.
    return {key_path, quoted.c_str(),
            {"command line (" + option + " " + detail::shown(value) + ")", 0, 0}};
}

} // namespace trnsim::config
