"""The HTML reports rendered by headless Chromium (Debian package chromium), as a reader sees
them in a 1200-pixel-wide window: a run, a run with failures, a sweep, a multi-axis sweep and
plans with and without a feasible candidate.

For each page Chromium writes the rendered DOM (--dump-dom) and a screenshot of the viewport
(--screenshot, --window-size=1200,1600, no JavaScript in the pages). The tests assert that
  - the key figures are in the page text, as the command line prints them (step time, cost,
    ETTR with its interval, the best plan, "No candidate met the constraints" and the closest
    misses);
  - no cell shows scientific notation or a raw byte count (a bare integer of a million or
    more);
  - the time-to-train and cost columns are on screen: their header colours
    (report.TIME_COLOR, report.COST_COLOR) are found in the screenshot, whole, inside the
    1200-pixel viewport. A page whose table puts them after 30 other columns is checked too,
    and fails that test (so it can fail).

Chromium runs as --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
--disable-background-networking --disable-component-update --disable-sync with a fresh
--user-data-dir per page. When /usr/bin/chromium is missing the tests are skipped with the
command that installs it (./test.sh installs it when run as root; as root a missing chromium
is an error).

Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402

from report_cases import (DEFAULT, LATE_PLAN, MULTI_SWEEP, PLAN, RAW_LARGE,  # noqa: E402
                          RELIABILITY, SCIENTIFIC, SOURCE_DIR, Tables, cli_line, run_report,
                          trnsim)

sys.path.insert(0, str(SOURCE_DIR / "analysis"))
import report  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1200, 1600

#: One axis: the cluster size, 2 replications per point.
SWEEP = f"""base: {RELIABILITY}
name: browser-sweep
replications: 2
set:
  workload.tokens: 20B
sweep:
  grid:
    cluster.ultraservers: [16, 32, 64]
