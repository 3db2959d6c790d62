#include "trnsim/core/error.hpp"

#include <utility>

namespace trnsim {

std::string SourceLocation::str() const {
    if (!known()) {
        return "<unknown>";
    }
    if (line <= 0) {
        return file;
    }
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

void SourceMap::add(const std::string& key_path, SourceLocation loc) {
    map_[key_path] = std::move(loc);
}

void SourceMap::replace_section(const std::string& section, const SourceMap& from) {
    const auto inside = [&](const std::string& key) {
        return key == section ||
               (key.size() > section.size() && key.compare(0, section.size(), section) == 0 &&
                (key[section.size()] == '.' || key[section.size()] == '['));
    };
    std::erase_if(map_, [&](const auto& kv) { return inside(kv.first); });
    for (const auto& [key, loc] : from.map_) {
        if (inside(key)) {
            map_[key] = loc;
        }
    }
}

SourceLocation SourceMap::find(const std::string& key_path) const {
    if (auto it = map_.find(key_path); it != map_.end()) {
        return it->second;
    }
    // A mapping whose own place was not recorded (only its keys were): its first key's line.
    if (!key_path.empty()) {
        const SourceLocation* first = nullptr;
        for (auto it = map_.lower_bound(key_path + "."); it != map_.end() &&
                                                          it->first.rfind(key_path + ".", 0) == 0;
             ++it) {
            if (it->second.known() &&
                (first == nullptr || it->second.line < first->line ||
                 (it->second.line == first->line && it->second.column < first->column))) {
                first = &it->second;
            }
        }
        if (first != nullptr) {
            return *first;
        }
    }
    std::string path = key_path;
    while (true) {
        if (auto it = map_.find(path); it != map_.end()) {
            return it->second;
        }
        const auto cut = path.find_last_of(".[");
        if (cut == std::string::npos) {
            break;
        }
        path.resize(cut);
    }
    if (auto it = map_.find(""); it != map_.end()) {
        return it->second;
    }
    return {};
}

namespace {
std::string format_error(const std::string& path, const std::string& message,
                         const SourceLocation& loc) {
    std::string out;
    if (loc.known()) {
        out += loc.str() + ": ";
    }
    if (!path.empty()) {
        out += path + ": ";
    }
    return out + message;
}
} // namespace

InputError::InputError(std::string key_path, std::string message, SourceLocation loc)
    : std::runtime_error(format_error(key_path, message, loc)), key_path_(std::move(key_path)),
      message_(std::move(message)), location_(std::move(loc)) {}

InputError InputError::located(const SourceMap& sources) const {
    if (location_.known()) {
        return *this;
    }
    return InputError(key_path_, message_, sources.find(key_path_));
}

} // namespace trnsim
