#include "sourced_values.hpp"

#include "trnsim/config/load.hpp"
#include "trnsim/core/input_file.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace trnsim::cli {

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) {
        return {};
    }
    const auto e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

/// Where a comment starts in `text` (a '#' after a blank, outside quotes), or npos.
std::size_t comment_at(const std::string& text) {
    char quote = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quote != 0) {
            quote = c == quote ? 0 : quote;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t')) {
            return i;
        }
    }
    return std::string::npos;
}

bool is_key_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
}

/// The values one file writes, in order (block mappings of scalars and flow values, as the
/// chip and fabric files are written).
std::vector<SourcedValue> read_values(const std::filesystem::path& file) {
    std::istringstream in(read_input_file(file, "preset"));
    struct Open {
        std::size_t indent;
        std::string key;
    };
    std::vector<Open> open;
    std::vector<SourcedValue> out;
    std::size_t value_column = std::string::npos; // of the last value, for its continuations
    bool out_of_open = false; // the last key opened a section: a list below it is its value
    for (std::string line; std::getline(in, line);) {
        const std::size_t col = line.find_first_not_of(" \t");
        if (col == std::string::npos || line[col] == '\r') {
            continue;
        }
        if (line[col] == '#') {
            // A comment on its own line further right than the last value: its source goes on.
            if (!out.empty() && value_column != std::string::npos && col >= value_column) {
                std::string& s = out.back().source;
                s += (s.empty() ? "" : " ") + trim(line.substr(col + 1));
            }
            continue;
        }
        if (line[col] == '-') { // an element of a block list: the value of the key above it
            if (!open.empty() && open.back().indent <= col && out_of_open) {
                SourcedValue v;
                for (const Open& o : open) {
                    v.path += (v.path.empty() ? "" : ".") + o.key;
                }
                v.file = file;
                out.push_back(std::move(v));
                open.pop_back();
                out_of_open = false;
            }
            if (!out.empty()) {
                const std::string element = line.substr(col);
                const std::size_t hash = comment_at(element);
                SourcedValue& v = out.back();
                v.value += (v.value.empty() ? "" : " ") + trim(element.substr(0, hash));
                if (hash != std::string::npos) {
                    v.source += (v.source.empty() ? "" : " ") + trim(element.substr(hash + 1));
                }
            }
            continue;
        }
        out_of_open = false;
        std::size_t end = col;
        while (end < line.size() && is_key_char(line[end])) {
            ++end;
        }
        if (end == col || end >= line.size() || line[end] != ':') {
            value_column = std::string::npos;
            continue;
        }
        const std::string key = line.substr(col, end - col);
        while (!open.empty() && open.back().indent >= col) {
            open.pop_back();
        }
        const std::string rest = line.substr(end + 1);
        const std::size_t hash = comment_at(rest);
        const std::string value = trim(rest.substr(0, hash));
        std::string path;
        for (const Open& o : open) {
            path += o.key + ".";
        }
        path += key;
        if (value.empty()) {
            open.push_back({col, key});
            value_column = std::string::npos;
            out_of_open = true;
            continue;
        }
        SourcedValue v;
        v.path = path;
        v.value = value;
        v.source = hash == std::string::npos ? "" : trim(rest.substr(hash + 1));
        v.file = file;
        out.push_back(std::move(v));
        value_column = end + 1 + rest.find_first_not_of(" \t");
    }
    return out;
}

} // namespace

std::vector<SourcedValue> sourced_values(const std::filesystem::path& file, bool follow_extends) {
    std::vector<SourcedValue> own = read_values(file);
    const auto ext = std::find_if(own.begin(), own.end(),
                                  [](const SourcedValue& v) { return v.path == "extends"; });
    if (!follow_extends || ext == own.end()) {
        return own;
    }
    const std::filesystem::path base =
        config::preset_file(config::PresetKind::chip, ext->value, file.parent_path());
    own.erase(ext);
    std::vector<SourcedValue> merged = sourced_values(base, true);
    for (SourcedValue& v : own) {
        const auto same = std::find_if(merged.begin(), merged.end(),
                                       [&](const SourcedValue& m) { return m.path == v.path; });
        if (same != merged.end()) {
            *same = std::move(v);
        } else {
            merged.push_back(std::move(v));
        }
    }
    return merged;
}

void print_sourced_values(std::ostream& out, const std::vector<SourcedValue>& values,
                          const std::filesystem::path& main,
                          const std::vector<std::string>& skip) {
    for (const SourcedValue& v : values) {
        const bool skipped = std::any_of(skip.begin(), skip.end(), [&](const std::string& s) {
            return v.path == s || v.path.rfind(s + ".", 0) == 0;
        });
        if (skipped) {
            continue;
        }
        std::string source = v.source.empty() ? "no source given" : v.source;
        if (v.file != main) {
            source = v.file.filename().string() + ": " + source;
        }
        out << "    " << v.path << " = " << v.value << "  [" << source << "]\n";
    }
}

} // namespace trnsim::cli
