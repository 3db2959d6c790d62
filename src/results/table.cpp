#include "trnsim/results/table.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

Table table_from_rows(const std::vector<std::vector<NamedValue>>& rows) {
    std::vector<std::string> names;
    std::map<std::string, std::size_t> index;
    std::vector<std::size_t> kind; // the variant's index: int64, double, string
    std::vector<int> width;
    for (const auto& row : rows) {
        for (const auto& v : row) {
            const auto [it, added] = index.emplace(v.name, names.size());
            if (added) {
                names.push_back(v.name);
                kind.push_back(v.value.index());
                width.push_back(1);
            } else if (kind[it->second] != v.value.index()) {
                throw std::logic_error("summary column " + v.name + " changes type");
            }
            if (const auto* s = std::get_if<std::string>(&v.value)) {
                width[it->second] = std::max(width[it->second], static_cast<int>(s->size()));
            }
        }
    }
    Table t;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (kind[i] == 0) {
            t.add_int(names[i]);
        } else if (kind[i] == 1) {
            t.add_float(names[i]);
        } else {
            t.add_string(names[i], width[i]);
        }
    }
    for (const auto& row : rows) {
        std::vector<Table::Value> values(names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            values[i] = kind[i] == 0   ? Table::Value(std::int64_t{-1})
                        : kind[i] == 1 ? Table::Value(std::nan(""))
                                       : Table::Value(std::string());
        }
        for (const auto& v : row) {
            values[index.at(v.name)] = v.value;
        }
        t.add_row(values);
    }
    return t;
}

} // namespace trnsim::results
