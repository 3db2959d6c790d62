"""Tests of scripts/job-trace.py (docs/fleet.md, A job trace): the fitted spreads give the
published means in closed form, the drawn jobs have the published medians and means, the
conversion to domains follows its rule by hand, the arrivals offer the asked load, and the
trace shipped beside scenarios/fleet/acme-kalos.yaml is what the script writes.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -p test_job_trace.py -v
"""

import argparse
import importlib.util
import math
import os
import tempfile
import unittest
from pathlib import Path

ROOT = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SPEC = importlib.util.spec_from_file_location("job_trace", ROOT / "scripts/job-trace.py")
job_trace = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(job_trace)


def args(**kw):
    a = dict(jobs=20000, domains=64, load=0.7, domain_chips=64,
             chips_per_gpu=312.0 / 667.0, class_prefix="gang-", seed=3)
    a.update(kw)
    return argparse.Namespace(**a)


class JobTraceTest(unittest.TestCase):
    def test_the_fitted_spreads_give_the_published_means(self):
        top, gpu_sigma, run_sigma = job_trace.fit(job_trace.KALOS)
        self.assertEqual(top, 10)  # 1,024 GPUs at most
        self.assertAlmostEqual(job_trace.gpus_mean(gpu_sigma, top), 26.77, places=6)
        self.assertAlmostEqual(job_trace.run_mean(run_sigma, 124.0, 1.0, 625740.0), 1259.689,
                               places=4)
        # Without rounding or bounds a log-normal of median m and mean M has the spread
        # sqrt(2 ln(M/m)); the bounds cut little from the run time's tail.
        self.assertAlmostEqual(run_sigma, math.sqrt(2 * math.log(1259.689 / 124.0)), delta=0.02)

    def test_the_drawn_jobs_have_the_published_medians_and_means(self):
        jobs, _ = job_trace.draw(args())
        gpus = [g for *_, g in jobs]
        runs = [r for _, _, r, _ in jobs]
        self.assertEqual(job_trace.median(gpus), 1)
        self.assertAlmostEqual(job_trace.median(runs), 124.0, delta=124.0 * 0.05)
        self.assertAlmostEqual(sum(gpus) / len(gpus), 26.77, delta=26.77 * 0.1)
        self.assertAlmostEqual(sum(runs) / len(runs), 1259.689, delta=1259.689 * 0.15)
        self.assertLessEqual(max(gpus), 1024)
        self.assertLessEqual(max(runs), 625740)
        self.assertGreaterEqual(min(runs), 1)

    def test_gpus_become_whole_domains_by_hand(self):
        jobs, _ = job_trace.draw(args())
        # 312/667 chips a GPU on 64-chip domains: 128 GPUs are 59.9 chips (one domain), 256
        # are 119.8 (two), 1,024 are 479.0 (eight).
        expect = {1: 1, 2: 1, 64: 1, 128: 1, 256: 2, 512: 4, 1024: 8}
        seen = set()
        for _, domains, _, gpus in jobs:
            if gpus in expect:
                self.assertEqual(domains, expect[gpus], gpus)
                seen.add(gpus)
        self.assertTrue({1, 128, 256, 1024} <= seen, seen)
        # 16-chip domains (trn2 instances): 1,024 GPUs are 30 of them.
        jobs, _ = job_trace.draw(args(domain_chips=16))
        self.assertEqual({d for _, d, _, g in jobs if g == 1024}, {30})

    def test_the_arrivals_offer_the_asked_load(self):
        a = args(load=0.5, domains=100)
        jobs, fitted = job_trace.draw(a)
        span = jobs[-1][0]
        offered = sum(d * r for _, d, r, _ in jobs) / (span * a.domains)
        # The span of 20,000 exponential gaps is within 5 standard deviations (1/sqrt(n)).
        self.assertAlmostEqual(offered, 0.5, delta=0.5 * 5 / math.sqrt(len(jobs)))
        self.assertAlmostEqual(fitted["rate_per_h"] / 3600 * sum(d * r for _, d, r, _ in jobs)
                               / len(jobs), a.load * a.domains, places=9)
        submits = [s for s, *_ in jobs]
        self.assertEqual(submits, sorted(submits))

    def test_the_shipped_trace_is_what_the_script_writes(self):
        shipped = ROOT / "scenarios/fleet/acme-kalos-jobs.csv"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "jobs.csv"
            job_trace.main(["--jobs", "10000", "--domains", "64", "--load", "0.9",
                            "--out", str(out)])
            self.assertEqual(out.read_text(), shipped.read_text())


if __name__ == "__main__":
    unittest.main()
