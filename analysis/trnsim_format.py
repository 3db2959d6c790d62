"""Human-readable quantities, exactly as the trnsim command line prints them.

The rules are those of src/core/format.cpp (trnsim::fmt), line for line, so a figure reads the
same in `trnsim run`'s summary and in an analysis/report.py page:

    seconds(0.01234)      '12.3 ms'         count(8.03e9)          '8.03B'
    seconds(2.13e6)       '24.7 d'          integer(16384)         '16,384'
    bytes(2**31)          '2.00 GiB'        money(1234567.0)       '$1,234,567'
    bandwidth(2.9e12)     '2.90 TB/s'       percent(0.931)         '93.1%'

Three significant digits (1.23, 12.3, 123) in the largest unit the value reaches (counts,
bytes and rates move up at 0.9995 of the next unit: 999.6K is '1.00M'; durations at the unit
itself, so 999.6 ms is '1000 ms'); no scientific notation; C-locale digits. NaN and infinity
come out as C's printf writes them ('nan', '-nan', 'inf'), as the C++ does.
tests/python/test_format.py checks these functions against the C++ ones (trnsim.fmt) on a
dense grid of values.
"""

import math

__all__ = ["fixed", "count", "integer", "bytes", "bandwidth", "flop_rate", "seconds",
           "money", "percent", "column", "interval", "swept"]

_SECONDS_PER_HOUR = 3600.0
_SECONDS_PER_DAY = 86400.0


#: The C++ formats into a 64-byte buffer: 63 characters at most (only numbers beyond 10^62
#: reach it).
_FIXED_MAX = 63


def fixed(v, decimals):
    """snprintf(buf, 64, "%.*f", decimals, v): correctly rounded (ties to even on the exact
    binary value, as glibc does); NaN keeps its sign bit as glibc prints it."""
    v = float(v)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return ("%.*f" % (decimals, v))[:_FIXED_MAX]


def _sig3(v):
    """Three significant digits: 1.23, 12.3, 123."""
    a = math.fabs(v)
    if a >= 99.95:
        return fixed(v, 0)
    if a >= 9.995:
        return fixed(v, 1)
    return fixed(v, 2)


def _scaled(v, scales, unit):
    for factor, suffix in scales:
        if math.fabs(v) >= factor * 0.9995:
            return _sig3(v / factor) + " " + suffix + unit
    return _sig3(v) + " " + unit


