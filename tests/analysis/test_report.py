"""Tests of analysis/report.py on small results files that trnsim writes: a sweep, a plan and
a run with failures. Each report must hold valid PNGs with plotted data (pixels of the data
series' colours) and an HTML page that references every image and holds the summary table.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v
Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
"""

import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402

SOURCE_DIR = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("TRNSIM_BUILD_DIR", SOURCE_DIR / "build"))
TRNSIM_BIN = Path(os.environ.get("TRNSIM_BIN", BUILD_DIR / "src" / "cli" / "trnsim"))
REPORT_PY = SOURCE_DIR / "analysis" / "report.py"
PYTHON = sys.executable or "/usr/bin/python3"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, str(SOURCE_DIR / "analysis"))
import report  # noqa: E402
import timeline  # noqa: E402

#: The colours report.py (and timeline.py, for the failure timeline) draw data in.
DATA_COLORS = report.SERIES_COLORS[:2] + [report.FRONTIER_COLOR, timeline.PROGRESS_COLOR,
                                          timeline.COMMITTED_COLOR]

RELIABILITY = SOURCE_DIR / "scenarios" / "llama3-405b-reliability.yaml"

SWEEP = f"""base: {RELIABILITY}
name: report-sweep
replications: 2
set:
  workload.tokens: 30B
  workload.parallelism: {{tp: 64, pp: 2, zero: 1, recompute: full}}
sweep:
  grid:
    cluster.ultraservers: [32, 64]
    reliability.checkpoint.interval: [15min, 1h, 4h]
"""

PLAN = f"""base: {RELIABILITY}
name: report-plan
objective: min_cost
constraints: {{deadline: 40d}}
search:
  ultraservers: [64, 128, 256]
  tp: [32, 64]
  pp: [1, 2]
  checkpoint_interval: [auto, 30min, 2h]
  spares: [4, 16]
finalists: 3
frontier: 2
replications: 2
"""

#: A plan that searches the global batch: cluster_size.png draws a line per batch.
BATCH_PLAN = f"""base: {RELIABILITY}
name: report-batch-plan
constraints: {{deadline: 40d}}
search:
  ultraservers: [64, 128, 256]
  global_batch: [1024, 2048]
  tp: [64]
  pp: [1, 2]
finalists: 1
frontier: 0
replications: 1
"""


def trnsim(*args):
    done = subprocess.run([str(TRNSIM_BIN), *args], cwd=SOURCE_DIR, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"trnsim {' '.join(args)} failed:\n{done.stdout}{done.stderr}")


def run_report(results, directory):
    return subprocess.run([PYTHON, str(REPORT_PY), str(results), "-o", str(directory)],
                          cwd=SOURCE_DIR, capture_output=True, text=True, timeout=300)


