#!/usr/bin/python3
"""The Python module against the command line: the same scenario gives the same numbers, bad
input raises trnsim.InputError with its location, sweeps and plans run. Run by ctest with
PYTHONPATH set to the build's python/ directory and TRNSIM_BIN to the CLI."""
import math
import os
import subprocess
import tempfile
import unittest

import h5py

import trnsim

SRC = os.path.abspath(os.environ.get("TRNSIM_SOURCE_DIR", os.getcwd()))
BIN = os.environ["TRNSIM_BIN"]
DEFAULT = os.path.join(SRC, "scenarios", "default.yaml")


def cli_summary(*args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.h5")
        subprocess.run([BIN, *args, "-o", out, "-q"], check=True, cwd=SRC)
        with h5py.File(out) as f:
            row = f["/summary"][0]
            return {n: (row[n].decode() if isinstance(row[n], bytes) else row[n].item())
                    for n in row.dtype.names}


def same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


class Run(unittest.TestCase):
    def test_the_same_summary_as_the_command_line(self):
        r = trnsim.run(DEFAULT, {"workload.parallelism.tp": 32})
        cli = cli_summary("run", DEFAULT, "--set", "workload.parallelism.tp=32")
        self.assertEqual(set(r.summary), set(cli))
        for name, value in cli.items():
            self.assertTrue(same(r.summary[name], value), f"{name}: {r.summary[name]} vs {value}")
        self.assertEqual(r.summary["tp"], 32)
        self.assertEqual(len(r.runs), 1)
        self.assertIn("/step/breakdown", r.tables)
        self.assertGreater(len(r.tables["/step/breakdown"]), 0)
        self.assertIn("tp: 32", r.scenario)

    def test_overrides_as_a_dict_or_as_strings(self):
        a = trnsim.run(DEFAULT, {"workload.parallelism": {"tp": 32, "pp": 2, "zero": 1},
                                 "cluster.ultraservers": 8})
        b = trnsim.run(DEFAULT, ["workload.parallelism={tp: 32, pp: 2, zero: 1}",
                                 "cluster.ultraservers=8"])
        self.assertEqual(a.summary["step_time_s"], b.summary["step_time_s"])
        self.assertEqual(a.summary["chips"], 512)

    def test_output_writes_the_results_file(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.h5")
            r = trnsim.run(DEFAULT, output=out)
            with h5py.File(out) as f:
                self.assertEqual(f["/summary"][0]["step_time_s"], r.summary["step_time_s"])


class Serve(unittest.TestCase):
    def test_a_serving_scenario_gives_the_command_lines_figures(self):
        path = os.path.join(SRC, "scenarios", "serving", "llama3-70b-trn2.yaml")
        r = trnsim.run(path, {"workload.requests.count": 5})
        cli = cli_summary("run", path, "--set", "workload.requests.count=5")
        self.assertEqual(set(r.summary), set(cli))
        for name, value in cli.items():
            self.assertTrue(same(r.summary[name], value), f"{name}: {r.summary[name]} vs {value}")
        self.assertEqual(r.summary["requests"], 5)
        self.assertEqual(len(r.tables["/serving/requests"]), 5)
        self.assertGreater(r.summary["cost_per_million_output_tokens_usd"], 0.0)


class Errors(unittest.TestCase):
    def test_bad_input_raises_with_its_location(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.yaml")
            with open(DEFAULT) as f:
                text = f.read().replace("tp: 16", "tp: 3")
            with open(path, "w") as f:
                f.write(text)
            with self.assertRaises(trnsim.InputError) as ctx:
                trnsim.run(path)
            e = ctx.exception
            self.assertIsInstance(e, ValueError)
            self.assertEqual(e.file, path)
            self.assertGreater(e.line, 0)
            self.assertGreater(e.column, 0)
            self.assertEqual(e.key_path, "workload.parallelism.tp")
            self.assertIn("must divide", e.message)
            self.assertTrue(str(e).startswith(f"{path}:{e.line}:{e.column}: "))

    def test_an_unknown_key_from_python_names_the_override(self):
        with self.assertRaises(trnsim.InputError) as ctx:
            trnsim.run(DEFAULT, {"workload.parallelism.tq": 8})
        self.assertIn("--set workload.parallelism.tq=8", ctx.exception.file)


class Studies(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sweep = os.path.join(self.dir.name, "s.yaml")
        with open(self.sweep, "w") as f:
            f.write(f"base: {DEFAULT}\nsweep: {{grid: {{cluster.ultraservers: [8, 16]}}}}\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_validate_says_what_each_file_is(self):
        v = trnsim.validate(DEFAULT)
        self.assertEqual(v["kind"], "scenario")
        self.assertEqual(v["chips"], 1024)
        s = trnsim.validate(self.sweep)
        self.assertEqual((s["kind"], s["points"], s["runs"]), ("sweep", 2, 2))

    def test_batch_gives_the_command_line_rows(self):
        r = trnsim.batch(self.sweep, threads=2)
        self.assertEqual(list(r.runs["chips"]), [512, 1024])
        self.assertIn("/batch/points", r.tables)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "b.h5")
            subprocess.run([BIN, "batch", self.sweep, "-o", out, "-q"], check=True)
            with h5py.File(out) as f:
                self.assertEqual(list(f["/summary"]["step_time_s"]), list(r.runs["step_time_s"]))

    def test_plan_ranks_finalists(self):
        path = os.path.join(self.dir.name, "p.yaml")
        with open(path, "w") as f:
            f.write(f"base: {DEFAULT}\nobjective: min_time\nsearch: {{tp: [16, 32], "
                    f"pp: [1, 2, 4]}}\nfinalists: 2\nfrontier: 0\n")
        r = trnsim.plan(path, threads=2)
        self.assertEqual(list(r.runs["rank"]), [1, 2])
        self.assertEqual(len(r.tables["/plan/candidates"]), 6)
        self.assertEqual(trnsim.validate(path)["candidates"], 6)

    def test_a_serving_plan_gives_the_command_lines_ranking(self):
        path = os.path.join(self.dir.name, "serve-plan.yaml")
        base = os.path.join(SRC, "scenarios", "serving", "llama3-70b-poisson.yaml")
        with open(path, "w") as f:
            f.write(f"base: {base}\nobjective: {{type: min_cost, rate: 2/s, "
                    f"slo_attainment: 0.9}}\nsearch: {{instances: [1, 2], tp: [32, 64]}}\n"
                    f"requests: 60\n")
        r = trnsim.plan(path, threads=2)
        self.assertEqual(len(r.tables["/plan/serving"]), 4)
        self.assertEqual(trnsim.validate(path)["candidates"], 4)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "p.h5")
            subprocess.run([BIN, "plan", path, "-o", out, "-q", "-j", "1"], check=True)
            with h5py.File(out) as f:
                self.assertEqual(list(f["/summary"]["candidate"]), list(r.runs["candidate"]))
                self.assertEqual(list(f["/summary"]["cost_per_hour_usd"]),
                                 list(r.runs["cost_per_hour_usd"]))
                self.assertEqual(list(f["/summary"]["slo_attainment"]),
                                 list(r.runs["slo_attainment"]))
        self.assertGreater(len(r.runs), 0)
        self.assertEqual(list(r.runs["rank"]), list(range(1, len(r.runs) + 1)))


if __name__ == "__main__":
    unittest.main()
