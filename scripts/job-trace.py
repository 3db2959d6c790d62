#!/usr/bin/env python3
"""Writes a fleet job trace (docs/fleet.md "A job trace") generated from the published job
statistics of the Acme Kalos cluster, converted to Trainium domain sizes.

No public GPU job trace has a licence that lets trnsim ship it (Philly: "as is", Helios and
Acme: "for academic purposes", Alibaba PAI: "for research or study purpose"), so this script
draws jobs from the distribution their publishers summarised instead:

    AcmeTrace data/cluster_summary.csv (InternLM/AcmeTrace @ 6d6ac9c), row Kalos, from
    Hu et al., "Characterization of Large Language Model Development in the Datacenter",
    USENIX NSDI '24 (source key ACME in docs/fleet.md):
        GPU jobs 19,907; GPUs a job: mean 26.77, median 1, max 1,024;
        run time (s): mean 1,259.689, median 124, max 625,740.

How (each step is a modelling choice, stated in docs/fleet.md):
  1. GPUs a job: log-normal with the published median, rounded to a power of two (in log) and
     held to 1..max; its spread is solved so that the rounded distribution has the published
     mean. Run time: log-normal with the published median, held to 1 s..max, its spread solved
     for the published mean. The two are drawn independently (the summary gives no joint).
  2. Trainium size: chips = GPUs x --chips-per-gpu (default 312/667 = 0.468: an A100's dense
     BF16 peak, NVIDIA A100 datasheet, over a Trn2 chip's, trainium.md T2), rounded up to whole
     domains of --domain-chips (64: a Trn2 UltraServer). The job holds them for its run time.
  3. Arrivals: Poisson, at the rate that offers --load of the pool (--domains) on average:
     rate = load x domains / mean(domains x run time) over the drawn jobs.
Each line's class is `<prefix><domains>` (gang-1, gang-2, ...): the scenario defines a job class
for each gang that occurs (the script prints them).

    python3 scripts/job-trace.py --jobs 10000 --domains 64 --load 0.9 \\
        --out data/job-traces/acme-kalos-trn2-us.csv
"""

import argparse
import math
import pathlib
import random
import sys

# AcmeTrace data/cluster_summary.csv @ 6d6ac9c, row Kalos (GPU jobs).
KALOS = {
    "gpu_jobs": 19907,
    "gpus_mean": 26.77,
    "gpus_median": 1.0,
    "gpus_max": 1024,
    "run_mean_s": 1259.689,
    "run_median_s": 124.0,
    "run_max_s": 625740.0,
}
A100_BF16_TFLOPS = 312.0  # dense, NVIDIA A100 Tensor Core GPU datasheet
TRN2_BF16_TFLOPS = 667.0  # dense, per chip, trainium.md T2


