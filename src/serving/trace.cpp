#include "trnsim/serving/trace.hpp"

#include "trnsim/core/error.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>
#include <memory>

namespace trnsim::serving {

namespace {

constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";

[[noreturn]] void fail(const std::string& name, std::int64_t line, const std::string& what) {
    throw InputError(kTraceKey, name + ":" + std::to_string(line) + ": " + what);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..12): shift the year to start
/// in March so the leap day is last, then count 146,097-day eras of 400 years.
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const std::int64_t yoe = y - era * 400;                          // [0, 399]
    const std::int64_t mp = m > 2 ? m - 3 : m + 9;                   // March = 0
    const std::int64_t doy = (153 * mp + 2) / 5 + d - 1;             // [0, 365]
    const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;  // [0, 146096]
    return era * 146097 + doe - 719468;
}

bool leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

std::int64_t days_in_month(std::int64_t y, std::int64_t m) {
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : kDays[m - 1];
}

/// `n` digits at `s` as a number, or -1 when one is not a digit.
std::int64_t digits(std::string_view s, std::size_t at, std::size_t n) {
    if (at + n > s.size()) {
        return -1;
    }
    std::int64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = s[at + i];
        if (!is_digit(c)) {
            return -1;
        }
        v = v * 10 + (c - '0');
    }
    return v;
}

/// parse_timestamp of a well-formed date outside what nanoseconds since 1970 in an int64 hold.
constexpr std::int64_t kOutOfRange = -2;

/// Nanoseconds since the epoch of `YYYY-MM-DD HH:MM:SS[.f...]`, -1 when malformed, kOutOfRange
/// when valid but before 1970-01-01 or after 2262-04-11 23:47:16.854775807.
std::int64_t parse_timestamp(std::string_view s) {
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' ||
        s[16] != ':') {
        return -1;
    }
    const std::int64_t y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
    const std::int64_t h = digits(s, 11, 2), mi = digits(s, 14, 2), se = digits(s, 17, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
        se > 59 || d > days_in_month(y, mo)) {
        return -1;
    }
    std::int64_t frac_ns = 0;
    if (s.size() > 19) {
        const std::size_t n = s.size() - 20;
        if (s[19] != '.' || n < 1 || n > 9) {
            return -1;
        }
        const std::int64_t f = digits(s, 20, n);
        if (f < 0) {
            return -1;
        }
        frac_ns = f;
        for (std::size_t i = n; i < 9; ++i) {
            frac_ns *= 10;
        }
    }
    const std::int64_t seconds = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    if (seconds < 0 || seconds > (kMax - frac_ns) / 1'000'000'000) {
        return kOutOfRange;
    }
    return seconds * 1'000'000'000 + frac_ns;
}

/// A token count: decimal digits only. Reports what is wrong with it.
std::int64_t parse_tokens(std::string_view s, const char* column, const std::string& name,
                          std::int64_t line) {
    if (s.empty()) {
        fail(name, line, std::string(column) + " is empty");
    }
    std::size_t i = 0;
    if (s[0] == '-' || s[0] == '+') {
        i = 1;
    }
    if (i == s.size()) {
        fail(name, line, std::string(column) + " '" + std::string(s) + "' is not a number");
    }
    std::int64_t v = 0;
    for (; i < s.size(); ++i) {
        if (!is_digit(s[i])) {
            fail(name, line,
                 std::string(column) + " '" + std::string(s) + "' is not a whole number");
        }
        if (v > (std::numeric_limits<std::int32_t>::max() - (s[i] - '0')) / 10) {
            fail(name, line, std::string(column) + " '" + std::string(s) + "' is too large");
        }
        v = v * 10 + (s[i] - '0');
    }
    if (s[0] == '-' && v != 0) {
        fail(name, line, std::string(column) + " " + std::string(s) + " is negative");
    }
    return v;
}

} // namespace

