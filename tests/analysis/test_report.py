"""Tests of analysis/report.py on small results files that trnsim writes: a sweep over two
axes and over four, plans with and without a feasible candidate, runs with and without
failures. Each report must hold valid PNGs with plotted data (pixels of the data series'
colours) and an HTML page whose figures read as the command line prints them: the same
strings for the step time, throughput, cost, ETTR and intervals (both use the formatter of
src/core/format.cpp, analysis/trnsim_format.py in Python), time and cost first in the wide
tables, and the closest misses when no candidate meets the constraints.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v
Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
"""

import re
import struct
import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402

from report_cases import (BATCH_PLAN, LATE_PLAN, MULTI_SWEEP, PLAN, RAW_LARGE,  # noqa: E402
                          RELIABILITY, SCIENTIFIC, SOURCE_DIR, SWEEP, Tables, cli_line,
                          run_report, trnsim)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, str(SOURCE_DIR / "analysis"))
import report  # noqa: E402
import timeline  # noqa: E402
import trnsim_format  # noqa: E402

#: The colours report.py (and timeline.py, for the failure timeline) draw data in.
DATA_COLORS = report.SERIES_COLORS[:2] + [report.FRONTIER_COLOR, timeline.PROGRESS_COLOR,
                                          timeline.COMMITTED_COLOR]


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


