// The published-data tables of tests/data/ (CSV): lines starting with '#' are comments, the
// first other line is the header, every row has `columns` comma-separated cells (no quoting).
// And the rounding the fits apply before a value goes into a chip file.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::test {

/// The cells of every row of `path` after its header; std::runtime_error naming `what` for a
/// file that cannot be read or a row of another width.
inline std::vector<std::vector<std::string>> read_csv_rows(const std::string& path,
                                                           std::size_t columns,
                                                           const std::string& what) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot read " + path);
    }
    std::vector<std::vector<std::string>> rows;
    bool header = true;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        if (std::exchange(header, false)) {
            continue;
        }
        std::vector<std::string> f;
        std::stringstream ss(line);
        for (std::string cell; std::getline(ss, cell, ',');) {
            f.push_back(cell);
        }
        if (f.size() != columns) {
            throw std::runtime_error("bad " + what + " row: " + line);
        }
        rows.push_back(std::move(f));
    }
    return rows;
}

/// `v` rounded to `digits` significant digits (as a chip file states a fitted value).
inline double round_significant(double v, int digits) {
    char text[32];
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    return std::strtod(text, nullptr);
}

} // namespace trnsim::test
