"""Tests of analysis/report.py on serving results (workload.type: inference) that trnsim
writes: a run with its requests (latency CDFs, KV cache over time), a run without them, a sweep
of the arrival rate and a sweep of the fleet size (throughput, latency, SLO attainment and
cost against the load). The pages must show the figures as the command line prints them, the
plots must hold data, and the helpers behind the plots are checked against hand-derived values.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -p test_report_serving.py -v
Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
"""

import re
import sys
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from report_cases import SOURCE_DIR, Tables, cli_line, run_report, trnsim  # noqa: E402
from test_report import check_cells, png_size  # noqa: E402

sys.path.insert(0, str(SOURCE_DIR / "analysis"))
import report  # noqa: E402
import trnsim_results  # noqa: E402


def series_pixels(path):
    """Pixels within a small distance of one of report.py's series colours (all of them: a
    sweep's lines use several)."""
    image = matplotlib.image.imread(path)[..., :3]
    count = 0
    for color in report.SERIES_COLORS:
        rgb = np.array(matplotlib.colors.to_rgb(color))
        count += int((np.abs(image - rgb).max(axis=-1) < 0.06).sum())
    return count

#: Llama 3 8B on one trn2.48xlarge: 8 replicas of tp 8, Poisson arrivals, outputs of 1 to 64
#: tokens (some of one token, which have no TPOT); the SLO is tight enough that some requests
#: miss it.
SERVING = """name: report-serving
hardware: {chip: trn2, lnc: 2}
cluster: {instances: 1}
workload:
  type: inference
  model: llama3-8b
  serving: {tp: 8, max_batch: 8, max_context: 2048}
  requests:
    input_tokens: {lognormal: {mean: 600, sd: 400}, max: 1900}
    output_tokens: {uniform: [1, 64]}
    arrival: {poisson: {rate: 40/s}}
    count: 400
  slo: {ttft: 100ms, tpot: 20ms}
"""

#: The arrival rate swept (whole arrival mappings) against the decode batch.
RATE_SWEEP = """base: serving.yaml
name: report-serving-rate
sweep:
  grid:
    workload.requests.arrival: [{poisson: {rate: 20/s}}, {poisson: {rate: 80/s}},
                                {poisson: {rate: 320/s}}]
    workload.serving.max_batch: [4, 16]
"""

#: The fleet size swept, plain instances and one UltraServer, against tp.
FLEET_SWEEP = """base: serving.yaml
name: report-serving-fleet
set:
  workload.requests.arrival: {poisson: {rate: 400/s}}
sweep:
  zip:
    - cluster: [{instances: 1}, {instances: 2}, {instances: 4}, {ultraservers: 1}]
  grid:
    workload.serving.tp: [8, 16]
"""

#: A serving plan over the same base: the cheapest of four layouts at 40 requests/s.
SERVING_PLAN = """base: serving.yaml
name: report-serving-plan
objective: {type: min_cost, rate: 40/s, slo_attainment: 0.5}
search: {tp: [8, 16], max_batch: [4, 8]}
requests: 100
"""


class ServingReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="trnsim-report-serving-")
        cls.tmp = Path(cls._tmp.name)
        for name, text in (("serving", SERVING), ("rate", RATE_SWEEP), ("fleet", FLEET_SWEEP),
                           ("plan", SERVING_PLAN)):
            (cls.tmp / f"{name}.yaml").write_text(text)
        cls.one = cls.tmp / "run.h5"
        cls.bare = cls.tmp / "bare.h5"
        cls.rate = cls.tmp / "rate.h5"
        cls.fleet = cls.tmp / "fleet.h5"
        cls.run_out = trnsim("run", str(cls.tmp / "serving.yaml"), "-o", str(cls.one))
        trnsim("run", str(cls.tmp / "serving.yaml"), "-o", str(cls.bare), "-q", "--set",
               "output.requests=false")
        cls.rate_out = trnsim("batch", str(cls.tmp / "rate.yaml"), "-o", str(cls.rate))
        trnsim("batch", str(cls.tmp / "fleet.yaml"), "-o", str(cls.fleet), "-q")
        cls.plan = cls.tmp / "plan.h5"
        cls.plan_out = trnsim("plan", str(cls.tmp / "plan.yaml"), "-o", str(cls.plan))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def report_of(self, results, expected_pngs):
        out = self.tmp / (results.stem + "-report")
        done = run_report(results, out)
        self.assertEqual(done.returncode, 0, done.stderr)
        page = (out / "index.html").read_text()
        images = re.findall(r"<img src='([^']+)'", page)
        self.assertEqual(sorted(images), sorted(expected_pngs))
        for name in expected_pngs:
            width, height = png_size(out / name)
            self.assertGreater(width, 300, name)
            self.assertGreater(height, 200, name)
            self.assertGreater(series_pixels(out / name), 150, f"{name}: no plotted data")
        return page, check_cells(self, page)

    # --- helpers, against hand-derived values -------------------------------------------------

    def test_cdf_points(self):
        # Three finite values sorted; each is at or above 1/3, 2/3 and all of them.
        v, y = report.cdf_points(np.array([3.0, 1.0, np.nan, 2.0]))
        self.assertEqual(list(v), [1.0, 2.0, 3.0])
        np.testing.assert_allclose(y, [1 / 3, 2 / 3, 1.0])
        # Thinned to CDF_POINTS, keeping the smallest and largest value and fraction 1.
        many = np.arange(10 * report.CDF_POINTS, dtype=float)
        v, y = report.cdf_points(many)
        self.assertLessEqual(len(v), report.CDF_POINTS)
        self.assertEqual((v[0], v[-1], y[-1]), (0.0, many[-1], 1.0))

    def test_in_flight(self):
        # Arrivals at 0, 1, 2 s finishing at 5, 1.5, 3 s. At t = 0: one arrived, none done;
        # 1: two arrived; 1.6: the second finished; 2.5: three arrived, one done; 10: all done.
        requests = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "finish_s": [5.0, 1.5, 3.0]})
        self.assertEqual(list(report.in_flight(requests, np.array([0, 1, 1.6, 2.5, 10]))),
                         [1, 2, 1, 2, 0])

    def test_durations_and_loads(self):
        self.assertAlmostEqual(report.duration_seconds("50ms"), 0.05)
        self.assertAlmostEqual(report.duration_seconds("2.5min"), 150.0)
        self.assertIsNone(report.duration_seconds("fast"))
        self.assertEqual(report.arrival_load("{poisson: {rate: 20/s}}"), ("rate", 20.0))
        self.assertEqual(report.arrival_load("{gamma: {rate: 1200/min, cv: 2}}"),
                         ("rate", 20.0))
        self.assertEqual(report.arrival_load("{trace: a.csv, speedup: 10}"), ("speedup", 10.0))
        self.assertEqual(report.arrival_load("{closed_loop: {concurrency: 4}}"),
                         ("concurrency", 4.0))
        self.assertIsNone(report.arrival_load("{trace: a.csv}"))

    # --- a run -----------------------------------------------------------------------------

    def test_run_report(self):
        page, tables = self.report_of(self.one, ["latency_cdf.png", "kv_cache.png"])
        text = tables.page_text()
        # The key figures read as `trnsim run` prints them.
        latency = cli_line(self.run_out, "latency")
        ttft_p99 = re.search(r"TTFT p50 [^,]+, p90 [^,]+, p99 ([^;]+);", latency).group(1)
        tpot_p99 = re.search(r"TPOT p50 [^,]+, p90 [^,]+, p99 ([^;]+);", latency).group(1)
        met = re.search(r"met by (\S+)$", cli_line(self.run_out, "throughput")).group(1)
        self.assertIn(f"TTFT p99 {ttft_p99}", text)
        self.assertIn(f"TPOT p99 {tpot_p99}", text)
        self.assertIn(f"met by {met} of the requests", text)
        self.assertIn("SLO: TTFT ≤ 100 ms and TPOT ≤ 20.0 ms", text)
        self.assertIn("One serving run", page)
        # The replicas table: the eight tp-8 replicas of one instance.
        replicas = [t for t in tables.tables if t and "KV cache peak" in t[0]]
        self.assertEqual(len(replicas), 1)
        self.assertEqual(len(replicas[0]) - 1, 8)

    def test_run_tables_agree(self):
        # What the CDFs draw: the requests table holds every request, the SLO attainment the
        # summary reports is the fraction within both limits (a request of one output token
        # has no TPOT, NaN, and is judged on its TTFT alone), and requests of one output
        # token are the ones left out of the TPOT CDF.
        requests = trnsim_results.load_table(self.one, "/serving/requests")
        summary = trnsim_results.load_summary(self.one).iloc[0]
        self.assertEqual(len(requests), int(summary["requests"]))
        ttft, tpot = report.serving_slo(self.one)
        self.assertEqual((ttft, tpot), (0.1, 0.02))
        single = requests["output_tokens"] == 1
        self.assertTrue(requests["tpot_s"][single].isna().all())
        within = (requests["ttft_s"] <= ttft) & ((requests["tpot_s"] <= tpot) | single)
        self.assertAlmostEqual(within.mean(), summary["slo_attainment"], places=12)
        self.assertTrue(0.0 < summary["slo_attainment"] < 1.0)
        samples = {c: v for c, _, v, _ in report.latency_samples(requests)}
        singles = int((requests["output_tokens"] == 1).sum())
        self.assertGreater(singles, 0)
        self.assertEqual(len(samples["tpot_s"]), len(requests) - singles)
        self.assertAlmostEqual(np.percentile(samples["ttft_s"], 99), summary["ttft_p99_s"],
                               places=9)
        # Every request has finished when the last KV sample is taken after the last finish.
        kv = trnsim_results.load_table(self.one, "/serving/kv")
        last = kv["time_s"].to_numpy()[-1:]
        if last[0] >= requests["finish_s"].max():
            self.assertEqual(report.in_flight(requests, last)[0], 0)
        self.assertTrue(((kv["used_fraction"] >= 0) & (kv["used_fraction"] <= 1)).all())

    def test_run_without_requests(self):
        page, tables = self.report_of(self.bare, ["kv_cache.png"])
        self.assertIn("no latency CDFs", tables.page_text())

    # --- sweeps ----------------------------------------------------------------------------

    def test_rate_sweep_report(self):
        page, tables = self.report_of(self.rate, ["load.png", "slo_cost.png", "axes.png"])
        points = tables.tables[0]
        header = points[0]
        self.assertEqual(header[:6], ["point", "SLO met", "TTFT p99", "TPOT p99",
                                      "per million output tokens", "output throughput"])
        # Each row's SLO and TTFT p99 as `trnsim batch` prints them (its table: point, TTFT
        # p99, TPOT p99, SLO met, $/M tokens, cost, values).
        printed = {}
        for line in self.rate_out.splitlines():
            m = re.match(r"^  (\d+)\s+(\S+ \S+)\s+(\S+ \S+)\s+(\S+)\s+(\$\S+)", line)
            if m:
                printed[m.group(1)] = m.groups()[1:]
        self.assertEqual(len(printed), 6)
        for row in points[1:]:
            ttft, tpot, slo, per_million = printed[row[0]]
            self.assertEqual((row[1], row[2], row[3], row[4]), (slo, ttft, tpot, per_million))
        # The load is the swept arrival rate, in requests per second.
        frame, keys, units, axes_of, kinds = report.batch_frame(self.rate)
        axes = report.Axes(frame, keys, units, axes_of, kinds)
        x, label, exclude, loaded = report.load_axis(axes, frame)
        self.assertEqual((x, label), ("load", "arrival rate (requests/s)"))
        self.assertEqual(sorted(loaded["load"].unique()), [20.0, 80.0, 320.0])

    def test_fleet_sweep_report(self):
        page, tables = self.report_of(self.fleet, ["load.png", "slo_cost.png", "axes.png"])
        # Without a swept arrival the load is the fleet size; UltraServer and plain instance
        # fleets of the same size are told apart.
        frame, keys, units, axes_of, kinds = report.batch_frame(self.fleet)
        axes = report.Axes(frame, keys, units, axes_of, kinds)
        x, label, exclude, loaded = report.load_axis(axes, frame)
        self.assertEqual(x, "instances")
        self.assertEqual(sorted(loaded["instances"].unique()), [1, 2, 4])
        self.assertEqual(sorted(loaded["fleet"].unique()), ["UltraServers", "instances"])
        self.assertIn("cluster", exclude)

    def test_serving_plan_report(self):
        page, tables = self.report_of(self.plan, ["pareto.png"])
        self.assertIn("Best fleet", page)
        ranked = tables.tables[0]
        self.assertEqual(ranked[0][:4], ["rank", "$/hour", "rate", "SLO met"])
        # The ranks, $/hour and SLO attainment as `trnsim plan` prints them (rank, chip,
        # inst, US, tp, batch, repl, prefill, $/hour, rate, SLO met, ...).
        printed = []
        for line in self.plan_out.splitlines():
            m = re.match(r"^\s+(\d+) \S+\s+\d+\s+\S+\s+\d+\s+\d+\s+\d+\s+\d+\s+"
                         r"(\$\S+)\s+\S+\s+(\S+%)", line)
            if m:
                printed.append(m.groups())
        self.assertEqual(len(printed), len(ranked) - 1)
        for row, (rank, per_hour, met) in zip(ranked[1:], printed):
            self.assertEqual((row[0], row[1], row[3]), (rank, per_hour, met))
        # The frontier in the file is the Pareto set of ($/M tokens, TTFT p99), recomputed.
        cands = trnsim_results.load_table(str(self.plan), "/plan/serving")
        sim = cands[cands["simulations"] > 0].reset_index(drop=True)
        front = report.frontier(list(sim["cost_per_million_output_tokens_usd"]),
                                list(sim["ttft_p99_s"]))
        self.assertEqual(sorted(front), list(np.flatnonzero(sim["pareto"].to_numpy() == 1)))


if __name__ == "__main__":
    unittest.main()
