// trnsim compare A.h5 B.h5: two results files' /summary side by side, row by row, and where
// their resolved scenarios differ. And the JSON form of a summary (trnsim run --json).
#include "commands.hpp"
#include "json_summary.hpp"

#include "trnsim/core/error.hpp"
#include "trnsim/core/format.hpp"
#include "trnsim/results/hdf5_writer.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace trnsim::cli {

namespace {

/// Row `r` of a table as (name, text) pairs, in column order; "" for every column of a table
/// without rows.
std::vector<std::pair<std::string, std::string>> row_text(const results::Table& t,
                                                          std::size_t r) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& c : t.columns()) {
        std::string v;
        if (r >= t.rows()) {
            v = "";
        } else if (c.type == results::Table::Type::int64) {
            v = fmt::integer(c.ints[r]);
        } else if (c.type == results::Table::Type::float64) {
            std::ostringstream s;
            s.precision(6);
            s << c.floats[r];
            v = s.str();
        } else {
            v = c.strings[r];
        }
        out.emplace_back(c.name, v);
    }
    return out;
}

double number(const results::Table& t, const std::string& name, std::size_t r, bool& found) {
    const int i = t.find(name);
    found = i >= 0 && r < t.rows() &&
            t.columns()[static_cast<std::size_t>(i)].type != results::Table::Type::string;
    if (!found) {
        return 0.0;
    }
    const auto& c = t.columns()[static_cast<std::size_t>(i)];
    return c.type == results::Table::Type::int64 ? static_cast<double>(c.ints[r]) : c.floats[r];
}

/// "1 summary row" or "6 summary rows (a sweep's runs or a plan's finalists)".
std::string rows_text(std::size_t rows) {
    return fmt::integer(static_cast<std::int64_t>(rows)) + " summary row" +
           (rows == 1 ? "" : "s");
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        out.push_back(line);
    }
    return out;
}

} // namespace

namespace {

/// Row `r` of a table as a JSON object, in column order (empty when there is no such row).
nlohmann::ordered_json row_json(const results::Table& table, std::size_t r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::object();
    if (r >= table.rows()) {
        return row;
    }
    for (const auto& c : table.columns()) {
        if (c.type == results::Table::Type::int64) {
            row[c.name] = c.ints[r];
        } else if (c.type == results::Table::Type::float64) {
            const double v = c.floats[r];
            // JSON has no infinity or NaN: null, as Python's json module reads them.
            row[c.name] = std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json();
        } else {
            row[c.name] = c.strings[r];
        }
    }
    return row;
}

} // namespace

std::string summary_json(const results::Table& summary, const std::string& results_file) {
    nlohmann::ordered_json out;
    out["results"] = results_file;
    out["summary"] = row_json(summary, 0);
    return out.dump();
}

std::string tenants_json(const results::ResultsFile& file, const std::string& results_file) {
    nlohmann::ordered_json out;
    out["results"] = results_file;
    nlohmann::ordered_json tenants = nlohmann::ordered_json::array();
    for (std::size_t r = 0; r < file.summary.rows(); ++r) {
        nlohmann::ordered_json t = row_json(file.summary, r);
        const std::string own = "/tenants/" + t["tenant"].get<std::string>() + "/summary";
        for (const auto& [path, table] : file.tables) {
            if (path == own) {
                t["summary"] = row_json(table, 0);
            }
        }
        tenants.push_back(std::move(t));
    }
    out["tenants"] = std::move(tenants);
    return out.dump();
}

