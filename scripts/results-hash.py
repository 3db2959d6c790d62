#!/usr/bin/python3
"""Hash the results of every scenario, sweep and plan under scenarios/, for refactors.

A refactor proves itself by identical results before and after. This script runs the trnsim
binary it is given on every runnable file under scenarios/ (scenarios with `trnsim run`, sweeps
with `trnsim batch`, plans with `trnsim plan`; model presets and study bases are skipped) and
prints one line per file: the file, then a SHA-256 over every dataset of its results file, dataset
by dataset in name order; in /meta/scenario (the resolved scenario) the lines naming the output
files and the thread count are left out, since they differ between two checkouts by design. Run it on two builds and
diff the outputs:

    scripts/results-hash.py build/src/cli/trnsim > after.txt
    scripts/results-hash.py /tmp/before/trnsim > before.txt
    diff before.txt after.txt

Options: --skip REGEX leaves out files whose path matches (the long studies, say); --threads N
passes `--threads N` to every run (results must not depend on it); --out DIR keeps the results
files there (default: a temporary directory). Needs h5py and numpy.
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Lines of the resolved scenario (/meta/scenario) that name where the output went or how many
# threads ran, not what was simulated.
META_LINE = re.compile(r"^\s*(file|trace|threads):")


def kind_of(path):
    """run, batch, plan, or None for a file that is not run on its own."""
    text = open(path, encoding="utf-8").read()
    keys = set(re.findall(r"^([a-z_]+):", text, re.M))
    if "sweep" in keys:
        return "batch"
    if "search" in keys or "objective" in keys:
        return "plan"
    if keys & {"workload", "tenants", "fleet"}:
        return "run"
    return None


def digest(h5path):
    h = hashlib.sha256()

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        h.update(name.encode())
        data = obj[()]
        if name == "meta/scenario" or name.endswith("/scenario"):  # also a tenant's
            text = data.decode() if isinstance(data, bytes) else str(data)
            data = "\n".join(l for l in text.splitlines() if not META_LINE.match(l))
        if isinstance(data, np.ndarray):
            h.update(str(data.dtype).encode())
            h.update(np.ascontiguousarray(data).tobytes())
        else:
            h.update(repr(data).encode())

    with h5py.File(h5path, "r") as f:
        f.visititems(visit)
    return h.hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trnsim")
    ap.add_argument("--skip", default=None)
    ap.add_argument("--only", default=None, help="run only files whose path matches")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="trnsim-hash-")
    files = []
    for d, _, names in os.walk(os.path.join(ROOT, "scenarios")):
        for n in names:
            if n.endswith(".yaml"):
                files.append(os.path.relpath(os.path.join(d, n), ROOT))
    failures = 0
    for rel in sorted(files):
        if args.skip and re.search(args.skip, rel):
            continue
        if args.only and not re.search(args.only, rel):
            continue
        kind = kind_of(os.path.join(ROOT, rel))
        if kind is None:
            continue
        h5 = os.path.join(out, rel.replace("/", "_")[:-5] + ".h5")
        cmd = [os.path.abspath(args.trnsim), kind, rel, "-o", h5]
        if args.threads is not None and kind == "run":
            cmd += ["--threads", str(args.threads)]
        t0 = time.time()
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        dt = time.time() - t0
        if p.returncode != 0:
            print(f"{rel} exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
            failures += 1
            continue
        print(f"{rel} {digest(h5)}", flush=True)
        print(f"  {rel}: {dt:.1f} s", file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
