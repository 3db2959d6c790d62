"""Tests of analysis/timeline.py against a run simulation the CLI writes.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v
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
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402

SOURCE_DIR = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("TRNSIM_BUILD_DIR", SOURCE_DIR / "build"))
TRNSIM_BIN = Path(os.environ.get("TRNSIM_BIN", BUILD_DIR / "src" / "cli" / "trnsim"))
TIMELINE_PY = SOURCE_DIR / "analysis" / "timeline.py"
PYTHON = sys.executable or "/usr/bin/python3"
SCENARIO = "scenarios/llama3-405b-reliability.yaml"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

sys.path.insert(0, str(SOURCE_DIR / "analysis"))
import trnsim_results  # noqa: E402


def run(command, **kwargs):
    return subprocess.run(command, cwd=SOURCE_DIR, capture_output=True, text=True, timeout=120,
                          **kwargs)


class TimelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-timeline-")
        cls.tmp = Path(cls._tmp.name)
        cls.h5 = cls.tmp / "run.h5"
        done = run([str(TRNSIM_BIN), "run", SCENARIO, "-q", "-o", str(cls.h5),
                    "--set", "simulation.replications=2"])
        if done.returncode != 0:
            raise AssertionError(f"trnsim run failed:\n{done.stdout}{done.stderr}")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def test_the_results_hold_a_timeline_and_events(self):
        timeline = trnsim_results.load_table(self.h5, "/run/timeline")
        events = trnsim_results.load_table(self.h5, "/run/events")
        self.assertGreater(len(timeline), 100)
        self.assertTrue((timeline["time_s"].diff().dropna() >= 0).all())
        self.assertTrue((timeline["committed_s"] <= timeline["progress_s"] + 1e-9).all())
        self.assertGreater((events["kind"] == "interruption").sum(), 10)
        self.assertIn("chip", set(events["component"]))
        summary = trnsim_results.load_summary(self.h5).iloc[0]
        self.assertEqual(summary["replications"], 2)
        self.assertGreater(summary["ettr"], 0.5)
        self.assertLess(summary["ettr"], 1.0)
        self.assertGreater(summary["ci95_ettr"], 0.0)

    def test_writes_a_png_with_data(self):
        png = self.tmp / "timeline.png"
        done = run([PYTHON, str(TIMELINE_PY), str(self.h5), "-o", str(png)])
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), str(png))
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), PNG_SIGNATURE)
        image = matplotlib.image.imread(png)
        self.assertGreater(image.shape[0], 400)
        self.assertGreater(image.shape[1], 600)
        # Not a blank canvas: plenty of pixels away from white, and many distinct colours
        # (the progress lines, shaded states, failure curves of several classes).
        rgb = image[:, :, :3]
        self.assertGreater(float((rgb.sum(axis=2) < 2.5).mean()), 0.01)
        colours = np.unique((rgb * 255).astype(np.uint8).reshape(-1, 3), axis=0)
        self.assertGreater(len(colours), 50)

    def test_interruptions_are_counted_per_day_by_cause(self):
        sys.path.insert(0, str(SOURCE_DIR / "analysis"))
        import timeline

        events = trnsim_results.load_table(self.h5, "/run/events")
        causes = list(trnsim_results.load_table(self.h5, "/run/causes")["cause"])
        span = float(events["time_s"].max())
        edges, unit, rows, failures = timeline.interruptions_by_cause(events, causes, span,
                                                                      max_causes=100)
        self.assertEqual(unit, "day")  # weeks of wall time
        self.assertEqual(edges[1] - edges[0], 86400.0)
        interruptions = events[events["kind"] == "interruption"]
        # Every interruption in exactly one bin, under its cause; most first.
        self.assertEqual(sum(int(r[1].sum()) for r in rows), len(interruptions))
        for cause, counts, total in rows:
            self.assertIn(cause, causes)
            self.assertEqual(int(counts.sum()), total)
            self.assertEqual(total, int((interruptions["cause"] == cause).sum()))
        totals = [r[2] for r in rows]
        self.assertEqual(totals, sorted(totals, reverse=True))
        self.assertEqual(int(failures.sum()), int((events["kind"] == "failure").sum()))
        # Beyond 8 causes the rest are merged into one series with their total.
        edges, unit, merged, _ = timeline.interruptions_by_cause(events, causes, span)
        self.assertLessEqual(len(merged), 8)
        if len(rows) > 8:
            self.assertEqual(merged[-1][0], f"{len(rows) - 7} other causes")
            self.assertEqual(merged[-1][2], sum(r[2] for r in rows[7:]))

    def test_the_cause_names_are_those_of_the_cli(self):
        # With one replication the CLI's "interrupts" line lists the first replication's
        # interruptions by cause, most first: the same names and counts as the plot.
        sys.path.insert(0, str(SOURCE_DIR / "analysis"))
        import timeline

        h5 = self.tmp / "one.h5"
        done = run([str(TRNSIM_BIN), "run", SCENARIO, "-o", str(h5), "--set",
                    "simulation.replications=1"])
        self.assertEqual(done.returncode, 0, done.stderr)
        line = next(x for x in done.stdout.splitlines() if x.startswith("  interrupts "))
        cli = [(name, float(n)) for name, n in
               re.findall(r"(\w+) ([\d.]+)(?:,|$)", line.split("failures: ", 1)[1])]
        events = trnsim_results.load_table(h5, "/run/events")
        causes = list(trnsim_results.load_table(h5, "/run/causes")["cause"])
        _, _, rows, _ = timeline.interruptions_by_cause(events, causes,
                                                        float(events["time_s"].max()),
                                                        max_causes=100)
        self.assertEqual([(c, float(t)) for c, _, t in rows], cli)

    def test_no_red_wall_at_scale(self):
        # Over 50 interruptions the recoveries are not shaded one by one (they would cover
        # the progress panel); drawn the old way the same run turns the panel red.
        sys.path.insert(0, str(SOURCE_DIR / "analysis"))
        import timeline

        n = int((trnsim_results.load_table(self.h5, "/run/events")["kind"] ==
                 "interruption").sum())
        self.assertGreater(n, timeline.MAX_MARKED)

        def red_fraction(png):
            rgb = matplotlib.image.imread(png)[:, :, :3]
            top = rgb[: rgb.shape[0] // 2]
            red = (top[..., 0] > 0.6) & (top[..., 0] - top[..., 1] > 0.2) & (
                top[..., 0] - top[..., 2] > 0.2)
            return float(red.mean())

        now = self.tmp / "scale.png"
        timeline.plot(str(self.h5), str(now))
        old = self.tmp / "wall.png"
        kept = timeline.MAX_MARKED
        try:
            timeline.MAX_MARKED = 10 ** 9
            timeline.plot(str(self.h5), str(old))
        finally:
            timeline.MAX_MARKED = kept
        self.assertLess(red_fraction(now), 0.001, red_fraction(now))
        self.assertGreater(red_fraction(old), 0.02)

    def test_a_file_without_a_run_simulation_is_refused(self):
        plain = self.tmp / "plain.h5"
        done = run([str(TRNSIM_BIN), "run", "scenarios/default.yaml", "-q", "-o", str(plain)])
        self.assertEqual(done.returncode, 0, done.stderr)
        done = run([PYTHON, str(TIMELINE_PY), str(plain), "-o", str(self.tmp / "x.png")])
        self.assertEqual(done.returncode, 2)
        self.assertIn("no /run/timeline", done.stderr)
        self.assertFalse((self.tmp / "x.png").exists())

    def test_thread_count_changes_no_dataset(self):
        # The run simulation on 1 and 3 threads: every dataset identical byte for byte.
        import h5py

        def datasets(path):
            out = {}
            with h5py.File(path, "r") as f:
                f.visititems(lambda name, obj: out.__setitem__(name, obj[()].tobytes())
                             if isinstance(obj, h5py.Dataset) and hasattr(obj[()], "tobytes")
                             else None)
            return out

        files = []
        for threads in (1, 3):
            h5 = self.tmp / f"threads{threads}.h5"
            done = run([str(TRNSIM_BIN), "run", SCENARIO, "-q", "-o", str(h5), "--threads",
                        str(threads), "--set", "simulation.replications=2"])
            self.assertEqual(done.returncode, 0, done.stderr)
            files.append(datasets(h5))
        self.assertIn("run/events", files[0])
        self.assertEqual(files[0], files[1])

    def test_a_missing_file_is_refused(self):
        done = run([PYTHON, str(TIMELINE_PY), str(self.tmp / "none.h5")])
        self.assertEqual(done.returncode, 2)
        self.assertIn("no such file", done.stderr)


if __name__ == "__main__":
    unittest.main()