"""


def render(page, out_dir):
    """(DOM text, screenshot path) of an HTML file rendered in a WIDTH x HEIGHT viewport."""
    png = Path(out_dir) / (Path(page).parent.name + ".png")
    with tempfile.TemporaryDirectory(prefix="trnsim-chromium-") as profile:
        done = subprocess.run(
            [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
             "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}", "--dump-dom",
             f"--screenshot={png}", Path(page).resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not png.is_file():
        raise AssertionError(f"chromium failed on {page}:\n{done.stderr[-2000:]}")
    return done.stdout, png


def color_columns(png, color):
    """The x ranges (first, last pixel column) where the colour covers a run of at least 20
    pixels of some row of the screenshot: where a header of that colour is on screen."""
    image = matplotlib.image.imread(png)[..., :3]
    rgb = np.array(matplotlib.colors.to_rgb(color))
    mask = np.abs(image - rgb).max(axis=-1) < 0.02
    ranges = []
    for row in mask[np.where(mask.sum(axis=1) >= 20)[0]]:
        xs = np.where(row)[0]
        # Split the row into runs of consecutive pixels.
        breaks = np.where(np.diff(xs) > 1)[0]
        starts = np.concatenate(([xs[0]], xs[breaks + 1]))
        ends = np.concatenate((xs[breaks], [xs[-1]]))
        ranges += [(int(a), int(b)) for a, b in zip(starts, ends) if b - a >= 19]
    return sorted(set(ranges)), image.shape[1]


@unittest.skipUnless(CHROMIUM.exists() or os.geteuid() == 0,
                     "chromium is not installed: apt-get install chromium (./test.sh installs "
                     "it when run as root)")
class BrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not CHROMIUM.exists():
            raise AssertionError("/usr/bin/chromium is missing although this runs as root: "
                                 "scripts/setup.sh installs it (Debian package chromium)")
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-browser-")
        cls.tmp = Path(cls._tmp.name)
        t = cls.tmp
        for name, text in (("sweep", SWEEP), ("multi", MULTI_SWEEP), ("plan", PLAN),
                           ("late", LATE_PLAN)):
            (t / f"{name}.yaml").write_text(text)
        cls.out = {
            "run": trnsim("run", str(DEFAULT), "-o", str(t / "run.h5")),
            "failures": trnsim("run", str(RELIABILITY), "-o", str(t / "failures.h5"), "--set",
                               "simulation.replications=3", "--set", "workload.tokens=500B"),
            "sweep": trnsim("batch", str(t / "sweep.yaml"), "-o", str(t / "sweep.h5"), "-q"),
            "multi": trnsim("batch", str(t / "multi.yaml"), "-o", str(t / "multi.h5"), "-q"),
            "plan": trnsim("plan", str(t / "plan.yaml"), "-o", str(t / "plan.h5")),
            "late": trnsim("plan", str(t / "late.yaml"), "-o", str(t / "late.h5")),
        }
        cls.pages = {}
        for name in cls.out:
            done = run_report(t / f"{name}.h5", t / name)
            if done.returncode != 0:
                raise AssertionError(f"report.py {name}.h5 failed:\n{done.stderr}")
            dom, png = render(t / name / "index.html", t)
            cls.pages[name] = (Tables(dom), png)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def text(self, name):
        return self.pages[name][0].page_text()

    def assert_cells_readable(self, name):
        tables = self.pages[name][0]
        self.assertTrue(tables.tables, f"{name}: no table rendered")
        for table in tables.tables:
            for row in table:
                for cell in row:
                    self.assertIsNone(SCIENTIFIC.search(cell), f"{name}: {cell!r}")
                    self.assertIsNone(RAW_LARGE.search(cell), f"{name}: {cell!r}")

    def assert_time_and_cost_on_screen(self, name):
        png = self.pages[name][1]
        for what, color in (("time to train", report.TIME_COLOR),
                            ("cost", report.COST_COLOR)):
            ranges, width = color_columns(png, color)
            self.assertEqual(width, WIDTH)
            self.assertTrue(ranges, f"{name}: the {what} column is not on screen")
            # Whole: neither cut at the viewport's right edge nor scrolled off to the left.
            for first, last in ranges:
                self.assertGreater(first, 0, name)
                self.assertLess(last, WIDTH - 1, name)

    def test_a_run(self):
        out, text = self.out["run"], self.text("run")
        step = cli_line(out, "step").split(" = ")[0]
        cost = cli_line(out, "training").rsplit(" = ", 1)[1]
        tokens = cli_line(out, "throughput").split(";")[0]
        for figure in (f"step time {step}", f"cost {cost}", f"throughput {tokens}"):
            self.assertIn(figure, text)
        self.assertIn("HBM per rank 24.0 GiB", text)
        self.assert_cells_readable("run")
        self.assert_time_and_cost_on_screen("run")

    def test_a_run_with_failures(self):
        out, text = self.out["failures"], self.text("failures")
        run = cli_line(out, "run")
        ettr = re.search(r"ETTR (.*?);", run).group(1).replace("+-", "\u00b1")
        wall = re.search(r"wall (.*?);", run).group(1).replace("+-", "\u00b1")
        self.assertIn(f"ETTR {ettr}", text)
        self.assertIn(f"wall time {wall}", text)
        self.assertIn("Interruptions by cause", text)
        first_cause = cli_line(out, "interrupts").split("failures: ", 1)[1].split(" ")[0]
        self.assertIn(first_cause, text)
        self.assert_cells_readable("failures")
        self.assert_time_and_cost_on_screen("failures")

    def test_a_sweep(self):
        text = self.text("sweep")
        self.assertIn("Sweep of 3 points", text)
        self.assertIn("6 runs (2 per point", text)
        points = self.pages["sweep"][0].tables[0]
        self.assertEqual(points[0][:3], ["point", "time to train", "cost"])
        for row in points[1:]:
            self.assertRegex(row[1], r"^\d+(\.\d+)? [dh] \u00b1 ")
            self.assertRegex(row[2], r"^\$[\d,]+(\.\d\d)? \u00b1 \$")
        self.assert_cells_readable("sweep")
        self.assert_time_and_cost_on_screen("sweep")

    def test_a_multi_axis_sweep(self):
        text = self.text("multi")
        self.assertIn("Sweep of 48 points", text)
        self.assertIn("(random samples)", text)
        self.assertNotIn("combinations", text)
        self.assert_cells_readable("multi")
        self.assert_time_and_cost_on_screen("multi")

    def test_a_plan(self):
        out, text = self.out["plan"], self.text("plan")
        best = re.match(r"(.*) \+ (\d+) spare: (.*), (\$[\d,]+)$", cli_line(out, "best"))
        self.assertIn(f"Best plan: {best.group(1)} + {best.group(2)} spare", text)
        self.assertIn(f"time to train {best.group(3)}", text)
        self.assertIn(f"cost {best.group(4)}", text)
        self.assert_cells_readable("plan")
        self.assert_time_and_cost_on_screen("plan")

    def test_a_plan_without_a_feasible_candidate(self):
        out, text = self.out["late"], self.text("late")
        self.assertIn("No candidate met the constraints", text)
        for which in ("fastest", "cheapest"):
            config, time, cost = re.match(r"(.*): (.*), (\$[\d,]+) \(estimate",
                                          cli_line(out, which)).groups()
            self.assertIn(f"{which} {time} {cost} deadline", text)
            self.assertIn(config, text)
        self.assert_cells_readable("late")
        self.assert_time_and_cost_on_screen("late")

    def test_the_screen_check_can_fail(self):
        # 30 columns before time to train and cost: they are scrolled out of the 1200-px view.
        rows = [{f"c{i}": 123456.0 + i for i in range(30)} | {"time_to_train_s": 2.1e6,
                                                              "cost_usd": 2.5e6}]
        columns = [report.Column(f"c{i}", header=f"column number {i}") for i in range(30)]
        columns += [report.Column("time_to_train_s", header="time to train"),
                    report.Column("cost_usd", header="cost")]
        page = self.tmp / "wide" / "index.html"
        page.parent.mkdir(exist_ok=True)
        page.write_text("<!DOCTYPE html><html><head><style>" +
                        report.STYLE.replace("TIME_COLOR", report.TIME_COLOR)
                        .replace("COST_COLOR", report.COST_COLOR) + "</style></head><body>" +
                        report.html_table(rows, columns) + "</body></html>")
        dom, png = render(page, self.tmp)
        self.assertIn("24.3 d", Tables(dom).page_text())  # in the DOM, but off screen
        self.pages["wide"] = (Tables(dom), png)
        with self.assertRaises(AssertionError):
            self.assert_time_and_cost_on_screen("wide")


if __name__ == "__main__":
    unittest.main()
