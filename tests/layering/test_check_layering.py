#!/usr/bin/env python3
"""The layering check itself: on a small tree it passes when the includes, the table and the
CMake lists agree, and names the file and edge of each kind of violation."""
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layering.py")

TABLE = """# Architecture

## Modules

| module | what it holds now | may include |
|---|---|---|
| core | units | — |
| engine | events | core |
| config | specs | core, engine (event.hpp) |

## Next
"""


INCLUDES = '#include "trnsim/core/units.hpp"\n#include "trnsim/engine/event.hpp"\n'


def tree(root, files):
    for path, text in files.items():
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)


def run(files):
    with tempfile.TemporaryDirectory() as root:
        base = {
            "docs/architecture.md": TABLE,
            "src/core/CMakeLists.txt": "trnsim_add_module(core SOURCES a.cpp)\n",
            "src/core/a.cpp": "",
            "src/engine/CMakeLists.txt": "trnsim_add_module(engine PUBLIC_DEPS trnsim::core)\n",
            "include/trnsim/engine/event.hpp": '#include "trnsim/core/units.hpp"\n',
            "src/config/CMakeLists.txt":
                "trnsim_add_module(config PUBLIC_DEPS trnsim::core trnsim::engine)\n",
            "src/config/load.cpp":
                '#include "trnsim/core/units.hpp"\n#include "trnsim/engine/event.hpp"\n',
        }
        base.update(files)
        tree(root, base)
        r = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return r.returncode, r.stdout


class LayeringCheck(unittest.TestCase):
    def test_a_file_over_the_longest_allowed_is_named(self):
        code, out = run({"src/core/a.cpp": "int x;\n" * 801})
        self.assertEqual(code, 1, out)
        self.assertIn("src/core/a.cpp: 801 lines, over 800", out)
        code, out = run({"src/core/a.cpp": "int x;\n" * 800})
        self.assertEqual(code, 0, out)

    def test_a_consistent_tree_passes(self):
        code, out = run({})
        self.assertEqual(code, 0, out)
        self.assertIn("3 modules, 0 problem(s)", out)

    def test_an_edge_the_table_forbids(self):
        code, out = run({"src/engine/queue.cpp": '#include "trnsim/config/load.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertIn("src/engine/queue.cpp: engine includes trnsim/config/load.hpp", out)

    def test_a_header_outside_the_allowed_ones(self):
        code, out = run({"src/config/x.cpp": '#include "trnsim/engine/simulator.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertIn("may include only event.hpp of engine", out)

    def test_cmake_lists_must_match_the_includes(self):
        code, out = run({"src/config/CMakeLists.txt":
                         "trnsim_add_module(config PUBLIC_DEPS trnsim::engine)\n"})
        self.assertEqual(code, 1)
        self.assertIn("config includes core headers but does not list trnsim::core", out)
        code, out = run({"src/core/CMakeLists.txt":
                         "trnsim_add_module(core PUBLIC_DEPS trnsim::engine)\n"})
        self.assertIn("lists trnsim::engine, which core does not include", out)

    def test_a_cycle_in_the_table(self):
        code, out = run({"docs/architecture.md": TABLE.replace("| core | units | — |",
                                                               "| core | units | config |")})
        self.assertEqual(code, 1)
        self.assertIn("the table allows a cycle", out)

    def test_a_module_missing_from_the_table(self):
        code, out = run({"src/extra/CMakeLists.txt": "trnsim_add_module(extra)\n"})
        self.assertEqual(code, 1)
        self.assertIn("src/extra: module missing from the table", out)

    def test_deciding_what_a_domain_is_outside_the_cluster_module(self):
        decisions = [
            "const bool us = spec.cluster.ultraservers > 0;",
            "if (shape.ultraservers == 0) {",
            "const auto d = instance * shape.instances_per_ultraserver;",
            "const int ipu = chip.ultraserver->instances;",
            "auto s = make_cluster_shape(spec, 16, 4);",
        ]
        for line in decisions:
            code, out = run({"src/config/load.cpp": INCLUDES + line + "\n"})
            self.assertEqual(code, 1, line)
            self.assertIn("src/config/load.cpp:3: config", out)
            self.assertIn("1 problem(s)", out)
            self.assertIn("belong to the cluster module", out)
        # Asking the cluster module, a spares count, comments and strings are not decisions.
        asking = "\n".join([
            "const bool us = spec.cluster.counts_ultraservers();",
            "const auto n = cluster::Hierarchy::instances_per_ultraserver(chip);",
            "if (sp.spares.ultraservers > 0) {}",
            "// with ultraservers > 0 the domain is an UltraServer",
            'fail("instances_per_ultraserver must be 4");',
        ])
        code, out = run({"src/config/load.cpp": INCLUDES + asking + "\n"})
        self.assertEqual(code, 0, out)
        # The cluster module itself decides.
        code, out = run({
            "docs/architecture.md": TABLE.replace("| config | specs |",
                                                  "| cluster | domains | core |\n| config | specs |"),
            "src/cluster/CMakeLists.txt": "trnsim_add_module(cluster PUBLIC_DEPS trnsim::core)\n",
            "src/cluster/shape.cpp": '#include "trnsim/core/units.hpp"\n'
                                     "bool u(long ultraservers) { return ultraservers > 0; }\n",
        })
        self.assertEqual(code, 0, out)

    def test_reading_a_link_value_outside_the_cluster_and_config_modules(self):
        table = TABLE.replace("| config | specs |",
                              "| sim | runs | core, engine |\n| config | specs |")
        for line in ["const Duration l = chip.on_chip_latency;",
                     "auto bw = spec.chip.neuronlink_inter_instance;",
                     "return c.efa_latency + x;"]:
            code, out = run({"docs/architecture.md": table,
                             "src/sim/CMakeLists.txt": "trnsim_add_module(sim PUBLIC_DEPS "
                                                       "trnsim::core trnsim::engine)\n",
                             "src/sim/run.cpp": INCLUDES + line + "\n"})
            self.assertEqual(code, 1, line)
            self.assertIn("src/sim/run.cpp:3: sim reads a link value from the chip", out)
            self.assertIn("1 problem(s)", out)
        # config loads and checks the chip file; a parameter of that name is not a read.
        code, out = run({"src/config/load.cpp": INCLUDES +
                         "if (c.efa_latency == Duration::zero()) {}\n"
                         "void f(Duration on_chip_latency);\n"})
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
