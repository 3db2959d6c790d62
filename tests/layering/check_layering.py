#!/usr/bin/env python3
"""The module layering, checked against its documentation.

docs/architecture.md's "Modules" table is the data: for every module its column "may include"
lists the modules whose headers it may include, a module followed by headers in parentheses
("config (scenario.hpp, study.hpp)") restricting the edge to those headers. This check reads
every `#include "trnsim/<module>/..."` in src/<m>/ and include/trnsim/<m>/ and fails on

  - an include the table does not allow (or a header outside the allowed ones),
  - a module whose CMake target (src/<m>/CMakeLists.txt) does not list exactly the trnsim::
    modules it includes,
  - a cycle in the allowed graph, or a module the table and the tree do not both know,
  - code outside the `cluster` module that decides what a scale-up domain is (DOMAIN_RULES:
    comparing an UltraServer count with zero, reading instances per UltraServer, building a
    cluster shape), or that reads a link value from the chip description outside cluster and
    config (LINK_RULES): the cluster module owns the hardware hierarchy and its link classes,
    and every other module asks it (ClusterSpec, ClusterShape, Hierarchy),
  - a source file of src/ or include/ over MAX_LINES lines (ADR 0002: a file that long holds
    more than one concern; declarative schema tables, listed in LONG_TABLES, are exempt).

Usage: check_layering.py SOURCE_DIR
"""
import os
import re
import sys

# What deciding the scale-up domain looks like in code (comments and strings aside).
DOMAIN_RULES = [
    (re.compile(r"(?<!spares\.)\bultraservers\s*(?:>|==|!=)\s*0\b"),
     "compares an UltraServer count with 0"),
    (re.compile(r"(?<!::)\binstances_per_ultraserver\b"), "reads instances per UltraServer"),
    (re.compile(r"ultraserver->instances\b"), "reads the chip's instances per UltraServer"),
    (re.compile(r"\bmake_cluster_shape\s*\("), "builds a cluster shape"),
]
DOMAIN_OWNER = "cluster"
# Reading a link value from the chip description: the cluster module turns them into its link
# classes (Hierarchy::links) and every other module asks it; config loads and checks the file.
LINK_RULES = [
    (re.compile(r"\.(neuronlink_intra_instance|neuronlink_inter_instance|neuronlink_hop_latency"
                r"|on_chip_latency|efa_latency)\b"), "reads a link value from the chip"),
]
LINK_READERS = {"cluster", "config"}
COMMENT = re.compile(r'//[^\n]*|"(?:\\.|[^"\\\n])*"')

# The longest a source file may be, and the declarative tables allowed past it (none now).
MAX_LINES = 800
LONG_TABLES = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"trnsim/(\w+)/([\w./]+)"', re.M)
DEP = re.compile(r'trnsim::(\w+)')


def read_table(path):
    """{module: {dependency: set of headers or None for any}} from the Modules table."""
    lines = open(path, encoding="utf-8").read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "## Modules")
    header = None
    table = {}
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if header is not None and table:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= set("-: "):
            continue
        module = cells[0].strip("`")
        allowed = {}
        spec = cells[header.index("may include")]
        for item in re.finditer(r"(\w+)(?:\s*\(([^)]*)\))?", spec.replace("—", "")):
            name, headers = item.group(1), item.group(2)
            allowed[name] = (set(h.strip() for h in headers.split(",")) if headers else None)
        table[module] = allowed
    if not table:
        sys.exit(f"{path}: no Modules table with a 'may include' column")
    return table


def module_sources(root, module):
    """The paths of a module's own source files (src/<m>/ and include/trnsim/<m>/)."""
    for base in (os.path.join(root, "src", module), os.path.join(root, "include", "trnsim", module)):
        for d, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith((".hpp", ".cpp", ".h")):
                    yield os.path.join(d, f)


