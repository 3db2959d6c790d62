// Parsing of quantities written with units, as they appear in scenarios and on the command line.
//
//   duration    ns us ms s min h d w y          "30min", "2.5h", "6y" (y = 365.25 d)
//   bytes       B KB MB GB TB PB (powers of 1000), KiB MiB GiB TiB PiB (powers of 1024)
//   bandwidth   bits per second: bps Kbps Mbps Gbps Tbps Pbps (also Gb/s, Tb/s)
//               bytes per second: B/s KB/s MB/s GB/s TB/s PB/s KiB/s MiB/s GiB/s TiB/s
//   flop rate   FLOPS KFLOPS MFLOPS GFLOPS TFLOPS PFLOPS EFLOPS (also TFLOP/s)
//   frequency   Hz kHz MHz GHz
//   money       "35.76USD", "35.76 USD" or "$35.76"
//   count       an integer with an optional decimal suffix K M B G T P: "15T" tokens, "2.5M"
//   real        a plain number, or a percentage "20%" (= 0.2)
//
// Numbers are decimal with an optional fraction and exponent ("1.5", "2e3"); a space between
// number and unit is allowed. Unit symbols are case-sensitive (Gb is bits, GB bytes). Every
// parser throws UnitError with a message that says what was expected, with an example; the
// caller adds the key path and location.
#pragma once

#include "trnsim/core/units.hpp"

#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace trnsim::config {

class UnitError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

/// `text` in single quotes as messages show it, with what a reader cannot see escaped and
/// named after it: control characters as \xNN (\t, \r, \n), invisible or blank Unicode
/// characters (a byte order mark, zero-width and no-break spaces, word joiners, separators) as
/// \uXXXX, bytes that are not UTF-8 as \xNN: "'\ufeff5s' (U+FEFF ZERO WIDTH NO-BREAK SPACE, a
/// byte order mark, at character 1)".
std::string quote_visible(std::string_view text);

Duration parse_duration(std::string_view text);
Bytes parse_bytes(std::string_view text);
Bandwidth parse_bandwidth(std::string_view text);
FlopRate parse_flop_rate(std::string_view text);
Frequency parse_frequency(std::string_view text);
Money parse_money(std::string_view text);
std::int64_t parse_count(std::string_view text);
double parse_real(std::string_view text);
/// Requests per second from "20/s", "1200/min" or "3/h": a rate needs its unit, as a duration
/// does, is not a percentage, and lies in (0, 1e9/s].
double parse_request_rate(std::string_view text);
bool parse_bool(std::string_view text);

/// Message sizes: "1KiB:1GiB" (the first size doubled up to the last, and the last itself
/// when the doubling does not reach it exactly) or a comma list "1MB,16MB,1GB". Every size
/// must be positive.
std::vector<double> parse_size_list(std::string_view text);

} // namespace trnsim::config
