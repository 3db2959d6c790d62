#include "trnsim/config/units.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace trnsim::config {

namespace {

struct UnitScale {
    std::string_view symbol;
    double factor;
};

std::string quoted(std::string_view s) { return quote_visible(s); }

/// The name of an invisible or blank code point, or nullptr for one shown as it is.
const char* invisible_name(std::uint32_t cp) {
    switch (cp) {
    case 0x00A0: return "NO-BREAK SPACE";
    case 0x00AD: return "SOFT HYPHEN";
    case 0x180E: return "MONGOLIAN VOWEL SEPARATOR";
    case 0x200B: return "ZERO WIDTH SPACE";
    case 0x200C: return "ZERO WIDTH NON-JOINER";
    case 0x200D: return "ZERO WIDTH JOINER";
    case 0x200E: return "LEFT-TO-RIGHT MARK";
    case 0x200F: return "RIGHT-TO-LEFT MARK";
    case 0x2028: return "LINE SEPARATOR";
    case 0x2029: return "PARAGRAPH SEPARATOR";
    case 0x202F: return "NARROW NO-BREAK SPACE";
    case 0x2060: return "WORD JOINER";
    case 0xFEFF: return "ZERO WIDTH NO-BREAK SPACE, a byte order mark";
    default: return nullptr;
    }
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Splits "2.9TB/s" into 2.9 and "TB/s". Returns false when no number leads the text.
bool split_number(std::string_view text, double& value, std::string_view& unit) {
    std::size_t i = 0;
    const std::size_t n = text.size();
    if (i < n && (text[i] == '-' || text[i] == '+')) {
        ++i;
    }
    const std::size_t digits_start = i;
    while (i < n && is_digit(text[i])) {
        ++i;
    }
    if (i < n && text[i] == '.') {
        ++i;
        while (i < n && is_digit(text[i])) {
            ++i;
        }
    }
    if (i == digits_start || (i == digits_start + 1 && text[digits_start] == '.')) {
        return false;
    }
    // An exponent only when digits follow ("2e3"), so "2EB" is not misread.
    if (i + 1 < n && (text[i] == 'e' || text[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < n && (text[j] == '-' || text[j] == '+')) {
            ++j;
        }
        if (j < n && is_digit(text[j])) {
            while (j < n && is_digit(text[j])) {
                ++j;
            }
            i = j;
        }
    }
    std::string_view number = text.substr(0, i);
    if (!number.empty() && number.front() == '+') {
        number.remove_prefix(1);
    }
    const auto res = std::from_chars(number.data(), number.data() + number.size(), value);
    if (res.ec != std::errc() || res.ptr != number.data() + number.size() ||
        !std::isfinite(value)) {
        return false;
    }
    unit = trim(text.substr(i));
    return true;
}

template <std::size_t N>
double scaled(std::string_view raw, const std::array<UnitScale, N>& units, const char* what,
              const char* example, const char* allowed) {
    const std::string_view text = trim(raw);
    double value = 0.0;
    std::string_view unit;
    const std::string expectation = std::string("expected ") + what + " such as " + example +
                                    " (units: " + allowed + ")";
    if (text.empty()) {
        throw UnitError(expectation + "; got an empty value");
    }
    if (!split_number(text, value, unit)) {
        throw UnitError(expectation + "; got " + quoted(raw));
    }
    if (unit.empty()) {
        throw UnitError(expectation + "; " + quoted(raw) + " has no unit");
    }
    for (const auto& u : units) {
        if (u.symbol == unit) {
            const double v = value * u.factor;
            if (!std::isfinite(v)) {
                throw UnitError(quoted(raw) + " is too large");
            }
            return v;
        }
    }
    throw UnitError(expectation + "; unknown unit " + quoted(unit) + " in " + quoted(raw));
}

std::int64_t to_integer(double v, std::string_view raw, const char* what) {
    if (std::fabs(v) >= 9.2e18) {
        throw UnitError(quoted(raw) + " is too large for " + what);
    }
    const double r = std::round(v);
    // Products such as 1.1 x 1000 may miss the whole number by a few units in the last
    // place; a real fraction (1000000.5) is not whole.
    if (std::fabs(v - r) > 1e-9 * std::max(1.0, std::fabs(v))) {
        throw UnitError(quoted(raw) + " is not a whole number of " + what);
    }
    return static_cast<std::int64_t>(r);
}

/// A plain decimal integer ("-12", "+9007199254740993"), read exactly: a double holds every
/// integer only up to 2^53, so 2^53 + 1 would silently become 2^53.
bool plain_integer(std::string_view text, std::int64_t& out, bool& overflow) {
    // from_chars reads a leading '-' itself, not a '+'.
    const std::string_view number = !text.empty() && text.front() == '+' ? text.substr(1) : text;
    const std::string_view digits =
        !number.empty() && number.front() == '-' && text.front() != '+' ? number.substr(1)
                                                                         : number;
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) {
        return false;
    }
    const auto res = std::from_chars(number.data(), number.data() + number.size(), out);
    overflow = res.ec == std::errc::result_out_of_range;
    return true;
}

} // namespace

std::string quote_visible(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string shown = "'";
    std::string names;
    std::size_t character = 0;
    const auto name = [&](const std::string& what) {
        names += (names.empty() ? "" : "; ") + what + " at character " +
                 std::to_string(character);
    };
    for (std::size_t i = 0; i < s.size();) {
        ++character;
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7F) {
            const char* esc = c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\n' ? "\\n" : nullptr;
            const std::string code = std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
            shown += esc != nullptr ? esc : code;
            char label[40];
            std::snprintf(label, sizeof label, "U+%04X %s", static_cast<unsigned>(c),
                          c == '\t'   ? "TAB"
                          : c == '\r' ? "CARRIAGE RETURN"
                          : c == '\n' ? "LINE FEED"
                          : c == 0    ? "NUL"
                                      : "control character");
            name(label);
            ++i;
            continue;
        }
        if (c < 0x80) {
            shown += static_cast<char>(c);
            ++i;
            continue;
        }
        // A UTF-8 sequence: its length from the lead byte, then continuation bytes.
        const std::size_t n = c >= 0xF0 && c < 0xF8   ? 4
                              : c >= 0xE0 && c < 0xF0 ? 3
                              : c >= 0xC2 && c < 0xE0 ? 2
                                                      : 0;
        std::uint32_t cp = n == 4 ? c & 0x07u : n == 3 ? c & 0x0Fu : c & 0x1Fu;
        bool valid = n > 0 && i + n <= s.size();
        for (std::size_t k = 1; valid && k < n; ++k) {
            const auto b = static_cast<unsigned char>(s[i + k]);
            valid = (b & 0xC0) == 0x80;
            cp = (cp << 6) | (b & 0x3Fu);
        }
        if (!valid) {
            const std::string code = std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
            shown += code;
            name("byte " + code.substr(1) + ", not UTF-8");
            ++i;
            continue;
        }
        if (const char* what = invisible_name(cp)) {
            char code[16];
            std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(cp));
            char label[16];
            std::snprintf(label, sizeof label, "U+%04X", static_cast<unsigned>(cp));
            shown += code;
            name(std::string(label) + " " + what);
        } else {
            shown.append(s.substr(i, n));
        }
        i += n;
    }
    shown += "'";
    return names.empty() ? shown : shown + " (invisible: " + names + ")";
}