int cmd_compare(const std::vector<std::string>& args) {
    constexpr const char* kUsage = "usage: trnsim compare A.h5 B.h5";
    std::vector<std::string> files;
    for (const std::string& a : args) {
        if (a == "--help" || a == "-h") {
            std::cout << kUsage << "\n  the /summary of two results files side by side, row by "
                                   "row (both need as many rows), and the lines where their "
                                   "resolved scenarios differ\n";
            return 0;
        }
        if (!a.empty() && a[0] == '-') {
            throw UsageError("trnsim compare: unknown option '" + a + "'\n" + kUsage);
        }
        files.push_back(a);
    }
    if (files.size() != 2) {
        throw UsageError(std::string("trnsim compare needs two results files\n") + kUsage);
    }
    results::Table t[2];
    std::string scenario[2];
    for (int i = 0; i < 2; ++i) {
        const std::string& file = files[static_cast<std::size_t>(i)];
        try {
            t[i] = results::read_summary(file);
            scenario[i] = results::read_text(file, "/meta/scenario").value_or("");
        } catch (const std::runtime_error& e) {
            throw UsageError("trnsim compare: " + file + ": not a trnsim results file (" +
                             e.what() + ")");
        }
    }
    // Row by row: a run has one row, a sweep one per run, a plan one per finalist. Files with
    // different numbers of rows have no row-by-row pairing.
    if (t[0].rows() != t[1].rows()) {
        throw UsageError("trnsim compare: " + files[0] + " has " + rows_text(t[0].rows()) +
                         " and " + files[1] + " has " + rows_text(t[1].rows()) +
                         ": compare compares row by row, so both files need the same number "
                         "(two runs, two sweeps of the same points, or two plans with as many "
                         "finalists)");
    }
    const std::size_t rows = std::max<std::size_t>(t[0].rows(), 1);
    std::cout << "  A  " << files[0] << "\n  B  " << files[1] << "\n";
    std::set<std::string> names;
    std::size_t width = 6;
    for (const auto& table : t) {
        for (const auto& c : table.columns()) {
            names.insert(c.name);
            width = std::max(width, c.name.size());
        }
    }
    std::cout << "  " << std::string(width, ' ') << "  " << std::setw(16) << "A" << "  "
              << std::setw(16) << "B" << "  difference\n";
    int differing = 0;
    for (std::size_t r = 0; r < rows; ++r) {
        if (rows > 1) {
            std::cout << "  row " << r + 1 << " of " << rows << "\n";
        }
        const auto a = row_text(t[0], r);
        const auto b = row_text(t[1], r);
        const std::map<std::string, std::string> bv(b.begin(), b.end());
        std::set<std::string> seen;
        for (const auto& [name, av] : a) {
            seen.insert(name);
            const auto it = bv.find(name);
            const std::string bs = it == bv.end() ? "-" : it->second;
            std::string diff;
            bool fa = false, fb = false;
            const double x = number(t[0], name, r, fa), y = number(t[1], name, r, fb);
            if (it == bv.end()) {
                ++differing;
                diff = "only in A";
            } else if (av != bs) {
                ++differing;
                if (fa && fb && x != 0.0 && std::isfinite(x) && std::isfinite(y)) {
                    const double rel = (y - x) / std::fabs(x);
                    diff = (rel >= 0 ? "+" : "") + fmt::fixed(100.0 * rel, 1) + "%";
                } else {
                    diff = "differs";
                }
            }
            std::cout << "  " << name << std::string(width - name.size(), ' ') << "  "
                      << std::setw(16) << av << "  " << std::setw(16) << bs << "  " << diff
                      << "\n";
        }
        for (const auto& [name, bs] : b) {
            if (!seen.count(name)) {
                ++differing;
                std::cout << "  " << name << std::string(width - name.size(), ' ') << "  "
                          << std::setw(16) << "-" << "  " << std::setw(16) << bs
                          << "  only in B\n";
            }
        }
    }
    // The resolved scenarios, line by line: what one has that the other does not.
    const auto la = lines_of(scenario[0]);
    const auto lb = lines_of(scenario[1]);
    const std::multiset<std::string> sa(la.begin(), la.end()), sb(lb.begin(), lb.end());
    std::vector<std::string> only_a, only_b;
    for (const auto& l : la) {
        if (!sb.count(l)) {
            only_a.push_back(l);
        }
    }
    for (const auto& l : lb) {
        if (!sa.count(l)) {
            only_b.push_back(l);
        }
    }
    if (only_a.empty() && only_b.empty()) {
        std::cout << "  scenarios  identical\n";
    } else {
        std::cout << "  scenarios  differ (lines of the resolved scenario in one file only):\n";
        for (const auto& l : only_a) {
            std::cout << "    A " << l << "\n";
        }
        for (const auto& l : only_b) {
            std::cout << "    B " << l << "\n";
        }
    }
    // Every column of either file in every row: a column in one file only differs.
    std::cout << "  " << differing << " of " << names.size() * rows
              << " summary values differ";
    if (rows > 1) {
        std::cout << " (" << rows << " rows x " << names.size() << " columns)";
    }
    std::cout << "\n";
    return 0;
}

} // namespace trnsim::cli
