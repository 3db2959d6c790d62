// One spelling per enum. Every enum that users write (scenario keys, command-line flags) or
// read (summaries, results columns) has one table of its values and their names, declared
// beside the enum and found by argument-dependent lookup:
//
//     enum class Recompute { none, selective, full };
//     constexpr std::array<EnumName<Recompute>, 3> enum_names(Recompute) {
//         return {{{Recompute::none, "none"}, {Recompute::selective, "selective"},
//                  {Recompute::full, "full"}}};
//     }
//
// The module's to_string, the parsers of the config schema and of command-line flags, and the
// list of allowed words in docs/scenario-schema.md all read that table, so a new value or a
// renamed one cannot be spelled two ways. The table's order is the order in which the
// allowed words are listed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace trnsim {

template <class E>
struct EnumName {
    E value;
    const char* name; ///< a string literal
};

/// An enum with a names table.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) { enum_names(e); };

/// The name of `v` ("?" for a value missing from the table, which a test rules out).
template <NamedEnum E>
constexpr const char* enum_name(E v) {
    for (const auto& n : enum_names(E{})) {
        if (n.value == v) {
            return n.name;
        }
    }
    return "?";
}

/// The value named `s`, if any.
template <NamedEnum E>
constexpr std::optional<E> enum_from_name(std::string_view s) {
    for (const auto& n : enum_names(E{})) {
        if (s == n.name) {
            return n.value;
        }
    }
    return std::nullopt;
}

/// "a, b, c": the allowed names in table order.
template <NamedEnum E>
std::string enum_name_list(std::string_view separator = ", ") {
    std::string out;
    for (const auto& n : enum_names(E{})) {
        if (!out.empty()) {
            out += separator;
        }
        out += n.name;
    }
    return out;
}

} // namespace trnsim