def phi(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def gpus_mean(sigma, top_exponent):
    """The mean of 2^round(log2 X), held to 1..2^top, for X log-normal with median 1."""
    ln2 = math.log(2.0)
    total = 0.0
    for k in range(top_exponent + 1):
        lo = -math.inf if k == 0 else (k - 0.5) * ln2 / sigma
        hi = math.inf if k == top_exponent else (k + 0.5) * ln2 / sigma
        total += 2.0 ** k * (phi(hi) - (0.0 if lo == -math.inf else phi(lo)))
    return total


def run_mean(sigma, median, low, high):
    """The mean of X held to low..high, X log-normal with the given median."""
    mu = math.log(median)
    a = (math.log(low) - mu) / sigma
    b = (math.log(high) - mu) / sigma
    inside = math.exp(mu + sigma * sigma / 2.0) * (phi(b - sigma) - phi(a - sigma))
    return low * phi(a) + inside + high * (1.0 - phi(b))


def solve(mean_of, target):
    """The spread in (0.01, 10) whose mean is the target (means grow with the spread)."""
    lo, hi = 0.01, 10.0
    if not mean_of(lo) <= target <= mean_of(hi):
        raise SystemExit(f"no log-normal spread gives a mean of {target}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mean_of(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def fit(source):
    top = round(math.log2(source["gpus_max"]))
    gpu_sigma = solve(lambda s: gpus_mean(s, top), source["gpus_mean"])
    run_sigma = solve(lambda s: run_mean(s, source["run_median_s"], 1.0, source["run_max_s"]),
                      source["run_mean_s"])
    return top, gpu_sigma, run_sigma


def draw(args, source=KALOS):
    """The jobs: (submit_s, domains, run_s, gpus), in submission order."""
    top, gpu_sigma, run_sigma = fit(source)
    rng = random.Random(args.seed)
    jobs = []
    for _ in range(args.jobs):
        exponent = round(rng.gauss(0.0, gpu_sigma) / math.log(2.0))
        gpus = 2 ** min(max(exponent, 0), top)
        run_s = rng.lognormvariate(math.log(source["run_median_s"]), run_sigma)
        run_s = round(min(max(run_s, 1.0), source["run_max_s"]))
        domains = math.ceil(gpus * args.chips_per_gpu / args.domain_chips - 1e-9)
        jobs.append([0.0, domains, run_s, gpus])
    offered = sum(d * r for _, d, r, _ in jobs) / len(jobs)  # domain-seconds a job
    rate = args.load * args.domains / offered  # jobs a second
    t = 0.0
    for j in jobs:
        t += rng.expovariate(rate)
        j[0] = round(t)
    return jobs, {"gpu_sigma": gpu_sigma, "run_sigma": run_sigma, "rate_per_h": rate * 3600}


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=10000, help="jobs to draw (10000)")
    p.add_argument("--domains", type=int, required=True, help="the pool's domains")
    p.add_argument("--load", type=float, default=0.7,
                   help="the pool's fraction the jobs offer on average (0.7)")
    p.add_argument("--domain-chips", type=int, default=64,
                   help="chips a domain (64: a Trn2 UltraServer; 16: a trn2 instance)")
    p.add_argument("--chips-per-gpu", type=float, default=A100_BF16_TFLOPS / TRN2_BF16_TFLOPS,
                   help="Trainium chips a GPU of the source (312/667: dense BF16 A100/Trn2)")
    p.add_argument("--class-prefix", default="gang-", help="class name before the gang (gang-)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=pathlib.Path, required=True, help="the CSV to write")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.domains < 1 or args.domain_chips < 1:
        p.error("--jobs, --domains and --domain-chips must be positive")
    if not 0.0 < args.load <= 10.0 or not args.chips_per_gpu > 0.0:
        p.error("--load must be in (0, 10] and --chips-per-gpu positive")
    jobs, fitted = draw(args)
    gpus = [g for *_, g in jobs]
    runs = [r for _, _, r, _ in jobs]
    gangs = sorted({d for _, d, _, _ in jobs})
    lines = [
        "# Generated by scripts/job-trace.py from the published job statistics of the Acme",
        "# Kalos cluster (AcmeTrace data/cluster_summary.csv @ 6d6ac9c; Hu et al., NSDI '24):",
        "# no job of it is a real job. Conversion and choices: docs/fleet.md, A job trace.",
        f"# --jobs {args.jobs} --domains {args.domains} --load {args.load} --domain-chips "
        f"{args.domain_chips} --chips-per-gpu {args.chips_per_gpu:.4f} --seed {args.seed}",
        f"# log-normal spreads: GPUs {fitted['gpu_sigma']:.4f}, run time "
        f"{fitted['run_sigma']:.4f}; arrivals {fitted['rate_per_h']:.2f} an hour",
        f"# drawn: GPUs mean {sum(gpus) / len(gpus):.2f} median {median(gpus):g} "
        f"(published 26.77, 1); run time mean {sum(runs) / len(runs):.1f} s median "
        f"{median(runs):g} s (published 1259.7, 124)",
        f"# gangs: {', '.join(str(g) for g in gangs)}",
        "submit,class,duration",
    ]
    for submit, domains, run_s, _ in jobs:
        lines.append(f"{submit}s,{args.class_prefix}{domains},{run_s}s")
    if args.out.exists() and args.out.resolve() == pathlib.Path(__file__).resolve():
        p.error("--out would overwrite this script")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    for line in lines[4:7]:
        print(line[2:])
    print(f"wrote {args.out}: {len(jobs)} jobs over {jobs[-1][0] / 86400:.2f} days")
    return 0


if __name__ == "__main__":
    sys.exit(main())
