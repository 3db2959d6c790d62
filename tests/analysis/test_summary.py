"""Tests of analysis/trnsim_results.py and analysis/summary.py against real trnsim output.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -v
or directly: /usr/bin/python3 tests/analysis/test_summary.py

Environment:
    TRNSIM_SOURCE_DIR  repository root (default: the repository containing this file)
    TRNSIM_BIN         the trnsim binary (default: $TRNSIM_BUILD_DIR/src/cli/trnsim, with
                       TRNSIM_BUILD_DIR defaulting to <source dir>/build)
"""

import io
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import h5py
import pandas as pd

SOURCE_DIR = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("TRNSIM_BUILD_DIR", SOURCE_DIR / "build"))
TRNSIM_BIN = Path(os.environ.get("TRNSIM_BIN", BUILD_DIR / "src" / "cli" / "trnsim"))
ANALYSIS_DIR = SOURCE_DIR / "analysis"
SUMMARY_PY = ANALYSIS_DIR / "summary.py"
PYTHON = sys.executable or "/usr/bin/python3"

sys.path.insert(0, str(ANALYSIS_DIR))
import trnsim_results  # noqa: E402

INSTANCE_HOUR_USD = 35.76  # cost.instance_hour of scenarios/default.yaml

# The default scenario doubled: 32 UltraServers = 2,048 chips = 8,192 ranks at LNC=2, with
# tp 8. At tp 8 the plan needs full recomputation to fit in HBM (with the default's selective
# recomputation stage 0 needs 29 GiB of the 24 GiB per rank and trnsim rejects the plan).
BIG_OVERRIDES = [
    "cluster.ultraservers=32",
    "workload.parallelism.tp=8",
    "workload.parallelism.recompute=full",
]


def run_trnsim(output, overrides=()):
    command = [str(TRNSIM_BIN), "run", "scenarios/default.yaml", "-q", "-o", str(output)]
    for o in overrides:
        command += ["--set", o]
    done = subprocess.run(command, cwd=SOURCE_DIR, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )


