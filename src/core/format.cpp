#include "trnsim/core/format.hpp"

#include <array>
#include <cmath>
#include <cstdio>

namespace trnsim::fmt {

std::string fixed(double v, int decimals) {
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, v);
    return buf.data();
}

namespace {

/// Three significant digits: 1.23, 12.3, 123.
std::string sig3(double v) {
    const double a = std::fabs(v);
    if (a >= 99.95) {
        return fixed(v, 0);
    }
    if (a >= 9.995) {
        return fixed(v, 1);
    }
    return fixed(v, 2);
}

struct Scale {
    double factor;
    const char* suffix;
};

template <std::size_t N>
std::string scaled(double v, const std::array<Scale, N>& scales, const char* unit) {
    for (const auto& s : scales) {
        if (std::fabs(v) >= s.factor * 0.9995) {
            return sig3(v / s.factor) + " " + s.suffix + unit;
        }
    }
    return sig3(v) + " " + unit;
}

} // namespace

std::string count(double v) {
    static constexpr std::array<Scale, 5> kScales{
        {{1e15, "P"}, {1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}}};
    if (std::fabs(v) < 1e3) {
        return v == std::floor(v) ? fixed(v, 0) : sig3(v);
    }
    for (const auto& s : kScales) {
        if (std::fabs(v) >= s.factor * 0.9995) {
            return sig3(v / s.factor) + s.suffix;
        }
    }
    return sig3(v);
}

std::string bytes(double b) {
    static constexpr std::array<Scale, 5> kScales{{{1125899906842624.0, "Pi"},
                                                  {1099511627776.0, "Ti"},
                                                  {1073741824.0, "Gi"},
                                                  {1048576.0, "Mi"},
                                                  {1024.0, "Ki"}}};
    if (std::fabs(b) < 1024.0) {
        return fixed(b, 0) + " B";
    }
    return scaled(b, kScales, "B");
}

std::string bytes(Bytes b) { return bytes(b.as_double()); }

std::string bandwidth(Bandwidth bw) {
    static constexpr std::array<Scale, 4> kScales{
        {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}}};
    return scaled(bw.bytes_per_s(), kScales, "B/s");
}

std::string flop_rate(FlopRate r) {
    static constexpr std::array<Scale, 5> kScales{
        {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}}};
    return scaled(r.per_s(), kScales, "FLOP/s");
}

std::string seconds(double s) {
    const double a = std::fabs(s);
    if (a < 1e-6) {
        return sig3(s * 1e9) + " ns";
    }
    if (a < 1e-3) {
        return sig3(s * 1e6) + " us";
    }
    if (a < 1.0) {
        return sig3(s * 1e3) + " ms";
    }
    if (a < 120.0) {
        return sig3(s) + " s";
    }
    if (a < 2.0 * units::kSecondsPerHour) {
        return sig3(s / 60.0) + " min";
    }
    if (a < 2.0 * units::kSecondsPerDay) {
        return sig3(s / units::kSecondsPerHour) + " h";
    }
    return sig3(s / units::kSecondsPerDay) + " d";
}

namespace {
std::string group_digits(const std::string& digits) {
    std::string grouped;
    const auto n = digits.size();
    for (std::size_t i = 0; i < n; ++i) {
        grouped += digits[i];
        const auto left = n - 1 - i;
        if (left > 0 && left % 3 == 0) {
            grouped += ',';
        }
    }
    return grouped;
}
} // namespace

std::string integer(std::int64_t v) {
    const std::string digits = std::to_string(v < 0 ? -static_cast<std::uint64_t>(v)
                                                    : static_cast<std::uint64_t>(v));
    return (v < 0 ? "-" : "") + group_digits(digits);
}

std::string money(Money m) {
    const double v = m.usd();
    if (std::fabs(v) < 1000.0) {
        return (v < 0 ? "-$" : "$") + fixed(std::fabs(v), 2);
    }
    return std::string(v < 0 ? "-$" : "$") + group_digits(fixed(std::round(std::fabs(v)), 0));
}

std::string percent(double fraction) { return fixed(fraction * 100.0, 1) + "%"; }

} // namespace trnsim::fmt
