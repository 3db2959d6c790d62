// Typed field builders for Schema tables (private to the config module). Each returns an
// Entry whose apply() parses the YAML scalar with the matching unit parser, checks the range and
// stores the value through an accessor.
#pragma once

#include "trnsim/config/units.hpp"
#include "trnsim/core/enum_names.hpp"

#include "schema.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::config::detail {

template <class T, class V>
using Ref = std::function<V&(T&)>;

/// Parses and range-checks one scalar value.
template <class V, class Parse, class Check>
V parse_checked(const YAML::Node& n, const std::string& path, const SourceLocation& loc,
                Parse parse, Check ok, const std::string& range) {
    const std::string text = scalar_text(n, path, loc);
    V v{};
    try {
        v = parse(text);
    } catch (const UnitError& e) {
        throw InputError(path, e.what(), loc);
    }
    if (!ok(v)) {
        throw InputError(path, "out of range: must be " + range + "; got '" + text + "'", loc);
    }
    return v;
}

template <class T>
Entry<T> make_entry(std::string path, std::string type, std::string def, std::string range,
                    std::string doc) {
    Entry<T> e;
    e.path = std::move(path);
    e.type = std::move(type);
    e.default_value = std::move(def);
    e.range = std::move(range);
    e.doc = std::move(doc);
    return e;
}

template <class T>
Entry<T> required(Entry<T> e) {
    e.required = true;
    return e;
}

/// Documents a default computed elsewhere (e.g. "heads") without applying one.
template <class T>
Entry<T> computed_default(Entry<T> e, std::string doc) {
    e.default_value.clear();
    e.default_doc = std::move(doc);
    return e;
}

inline std::string range_text(std::int64_t lo, std::int64_t hi) {
    return std::to_string(lo) + " to " + std::to_string(hi);
}

template <class T>
Entry<T> integer(std::string path, Ref<T, int> ref, std::string def, int lo, int hi,
                 std::string doc) {
    auto e = make_entry<T>(std::move(path), "integer", std::move(def), range_text(lo, hi),
                           std::move(doc));
    const std::string range = e.range;
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context&) {
        const auto v = parse_checked<std::int64_t>(
            n, p, loc, parse_count, [&](std::int64_t x) { return x >= lo && x <= hi; }, range);
        ref(out) = static_cast<int>(v);
    };
    return e;
}

template <class T>
Entry<T> count(std::string path, Ref<T, std::int64_t> ref, std::string def, std::int64_t lo,
               std::int64_t hi, std::string doc, std::string range = "") {
    if (range.empty()) {
        range = range_text(lo, hi);
    }
    auto e = make_entry<T>(std::move(path), "count", std::move(def), range, std::move(doc));
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context&) {
        ref(out) = parse_checked<std::int64_t>(
            n, p, loc, parse_count, [&](std::int64_t x) { return x >= lo && x <= hi; }, range);
    };
    return e;
}

template <class T>
Entry<T> real(std::string path, Ref<T, double> ref, std::string def, double lo, double hi,
              std::string range, std::string doc) {
    auto e = make_entry<T>(std::move(path), "number", std::move(def), range, std::move(doc));
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context&) {
        ref(out) = parse_checked<double>(
            n, p, loc, parse_real, [&](double x) { return x >= lo && x <= hi; }, range);
    };
    return e;
}

/// A quantity with a unit (Duration, Bytes, Bandwidth, FlopRate, Frequency, Money), checked to
/// lie in [lo, hi] (or (0, hi] when `positive`).
template <class T, class Q>
Entry<T> quantity(std::string path, Ref<T, Q> ref, Q (*parse)(std::string_view), std::string type,
                  std::string def, Q lo, Q hi, bool positive, std::string range, std::string doc) {
    auto e = make_entry<T>(std::move(path), std::move(type), std::move(def), range,
                           std::move(doc));
    e.apply = [ref, parse, lo, hi, positive, range](T& out, const YAML::Node& n,
                                                    const std::string& p,
                                                    const SourceLocation& loc, const Context&) {
        ref(out) = parse_checked<Q>(
            n, p, loc, parse,
            [&](const Q& x) { return (positive ? x > lo : x >= lo) && x <= hi; }, range);
    };
    return e;
}

