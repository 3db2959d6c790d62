"""Tests of analysis/calibration_plot.py against calibration data trnsim writes.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v

Environment: TRNSIM_SOURCE_DIR and TRNSIM_BIN as for test_summary.py.
"""

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import pandas as pd  # noqa: E402

SOURCE_DIR = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("TRNSIM_BUILD_DIR", SOURCE_DIR / "build"))
TRNSIM_BIN = Path(os.environ.get("TRNSIM_BIN", BUILD_DIR / "src" / "cli" / "trnsim"))
PLOT_PY = SOURCE_DIR / "analysis" / "calibration_plot.py"
CHIPS = SOURCE_DIR / "topologies" / "chips"
PYTHON = sys.executable or "/usr/bin/python3"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run(command):
    return subprocess.run(command, cwd=SOURCE_DIR, capture_output=True, text=True, timeout=120)


class CalibrationPlotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not TRNSIM_BIN.is_file():
            raise AssertionError(
                f"trnsim binary not found at {TRNSIM_BIN}: build the project or set TRNSIM_BIN"
            )
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-calibration-plot-")
        cls.tmp = Path(cls._tmp.name)
        # A quick calibration of trn2 written beside a copy of its chip file.
        cls.chip = cls.tmp / "trn2.yaml"
        done = run([str(TRNSIM_BIN), "calibrate", "--chip", "trn2", "--grid", "quick",
                    "-o", str(cls.chip)])
        if done.returncode != 0:
            raise AssertionError(f"trnsim calibrate exited {done.returncode}:\n{done.stderr}")
        cls.table = [line for line in done.stdout.splitlines() if ": MAPE " in line]
        cls.data = cls.tmp / "trn2.calibration.csv"

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def assert_png_with_data(self, png):
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        image = matplotlib.image.imread(png)
        self.assertGreater(image.shape[0], 500)
        self.assertGreater(image.shape[1], 500)
        # Not a blank canvas: markers and text in several colours.
        self.assertGreater(len({tuple(p) for p in image[::7, ::7].reshape(-1, image.shape[2])}), 20)

    def test_writes_a_png_of_every_class_beside_the_data(self):
        done = run([PYTHON, str(PLOT_PY), str(self.data)])
        self.assertEqual(done.returncode, 0, done.stderr)
        png = self.tmp / "trn2.calibration.png"
        self.assertEqual(done.stdout.strip(), str(png))
        self.assert_png_with_data(png)
        # The script's error table is the one trnsim calibrate printed.
        printed = [line.split(" (")[0] for line in done.stderr.splitlines()]
        self.assertEqual(printed, self.table)

    def test_the_checked_in_data_plots(self):
        for chip in ("trn2", "trn1"):
            df = pd.read_csv(CHIPS / f"{chip}.calibration.csv")
            self.assertEqual(sorted(set(df["set"])), ["held_out", "train"])
            self.assertEqual(df["class"].nunique(), 9)
            self.assertTrue(((df["detailed_s"] > 0) & (df["analytic_s"] > 0)).all())
        png = self.tmp / "trn1.png"
        done = run([PYTHON, str(PLOT_PY), str(CHIPS / "trn1.calibration.csv"), "-o", str(png),
                    "--held-out-only"])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assert_png_with_data(png)

    def test_bad_input_exits_two(self):
        not_csv = self.tmp / "chip.csv"
        not_csv.write_text(self.chip.read_text())
        wrong_columns = self.tmp / "columns.csv"
        wrong_columns.write_text("a,b\n1,2\n")
        for args, message in [
            ([str(self.tmp / "missing.csv")], "no such file"),
            ([str(not_csv)], "not calibration data"),
            ([str(wrong_columns)], "not calibration data"),
            ([str(self.data), "-o", str(self.tmp / "no" / "dir.png")], "no directory"),
        ]:
            done = run([PYTHON, str(PLOT_PY), *args])
            self.assertEqual(done.returncode, 2, args)
            self.assertIn(message, done.stderr)


if __name__ == "__main__":
    unittest.main()
