#!/usr/bin/python3
"""analysis/trnsim_format.py against the command line's formatters (src/core/format.cpp, as
trnsim.fmt): the same string for every value of a dense grid that walks each formatter's
rounding and unit edges (99.95, 9.995, 0.9995 times every scale, and the values a hair either
side of them), negatives, zeros of both signs, NaN of both signs and infinities. Run by ctest
with PYTHONPATH set to the build's python/ directory.

Besides the equality, a few strings are written out by hand from the rules (three
significant digits, the largest unit reached at that precision), so a change to both
implementations at once still fails here."""
import math
import os
import struct
import sys
import unittest

import trnsim

SRC = os.path.abspath(os.environ.get("TRNSIM_SOURCE_DIR", os.getcwd()))
sys.path.insert(0, os.path.join(SRC, "analysis"))
import trnsim_format as pyfmt  # noqa: E402


def neighbours(x, n=2):
    """x and the n doubles either side of it (next representable values)."""
    out = [x]
    lo = hi = x
    for _ in range(n):
        lo = math.nextafter(lo, -math.inf)
        hi = math.nextafter(hi, math.inf)
        out += [lo, hi]
    return out


def negative_nan():
    return struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]


#: Every power of ten and of 1,024 the formatters scale by, and the time units.
SCALES = ([10.0 ** e for e in range(-12, 22)] + [1024.0 ** e for e in range(0, 7)] +
          [60.0, 120.0, 3600.0, 7200.0, 86400.0, 172800.0])
#: Mantissas on either side of the precision and unit edges (0.9995 rounds up to the next
#: unit, 9.995 and 99.95 change the decimals), and ties of printf's rounding.
EDGES = [0.9995, 0.99949, 0.99951, 9.995, 9.9949, 9.9951, 99.95, 99.949, 99.951, 999.5,
         999.49, 999.51, 1.0, 1.005, 1.015, 1.025, 1.5, 2.0, 2.5, 12.345, 0.5, 0.125, 0.0005,
         0.00049, 123.456, 500.0, 1023.5, 1024.0]


def grid():
    values = [0.0, -0.0, math.inf, -math.inf, math.nan, negative_nan(), 5e-324, 1e300,
              -1e300, 2.0 ** 53, 2.0 ** 63, 0.49999999999999994, 999.999, 999.995, 1000.0,
              999.9949, 1e15 * 0.9995, 1e16, 2.1e6, 4.99e5]
    for s in SCALES:
        for m in EDGES:
            for v in neighbours(m * s, 1):
                values += [v, -v]
    # A dense sweep over the decades: 10^k x (1 + j/97).
    for k in range(-10, 19):
        for j in range(0, 97 * 9, 7):
            v = 10.0 ** k * (1.0 + j / 97.0)
            values += [v, -v]
    return values


FLOAT_FORMATTERS = ["count", "bytes", "bandwidth", "flop_rate", "seconds", "money", "percent"]


class SameAsTheCommandLine(unittest.TestCase):
    def test_every_formatter_on_the_grid(self):
        values = grid()
        self.assertGreater(len(values), 5000)
        for name in FLOAT_FORMATTERS:
            cxx, py = getattr(trnsim.fmt, name), getattr(pyfmt, name)
            mismatches = [(v, cxx(v), py(v)) for v in values if cxx(v) != py(v)]
            self.assertEqual(mismatches[:10], [], f"fmt.{name}: {len(mismatches)} differ")

    def test_fixed(self):
        for v in grid()[::3]:
            for d in (0, 1, 2, 3, 6):
                self.assertEqual(trnsim.fmt.fixed(v, d), pyfmt.fixed(v, d), (v, d))

    def test_integer(self):
        values = [0, 1, -1, 999, 1000, -1000, 999999, 1000000, 2 ** 31, 2 ** 53 + 1,
                  2 ** 63 - 1, -2 ** 63]
        values += [s * 10 ** k + d for k in range(0, 18) for d in (-1, 0, 1) for s in (1, -1)]
        for v in values:
            self.assertEqual(trnsim.fmt.integer(v), pyfmt.integer(v), v)

    def test_strings_derived_by_hand(self):
        cases = {
            ("seconds", 999.4e-6): "999 us",
            ("seconds", 9.995): "10.0 s",      # >= 9.995: one decimal; 9.99499... rounds up
            ("seconds", 119.9): "120 s",       # below 120 s stays in seconds
            ("seconds", 120.0): "2.00 min",
            ("seconds", 2.1e6): "24.3 d",      # 2,100,000 / 86,400 = 24.31
            ("seconds", -0.0125): "-12.5 ms",
            ("count", 4.99e5): "499K",         # the tokens_per_s, not "5e+05 s"
            ("count", 999.0): "999",
            ("count", 999.5e3): "1.00M",
            ("bytes", 2147483648.0): "2.00 GiB",  # hbm_reserve, not 2147483648B
            ("bytes", 1023.0): "1023 B",
            ("bandwidth", 2.9e12): "2.90 TB/s",
            ("money", 1234566.5): "$1,234,567",  # std::round: halves away from zero
            ("money", 2.5e3): "$2,500",
            ("money", -12.0): "-$12.00",
            ("percent", 0.9995): "100.0%",    # 0.9995 x 100 = 99.95000000000000284
            ("percent", 0.931): "93.1%",
        }
        for (name, v), text in cases.items():
            self.assertEqual(pyfmt.__dict__[name](v), text, (name, v))
            self.assertEqual(getattr(trnsim.fmt, name)(v), text, (name, v))

    def test_nan_and_infinity_as_printf_writes_them(self):
        self.assertEqual(pyfmt.seconds(math.inf), "inf d")
        self.assertEqual(pyfmt.percent(negative_nan()), "-nan%")
        self.assertEqual(pyfmt.count(math.inf), "infP")
        self.assertEqual(pyfmt.money(math.nan), "$nan")
        for v in (math.inf, -math.inf, math.nan, negative_nan()):
            for name in FLOAT_FORMATTERS:
                self.assertEqual(getattr(trnsim.fmt, name)(v), getattr(pyfmt, name)(v),
                                 (name, v))


if __name__ == "__main__":
    unittest.main()
