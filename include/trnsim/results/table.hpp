// A small columnar table: the in-memory form of every tabular dataset trnsim writes
// (/summary, /step/breakdown). Columns are 64-bit integers, doubles or fixed-width strings;
// column names carry their unit as a suffix (_s, _bytes, _usd) as docs/results-schema.md says.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace trnsim::results {

class Table {
public:
    enum class Type { int64, float64, string };

    struct Column {
        std::string name;
        Type type = Type::float64;
        int string_width = 0; ///< bytes per value for string columns
        std::vector<std::int64_t> ints;
        std::vector<double> floats;
        std::vector<std::string> strings;
    };

    using Value = std::variant<std::int64_t, double, std::string>;

    /// Declares columns before the first row. Names must be unique.
    void add_int(const std::string& name);
    void add_float(const std::string& name);
    void add_string(const std::string& name, int width);

    /// Appends a row: one value per column, in declaration order, of the column's type
    /// (integers are accepted for float columns). Throws std::invalid_argument otherwise, and
    /// when a string is wider than its column.
    void add_row(const std::vector<Value>& row);

    std::size_t rows() const { return rows_; }
    const std::vector<Column>& columns() const { return columns_; }
    /// Index of a column by name, or -1.
    int find(const std::string& name) const;

private:
    void add(Column c);
    std::vector<Column> columns_;
    std::size_t rows_ = 0;
};

/// One named value of a row ("step_time_s" = 16.8): what a run's figures are before they
/// become a column of a table. The name's suffix names the unit (_s, _bytes, _usd).
struct NamedValue {
    std::string name;
    Table::Value value;
};

/// A table from rows of named values: the union of the rows' columns in first-seen order; a
/// column missing from a row holds NaN (-1 in an integer column, "" in a string column).
/// std::logic_error when a column's type differs between rows.
Table table_from_rows(const std::vector<std::vector<NamedValue>>& rows);

} // namespace trnsim::results
