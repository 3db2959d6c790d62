// Human-readable formatting of quantities for summaries and messages. Output is deterministic
// (fixed precision, "C" formatting, no locale).
#pragma once

#include "trnsim/core/units.hpp"

#include <string>

namespace trnsim::fmt {

/// printf-style "%.*f" without locale effects.
std::string fixed(double v, int decimals);
/// Three significant figures with an SI suffix for large counts: 8.03B, 15.0T, 512, 1.23M.
std::string count(double v);
/// An integer with thousands separators: 1,024 and 238,419.
std::string integer(std::int64_t v);
/// Binary units: 512 B, 24.0 GiB, 1.50 TiB.
std::string bytes(Bytes b);
std::string bytes(double b);
/// Decimal units per second: 25.0 GB/s, 2.90 TB/s.
std::string bandwidth(Bandwidth bw);
/// 667 TFLOP/s, 1.30 PFLOP/s.
std::string flop_rate(FlopRate r);
/// A duration in the largest fitting unit: 850 ns, 12.3 us, 4.56 ms, 1.23 s, 12.5 min, 3.40 h, 61.2 d.
std::string seconds(double s);
inline std::string duration(Duration d) { return seconds(d.seconds()); }
/// $1,234,567 (whole dollars above $1,000, cents below).
std::string money(Money m);
/// 43.2%
std::string percent(double fraction);

} // namespace trnsim::fmt