Duration parse_duration(std::string_view text) {
    static constexpr std::array<UnitScale, 9> kUnits{{{"ns", 1.0},
                                                      {"us", 1e3},
                                                      {"ms", 1e6},
                                                      {"s", 1e9},
                                                      {"min", 60e9},
                                                      {"h", 3600e9},
                                                      {"d", 86400e9},
                                                      {"w", 7 * 86400e9},
                                                      {"y", units::kSecondsPerYear * 1e9}}};
    const double ns = scaled(text, kUnits, "a duration", "30min or 2.5h",
                             "ns us ms s min h d w y");
    if (std::fabs(ns) >= 9.2e18) {
        throw UnitError(quoted(text) + " is too long (the limit is 292 years)");
    }
    return Duration::from_ns(static_cast<std::int64_t>(std::llround(ns)));
}

Bytes parse_bytes(std::string_view text) {
    static constexpr std::array<UnitScale, 11> kUnits{{{"B", 1.0},
                                                       {"KB", 1e3},
                                                       {"MB", 1e6},
                                                       {"GB", 1e9},
                                                       {"TB", 1e12},
                                                       {"PB", 1e15},
                                                       {"KiB", 1024.0},
                                                       {"MiB", 1048576.0},
                                                       {"GiB", 1073741824.0},
                                                       {"TiB", 1099511627776.0},
                                                       {"PiB", 1125899906842624.0}}};
    const double v = scaled(text, kUnits, "a size", "96GiB or 1.5TB",
                            "B KB MB GB TB PB KiB MiB GiB TiB PiB");
    return Bytes(to_integer(v, text, "bytes"));
}