def run_summary(*args):
    return subprocess.run(
        [PYTHON, str(SUMMARY_PY), *map(str, args)],
        cwd=SOURCE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


class ResultsFilesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not TRNSIM_BIN.is_file():
            raise AssertionError(
                f"trnsim binary not found at {TRNSIM_BIN}: build the project or set TRNSIM_BIN"
            )
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-analysis-")
        tmp = Path(cls._tmp.name)
        cls.default_h5 = tmp / "default" / "default.h5"
        cls.big_h5 = tmp / "big" / "big.h5"
        run_trnsim(cls.default_h5)
        run_trnsim(cls.big_h5, BIG_OVERRIDES)
        cls.files = [cls.default_h5, cls.big_h5]
        cls.tmp = tmp

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    # --- trnsim_results -------------------------------------------------------------------

    def test_summary_one_row_per_file(self):
        frames = [trnsim_results.load_summary(f) for f in self.files]
        for f, df in zip(self.files, frames):
            self.assertEqual(len(df), 1, f)
            self.assertEqual(df.columns[0], "file")
            self.assertEqual(df["file"].iloc[0], str(f))
        df = pd.concat(frames, ignore_index=True)
        self.assertEqual(list(df["chips"]), [1024, 2048])
        self.assertEqual(list(df["ranks"]), [4096, 8192])
        self.assertEqual(list(df["tp"]), [16, 8])
        self.assertEqual(list(df["ultraservers"]), [16, 32])

    def test_summary_values_are_consistent(self):
        for f in self.files:
            row = trnsim_results.load_summary(f).iloc[0]
            with self.subTest(file=f.name):
                self.assertGreater(row["mfu"], 0.0)
                self.assertLessEqual(row["mfu"], 1.0)
                self.assertGreaterEqual(row["hfu"], row["mfu"])
                self.assertGreater(row["step_time_s"], 0.0)
                self.assertTrue(
                    math.isclose(
                        row["time_to_train_s"], row["steps"] * row["step_time_s"], rel_tol=1e-9
                    ),
                    f"time_to_train_s {row['time_to_train_s']} != steps {row['steps']} x "
                    f"step_time_s {row['step_time_s']}",
                )
                self.assertTrue(
                    math.isclose(
                        row["cost_usd"], row["instance_hours"] * INSTANCE_HOUR_USD, rel_tol=1e-9
                    ),
                    f"cost_usd {row['cost_usd']} != instance_hours {row['instance_hours']} x "
                    f"{INSTANCE_HOUR_USD}",
                )
                self.assertTrue(
                    math.isclose(
                        row["instance_hours"],
                        row["instances"] * row["time_to_train_s"] / 3600.0,
                        rel_tol=1e-9,
                    )
                )
                self.assertTrue(
                    math.isclose(
                        row["tokens_per_s"], row["tokens_per_step"] / row["step_time_s"],
                        rel_tol=1e-9,
                    )
                )
                self.assertEqual(row["tp"] * row["pp"] * row["dp"], row["ranks"])
                self.assertLessEqual(row["memory_per_rank_bytes"], row["hbm_per_rank_bytes"])

    def test_meta(self):
        meta = trnsim_results.load_meta(self.default_h5)
        self.assertEqual(meta["schema_version"], 1)
        self.assertIsInstance(meta["schema_version"], int)
        self.assertIsInstance(meta["trnsim_version"], str)
        self.assertEqual(meta["name"], "llama3-70b-16-ultraservers")
        self.assertEqual(meta["seed"], 7)
        self.assertIsInstance(meta["threads"], int)
        self.assertGreaterEqual(meta["threads"], 1)
        self.assertIsInstance(meta["scenario"], str)
        self.assertIn("llama3-70b", meta["scenario"])
        big = trnsim_results.load_meta(self.big_h5)
        self.assertIn("ultraservers: 32", big["scenario"])

    def test_other_tables(self):
        ops = trnsim_results.load_table(self.default_h5, "/step/breakdown")
        self.assertEqual(list(ops.columns), ["op", "collective", "time_per_step_s"])
        self.assertGreater(len(ops), 0)
        self.assertTrue(all(isinstance(op, str) and op and "\0" not in op for op in ops["op"]))
        self.assertTrue(set(ops["collective"]) <= {0, 1})
        self.assertTrue((ops["time_per_step_s"] >= 0).all())

        memory = trnsim_results.load_table(self.default_h5, "/plan/memory")
        summary = trnsim_results.load_summary(self.default_h5).iloc[0]
        self.assertEqual(list(memory["stage"]), list(range(summary["pp"])))
        parts = [
            "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes",
            "buffers_bytes", "reserve_bytes",
        ]
        self.assertTrue((memory[parts].sum(axis=1) == memory["total_bytes"]).all())
        self.assertEqual(memory["total_bytes"].max(), summary["memory_per_rank_bytes"])

        # One row per stage; the stages hold the model's layers between them.
        stages = trnsim_results.load_table(self.default_h5, "/plan/stages")
        self.assertEqual(list(stages["stage"]), list(range(summary["pp"])))
        self.assertTrue((stages["layers"] == stages["dense_layers"] + stages["moe_layers"]).all())
        self.assertEqual(list(stages["first_layer"]),
                         list(stages["layers"].cumsum() - stages["layers"]))
        self.assertEqual(list(stages["embedding"]), [1] + [0] * (summary["pp"] - 1))
        self.assertEqual(list(stages["head"]), [0] * (summary["pp"] - 1) + [1])
        self.assertTrue((stages["forward_s"] > 0).all())
        self.assertTrue((stages["backward_s"] > stages["forward_s"]).all())

    def test_newer_schema_version_is_refused(self):
        newer = self.tmp / "newer.h5"
        shutil.copyfile(self.default_h5, newer)
        with h5py.File(newer, "r+") as f:
            f["meta"].attrs["schema_version"] = 2
        for load in (trnsim_results.load_summary, trnsim_results.load_meta):
            with self.assertRaises(ValueError) as caught:
                load(newer)
            message = str(caught.exception)
            self.assertIn(str(newer), message)
            self.assertIn("schema_version 2", message)
            self.assertIn("(1)", message)
        done = run_summary(newer)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn(str(newer), done.stderr)

    def test_thread_count_changes_nothing_but_the_threads_attribute(self):
        # Determinism matrix for the CLI's results: 1, 2 and 4 threads give the same datasets
        # (every dataset and every /meta attribute except `threads`, which records the choice).
        def contents(path):
            out = {}
            with h5py.File(path, "r") as f:
                f.visititems(lambda name, obj: out.__setitem__(name, obj[()].tobytes()
                             if hasattr(obj[()], "tobytes") else obj[()])
                             if isinstance(obj, h5py.Dataset) else None)
                out["meta attributes"] = {k: v for k, v in f["meta"].attrs.items() if k != "threads"}
                threads = int(f["meta"].attrs["threads"])
            return out, threads

        path = self.tmp / "threads.h5"
        seen = []
        for threads in (1, 2, 4):
            run_trnsim(path, [f"simulation.threads={threads}"])
            data, recorded = contents(path)
            self.assertEqual(recorded, threads)
            seen.append(data)
            path.unlink()
        # The scenario text records the thread count too; everything else must match.
        for data in seen:
            data.pop("meta/scenario")
        self.assertEqual(seen[0], seen[1])
        self.assertEqual(seen[0], seen[2])

    def test_same_inputs_give_identical_files(self):
        # The output path is part of the stored scenario, so write the same path twice.
        first = self.tmp / "again.h5"
        run_trnsim(first)
        kept = first.read_bytes()
        first.unlink()
        run_trnsim(first)
        self.assertEqual(first.read_bytes(), kept)

    def test_not_results(self):
        not_hdf5 = self.tmp / "not-hdf5.h5"
        not_hdf5.write_text("this is not HDF5\n")
        other = self.tmp / "other.h5"
        with h5py.File(other, "w") as f:
            f["x"] = [1, 2, 3]
        for path in (not_hdf5, other):
            with self.assertRaises(trnsim_results.ResultsError):
                trnsim_results.load_summary(path)
        with self.assertRaises(FileNotFoundError):
            trnsim_results.load_summary(self.tmp / "missing.h5")

    # --- summary.py ---------------------------------------------------------------------

    def test_summary_table(self):
        done = run_summary(*self.files)
        self.assertEqual(done.returncode, 0, done.stderr)
        for f in self.files:
            self.assertIn(str(f), done.stdout)
        header = done.stdout.splitlines()[0].split()
        self.assertEqual(header[0], "file")
        self.assertIn("mfu", header)
        self.assertEqual(len(done.stdout.splitlines()), 3)
        # Human units as the CLI prints them (the same formatter), never 5e+05.
        summary = trnsim_results.load_summary(self.files[0]).iloc[0]
        sys.path.insert(0, str(SOURCE_DIR / "analysis"))
        import trnsim_format

        first = done.stdout.splitlines()[1]
        self.assertIn(trnsim_format.seconds(summary["step_time_s"]), first)
        self.assertIn(trnsim_format.count(summary["tokens_per_s"]) + " tokens/s", first)
        self.assertIn(trnsim_format.money(summary["cost_usd"]), first)
        self.assertIn(trnsim_format.percent(summary["mfu"]), first)
        self.assertNotRegex(done.stdout, r"\de[+-]\d")
        memory = run_summary(self.files[0], "--columns", "memory_per_rank_bytes")
        self.assertRegex(memory.stdout.splitlines()[1], r" \d+\.\d+ GiB$")

    def test_summary_csv(self):
        done = run_summary(*self.files, "--csv")
        self.assertEqual(done.returncode, 0, done.stderr)
        # round_trip: pandas' default float parser may miss the last bit of 17-digit values.
        df = pd.read_csv(io.StringIO(done.stdout), float_precision="round_trip")
        self.assertEqual(len(df), 2)
        self.assertEqual(df.columns[0], "file")
        self.assertEqual(list(df["file"]), [str(f) for f in self.files])
        self.assertEqual(list(df["chips"]), [1024, 2048])
        expected = pd.concat([trnsim_results.load_summary(f) for f in self.files])
        self.assertEqual(list(df["mfu"]), list(expected["mfu"]))  # full precision

    def test_summary_columns(self):
        done = run_summary(*self.files, "--csv", "--columns", "tp,dp,exposed_comm_s")
        self.assertEqual(done.returncode, 0, done.stderr)
        df = pd.read_csv(io.StringIO(done.stdout))
        self.assertEqual(list(df.columns), ["file", "tp", "dp", "exposed_comm_s"])

    def test_summary_missing_file(self):
        missing = self.tmp / "does-not-exist.h5"
        done = run_summary(self.default_h5, missing)
        self.assertEqual(done.returncode, 2)
        self.assertIn(str(missing), done.stderr)
        self.assertEqual(done.stdout, "")

    def test_summary_not_hdf5(self):
        bogus = self.tmp / "bogus.h5"
        bogus.write_text("name: not a results file\n")
        done = run_summary(bogus)
        self.assertEqual(done.returncode, 2)
        self.assertIn(str(bogus), done.stderr)
        self.assertIn("not a trnsim results file", done.stderr)

    def test_summary_unknown_column(self):
        done = run_summary(self.default_h5, "--columns", "mfu,no_such_column")
        self.assertEqual(done.returncode, 2)
        self.assertIn("no_such_column", done.stderr)
        self.assertIn("available", done.stderr)
        for column in ("step_time_s", "cost_usd", "mfu", "chips"):
            self.assertIn(column, done.stderr)

    def test_summary_help(self):
        done = run_summary("--help")
        self.assertEqual(done.returncode, 0)
        self.assertIn("--columns", done.stdout)
        self.assertIn("--csv", done.stdout)


if __name__ == "__main__":
    unittest.main()