def png_size(path):
    """Width and height from the IHDR chunk; fails on anything that is not a PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path}: not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: no IHDR chunk"
    return struct.unpack(">II", data[16:24])


def series_pixels(path):
    """Pixels within a small distance of one of the data series colours."""
    image = matplotlib.image.imread(path)[..., :3]
    count = 0
    for color in DATA_COLORS:
        rgb = np.array(matplotlib.colors.to_rgb(color))
        count += int((np.abs(image - rgb).max(axis=-1) < 0.06).sum())
    return count


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-report-")
        cls.tmp = Path(cls._tmp.name)
        (cls.tmp / "sweep.yaml").write_text(SWEEP)
        (cls.tmp / "plan.yaml").write_text(PLAN)
        (cls.tmp / "batch-plan.yaml").write_text(BATCH_PLAN)
        cls.sweep = cls.tmp / "sweep.h5"
        cls.plan = cls.tmp / "plan.h5"
        cls.single = cls.tmp / "run.h5"
        trnsim("batch", str(cls.tmp / "sweep.yaml"), "-o", str(cls.sweep), "-q")
        trnsim("plan", str(cls.tmp / "plan.yaml"), "-o", str(cls.plan), "-q")
        cls.batch_plan = cls.tmp / "batch-plan.h5"
        trnsim("plan", str(cls.tmp / "batch-plan.yaml"), "-o", str(cls.batch_plan), "-q")
        trnsim("run", str(RELIABILITY), "-q", "-o", str(cls.single), "--set",
               "simulation.replications=2", "--set", "workload.tokens=500B")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def check_report(self, results, expected_pngs, table_rows):
        out = self.tmp / (results.stem + "-report")
        done = run_report(results, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        index = out / "index.html"
        self.assertTrue(index.is_file())
        page = index.read_text()
        images = re.findall(r"<img src='([^']+)'", page)
        self.assertEqual(sorted(images), sorted(expected_pngs))
        for name in expected_pngs:
            path = out / name
            self.assertTrue(path.is_file(), name)
            width, height = png_size(path)
            self.assertGreater(width, 300, name)
            self.assertGreater(height, 200, name)
            self.assertGreater(series_pixels(path), 150, f"{name}: no plotted data")
        self.assertEqual(page.count("<table>"), 1)
        self.assertEqual(page.count("<tr>") - 1, table_rows)
        return page

    def test_sweep_report(self):
        page = self.check_report(self.sweep, ["cluster_size.png", "checkpoint.png", "pareto.png"],
                                 table_rows=6)
        self.assertIn("report-sweep", page)
        self.assertIn("&plusmn;", page)  # means with their 95% intervals

    def test_plan_report(self):
        page = self.check_report(
            self.plan,
            ["pareto.png", "cluster_size.png", "checkpoint.png", "breakdown.png", "timeline.png"],
            table_rows=len(report.trnsim_results.load_summary(self.plan)))
        self.assertIn("candidates", page)
        # The finalists' parallelism, context parallelism right after tensor parallelism.
        self.assertIn("<th>tp</th><th>cp</th><th>pp</th><th>dp</th>", page)

    def test_a_plan_over_batches_draws_a_line_per_batch(self):
        out = self.tmp / "batch-plan-report"
        done = run_report(self.batch_plan, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        page = (out / "index.html").read_text()
        self.assertIn("<th>global_batch</th>", page)
        image = matplotlib.image.imread(out / "cluster_size.png")[..., :3]

        def pixels(color):
            rgb = np.array(matplotlib.colors.to_rgb(color))
            return int((np.abs(image - rgb).max(axis=-1) < 0.06).sum())

        # Batch 1,024 in the first series colour, 2,048 in the next one the finalists do not use.
        self.assertGreater(pixels(report.SERIES_COLORS[0]), 100)
        self.assertGreater(pixels(report.SERIES_COLORS[2]), 100)
        # The plan without the search draws one line, in the first colour only.
        plain = self.tmp / "plan-report" / "cluster_size.png"
        if not plain.exists():
            self.assertEqual(run_report(self.plan, plain.parent).returncode, 0)
        image = matplotlib.image.imread(plain)[..., :3]
        self.assertLess(pixels(report.SERIES_COLORS[2]), 10)

    def test_run_report(self):
        self.check_report(self.single, ["breakdown.png", "timeline.png"],
                          table_rows=len(report.trnsim_results.load_summary(self.single).columns)
                          - 1 - sum(c.startswith("ci95_") for c in
                                    report.trnsim_results.load_summary(self.single).columns))

    def test_a_run_without_failures_has_no_timeline(self):
        plain = self.tmp / "plain.h5"
        trnsim("run", "scenarios/default.yaml", "-q", "-o", str(plain))
        out = self.tmp / "plain-report"
        self.assertEqual(run_report(plain, out).returncode, 0)
        self.assertTrue((out / "breakdown.png").is_file())
        self.assertFalse((out / "timeline.png").exists())

    def test_bad_input_exits_two(self):
        missing = run_report(self.tmp / "nope.h5", self.tmp / "x")
        self.assertEqual(missing.returncode, 2)
        self.assertIn("no such file", missing.stderr)
        text = self.tmp / "not.h5"
        text.write_text("not hdf5")
        bad = run_report(text, self.tmp / "y")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("not a trnsim results file", bad.stderr)
        self.assertFalse((self.tmp / "y" / "index.html").exists())

    def test_an_empty_plot_has_no_data_pixels(self):
        # The check above must be able to fail: axes without data have no series pixels.
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 5))
        ax.set_xlabel("time to train (days)")
        ax.grid(alpha=0.3)
        path = self.tmp / "empty.png"
        fig.savefig(path, dpi=report.DPI)
        plt.close(fig)
        self.assertLess(series_pixels(path), 10)

    def test_the_frontier_helper(self):
        # (time, cost): 1 dominates 3; 0 and 2 trade off; 4 ties 2.
        t = [1.0, 3.0, 2.0, 3.5, 2.0]
        c = [5.0, 4.0, 2.0, 4.5, 2.0]
        self.assertEqual(report.frontier(t, c), [0, 2])


if __name__ == "__main__":
    unittest.main()
