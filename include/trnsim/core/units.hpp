// Strong physical quantities used across trnsim.
//
// Every quantity that carries a unit has its own type, so a byte count cannot be passed where a
// bandwidth is expected. Only the physically meaningful operators exist (Bytes / Bandwidth gives
// seconds, Flops / FlopRate gives seconds). There is no implicit conversion from a bare number.
//
// Storage:
//   Duration   int64 nanoseconds (the engine's tick; 292 years of range). Conversions from
//              seconds round up (ceil), in one place: Duration::from_seconds_ceil.
//   SimTime    int64 nanoseconds since the start of the run (a point; SimTime - SimTime is a
//              Duration).
//   Seconds    double seconds: a real-valued span for statistics and estimates (means,
//              percentiles, analytic step times, host wall time), never rounded to ticks.
//   Bytes      int64 bytes (exact: byte counts are conserved in the network model).
//   Bandwidth  double bytes per second.
//   FlopCount  double floating-point operations (a training run exceeds 2^63 FLOPs).
//   FlopRate   double FLOP per second.
//   Frequency  double hertz.
//   Money      double US dollars.
//
// Which time to use: Duration (or SimTime for a point) for simulated ticks, exact in integer
// nanoseconds; Seconds for a real-valued statistic or estimate whose value must not be rounded
// (a mean or percentile of ticks, an analytic step time, a closed form's +inf for "never").
// Seconds::of(x).seconds() is x exactly; a double goes to ticks only through
// Duration::from_seconds_ceil, where the model means to round.
//
// Parsing of unit strings ("2.9TB/s", "96GiB", "30min") lives in the config module only.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace trnsim {

/// A span of simulated time in integer nanoseconds.
class Duration {
public:
    constexpr Duration() = default;
    static constexpr Duration from_ns(std::int64_t ns) { return Duration(ns); }
    /// The single rounding rule from real seconds to ticks: round up, so a modelled completion is
    /// never earlier than the exact value. Saturates at max() (and asserts nothing: callers that
    /// can overflow check is_max()).
    static Duration from_seconds_ceil(double seconds) {
        const double ns = std::ceil(seconds * 1e9);
        if (!(ns < 9.2e18)) { // also catches NaN and +inf
            return max();
        }
        if (ns <= -9.2e18) {
            return Duration(std::numeric_limits<std::int64_t>::min());
        }
        return Duration(static_cast<std::int64_t>(ns));
    }
    static constexpr Duration zero() { return Duration(0); }
    static constexpr Duration max() { return Duration(std::numeric_limits<std::int64_t>::max()); }

    constexpr std::int64_t ns() const { return ns_; }
    constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
    constexpr bool is_max() const { return ns_ == std::numeric_limits<std::int64_t>::max(); }

    constexpr auto operator<=>(const Duration&) const = default;
    constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
    constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
    constexpr Duration& operator+=(Duration o) { ns_ += o.ns_; return *this; }
    constexpr Duration& operator-=(Duration o) { ns_ -= o.ns_; return *this; }
    constexpr Duration operator*(std::int64_t k) const { return Duration(ns_ * k); }

private:
    constexpr explicit Duration(std::int64_t ns) : ns_(ns) {}
    std::int64_t ns_ = 0;
};

/// A real-valued span in seconds (statistics and estimates; Duration holds ticks). Any double,
/// NaN and +inf included ("not estimated", "never").
class Seconds {
public:
    constexpr Seconds() = default;
    static constexpr Seconds of(double s) { return Seconds(s); }
    constexpr double seconds() const { return s_; }

    constexpr auto operator<=>(const Seconds&) const = default;
    constexpr Seconds operator+(Seconds o) const { return Seconds(s_ + o.s_); }
    constexpr Seconds operator-(Seconds o) const { return Seconds(s_ - o.s_); }
    constexpr Seconds& operator+=(Seconds o) { s_ += o.s_; return *this; }
    constexpr Seconds& operator-=(Seconds o) { s_ -= o.s_; return *this; }
    constexpr Seconds operator*(double k) const { return Seconds(s_ * k); }
    constexpr Seconds operator/(double k) const { return Seconds(s_ / k); }
    constexpr double operator/(Seconds o) const { return s_ / o.s_; }

private:
    constexpr explicit Seconds(double s) : s_(s) {}
    double s_ = 0.0;
};

/// A point in simulated time: integer nanoseconds since the start of the run.
class SimTime {
public:
    constexpr SimTime() = default;
    static constexpr SimTime from_ns(std::int64_t ns) { return SimTime(ns); }
    static constexpr SimTime zero() { return SimTime(0); }
    /// "Never": later than every reachable time.
    static constexpr SimTime max() { return SimTime(std::numeric_limits<std::int64_t>::max()); }

