#!/usr/bin/python3
"""A whole fleet scenario on 1 and 2 threads, alternating: wall times, peak memory, the ratio,
and whether the two thread counts wrote the same records (issue 30's targets, docs/performance.md).

    fleet_scenario_bench.py TRNSIM [--scenario FILE] [--pairs N] [--set KEY=VALUE ...]

Each pair runs `trnsim run FILE -q --set simulation.threads=T` for T = 1 then 2 (the order
alternating from pair to pair, so a drift in the machine's load falls on both), each run's
wall time taken around the process and its peak RSS from wait4. Every dataset of the two
results files but /meta must be equal (exit 1 otherwise). --set passes settings through, to
try configurations beside the scenario's own (another policy, pool size or horizon). The
default scenario is scenarios/fleet/fleet-98k.yaml; ctest runs a small one for one pair.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(binary, scenario, threads, settings, out):
    """Wall seconds and peak RSS (MiB) of one run."""
    cmd = [binary, "run", scenario, "-q", "-o", out, "--set", f"simulation.threads={threads}"]
    for s in settings:
        cmd += ["--set", s]
    start = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - start
    err = child.stderr.read().decode()
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"fleet_scenario_bench: {' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024.0


def datasets(path):
    """Every dataset but /meta's, by name."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("meta"):
                out[name] = obj[()]
        f.visititems(visit)
    return out


def same(a, b):
    if a.keys() != b.keys():
        return False
    for name, x in a.items():
        y = b[name]
        if getattr(x, "dtype", None) is not None and x.dtype.names:
            for field in x.dtype.names:
                kind = x[field].dtype.kind
                if not np.array_equal(x[field], y[field], equal_nan=kind == "f"):
                    return False
        elif not np.array_equal(np.asarray(x), np.asarray(y)):
            return False
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trnsim")
    p.add_argument("--scenario", default=os.path.join(ROOT, "scenarios/fleet/fleet-98k.yaml"))
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--set", action="append", default=[], dest="settings")
    a = p.parse_args()
    walls = {1: [], 2: []}
    peaks = {1: [], 2: []}
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        outs = {t: os.path.join(tmp, f"threads-{t}.h5") for t in (1, 2)}
        for i in range(a.pairs):
            got = {}
            for t in ((1, 2) if i % 2 == 0 else (2, 1)):
                got[t] = run(a.trnsim, a.scenario, t, a.settings, outs[t])
                walls[t].append(got[t][0])
                peaks[t].append(got[t][1])
            ratios.append(got[1][0] / got[2][0])
        identical = same(datasets(outs[1]), datasets(outs[2]))
    name = os.path.relpath(a.scenario, ROOT)
    print(f"fleet scenario: {name}" + (f" with {', '.join(a.settings)}" if a.settings else "") +
          f", {a.pairs} pair{'s' if a.pairs > 1 else ''} alternating")
    for t in (1, 2):
        w = walls[t]
        print(f"  {t} thread{'s' if t > 1 else ' '} wall {statistics.median(w):.2f} s (median; "
              f"{min(w):.2f} to {max(w):.2f}), peak RSS {max(peaks[t]):.0f} MiB")
    print(f"  2 threads against 1: {statistics.median(ratios):.2f}x (median of the pairs; "
          f"{min(ratios):.2f} to {max(ratios):.2f}); records "
          f"{'identical' if identical else 'DIFFERENT'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
