#!/usr/bin/env python3
"""The commands the documentation shows, run as shown.

In README.md and docs/*.md, a fenced code block right after a line

    <!-- runnable -->        every command line of the block (one per line; `#` comments and
                             blank lines skipped) runs with bash and must exit 0
    <!-- file: PATH -->      the block is written to PATH, as a reader saving it would
    <!-- append: PATH -->    the block is appended to PATH (a section added to a scenario)

Blocks run in document order, README.md first, in a scratch directory that holds symbolic
links to the repository's data (scenarios/, topologies/, analysis/, scripts/, data/, run.sh)
and to the build (build/), with the build's trnsim first on PATH, so outputs (results/,
report/) land in the scratch directory and never in the repository. A runnable block may
write below docs/ only through its own scratch copy: docs/ is not linked.

Usage: check_doc_commands.py SOURCE_DIR BUILD_DIR [DOC ...]   (default: README.md, docs/**/*.md)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*(runnable|file:\s*(\S+)|append:\s*(\S+))\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```")
LINKED = ["scenarios", "topologies", "analysis", "scripts", "data", "run.sh", "CMakeLists.txt",
          "cmake", "include", "src", "tests"]


def blocks(path):
    """(kind, target, text, line) for every marked block of a markdown file."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        f = FENCE.match(lines[j]) if j < len(lines) else None
        if not f:
            sys.exit(f"{path}:{i + 1}: a marker must be followed by a fenced code block")
        indent = len(f.group(1))
        k = j + 1
        body = []
        while k < len(lines) and not FENCE.match(lines[k]):
            body.append(lines[k][indent:])
            k += 1
        kind = m.group(1).split(":")[0]
        target = m.group(2) or m.group(3)
        out.append((kind, target, "\n".join(body) + "\n", j + 1))
        i = k + 1
    return out


def commands(text):
    for line in text.split("\n"):
        s = line.strip()
        if s and not s.startswith("#"):
            yield s


def main():
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = sys.argv[3:] or ["README.md"] + sorted(
        os.path.relpath(os.path.join(d, f), source)
        for d, _, fs in os.walk(os.path.join(source, "docs")) for f in fs if f.endswith(".md"))
    scratch = tempfile.mkdtemp(prefix="trnsim-doc-commands-")
    failures = 0
    ran = 0
    try:
        for name in LINKED:
            if os.path.exists(os.path.join(source, name)):
                os.symlink(os.path.join(source, name), os.path.join(scratch, name))
        os.symlink(build, os.path.join(scratch, "build"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(build, "src", "cli") + os.pathsep + env.get("PATH", "")
        env["TRNSIM_BUILD_DIR"] = build
        for doc in docs:
            for kind, target, text, line in blocks(os.path.join(source, doc)):
                where = f"{doc}:{line}"
                if kind in ("file", "append"):
                    p = os.path.join(scratch, target)
                    os.makedirs(os.path.dirname(p) or scratch, exist_ok=True)
                    with open(p, "a" if kind == "append" else "w", encoding="utf-8") as f:
                        f.write(text)
                    continue
                for cmd in commands(text):
                    start = time.monotonic()
                    r = subprocess.run(["bash", "-c", cmd], cwd=scratch, env=env,
                                       capture_output=True, text=True, timeout=300)
                    ran += 1
                    took = time.monotonic() - start
                    status = "ok" if r.returncode == 0 else f"FAILED (exit {r.returncode})"
                    print(f"{where}: {status} in {took:.1f} s: {cmd}")
                    if r.returncode != 0:
                        failures += 1
                        print("    " + (r.stdout + r.stderr).strip().replace("\n", "\n    "))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"doc commands: {ran} run, {failures} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