AzureTrace parse_azure_trace(std::string_view text, const std::string& name, double speedup) {
    if (!(speedup > 0.0) || !std::isfinite(speedup)) {
        throw InputError("workload.requests.arrival.speedup",
                         "the speed-up must be a positive number, not " + std::to_string(speedup));
    }
    AzureTrace t;
    t.file = name;
    if (text.empty()) {
        fail(name, 1, "the file is empty");
    }
    // Strip a UTF-8 byte order mark, as spreadsheet exports write one.
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {
        text.remove_prefix(3);
    }
    std::size_t pos = 0;
    std::int64_t line = 0;
    // The next line without its terminator (LF or CRLF); false at the end of the text.
    const auto next_line = [&](std::string_view& out) {
        if (pos >= text.size()) {
            return false;
        }
        const std::size_t nl = text.find('\n', pos);
        const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
        out = text.substr(pos, end - pos);
        if (!out.empty() && out.back() == '\r') {
            out.remove_suffix(1);
        }
        pos = nl == std::string_view::npos ? text.size() : nl + 1;
        ++line;
        return true;
    };

    std::string_view row;
    next_line(row);
    if (row != kHeader) {
        fail(name, 1, "the header must be '" + std::string(kHeader) + "', not '" +
                          std::string(row.substr(0, 80)) + "'");
    }
    const std::size_t estimate = text.size() / 36 + 1; // a row is about 36 bytes
    t.arrival.reserve(estimate);
    t.input_tokens.reserve(estimate);
    t.output_tokens.reserve(estimate);
    std::int64_t first = 0, previous = 0;
    while (next_line(row)) {
        if (row.empty() && pos >= text.size()) {
            break; // a last line that is only a line end
        }
        const std::size_t c1 = row.find(',');
        const std::size_t c2 = c1 == std::string_view::npos ? c1 : row.find(',', c1 + 1);
        if (c2 == std::string_view::npos) {
            fail(name, line, "expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens)");
        }
        if (row.find(',', c2 + 1) != std::string_view::npos) {
            fail(name, line, "more than 3 columns");
        }
        const std::string_view stamp = row.substr(0, c1);
        const std::int64_t ns = parse_timestamp(stamp);
        if (ns == kOutOfRange) {
            fail(name, line, "TIMESTAMP '" + std::string(stamp) +
                                 "' is a valid date outside the ones a trace can hold "
                                 "(1970-01-01 to 2262-04-11: nanoseconds since 1970 in 64 "
                                 "bits); shift the trace's dates into that range");
        }
        if (ns < 0) {
            fail(name, line, "malformed TIMESTAMP '" + std::string(stamp) +
                                 "' (expected YYYY-MM-DD HH:MM:SS.fffffff)");
        }
        const std::int64_t in = parse_tokens(row.substr(c1 + 1, c2 - c1 - 1), "ContextTokens",
                                             name, line);
        const std::int64_t out = parse_tokens(row.substr(c2 + 1), "GeneratedTokens", name, line);
        if (t.arrival.empty()) {
            first = ns;
        } else if (ns < previous) {
            fail(name, line, "TIMESTAMP " + std::string(stamp) +
                                 " is earlier than the row before (rows must be in arrival order)");
        }
        previous = ns;
        const std::int64_t rel = ns - first;
        t.arrival.push_back(Duration::from_ns(
            speedup == 1.0 ? rel : std::llround(static_cast<double>(rel) / speedup)));
        t.input_tokens.push_back(in);
        t.output_tokens.push_back(out);
    }
    if (t.arrival.empty()) {
        fail(name, line, "the trace has no requests");
    }
    return t;
}

AzureTrace read_azure_trace(const std::string& path, double speedup) {
    const auto closer = [](std::FILE* f) {
        if (f) {
            std::fclose(f);
        }
    };
    std::unique_ptr<std::FILE, decltype(closer)> f(std::fopen(path.c_str(), "rb"), closer);
    if (!f) {
        throw InputError(kTraceKey, path + ": cannot open the trace file: " +
                                        std::strerror(errno));
    }
    std::string text;
    char buffer[1 << 16];
    std::size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f.get())) > 0) {
        text.append(buffer, n);
    }
    if (std::ferror(f.get())) {
        throw InputError(kTraceKey, path + ": cannot read the trace file");
    }
    return parse_azure_trace(text, path, speedup);
}

} // namespace trnsim::serving
