#!/usr/bin/python3
"""Prints docs/validation.md's sensitivity table: every lever of the validation moved to its
other sourced value, one at a time, and what each headline figure becomes.

    scripts/validation-sensitivity.py [LEVER ...]      (default: every lever; about 3 min)

Each lever edits a chip file or a data file in place, reruns the validation tests of the
build (build/tests/validation_tests, build/tests/serving_tests; build them first), reads the
figures they print, and writes the file back as it was (also on an error or ^C). A lever that
moves a fitted training row refits trn1's `training.engine_sync` with the disabled refit test
and carries it to trn2, as the chip files do; `dma_refit` refits Trainium2's two serving
coefficients on INF-T2b (`ServingFit`) after moving the DMA rate. Nothing else is refitted.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "build" / "tests"
CHIPS = "topologies/chips/"
PUBLISHED = "tests/data/inference/neuron-published.csv"
TRAINING = "tests/data/training/published-runs.csv"


def run(binary, *args):
    return subprocess.run([str(TESTS / binary), *args], cwd=ROOT, capture_output=True,
                          text=True).stdout


class Edits:
    """In-place replacements, each file written back as it was on exit."""

    def __init__(self):
        self.saved = {}

    def __enter__(self):
        return self

    def replace(self, path, old, new):
        p = ROOT / path
        text = p.read_text()
        if old not in text:
            sys.exit(f"{path}: '{old}' not found (the lever's edit is out of date)")
        self.saved.setdefault(p, text)
        p.write_text(text.replace(old, new, 1))

    def __exit__(self, *exc):
        for p, text in self.saved.items():
            p.write_text(text)


def search(pattern, text, what):
    m = re.search(pattern, text, re.S)
    if not m:
        sys.exit(f"could not read {what} from the tests' output")
    return m


def figures():
    v = run("validation_tests")
    s = run("serving_tests", "--gtest_filter=ServingAccuracy.*")
    f = {}
    m = search(r"3 rows: mean absolute error ([0-9.]+)%, worst ([0-9.]+)%", v, "the fitted rows")
    f["fitted"] = f"{m[1]}% ({m[2]}%)"
    m = search(r"5 rows: mean absolute error ([0-9.]+)%, worst ([0-9.]+)%", v, "the held-out rows")
    f["held"] = f"{m[1]}% ({m[2]}%)"
    f["nxdt"] = search(r"Llama-3-70B NxDT 8 trn2\s+trn2\s+simulated\s+([0-9.]+)", v, "NxDT")[1]
    for key in ("INF-T1", "INF-I1"):
        m = search(key + r" rows \(\d+\): TTFT p50 MAE [0-9.]+%.*?reproducible rows ([0-9.]+)%"
                   r".*?TPOT p50 MAE ([0-9.]+)%", s, key)
        f[key] = (m[1], m[2])
    f["band"] = search(r"within their band \(\+-20%\): (\d+) of 17", s, "the band")[1]
    rows = {}
    for line in s.splitlines():
        m = re.match(r"[ *]*(INF-T2b? .+? @\d+ b\d+(?: k\d+)?)\s+[0-9.]+\s+[0-9.]+\s+([+-]\d+)%"
                     r"\s+[0-9.]+\s+[0-9.]+\s+([+-]\d+)%", line)
        if m:
            rows[m[1].strip()] = (m[2], m[3])
    f["t2"] = rows
    m = search(r"k7 TTFT\s+[0-9.]+ ms against\s+[0-9.]+ \(([+-]\d+)%\); TPOT [0-9.]+ ms needs "
               r"([0-9.]+) tokens", s, "the fused-speculation row")
    f["fused"] = (m[1], m[2])
    return f


def row(name, f):
    t2 = f["t2"]
    base = t2["INF-T2 vllm Llama-3.1-8B-Instruct 512+128 @2048 b2"]
    eagle = t2["INF-T2 vllm Llama-3.1-8B-Instruct 512+128 @2048 b2 k3"]
    fit = t2["INF-T2b llmperf Llama-3.3-70B-Instruct 10000+1500 @12800 b1"]
    return (f"| {name} | {f['fitted']} | {f['held']} | {f['nxdt']} | {f['INF-T1'][1]}% / "
            f"{f['INF-I1'][1]}% | {f['INF-T1'][0]}% / {f['INF-I1'][0]}% | {f['band']} of 17 | "
            f"{fit[0]}% / {fit[1]}% | {base[0]}%, {eagle[0]}% / {base[1]}%, {eagle[1]}% | "
            f"{f['fused'][0]}%, {f['fused'][1]} |")


def edits(*replacements):
    """A lever of in-place replacements, each (file, old text, new text)."""
    def apply(e):
        for path, old, new in replacements:
            e.replace(path, old, new)
    return apply


dma = edits((CHIPS + "trn1.yaml", "dma_engine_bandwidth: 17GB/s", "dma_engine_bandwidth: 27GiB/s"),
            (CHIPS + "inf2.yaml", "dma_engine_bandwidth: 17GB/s", "dma_engine_bandwidth: 27GiB/s"),
            (CHIPS + "trn2.yaml", "dma_engine_bandwidth: 23GB/s",
             "dma_engine_bandwidth: 27.2GB/s"))


def refit_engine_sync(e):
    out = run("validation_tests", "--gtest_also_run_disabled_tests",
              "--gtest_filter=*RefitReproducesTheChipFiles*")
    value = search(r"engine_sync fitted ([0-9.]+)", out, "the engine_sync refit")[1]
    for chip in ("trn1", "trn2"):
        e.replace(CHIPS + chip + ".yaml", "engine_sync: 0.24", "engine_sync: " + value)
    return f" (engine_sync {value})"


def refit_trn2_serving(e):
    out = run("serving_tests", "--gtest_filter=ServingFit.RefitReproducesTheChipFiles")
    m = search(r"refit trn2 on the INF-T2b BF16 run: iteration_overhead (\d+) ns, "
               r"prefill_efficiency ([0-9.]+)", out, "the trn2 serving refit")
    e.replace(CHIPS + "trn2.yaml", "iteration_overhead: 6402700ns", f"iteration_overhead: {m[1]}ns")
    e.replace(CHIPS + "trn2.yaml", "prefill_efficiency: 0.519", f"prefill_efficiency: {m[2]}")
    return f" (trn2 refitted: {int(m[1]) / 1e6:.3f} ms a graph, efficiency {m[2]})"


def revision(old, new):
    def apply(e):
        e.replace(TRAINING, old, new)
        return refit_engine_sync(e)
    return apply


def both(*steps):
    def apply(e):
        return "".join(step(e) or "" for step in steps)
    return apply


LEVERS = {
    "used": ("as used", edits()),
    "dma": ("DMA 27 GiB/s (trn1, inf2), 27.2 GB/s (trn2)", dma),
    "dma_refit": ("DMA 27 GiB/s, 27.2 GB/s", both(dma, refit_trn2_serving)),
    "llama7b_933": ("Llama-2-7B at 93.3", revision(",81,fitted", ",93.3,fitted")),
    "llama7b_947": ("Llama-2-7B at 94.7", revision(",81,fitted", ",94.7,fitted")),
    "gpt175b_139": ("GPT-3 175B at 13.9", revision(",12.7,fitted", ",13.9,fitted")),
    "rank": ("Trn2 rank_bandwidth uncapped",
             edits((CHIPS + "trn2.yaml", "rank_bandwidth: 106GB/s", "rank_bandwidth: 0B/s"))),
    "tiling": ("INF-T2 compiled without tiling (collective_tiling 1)",
               edits((PUBLISHED, ",,2,0,baseline", ",,1,0,baseline"),
                     (PUBLISHED, ",,2,0,EAGLE3", ",,1,0,EAGLE3"))),
    "fused": ("INF-T2's EAGLE-3 draft fused into the target's graphs",
              edits((PUBLISHED, ",,2,0,EAGLE3", ",,2,1,EAGLE3"))),
    "inf2_trn1": ("inf2 with trn1's serving coefficients (before 2026-12-08)",
                  edits((CHIPS + "inf2.yaml", "iteration_overhead: 129230ns",
                         "iteration_overhead: 377320ns"),
                        (CHIPS + "inf2.yaml", "prefill_graph_overhead: 16282580ns",
                         "prefill_graph_overhead: 5129850ns"))),
    "per_kernel": ("Trn2's fixed cost per kernel (5.777 us) with trn1's 0.377 ms a graph",
                   edits((CHIPS + "trn2.yaml", "kernel_overhead: 0ns", "kernel_overhead: 5777ns"),
                         (CHIPS + "trn2.yaml", "iteration_overhead: 6402700ns",
                          "iteration_overhead: 377320ns"))),
}


def main():
    names = sys.argv[1:] or list(LEVERS)
    unknown = [n for n in names if n not in LEVERS]
    if unknown:
        sys.exit("unknown lever(s) " + ", ".join(unknown) + "; known: " + ", ".join(LEVERS))
    print("| lever moved to | training fitted MAE (worst) | training held-out MAE (worst) | "
          "Trn2 Llama-3-70B NxDT 8, seq/s | serving held-out TPOT MAE, INF-T1 / INF-I1 | "
          "reproducible TTFT MAE, INF-T1 / INF-I1 | (u) rows in band | INF-T2b TTFT / TPOT | "
          "INF-T2 TTFT baseline, EAGLE-3 / TPOT baseline, EAGLE-3 | INF-T2b fused: TTFT, "
          "tokens a step needed (of 8) |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for n in names:
        label, apply = LEVERS[n]
        with Edits() as e:
            label += apply(e) or ""
            print(row(label, figures()), flush=True)


if __name__ == "__main__":
    main()