_COUNT = ((1e15, "P"), (1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
_BYTES = ((1125899906842624.0, "Pi"), (1099511627776.0, "Ti"), (1073741824.0, "Gi"),
          (1048576.0, "Mi"), (1024.0, "Ki"))
_BANDWIDTH = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"))
_FLOP_RATE = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"))


def count(v):
    """Three significant figures with an SI suffix for large counts: 8.03B, 15.0T, 512, 1.23M;
    whole numbers below 1,000 as they are."""
    v = float(v)
    if math.fabs(v) < 1e3:
        return fixed(v, 0) if v == math.floor(v) else _sig3(v)
    for factor, suffix in _COUNT:
        if math.fabs(v) >= factor * 0.9995:
            return _sig3(v / factor) + suffix
    return _sig3(v)


def _group_digits(digits):
    n = len(digits)
    out = []
    for i, ch in enumerate(digits):
        out.append(ch)
        left = n - 1 - i
        if left > 0 and left % 3 == 0:
            out.append(",")
    return "".join(out)


def integer(v):
    """An integer with thousands separators: 1,024 and -238,419."""
    v = int(v)
    return ("-" if v < 0 else "") + _group_digits(str(abs(v)))


def bytes(b):  # noqa: A001 (the C++ name)
    """Binary units: 512 B, 24.0 GiB, 1.50 TiB."""
    b = float(b)
    if math.fabs(b) < 1024.0:
        return fixed(b, 0) + " B"
    return _scaled(b, _BYTES, "B")


def bandwidth(bytes_per_s):
    """Decimal units per second: 25.0 GB/s, 2.90 TB/s."""
    return _scaled(float(bytes_per_s), _BANDWIDTH, "B/s")


def flop_rate(per_s):
    """667 TFLOP/s, 1.30 PFLOP/s."""
    return _scaled(float(per_s), _FLOP_RATE, "FLOP/s")


def seconds(s):
    """A duration in the largest fitting unit: 850 ns, 12.3 us, 4.56 ms, 1.23 s, 12.5 min,
    3.40 h, 61.2 d."""
    s = float(s)
    a = math.fabs(s)
    if a < 1e-6:
        return _sig3(s * 1e9) + " ns"
    if a < 1e-3:
        return _sig3(s * 1e6) + " us"
    if a < 1.0:
        return _sig3(s * 1e3) + " ms"
    if a < 120.0:
        return _sig3(s) + " s"
    if a < 2.0 * _SECONDS_PER_HOUR:
        return _sig3(s / 60.0) + " min"
    if a < 2.0 * _SECONDS_PER_DAY:
        return _sig3(s / _SECONDS_PER_HOUR) + " h"
    return _sig3(s / _SECONDS_PER_DAY) + " d"


def _round_half_away(a):
    """std::round of a non-negative double (halves away from zero; Python's round() would
    round them to even)."""
    if not math.isfinite(a):
        return a
    r = math.floor(a)
    return r + 1.0 if a - r >= 0.5 else r


def money(usd):
    """$1,234,567 (whole dollars from $1,000, cents below)."""
    v = float(usd)
    sign = "-$" if v < 0 else "$"
    if math.fabs(v) < 1000.0:
        return sign + fixed(math.fabs(v), 2)
    return sign + _group_digits(fixed(_round_half_away(math.fabs(v)), 0))


def percent(fraction):
    """43.2% of a fraction 0.432."""
    return fixed(float(fraction) * 100.0, 1) + "%"


# ---------------------------------------------------------------------------------------------
# Columns of the results files (docs/results-schema.md): the unit follows from the name.

#: Columns holding a fraction 0..1, shown as a percentage.
FRACTIONS = frozenset({"mfu", "hfu", "mbu", "ettr", "est_ettr", "sim_ettr", "bubble_fraction",
                       "memory_fraction", "done", "min_ettr", "hbm_headroom", "slo_attainment",
                       "kv_cache_peak_fraction", "kv_peak_fraction", "used_fraction",
                       "busy_fraction", "idle_fraction", "spare_fraction", "down_fraction"})
#: Token rates (tokens per second), shown as a count with "tokens/s".
TOKEN_RATES = frozenset({"tokens_per_s", "goodput", "sim_goodput", "est_goodput",
                         "output_tokens_per_s"})
#: Request rates (requests per second), shown as a count with "requests/s".
REQUEST_RATES = frozenset({"goodput_requests_per_s"})
#: Token counts of a serving run, shown as a count with "tokens" (6.88M tokens).
TOKEN_COUNTS = frozenset({"input_tokens", "output_tokens", "kv_capacity_tokens_per_replica"})
#: Counts large enough to read best with an SI suffix (70.6B parameters).
LARGE_COUNTS = frozenset({"parameters", "active_parameters", "tokens_per_step"})


def column_format(name):
    """(format, suffix) for a numeric column: format(v) gives the number (with its unit where
    the unit is part of the number, as 12.3 ms), the suffix is appended once after a value and
    its interval ("936K +- 3.87K tokens/s")."""
    if name in TOKEN_RATES:
        return count, " tokens/s"
    if name in REQUEST_RATES:
        return count, " requests/s"
    if name in TOKEN_COUNTS:
        return count, " tokens"
    if name in FRACTIONS:
        return percent, ""
    if name.endswith("_bytes_per_s"):
        return bandwidth, ""
    if name.endswith("_bytes"):
        return bytes, ""
    if name.endswith("_usd"):
        return money, ""
    if name.endswith("_s"):
        return seconds, ""
    if name == "instance_hours":
        return lambda v: integer(int(v)) if math.isfinite(v) else fixed(v, 0), ""
    return None, ""


def column(name, v):
    """A cell of column `name`: human units by the schema's naming (_s seconds, _bytes bytes,
    _usd dollars, fractions as percentages, token rates), whole numbers below a million with
    separators, other numbers as counts (1.23M; never scientific notation); "-" for a
    missing value (NaN, None, an empty string), "never" for an infinite duration and "none"
    for an infinite interval. A ci95_X column is in X's unit."""
    if name.startswith("ci95_"):  # an interval's half-width, in its metric's unit
        name = name[len("ci95_"):]
    if v is None:
        return "-"
    if isinstance(v, str):
        return v if v else "-"
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float) and math.isnan(v):
        return "-"
    if isinstance(v, float) and math.isinf(v) and name.endswith("_s"):
        return "none" if name.endswith("interval_s") else ("never" if v > 0 else "-never")
    form, suffix = column_format(name)
    if form is not None:
        return form(v) + suffix
    if name in LARGE_COUNTS:
        return count(v)
    # Whole numbers (a chip count, or a mean over a sweep point's runs that is one) below a
    # million with separators; others with three significant digits.
    if isinstance(v, int) or (math.isfinite(v) and v == math.floor(v) and abs(v) < 1e6):
        return integer(int(v))
    return count(v)


def _at_least(text):
    """'<0.1%' for a nonzero value that prints as '0.0%': the smallest step of the same
    format, prefixed with '<'."""
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    if not digits or any(text[i] != "0" for i in digits):
        return text
    last = digits[-1]
    return "<" + text[:last] + "1" + text[last + 1:]


def interval(name, mean, half, replicated=True, pm="\u00b1"):
    """`mean` pm `half` (a 95% half-width) in column `name`'s unit, the same way in every cell:
    with replications, every finite mean has its interval ('99.1% \u00b1 0.2%', '99.9% \u00b1 0',
    '100.0% \u00b1 <0.1%' for a nonzero half-width below the format's last digit); without,
    the mean alone. An unknown (NaN) half-width leaves the mean alone. The command line
    writes pm as '+-'."""
    text = column(name, mean)
    if not replicated or not isinstance(mean, (int, float)) or not math.isfinite(mean):
        return text
    if half is None or not isinstance(half, (int, float)) or math.isnan(half):
        return text
    form, suffix = column_format(name)
    form = form or count
    body = form(mean)
    if half == 0:
        return f"{body} {pm} 0{suffix}"
    return f"{body} {pm} {_at_least(form(abs(half)))}{suffix}"


#: Formatters of the units of /batch/keys.
_KEY_UNITS = {"s": seconds, "bytes": bytes, "B/s": bandwidth, "USD": money,
              "integer": lambda v: integer(int(round(v))), "real": count}


def swept(unit, v):
    """A swept value of /batch/points in its key's unit (/batch/keys `unit`)."""
    if isinstance(v, str):
        return v
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return "-"
    form = _KEY_UNITS.get(unit)
    if form is None:
        return integer(v) if isinstance(v, int) or float(v).is_integer() else count(v)
    if isinstance(v, float) and math.isinf(v):
        return "none" if unit == "s" else fixed(v, 0)
    return form(v)
