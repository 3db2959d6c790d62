#include "trnsim/results/table.hpp"

#include <stdexcept>

namespace trnsim::results {

void Table::add(Column c) {
    if (rows_ != 0) {
        throw std::invalid_argument("table: columns must be declared before rows");
    }
    if (find(c.name) >= 0) {
        throw std::invalid_argument("table: duplicate column '" + c.name + "'");
    }
    columns_.push_back(std::move(c));
}

void Table::add_int(const std::string& name) { add({name, Type::int64, 0, {}, {}, {}}); }

void Table::add_float(const std::string& name) { add({name, Type::float64, 0, {}, {}, {}}); }

void Table::add_string(const std::string& name, int width) {
    if (width <= 0) {
        throw std::invalid_argument("table: string column '" + name + "' needs a width");
    }
    add({name, Type::string, width, {}, {}, {}});
}

int Table::find(const std::string& name) const {
    for (std::size_t i = 0; i < columns_.size(); ++i) {
        if (columns_[i].name == name) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

void Table::add_row(const std::vector<Value>& row) {
    if (row.size() != columns_.size()) {
        throw std::invalid_argument("table: row has " + std::to_string(row.size()) +
                                    " values for " + std::to_string(columns_.size()) +
                                    " columns");
    }
    // Check everything before changing anything, so a bad row leaves the table intact.
    for (std::size_t i = 0; i < row.size(); ++i) {
        const Column& c = columns_[i];
        const Value& v = row[i];
        const bool ok =
            (c.type == Type::int64 && std::holds_alternative<std::int64_t>(v)) ||
            (c.type == Type::float64 &&
             (std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v))) ||
            (c.type == Type::string && std::holds_alternative<std::string>(v) &&
             static_cast<int>(std::get<std::string>(v).size()) <= c.string_width);
        if (!ok) {
            throw std::invalid_argument("table: bad value for column '" + c.name + "'");
        }
    }
    for (std::size_t i = 0; i < row.size(); ++i) {
        Column& c = columns_[i];
        const Value& v = row[i];
        switch (c.type) {
        case Type::int64:
            c.ints.push_back(std::get<std::int64_t>(v));
            break;
        case Type::float64:
            c.floats.push_back(std::holds_alternative<double>(v)
                                   ? std::get<double>(v)
                                   : static_cast<double>(std::get<std::int64_t>(v)));
            break;
        case Type::string:
            c.strings.push_back(std::get<std::string>(v));
            break;
        }
    }
    ++rows_;
}

} // namespace trnsim::results