    constexpr std::int64_t ns() const { return ns_; }
    constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }

    constexpr auto operator<=>(const SimTime&) const = default;
    constexpr SimTime operator+(Duration d) const { return SimTime(ns_ + d.ns()); }
    constexpr SimTime operator-(Duration d) const { return SimTime(ns_ - d.ns()); }
    constexpr Duration operator-(SimTime o) const { return Duration::from_ns(ns_ - o.ns_); }

private:
    constexpr explicit SimTime(std::int64_t ns) : ns_(ns) {}
    std::int64_t ns_ = 0;
};

/// An exact number of bytes.
class Bytes {
public:
    constexpr Bytes() = default;
    constexpr explicit Bytes(std::int64_t n) : n_(n) {}
    constexpr std::int64_t count() const { return n_; }
    constexpr double as_double() const { return static_cast<double>(n_); }
    constexpr auto operator<=>(const Bytes&) const = default;
    constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
    constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
    constexpr Bytes& operator+=(Bytes o) { n_ += o.n_; return *this; }
    constexpr Bytes operator*(std::int64_t k) const { return Bytes(n_ * k); }

private:
    std::int64_t n_ = 0;
};

/// A data rate in bytes per second (bits per second are converted on parsing).
class Bandwidth {
public:
    constexpr Bandwidth() = default;
    static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
    static constexpr Bandwidth bits_per_s(double v) { return Bandwidth(v / 8.0); }
    constexpr double bytes_per_s() const { return v_; }
    constexpr double bits_per_s() const { return v_ * 8.0; }
    constexpr auto operator<=>(const Bandwidth&) const = default;
    constexpr Bandwidth operator*(double k) const { return Bandwidth(v_ * k); }
    constexpr Bandwidth operator/(double k) const { return Bandwidth(v_ / k); }
    constexpr Bandwidth operator+(Bandwidth o) const { return Bandwidth(v_ + o.v_); }

private:
    constexpr explicit Bandwidth(double v) : v_(v) {}
    double v_ = 0.0;
};

/// A number of floating-point operations.
class FlopCount {
public:
    constexpr FlopCount() = default;
    constexpr explicit FlopCount(double v) : v_(v) {}
    constexpr double value() const { return v_; }
    constexpr auto operator<=>(const FlopCount&) const = default;
    constexpr FlopCount operator+(FlopCount o) const { return FlopCount(v_ + o.v_); }
    constexpr FlopCount& operator+=(FlopCount o) { v_ += o.v_; return *this; }
    constexpr FlopCount operator*(double k) const { return FlopCount(v_ * k); }

private:
    double v_ = 0.0;
};

/// A compute rate in FLOP per second.
class FlopRate {
public:
    constexpr FlopRate() = default;
    static constexpr FlopRate per_s(double v) { return FlopRate(v); }
    constexpr double per_s() const { return v_; }
    constexpr auto operator<=>(const FlopRate&) const = default;
    constexpr FlopRate operator*(double k) const { return FlopRate(v_ * k); }
    constexpr FlopRate operator/(double k) const { return FlopRate(v_ / k); }

private:
    constexpr explicit FlopRate(double v) : v_(v) {}
    double v_ = 0.0;
};

/// A clock frequency in hertz.
class Frequency {
public:
    constexpr Frequency() = default;
    static constexpr Frequency hz(double v) { return Frequency(v); }
    constexpr double hz() const { return v_; }
    constexpr auto operator<=>(const Frequency&) const = default;

private:
    constexpr explicit Frequency(double v) : v_(v) {}
    double v_ = 0.0;
};

/// An amount of money in US dollars.
class Money {
public:
    constexpr Money() = default;
    static constexpr Money usd(double v) { return Money(v); }
    constexpr double usd() const { return v_; }
    constexpr auto operator<=>(const Money&) const = default;
    constexpr Money operator*(double k) const { return Money(v_ * k); }

private:
    constexpr explicit Money(double v) : v_(v) {}
    double v_ = 0.0;
};

/// Seconds to move `b` at rate `bw`. Returns +inf for a zero bandwidth.
inline double transfer_seconds(Bytes b, Bandwidth bw) { return b.as_double() / bw.bytes_per_s(); }
inline double transfer_seconds(double bytes, Bandwidth bw) { return bytes / bw.bytes_per_s(); }
/// Seconds to execute `f` at rate `r`.
inline double compute_seconds(FlopCount f, FlopRate r) { return f.value() / r.per_s(); }

namespace units {
inline constexpr std::int64_t kKiB = 1024;
inline constexpr std::int64_t kMiB = 1024 * kKiB;
inline constexpr std::int64_t kGiB = 1024 * kMiB;
inline constexpr std::int64_t kTiB = 1024 * kGiB;
inline constexpr std::int64_t kNsPerSecond = 1'000'000'000;
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kSecondsPerDay = 86400.0;
/// A year is the Julian year (365.25 days), the year of the SI-accepted unit "a".
inline constexpr double kSecondsPerYear = 365.25 * kSecondsPerDay;
} // namespace units

} // namespace trnsim
