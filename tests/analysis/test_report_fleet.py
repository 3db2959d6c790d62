"""Tests of analysis/report.py on a fleet's results (`fleet:` scenarios, docs/fleet.md): the
page shows the figures as the command line prints them, a table of the job classes, and two
plots that hold data (the pool's uses over time, the queue); with services, their table as the
command line prints it and the plot of their load against their capacity.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s tests/analysis -p test_report_fleet.py -v
Environment: TRNSIM_SOURCE_DIR, TRNSIM_BIN, TRNSIM_BUILD_DIR as for test_summary.py.
"""

import re
import tempfile
import unittest
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from report_cases import cli_line, run_report, trnsim  # noqa: E402
from test_report import check_cells, png_size, series_pixels  # noqa: E402


class FleetReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._dir = tempfile.TemporaryDirectory()
        cls.tmp = Path(cls._dir.name)
        cls.results = cls.tmp / "fleet.h5"
        cls.out = trnsim("run", "scenarios/fleet/shared-trn2.yaml", "-o", str(cls.results))

    @classmethod
    def tearDownClass(cls):
        cls._dir.cleanup()

    def test_the_page_shows_what_the_command_line_prints(self):
        directory = self.tmp / "report"
        done = run_report(self.results, directory)
        self.assertEqual(done.returncode, 0, done.stderr)
        page = (directory / "index.html").read_text()
        for caption in ("Pool", "Jobs"):
            self.assertIn(f"<caption>{caption}</caption>", page)
        self.assertIn("<h3>Job classes</h3>", page)
        tables = check_cells(self, page)
        rows = {r[0]: r[1] for t in tables.tables for r in t if len(r) >= 2}
        # "all jobs   26 of 26 finished; first start 2.13 h after submission (mean of 26
        # started), done 6.86 h after (mean); 2 preemptions, 1 failure, 30.8 min of work lost"
        jobs = cli_line(self.out, "all jobs")
        finished, total, wait, done_after, preempted, failed, lost = re.match(
            r"(\S+) of (\S+) finished; first start (.*?) after submission \(mean of \S+ "
            r"started\), done (.*?) after \(mean\); (\S+) preemptions?, (\S+) failures?, "
            r"(.*?) of work lost$", jobs).groups()
        self.assertEqual(rows["finished"], finished)
        self.assertEqual(rows["jobs"], total)
        self.assertEqual(rows["first start after submission"], wait)
        self.assertEqual(rows["done after submission"], done_after)
        self.assertEqual(rows["preemptions"], preempted)
        self.assertEqual(rows["interrupted by a failure"], failed)
        self.assertEqual(rows["work lost"], lost)
        # "pool       busy 70.0%, idle 23.8%, spare 2.8%, down 3.4% of 32 UltraServers ..."
        pool = dict(re.findall(r"(busy|idle|spare|down) (\S+%)", cli_line(self.out, "pool")))
        for use, share in pool.items():
            self.assertEqual(rows[use], share)
        # One row per class, with its plan as the command line prints it.
        classes = next(t for t in tables.tables if t and t[0][0] == "class")
        self.assertEqual([r[0] for r in classes[1:]],
                         ["pretrain-70b", "finetune-8b", "research-8b"])
        plan = re.match(r"pretrain-70b: tp (\d+) pp (\d+) dp (\d+), (.*?) a step x (\S+) steps",
                        cli_line(self.out, "plan")).groups()
        header = classes[0]
        first = dict(zip(header, classes[1]))
        self.assertEqual((first["tp"], first["pp"], first["dp"]), plan[:3])
        self.assertEqual(first["step time"], plan[3])
        self.assertEqual(first["steps"], plan[4])
        for name in ("pool.png", "queue.png"):
            self.assertGreater(png_size(directory / name)[0], 100)
            self.assertGreater(series_pixels(directory / name), 2000, name)


class FleetServicesReportTest(unittest.TestCase):
    def test_services_are_tabled_and_drawn_against_their_load(self):
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            results = tmp / "fleet.h5"
            out = trnsim("run", "scenarios/fleet/train-and-serve.yaml", "-o", str(results))
            directory = tmp / "report"
            done = run_report(results, directory)
            self.assertEqual(done.returncode, 0, done.stderr)
            page = (directory / "index.html").read_text()
            self.assertIn("A fleet of training jobs and services", page)
            self.assertIn("<h3>Services</h3>", page)
            tables = check_cells(self, page)
            services = next(t for t in tables.tables if t and t[0][0] == "service")
            row = dict(zip(services[0], services[1]))
            # "served     chat-70b: 7.60M requests, 99.6% within the SLO; ..."
            served = re.match(r"chat-70b: \S+ requests, (\S+%) within the SLO",
                              cli_line(out, "served")).group(1)
            self.assertEqual(row["service"], "chat-70b")
            self.assertEqual(row["SLO met"], served)
            self.assertGreater(png_size(directory / "services.png")[0], 100)
            self.assertGreater(series_pixels(directory / "services.png"), 2000)

    def test_a_window_at_request_level_is_tabled_as_the_command_line_prints(self):
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            results = tmp / "fleet.h5"
            out = trnsim("run", "scenarios/fleet/train-and-serve.yaml", "-o", str(results),
                         "--set", "fleet.request_level={from: 19h, to: 20h}")
            directory = tmp / "report"
            done = run_report(results, directory)
            self.assertEqual(done.returncode, 0, done.stderr)
            page = (directory / "index.html").read_text()
            self.assertIn("At request level, 19.0 h to 20.0 h", page)
            tables = check_cells(self, page)
            windows = next(t for t in tables.tables if t and t[0][0] == "service"
                           and "SLO met at rate level" in t[0])
            row = dict(zip(windows[0], windows[1]))
            # "window     chat-70b: ... 99.6% within the SLO (rate level 99.4%); ..."
            m = re.search(r"(\S+%) within the SLO \(rate level (\S+%)\)",
                          cli_line(out, "window"))
            self.assertEqual(row["SLO met"], m.group(1))
            self.assertEqual(row["SLO met at rate level"], m.group(2))


class FleetPlanReportTest(unittest.TestCase):
    def test_every_fleet_run_is_tabled_with_the_fewest_as_the_command_line_prints(self):
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            results = tmp / "plan.h5"
            out = trnsim("plan", "scenarios/studies/e-prime-day-plan.yaml", "-o", str(results))
            directory = tmp / "report"
            done = run_report(results, directory)
            self.assertEqual(done.returncode, 0, done.stderr)
            page = (directory / "index.html").read_text()
            self.assertIn("Fleet plan: the fewest UltraServers", page)
            # "fewest     1 spare: 38; 2 spares: 39": the same figures on the page.
            fewest = re.findall(r"(\d+ spares?): (\d+)", cli_line(out, "fewest"))
            self.assertEqual(len(fewest), 2)
            self.assertIn("Fewest: " + "; ".join(f"{s}: {d} UltraServers" for s, d in fewest),
                          page)
            tables = check_cells(self, page)
            runs = next(t for t in tables.tables if t and t[0][0] == "rank")
            # One row per fleet run the command line counted ("14 fleets (8 searched, ...").
            count = int(re.search(r"(\d+) fleets", cli_line(out, "search")).group(1))
            self.assertEqual(len(runs) - 1, count)
            ranks = [r[0] for r in runs[1:]]
            self.assertIn("1", ranks)
            self.assertGreater(series_pixels(directory / "fleet_plan.png"), 1000)


if __name__ == "__main__":
    unittest.main()
