#!/usr/bin/python3
"""The Python module's output contract and argument checks (issue 28: DL1, DL2, UM4, UM5).

Every output aimed at every input: each command of tests/data/every-input/cases.txt run through
trnsim.run / batch / plan with output= naming each file it reads must raise trnsim.InputError
before it runs, with the command line's message, leaving every file byte-identical and writing
nothing (tests/integration/every_input_test.cpp is the command line's twin). Before, the module
wrote its HDF5 file over the scenario, sweep, plan base, trace or model file it had read.

Bad arguments (overrides that are not a dict or a list of strings, output '' or '.', threads out
of the command line's range, a NUL in an override key) raise trnsim.InputError naming the
argument, never RuntimeError or MemoryError, and before anything runs. Run by ctest with
PYTHONPATH set to the build's python/ directory."""
import os
import pathlib
import shutil
import tempfile
import unittest

import trnsim

SRC = os.path.abspath(os.environ.get("TRNSIM_SOURCE_DIR", os.getcwd()))
CASES = os.path.join(SRC, "tests", "data", "every-input")
COPIES = {"c.yaml": "topologies/chips/trn2.yaml", "ci.yaml": "topologies/chips/inf2.yaml",
          "f.yaml": "topologies/trn2-ultracluster.yaml",
          "m.yaml": "scenarios/models/llama3-8b.yaml"}
READS = "this command reads: writing there would destroy it"


def read_cases():
    cases = []
    with open(os.path.join(CASES, "cases.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                head, tail = line.split(":")
                cases.append((head.split(), tail.split()))
    return cases


class Scratch(unittest.TestCase):
    """A scratch copy of tests/data/every-input as the working directory."""

    def setUp(self):
        self.old = os.getcwd()
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        for name in os.listdir(CASES):
            shutil.copy(os.path.join(CASES, name), self.dir)
        for name, src in COPIES.items():
            shutil.copy(os.path.join(SRC, src), os.path.join(self.dir, name))
        os.chdir(self.dir)
        self.snapshot = self.contents()

    def tearDown(self):
        os.chdir(self.old)
        self.tmp.cleanup()

    def contents(self):
        out = {}
        for root, _, files in os.walk(self.dir):
            for name in files:
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    out[os.path.relpath(path, self.dir)] = f.read()
        return out

    def refused(self, call, *args, **kwargs):
        """Calls trnsim.<call>; returns the InputError after checking nothing changed."""
        with self.assertRaises(trnsim.InputError, msg=f"{call}{args}{kwargs}") as ctx:
            getattr(trnsim, call)(*args, **kwargs)
        self.assertEqual(self.contents(), self.snapshot, f"{call}{args}{kwargs} wrote a file")
        self.assertNotIn("\0", str(ctx.exception))
        return ctx.exception


class EveryInput(Scratch):
    def test_no_output_replaces_an_input(self):
        cases = read_cases()
        self.assertEqual(len(cases), 5)
        refused = 0
        for (command, file), inputs in cases:
            for target in inputs:
                for given in (target, "./" + target, pathlib.Path(self.dir, target)):
                    e = self.refused(command, file, output=given)
                    self.assertEqual(e.key_path, "output.file")
                    self.assertEqual(e.file, f"trnsim.{command}(output={given!r})")
                    self.assertIn(READS, e.message)
                    self.assertIn(f"'{os.fspath(given)}'", e.message)
                    refused += 1
        self.assertEqual(refused, 3 * 22)

    def test_each_command_writes_a_fresh_output(self):
        for (command, file), _ in read_cases():
            r = getattr(trnsim, command)(file, threads=1, output="fresh.h5")
            self.assertGreater(len(r.runs), 0)
            self.assertTrue(os.path.isfile("fresh.h5"))
            os.remove("fresh.h5")
        self.assertEqual(self.contents(), self.snapshot)

    def test_the_message_is_the_command_lines(self):
        e = self.refused("plan", "sp.yaml", output="ci.yaml")
        self.assertEqual(str(e), "trnsim.plan(output='ci.yaml'): output.file: 'ci.yaml' is the "
                                 "same file as './ci.yaml', which " + READS + "; choose "
                                 "another file")


class Arguments(Scratch):
    def test_overrides_of_the_wrong_type(self):
        for bad, text in (("seed=3", "overrides: is of type str"),
                          (3, "overrides: is of type int"),
                          ([1], "overrides: holds 1 (of type int)"),
                          (["seed"], "overrides: holds 'seed'; each override reads"),
                          ({1: 2}, "overrides: has the key 1 (of type int)"),
                          ({"seed": object()}, "overrides: the value of 'seed' is of type object")):
            e = self.refused("run", "train.yaml", bad)
            self.assertTrue(str(e).startswith("trnsim.run(): " + text), str(e))
            self.assertEqual(e.key_path, "overrides")

    def test_a_nul_in_an_override_key_is_shown(self):
        e = self.refused("run", "train.yaml", {"see\0d": 3})
        self.assertEqual(e.key_path, "see\\x00d")
        self.assertEqual(str(e), "trnsim.run() overrides (--set see\\x00d=3): see\\x00d: is not "
                                 "a key path such as workload.parallelism.tp (it holds control "
                                 "characters, shown as \\xNN)")
        e = self.refused("run", "train.yaml", ["see\0d=3"])
        self.assertIn("see\\x00d", str(e))
        e = self.refused("run", "train.yaml", {"a=b": 1})
        self.assertEqual(e.key_path, "a=b")

    def test_outputs_that_cannot_be_written(self):
        for call, file in (("run", "train.yaml"), ("batch", "sw.yaml"), ("plan", "pl.yaml")):
            e = self.refused(call, file, output="")
            self.assertIn("is empty", e.message)
            e = self.refused(call, file, output=".")
            self.assertIn("names a directory", e.message)
            e = self.refused(call, file, output=self.dir)
            self.assertIn("is a directory", e.message)
            e = self.refused(call, file, output=3)
            self.assertEqual((e.key_path, e.file), ("output", f"trnsim.{call}()"))

    def test_threads_as_the_command_line_takes_them(self):
        for call, file in (("run", "train.yaml"), ("batch", "sw.yaml"), ("plan", "pl.yaml")):
            for bad in (0, -1, 4097, 10**9, 10**30, True, 2.0, "two"):
                e = self.refused(call, file, threads=bad)
                self.assertEqual(e.key_path, "threads")
                self.assertIn("takes a number of threads from 1 to 4096 or 'auto'", e.message)
        self.assertGreater(len(trnsim.run("train.yaml", threads="auto").runs), 0)
        self.assertEqual(trnsim.run("train.yaml", threads=2).meta["threads"], 2)
        try:
            import numpy
        except ImportError:
            return
        self.assertEqual(trnsim.run("train.yaml", threads=numpy.int64(3)).meta["threads"], 3)

    def test_file_arguments(self):
        e = self.refused("run", None)
        self.assertEqual((e.key_path, e.file), ("scenario", "trnsim.run()"))
        e = self.refused("run", "train.yaml\0x")
        self.assertIn("NUL", e.message)
        self.assertGreater(len(trnsim.run(pathlib.Path("train.yaml")).runs), 0)


if __name__ == "__main__":
    unittest.main()