def check_cells(test, page):
    tables = Tables(page)
    for table in tables.tables:
        for row in table:
            for text in row:
                test.assertIsNone(SCIENTIFIC.search(text), f"scientific notation: {text!r}")
                test.assertIsNone(RAW_LARGE.search(text), f"a raw large number: {text!r}")
    return tables


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-report-")
        cls.tmp = Path(cls._tmp.name)
        for name, text in (("sweep", SWEEP), ("multi", MULTI_SWEEP), ("plan", PLAN),
                           ("batch-plan", BATCH_PLAN), ("late", LATE_PLAN)):
            (cls.tmp / f"{name}.yaml").write_text(text)
        cls.sweep = cls.tmp / "sweep.h5"
        cls.multi = cls.tmp / "multi.h5"
        cls.plan = cls.tmp / "plan.h5"
        cls.late = cls.tmp / "late.h5"
        cls.single = cls.tmp / "run.h5"
        cls.batch_plan = cls.tmp / "batch-plan.h5"
        trnsim("batch", str(cls.tmp / "sweep.yaml"), "-o", str(cls.sweep), "-q")
        trnsim("batch", str(cls.tmp / "multi.yaml"), "-o", str(cls.multi), "-q")
        cls.plan_out = trnsim("plan", str(cls.tmp / "plan.yaml"), "-o", str(cls.plan))
        cls.late_out = trnsim("plan", str(cls.tmp / "late.yaml"), "-o", str(cls.late))
        trnsim("plan", str(cls.tmp / "batch-plan.yaml"), "-o", str(cls.batch_plan), "-q")
        cls.single_out = trnsim("run", str(RELIABILITY), "-o", str(cls.single), "--set",
                                "simulation.replications=2", "--set", "workload.tokens=500B")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def check_report(self, results, expected_pngs):
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
        return page, check_cells(self, page)

    def test_sweep_report(self):
        page, tables = self.check_report(
            self.sweep, ["axes.png", "cluster_size.png", "checkpoint.png", "pareto.png"])
        self.assertIn("report-sweep", page)
        points = tables.tables[0]
        self.assertEqual(len(points) - 1, 6)  # 2 sizes x 3 intervals
        header = points[0]
        # Time to train and cost come first, then the swept keys (in their units).
        self.assertEqual(header[:4], ["point", "time to train", "cost", "ETTR"])
        interval = header.index("reliability.checkpoint.interval")
        self.assertEqual([r[interval] for r in points[1:]],
                         ["15.0 min", "60.0 min", "4.00 h"] * 2)
        # Every mean has its interval (2 replicates), the same way in every ETTR cell.
        for row in points[1:]:
            self.assertRegex(row[3], r"^\d+\.\d% \u00b1 (<?\d+\.\d%|0)$")
            self.assertIn(" \u00b1 ", row[1])

    def test_a_multi_axis_sweep_draws_small_multiples(self):
        page, tables = self.check_report(
            self.multi, ["axes.png", "cluster_size.png", "checkpoint.png", "pareto.png"])
        header = tables.tables[0][0]
        self.assertEqual(header[:3], ["point", "time to train", "cost"])
        self.assertEqual(len(tables.tables[0]) - 1, 48)
        # The random restart times in minutes with three digits, not 16.
        restart = header.index("reliability.recovery.restart")
        for row in tables.tables[0][1:]:
            self.assertRegex(row[restart], r"^\d+(\.\d+)? min$")
        # 48 points: no single line through "combinations"; the axes are listed by name.
        self.assertNotIn("combinations", page)
        self.assertIn("workload.parallelism.zero, reliability.recovery.detection", page)
        # Layout with the cluster size on x: the restart (random samples) is averaged over;
        # the interval (2 values, first in the file) gives the panels, the zip group the
        # lines (2 x 2 = 4 lines of two axes would fit in one panel too, at the limit).
        frame, keys, units, axes_of, kinds = report.batch_frame(self.multi)
        axes = report.Axes(frame, keys, units, axes_of, kinds)
        facet, lines, averaged = report.layout(axes, frame, ["cluster.ultraservers"])
        self.assertEqual(averaged, [["reliability.recovery.restart"]])
        self.assertEqual((facet, lines), (None, [["reliability.checkpoint.interval"],
                                                 ["workload.parallelism.zero",
                                                  "reliability.recovery.detection"]]))
        # With ETTR against the interval: the cluster size (3 values) and the zip group (2)
        # would be 6 lines of two axes, more than MAX_LINES_SHARED (4), so the axis with the
        # fewest values (the zip group) gives the panels and the sizes the lines.
        facet, lines, averaged = report.layout(axes, frame, ["reliability.checkpoint.interval"])
        self.assertEqual(facet, ["workload.parallelism.zero", "reliability.recovery.detection"])
        self.assertEqual(lines, [["cluster.ultraservers"]])
        # /batch/keys: the zip group is one axis.
        self.assertEqual(axes_of["workload.parallelism.zero"],
                         axes_of["reliability.recovery.detection"])
        self.assertEqual(units["reliability.checkpoint.interval"], "s")

    def test_layout_draws_up_to_max_lines_values_as_lines(self):
        """Study (b)'s shape: ETTR against the interval with 8 spare counts (MAX_LINES) gives
        8 lines, not their mean; 9 are averaged. Beside a 2-value axis the 8 cannot be panels
        (more than MAX_FACETS), so the 2-value axis gives the panels and the 8 the lines."""
        import pandas as pd

        def axes_of(columns):
            rows = [dict(zip(columns, values))
                    for values in np.array(np.meshgrid(*columns.values())).T.reshape(
                        -1, len(columns))]
            frame = pd.DataFrame(rows)
            keys = list(columns)
            return frame, report.Axes(frame, keys, {}, {k: i for i, k in enumerate(keys)})

        interval = "reliability.checkpoint.interval"
        spares = "reliability.spares.ultraservers"
        frame, axes = axes_of({interval: range(10), spares: range(8)})
        self.assertEqual(report.layout(axes, frame, [interval]), (None, [[spares]], []))
        frame, axes = axes_of({interval: range(10), spares: range(9)})
        self.assertEqual(report.layout(axes, frame, [interval]), (None, [], [[spares]]))
        zero = "workload.parallelism.zero"
        frame, axes = axes_of({interval: range(10), spares: range(8), zero: range(2)})
        self.assertEqual(report.layout(axes, frame, [interval]), ([zero], [[spares]], []))

    def test_plan_report(self):
        page, tables = self.check_report(
            self.plan,
            ["pareto.png", "cluster_size.png", "checkpoint.png", "breakdown.png", "timeline.png"])
        self.assertIn("candidates", page)
        finalists = next(t for t in tables.tables if t and t[0][:3] == ["rank", "time to train",
                                                                       "cost"])
        header = finalists[0]
        self.assertEqual(len(finalists) - 1,
                         len(report.trnsim_results.load_summary(self.plan)))
        # The parallelism with context and expert parallelism, and both chip counts named.
        i = header.index("tp")
        self.assertEqual(header[i:i + 5], ["tp", "cp", "pp", "dp", "ep"])
        self.assertIn("job chips", header)
        self.assertIn("chips with spares", header)
        # The CLI's table counts job and spare chips: its chips column is "chips with spares".
        cli_rows = [line.split() for line in self.plan_out.splitlines()
                    if re.match(r"^\s+\d+\s+\d+\s+[\d,]+\s", line)]
        self.assertEqual([r[2] for r in cli_rows],
                         [r[header.index("chips with spares")] for r in finalists[1:]])
        # The best plan as the CLI prints it: "256 UltraServers (16,384 chips) + 16 spare: 24.8
        # d, $23,115,386"; the page has the same strings.
        best = re.match(r"(.*) \+ (\d+) spare: (.*), (\$[\d,]+)$", cli_line(self.plan_out, "best"))
        self.assertIsNotNone(best)
        self.assertIn(f"Best plan: {best.group(1)} + {best.group(2)} spare", tables.page_text())
        self.assertIn(f"time to train {best.group(3)} \u00b1", tables.page_text())
        self.assertIn(f"cost {best.group(4)} \u00b1", tables.page_text())

    def test_a_plan_without_feasible_candidates_says_so(self):
        page, tables = self.check_report(self.late, ["pareto.png", "cluster_size.png"])
        text = tables.page_text()
        self.assertIn("No candidate met the constraints", text)
        self.assertIn("nothing was simulated", text)
        self.assertIn("0 feasible", text)
        # The CLI's closest misses, figure for figure:
        #   fastest    64 UltraServers (4,096 chips) + 0 spare, batch 1,024, tp 16 cp 1 pp 4
        #              dp 256: 16.9 d, $3,714,970 (estimate, misses deadline)
        for which in ("fastest", "cheapest"):
            m = re.match(r"(.*): (.*), (\$[\d,]+) \(estimate, misses (\w+)\)$",
                         cli_line(self.late_out, which))
            self.assertIsNotNone(m, which)
            row = next(r for r in tables.tables[0] if r and r[0].startswith(which))
            self.assertEqual(row[1:4], [m.group(2), m.group(3), m.group(4)])
            self.assertEqual(row[5], m.group(1))

    def test_a_plan_over_batches_draws_a_line_per_batch(self):
        out = self.tmp / "batch-plan-report"
        done = run_report(self.batch_plan, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        page = (out / "index.html").read_text()
        self.assertIn("<th title='global_batch'>batch</th>", page)
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
        page, tables = self.check_report(self.single, ["breakdown.png", "timeline.png"])
        text = tables.page_text()
        for caption in ("Plan", "Step", "Throughput", "Time and cost", "Reliability"):
            self.assertIn(f"<caption>{caption}</caption>", page)
        out = self.single_out
        # The CLI's strings: "step 16.7 s = ...", "throughput 1.00M tokens/s; MFU 24.3%, ...",
        # "training ... in 6.21 d; ... = $5,795,474", "run ... ETTR 93.0% +- 0.6%; goodput ...".
        step = cli_line(out, "step").split(" = ")[0]
        tokens, mfu = re.match(r"(\S+ tokens/s); MFU (\S+),", cli_line(out, "throughput")).groups()
        cost = cli_line(out, "training").rsplit(" = ", 1)[1]
        run = cli_line(out, "run")
        wall = re.search(r"wall (.*?);", run).group(1).replace("+-", "\u00b1")
        ettr = re.search(r"ETTR (.*?);", run).group(1).replace("+-", "\u00b1")
        goodput = re.search(r"goodput (.*)$", run).group(1).replace("+-", "\u00b1")
        rows = {r[0]: r[1] for t in tables.tables for r in t if len(r) >= 2}
        self.assertEqual(rows["step time"], step)
        self.assertEqual(rows["throughput"], tokens)
        self.assertEqual(rows["MFU"], mfu)
        self.assertEqual(rows["ETTR"], ettr)
        self.assertEqual(rows["wall time"], wall)
        self.assertEqual(rows["goodput (tokens kept)"], goodput)
        self.assertTrue(rows["cost"].startswith(cost + " \u00b1 $"), (rows["cost"], cost))
        self.assertIn(step, text)
        # Bytes in binary units, not raw integers.
        self.assertRegex(rows["HBM per rank"], r"^\d+\.\d+ GiB$")
        self.assertRegex(rows["checkpoint size"], r"^\d+(\.\d+)? [GT]iB$")
        # The interruptions by cause, with the cause names of the CLI's "interrupts" line.
        causes = next(t for t in tables.tables if t and t[0][0] == "cause")
        names = [r[0] for r in causes[1:]]
        cli_causes = re.findall(r"(\w+) [\d.]+(?:,|$)", cli_line(out, "interrupts")
                                .split("failures: ", 1)[1])
        self.assertEqual(names[:len(cli_causes)], cli_causes[:len(names)])

    def test_a_run_without_failures_has_no_timeline(self):
        plain = self.tmp / "plain.h5"
        trnsim("run", "scenarios/default.yaml", "-q", "-o", str(plain))
        out = self.tmp / "plain-report"
        self.assertEqual(run_report(plain, out).returncode, 0)
        self.assertTrue((out / "breakdown.png").is_file())
        self.assertFalse((out / "timeline.png").exists())
        page = (out / "index.html").read_text()
        self.assertNotIn("\u00b1", page)  # one run: no intervals
        self.assertNotIn("Reliability", page)
        check_cells(self, page)

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

    def test_the_cell_checks_can_fail(self):
        # The old report's cells: 5e+05 s for tokens_per_s and a raw byte count.
        for bad in ("5e+05 s", "16,296,521,472", "2147483648"):
            page = f"<table><tr><td>{bad}</td></tr></table>"
            with self.assertRaises(AssertionError):
                check_cells(self, page)
        check_cells(self, "<table><tr><td>$23,115,386</td><td>15.2 GiB</td></tr></table>")

    def test_cells_by_column_name(self):
        # Hand-written from the schema's units and the formatter's rules.
        column = trnsim_format.column
        self.assertEqual(column("tokens_per_s", 499461.9), "499K tokens/s")
        self.assertEqual(column("memory_per_rank_bytes", 16296521472), "15.2 GiB")
        self.assertEqual(column("time_to_train_s", 4036608.0), "46.7 d")
        self.assertEqual(column("checkpoint_interval_s", float("inf")), "none")
        self.assertEqual(column("cost_usd", 2887234.4), "$2,887,234")
        self.assertEqual(column("parameters", 70553706496), "70.6B")
        self.assertEqual(column("chips", 16384), "16,384")
        interval = trnsim_format.interval
        self.assertEqual(interval("ettr", 0.991, 0.006), "99.1% \u00b1 0.6%")
        self.assertEqual(interval("ettr", 0.9996, 0.0001), "100.0% \u00b1 <0.1%")
        self.assertEqual(interval("ettr", 0.999, 0.0), "99.9% \u00b1 0")
        self.assertEqual(interval("ettr", 0.999, 0.0, replicated=False), "99.9%")
        self.assertEqual(interval("goodput", 936000.0, 3870.0), "936K \u00b1 3.87K tokens/s")
        self.assertEqual(trnsim_format.swept("s", 881.1234567891234), "14.7 min")

    def test_the_frontier_helper(self):
        # (time, cost): 1 dominates 3; 0 and 2 trade off; 4 ties 2.
        t = [1.0, 3.0, 2.0, 3.5, 2.0]
        c = [5.0, 4.0, 2.0, 4.5, 2.0]
        self.assertEqual(report.frontier(t, c), [0, 2])


if __name__ == "__main__":
    unittest.main()