template <class T>
Entry<T> text(std::string path, Ref<T, std::string> ref, std::string def, std::string doc) {
    auto e = make_entry<T>(std::move(path), "string", std::move(def), "", std::move(doc));
    e.apply = [ref](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                    const Context&) { ref(out) = scalar_text(n, p, loc); };
    return e;
}

/// A file to write (output.file, output.trace): a non-empty name of printable characters.
/// An empty one would otherwise read as "not given" and quietly become the default.
template <class T>
Entry<T> file_name(std::string path, Ref<T, std::string> ref, std::string def, std::string doc) {
    auto e = make_entry<T>(std::move(path), "file name", std::move(def), "non-empty, printable",
                           std::move(doc));
    e.apply = [ref](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                    const Context&) {
        const std::string v = scalar_text(n, p, loc);
        if (v.empty()) {
            throw InputError(p, "is empty: give a file name, or leave the key out for the default",
                             loc);
        }
        for (char c : v) {
            const auto b = static_cast<unsigned char>(c);
            if (b < 0x20 || b == 0x7f) {
                const char* digits = "0123456789abcdef";
                throw InputError(p,
                                 std::string("contains a control character (byte 0x") +
                                     digits[b >> 4] + digits[b & 15] +
                                     "): a file name must be printable",
                                 loc);
            }
        }
        ref(out) = v;
    };
    return e;
}

template <class T>
Entry<T> boolean(std::string path, Ref<T, bool> ref, std::string def, std::string doc) {
    auto e = make_entry<T>(std::move(path), "boolean", std::move(def), "true, false",
                           std::move(doc));
    e.apply = [ref](T& out, const YAML::Node& n, const std::string& p, const SourceLocation& loc,
                    const Context&) {
        ref(out) =
            parse_checked<bool>(n, p, loc, parse_bool, [](bool) { return true; }, "true or false");
    };
    return e;
}

template <class T, class E>
Entry<T> choice(std::string path, Ref<T, E> ref, std::string def,
                std::vector<std::pair<std::string, E>> options, std::string doc) {
    std::string names;
    for (const auto& [name, value] : options) {
        names += (names.empty() ? "" : ", ") + name;
    }
    auto e = make_entry<T>(std::move(path), "choice", std::move(def), names, std::move(doc));
    e.apply = [ref, options, names](T& out, const YAML::Node& n, const std::string& p,
                                    const SourceLocation& loc, const Context&) {
        const std::string v = scalar_text(n, p, loc);
        for (const auto& [name, value] : options) {
            if (name == v) {
                ref(out) = value;
                return;
            }
        }
        std::vector<std::string> candidates;
        for (const auto& [name, value] : options) {
            candidates.push_back(name);
        }
        const std::string guess = closest(v, candidates);
        throw InputError(p,
                         "'" + v + "' is not one of: " + names +
                             (guess.empty() ? "" : "; did you mean '" + guess + "'?"),
                         loc);
    };
    return e;
}

/// A choice among an enum's names (core/enum_names.hpp), listed in the table's order.
template <class T, class E>
    requires NamedEnum<E>
Entry<T> choice(std::string path, Ref<T, E> ref, std::string def, std::string doc) {
    std::vector<std::pair<std::string, E>> options;
    for (const auto& n : enum_names(E{})) {
        options.emplace_back(n.name, n.value);
    }
    return choice<T, E>(std::move(path), ref, std::move(def), std::move(options), std::move(doc));
}

/// An integer or `auto` (stored as 0).
template <class T>
Entry<T> integer_or_auto(std::string path, Ref<T, int> ref, std::string def, int lo, int hi,
                         std::string doc) {
    auto e = make_entry<T>(std::move(path), "integer or auto", std::move(def),
                           "auto, " + range_text(lo, hi), std::move(doc));
    const std::string range = e.range;
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context&) {
        if (n.IsScalar() && n.Scalar() == "auto") {
            ref(out) = 0;
            return;
        }
        const auto v = parse_checked<std::int64_t>(
            n, p, loc, parse_count, [&](std::int64_t x) { return x >= lo && x <= hi; }, range);
        ref(out) = static_cast<int>(v);
    };
    return e;
}