Bandwidth parse_bandwidth(std::string_view text) {
    static constexpr std::array<UnitScale, 22> kUnits{{{"bps", 0.125},
                                                       {"Kbps", 125.0},
                                                       {"Mbps", 125e3},
                                                       {"Gbps", 125e6},
                                                       {"Tbps", 125e9},
                                                       {"Pbps", 125e12},
                                                       {"Kb/s", 125.0},
                                                       {"Mb/s", 125e3},
                                                       {"Gb/s", 125e6},
                                                       {"Tb/s", 125e9},
                                                       {"B/s", 1.0},
                                                       {"KB/s", 1e3},
                                                       {"MB/s", 1e6},
                                                       {"GB/s", 1e9},
                                                       {"TB/s", 1e12},
                                                       {"PB/s", 1e15},
                                                       {"KiB/s", 1024.0},
                                                       {"MiB/s", 1048576.0},
                                                       {"GiB/s", 1073741824.0},
                                                       {"TiB/s", 1099511627776.0},
                                                       {"Pb/s", 125e12},
                                                       {"b/s", 0.125}}};
    return Bandwidth::bytes_per_s(scaled(text, kUnits, "a bandwidth", "200Gbps or 2.9TB/s",
                                         "bps Kbps Mbps Gbps Tbps Pbps, B/s KB/s MB/s GB/s "
                                         "TB/s PB/s KiB/s MiB/s GiB/s TiB/s"));
}

FlopRate parse_flop_rate(std::string_view text) {
    static constexpr std::array<UnitScale, 14> kUnits{{{"FLOPS", 1.0},
                                                       {"KFLOPS", 1e3},
                                                       {"MFLOPS", 1e6},
                                                       {"GFLOPS", 1e9},
                                                       {"TFLOPS", 1e12},
                                                       {"PFLOPS", 1e15},
                                                       {"EFLOPS", 1e18},
                                                       {"FLOP/s", 1.0},
                                                       {"KFLOP/s", 1e3},
                                                       {"MFLOP/s", 1e6},
                                                       {"GFLOP/s", 1e9},
                                                       {"TFLOP/s", 1e12},
                                                       {"PFLOP/s", 1e15},
                                                       {"EFLOP/s", 1e18}}};
    return FlopRate::per_s(scaled(text, kUnits, "a compute rate", "667TFLOPS",
                                  "FLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS EFLOPS"));
}