def includes_of(root, module):
    """{dependency module: {header: first file including it}} of a module's own files."""
    found = {}
    for p in module_sources(root, module):
        for m in INCLUDE.finditer(open(p, encoding="utf-8").read()):
            if m.group(1) != module:
                found.setdefault(m.group(1), {}).setdefault(m.group(2),
                                                           os.path.relpath(p, root))
    return found


def domain_decisions(root, module):
    """[(file:line, what)] where a module other than cluster decides what a domain is, or one
    other than cluster and config reads a link value from the chip."""
    found = []
    rules = [] if module == DOMAIN_OWNER else list(DOMAIN_RULES)
    if module not in LINK_READERS:
        rules += LINK_RULES
    if not rules:
        return found
    for p in module_sources(root, module):
        for n, line in enumerate(open(p, encoding="utf-8").read().splitlines(), 1):
            code = COMMENT.sub("", line)
            for rule, what in rules:
                if rule.search(code):
                    found.append((f"{os.path.relpath(p, root)}:{n}", what))
    return found


def long_files(root, module):
    """[(file, lines)] of the module's sources over MAX_LINES, LONG_TABLES aside."""
    found = []
    for p in module_sources(root, module):
        rel = os.path.relpath(p, root)
        n = len(open(p, encoding="utf-8").read().splitlines())
        if n > MAX_LINES and rel not in LONG_TABLES:
            found.append((rel, n))
    return found


def cmake_deps(root, module):
    text = open(os.path.join(root, "src", module, "CMakeLists.txt"), encoding="utf-8").read()
    text = re.sub(r"#[^\n]*", "", text)
    return set(DEP.findall(text)) - {module}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    table = read_table(os.path.join(root, "docs", "architecture.md"))
    problems = []
    modules = sorted(d for d in os.listdir(os.path.join(root, "src"))
                     if os.path.isfile(os.path.join(root, "src", d, "CMakeLists.txt")))
    for m in modules:
        if m not in table:
            problems.append(f"src/{m}: module missing from the table in docs/architecture.md")
    for m in table:
        if m not in modules:
            problems.append(f"docs/architecture.md: module '{m}' has no src/{m}/CMakeLists.txt")
    for m in modules:
        if m not in table:
            continue
        inc = includes_of(root, m)
        for dep, headers in sorted(inc.items()):
            if dep not in table[m]:
                for h, where in sorted(headers.items()):
                    problems.append(f"{where}: {m} includes trnsim/{dep}/{h}, but the table "
                                    f"does not let {m} include {dep}")
                continue
            only = table[m][dep]
            for h, where in sorted(headers.items()):
                if only is not None and h not in only:
                    problems.append(f"{where}: {m} includes trnsim/{dep}/{h}; it may include "
                                    f"only {', '.join(sorted(only))} of {dep}")
        for where, what in domain_decisions(root, m):
            problems.append(f"{where}: {m} {what}: the hardware hierarchy and its links belong "
                            f"to the {DOMAIN_OWNER} module (ask ClusterSpec, ClusterShape or "
                            f"Hierarchy)")
        for where, n in long_files(root, m):
            problems.append(f"{where}: {n} lines, over {MAX_LINES}: split it by concern")
        linked = cmake_deps(root, m)
        for dep in sorted(set(inc) - linked):
            problems.append(f"src/{m}/CMakeLists.txt: {m} includes {dep} headers but does not "
                            f"list trnsim::{dep}")
        for dep in sorted(linked - set(inc)):
            problems.append(f"src/{m}/CMakeLists.txt: lists trnsim::{dep}, which {m} does not "
                            f"include")
    # The allowed graph has no cycle.
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in table.get(m, {}):
            if state.get(d) == 1:
                problems.append("docs/architecture.md: the table allows a cycle: " +
                                " -> ".join(path + [m, d]))
            elif d in table and state.get(d) is None:
                visit(d, path + [m])
        state[m] = 2

    for m in table:
        if state.get(m) is None:
            visit(m, [])
    for p in problems:
        print(p)
    print(f"layering: {len(modules)} modules, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