/// A non-empty list of integers, each in [lo, hi].
template <class T>
Entry<T> integer_list(std::string path, Ref<T, std::vector<int>> ref, std::string def, int lo,
                      int hi, std::string doc) {
    auto e = make_entry<T>(std::move(path), "list of integers", std::move(def),
                           "each " + range_text(lo, hi), std::move(doc));
    const std::string range = range_text(lo, hi);
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context& ctx) {
        if (!n.IsSequence() || n.size() == 0) {
            throw InputError(p, "expected a non-empty list of integers such as [4, 4]", loc);
        }
        std::vector<int> values;
        for (std::size_t i = 0; i < n.size(); ++i) {
            const std::string item_path = p + "[" + std::to_string(i) + "]";
            const SourceLocation item_loc = ctx.locate(p, n[i].Mark());
            values.push_back(static_cast<int>(parse_checked<std::int64_t>(
                n[i], item_path, item_loc.known() ? item_loc : loc, parse_count,
                [&](std::int64_t x) { return x >= lo && x <= hi; }, range)));
        }
        ref(out) = std::move(values);
    };
    return e;
}

/// A list of mappings, each read with the element schema `element` (its keys documented as
/// `path[].key`). Errors name the element: `path[2].key`.
template <class T, class E>
Entry<T> mapping_list(std::string path, Ref<T, std::vector<E>> ref,
                      const Schema<E>& (*element)(), std::string example, std::string doc) {
    auto e = make_entry<T>(std::move(path), "list of mappings", "", "keys below", std::move(doc));
    e.default_doc = "empty";
    e.apply = [ref, element, example](T& out, const YAML::Node& n, const std::string& p,
                                      const SourceLocation& loc, const Context& ctx) {
        if (!n.IsSequence()) {
            throw InputError(p, "expected a list of mappings such as " + example, loc);
        }
        std::vector<E> items;
        for (std::size_t i = 0; i < n.size(); ++i) {
            const YAML::Node item = n[i];
            const std::string item_path = p + "[" + std::to_string(i) + "]";
            const SourceLocation item_loc =
                item.Mark().is_null() ? loc : ctx.locate(item_path, item.Mark());
            if (!item.IsMap()) {
                throw InputError(item_path, "expected a mapping of keys such as " + example,
                                 item_loc);
            }
            if (ctx.sources) {
                ctx.sources->add(item_path, item_loc);
            }
            Context c = ctx;
            c.prefix = item_path;
            E value{};
            element().load(value, item, c, item_loc);
            items.push_back(std::move(value));
        }
        ref(out) = std::move(items);
    };
    e.resolve = [element](const YAML::Node& n) {
        YAML::Node out(YAML::NodeType::Sequence);
        for (std::size_t i = 0; i < n.size(); ++i) {
            const YAML::Node item = n[i];
            out.push_back(item.IsMap() ? element().resolved(item) : YAML::Clone(item));
        }
        return out;
    };
    const std::string prefix = e.path + "[].";
    e.element_rows = [element, prefix]() { return element().rows(prefix); };
    return e;
}

/// A list of numbers, each in [lo, hi] (may be empty: `[]`).
template <class T>
Entry<T> real_list(std::string path, Ref<T, std::vector<double>> ref, std::string def, double lo,
                   double hi, std::string range, std::string doc) {
    auto e = make_entry<T>(std::move(path), "list of numbers", std::move(def), "each " + range,
                           std::move(doc));
    e.apply = [ref, lo, hi, range](T& out, const YAML::Node& n, const std::string& p,
                                   const SourceLocation& loc, const Context& ctx) {
        if (!n.IsSequence()) {
            throw InputError(p, "expected a list of numbers such as [1.0, 0.25]", loc);
        }
        std::vector<double> values;
        for (std::size_t i = 0; i < n.size(); ++i) {
            const std::string item_path = p + "[" + std::to_string(i) + "]";
            const SourceLocation item_loc = ctx.locate(p, n[i].Mark());
            values.push_back(parse_checked<double>(
                n[i], item_path, item_loc.known() ? item_loc : loc, parse_real,
                [&](double x) { return x >= lo && x <= hi; }, range));
        }
        ref(out) = std::move(values);
    };
    return e;
}

} // namespace trnsim::config::detail
