"""Tests of analysis/timeline.py against a run simulation the CLI writes.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v
Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
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
