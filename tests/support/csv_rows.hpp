// The published-data tables of tests/data/ (CSV): lines starting with '#' are comments, the
// first other line is the header, every row has `columns` comma-separated cells (no quoting).
// And the rounding the fits apply before a value goes into a chip file.
#pragma once

#include <cmath>
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

/// Golden-section search for the minimum of a unimodal `f` on [a, b]: the bracket narrows
/// while keep_going(a, b, iteration) holds; returns the final bracket's midpoint. The fits of
/// the chip files' coefficients (collective_fit.hpp, training_fit.hpp) use it.
template <class F, class Keep>
double golden_section_min(F&& f, double a, double b, Keep&& keep_going) {
    const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double fc = f(c), fd = f(d);
    for (int it = 0; keep_going(a, b, it); ++it) {
        if (fc < fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = f(d);
        }
    }
    return (a + b) / 2.0;
}

} // namespace trnsim::test