Frequency parse_frequency(std::string_view text) {
    static constexpr std::array<UnitScale, 5> kUnits{
        {{"Hz", 1.0}, {"kHz", 1e3}, {"KHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}}};
    return Frequency::hz(scaled(text, kUnits, "a frequency", "2.4GHz", "Hz kHz MHz GHz"));
}

Money parse_money(std::string_view raw) {
    std::string_view text = trim(raw);
    const std::string expectation = "expected an amount of money such as 35.76USD or $35.76";
    if (!text.empty() && text.front() == '$') {
        text = trim(text.substr(1));
        double v = 0.0;
        std::string_view unit;
        if (!split_number(text, v, unit) || !unit.empty()) {
            throw UnitError(expectation + "; got " + quoted(raw));
        }
        return Money::usd(v);
    }
    static constexpr std::array<UnitScale, 1> kUnits{{{"USD", 1.0}}};
    return Money::usd(scaled(text, kUnits, "an amount of money", "35.76USD or $35.76", "USD"));
}

std::int64_t parse_count(std::string_view raw) {
    const std::string_view text = trim(raw);
    double value = 0.0;
    std::string_view unit;
    const std::string expectation =
        "expected a whole number such as 8192, 2.5M or 15T (suffixes K M B G T P)";
    if (text.empty()) {
        throw UnitError(expectation + "; got an empty value");
    }
    std::int64_t exact = 0;
    bool overflow = false;
    if (plain_integer(text, exact, overflow)) {
        if (overflow) {
            throw UnitError(quoted(raw) + " is too large for a count");
        }
        return exact;
    }
    if (!split_number(text, value, unit)) {
        throw UnitError(expectation + "; got " + quoted(raw));
    }
    double factor = 1.0;
    if (unit == "K") {
        factor = 1e3;
    } else if (unit == "M") {
        factor = 1e6;
    } else if (unit == "B" || unit == "G") {
        factor = 1e9;
    } else if (unit == "T") {
        factor = 1e12;
    } else if (unit == "P") {
        factor = 1e15;
    } else if (!unit.empty()) {
        throw UnitError(expectation + "; unknown suffix " + quoted(unit) + " in " + quoted(raw));
    }
    return to_integer(value * factor, raw, "a count");
}

double parse_real(std::string_view raw) {
    const std::string_view text = trim(raw);
    double value = 0.0;
    std::string_view unit;
    if (!split_number(text, value, unit)) {
        throw UnitError("expected a number such as 0.25 or 25%; got " + quoted(raw));
    }
    if (unit == "%") {
        return value / 100.0;
    }
    if (!unit.empty()) {
        throw UnitError("expected a plain number such as 0.25 or 25%; got " + quoted(raw));
    }
    return value;
}

bool parse_bool(std::string_view raw) {
    const std::string_view text = trim(raw);
    if (text == "true") {
        return true;
    }
    if (text == "false") {
        return false;
    }
    throw UnitError("expected true or false; got " + quoted(raw));
}

std::vector<double> parse_size_list(std::string_view raw) {
    const std::string_view text = trim(raw);
    std::vector<double> sizes;
    const auto colon = text.find(':');
    if (colon != std::string_view::npos) {
        const double lo = parse_bytes(text.substr(0, colon)).as_double();
        const double hi = parse_bytes(text.substr(colon + 1)).as_double();
        if (lo <= 0 || hi < lo) {
            throw UnitError("expected FIRST:LAST with 0 < FIRST <= LAST, such as 1KiB:1GiB; got " +
                            quoted(raw));
        }
        for (double s = lo; s <= hi * (1 + 1e-12); s *= 2) {
            sizes.push_back(s);
        }
        if (sizes.back() < hi * (1 - 1e-12)) {
            sizes.push_back(hi); // the range includes its last size (1KB:1GB ends at 1 GB)
        }
        return sizes;
    }
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        const double s = parse_bytes(text.substr(start, comma - start)).as_double();
        if (s <= 0) {
            throw UnitError("message sizes must be positive; got " + quoted(raw));
        }
        sizes.push_back(s);
        if (comma == std::string_view::npos) {
            return sizes;
        }
        start = comma + 1;
    }
}

} // namespace trnsim::config

namespace trnsim::config {

double parse_request_rate(std::string_view view) {
    const std::string text(view);
    const auto slash = text.find('/');
    if (slash == std::string::npos) {
        throw UnitError("a rate needs a unit: '" + text + "/s', /min or /h (as durations need "
                        "theirs)");
    }
    if (text.find('%') != std::string::npos) {
        throw UnitError("'" + text + "' is not a rate: give requests per unit of time "
                        "(20/s, 1200/min), not a percentage");
    }
    const std::string unit = text.substr(slash + 1);
    double per = 1.0;
    if (unit == "min") {
        per = 60.0;
    } else if (unit == "h") {
        per = 3600.0;
    } else if (unit != "s") {
        throw UnitError("unknown rate unit '/" + unit + "': use /s, /min or /h");
    }
    double v = 0.0;
    try {
        v = parse_real(text.substr(0, slash));
    } catch (const UnitError& err) {
        throw UnitError(std::string(err.what()) + " (a rate such as 20/s)");
    }
    const double rate = v / per;
    if (!(rate > 0.0) || !std::isfinite(rate) || rate > 1e9) {
        throw UnitError("out of range: must be > 0 and at most 1e9/s; got '" + text + "'");
    }
    return rate;
}

} // namespace trnsim::config
