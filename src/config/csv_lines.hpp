// The lines of the small CSV files scenarios name (private to the config module): failure
// traces (reliability.trace) and job traces (fleet.trace). A UTF-8 byte order mark (spreadsheet
// exports write one) is skipped; `#` starts a comment; blank lines are left out; each field is
// trimmed and keeps its 1-based column, for errors located at their line and column.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::config::detail {

/// `t` without its leading and trailing blanks (spaces, tabs, carriage returns).
inline std::string trim_blanks(const std::string& t) {
    const auto b = t.find_first_not_of(" \t\r");
    if (b == std::string::npos) {
        return "";
    }
    return t.substr(b, t.find_last_not_of(" \t\r") - b + 1);
}

struct CsvLine {
    int number = 0;                                  ///< 1-based, in the file
    std::vector<std::pair<std::string, int>> fields; ///< text, 1-based column
};

/// The non-blank lines of `text`, split at commas.
inline std::vector<CsvLine> csv_lines(const std::string& text) {
    const bool bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0;
    std::istringstream in(bom ? text.substr(3) : text);
    std::vector<CsvLine> out;
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
        ++number;
        const std::string content = line.substr(0, line.find('#'));
        if (trim_blanks(content).empty()) {
            continue;
        }
        CsvLine l;
        l.number = number;
        for (std::size_t start = 0;;) {
            const std::size_t comma = content.find(',', start);
            const std::string raw = content.substr(start, comma - start);
            const auto lead = raw.find_first_not_of(" \t");
            l.fields.emplace_back(
                trim_blanks(raw),
                static_cast<int>(start + (lead == std::string::npos ? 0 : lead)) + 1);
            if (comma == std::string::npos) {
                break;
            }
            start = comma + 1;
        }
        out.push_back(std::move(l));
    }
    return out;
}

} // namespace trnsim::config::detail
