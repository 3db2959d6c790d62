"""Results files the report tests share: small scenarios, sweeps and plans the CLI runs in a
few seconds, and helpers to run trnsim and report.py. Imported by test_report.py and
test_browser.py (unittest discover puts this directory on sys.path)."""

import html.parser
import os
import re
import subprocess
import sys
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("TRNSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD_DIR = Path(os.environ.get("TRNSIM_BUILD_DIR", SOURCE_DIR / "build"))
TRNSIM_BIN = Path(os.environ.get("TRNSIM_BIN", BUILD_DIR / "src" / "cli" / "trnsim"))
REPORT_PY = SOURCE_DIR / "analysis" / "report.py"
PYTHON = sys.executable or "/usr/bin/python3"
RELIABILITY = SOURCE_DIR / "scenarios" / "llama3-405b-reliability.yaml"
DEFAULT = SOURCE_DIR / "scenarios" / "default.yaml"

#: Two axes: the cluster size and the checkpoint interval.
SWEEP = f"""base: {RELIABILITY}
name: report-sweep
replications: 2
set:
  workload.tokens: 30B
  workload.parallelism: {{tp: 64, pp: 2, zero: 1, recompute: full}}
sweep:
  grid:
    cluster.ultraservers: [32, 64]
    reliability.checkpoint.interval: [15min, 1h, 4h]
"""

#: Four axes (a grid key, a zip group of two keys, a random block): 3 x 2 x 2 x 4 = 48 points.
MULTI_SWEEP = f"""base: {RELIABILITY}
name: report-multi-sweep
replications: 2
set:
  workload.tokens: 20B
sweep:
  grid:
    cluster.ultraservers: [16, 32, 64]
    reliability.checkpoint.interval: [30min, 2h]
  zip:
    - {{workload.parallelism.zero: [1, 2], reliability.recovery.detection: [5min, 1min]}}
  random:
    samples: 4
    seed: 5
    keys: {{reliability.recovery.restart: {{uniform: [5min, 20min]}}}}
"""

PLAN = f"""base: {RELIABILITY}
name: report-plan
objective: min_cost
constraints: {{deadline: 40d}}
search:
  ultraservers: [64, 128, 256]
  tp: [32, 64]
  pp: [1, 2]
  checkpoint_interval: [auto, 30min, 2h]
  spares: [4, 16]
finalists: 3
frontier: 2
replications: 2
"""

#: A plan that searches the global batch: cluster_size.png draws a line per batch.
BATCH_PLAN = f"""base: {RELIABILITY}
name: report-batch-plan
constraints: {{deadline: 40d}}
search:
  ultraservers: [64, 128, 256]
  global_batch: [1024, 2048]
  tp: [64]
  pp: [1, 2]
finalists: 1
frontier: 0
replications: 1
"""

#: Nothing meets a deadline of 2 days (default.yaml's job takes weeks): the report must say
#: so and show the closest misses the CLI prints.
LATE_PLAN = f"""base: {DEFAULT}
name: report-late-plan
constraints: {{deadline: 2d}}
search:
  ultraservers: [16, 32, 64]
  tp: [8, 16]
"""


def trnsim(*args, cwd=SOURCE_DIR):
    """Runs the CLI; returns its stdout (fails the test on a non-zero exit)."""
    done = subprocess.run([str(TRNSIM_BIN), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"trnsim {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def run_report(results, directory):
    return subprocess.run([PYTHON, str(REPORT_PY), str(results), "-o", str(directory)],
                          cwd=SOURCE_DIR, capture_output=True, text=True, timeout=300)


def cli_line(stdout, label):
    """The text after a summary line's label ('  step       16.8 s = ...' -> '16.8 s = ...')."""
    for line in stdout.splitlines():
        m = re.match(rf"^  {re.escape(label)}\s+(.*)$", line)
        if m:
            return m.group(1)
    raise AssertionError(f"no '{label}' line in:\n{stdout}")


class Tables(html.parser.HTMLParser):
    """The page's tables as lists of rows of cell texts (header rows included), and the text
    of the page outside <style> and <title>."""

    def __init__(self, page):
        super().__init__()
        self.tables, self.text, self._skip, self._cell = [], [], 0, None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "title"):
            self._skip += 1
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("style", "title"):
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    def page_text(self):
        return re.sub(r"\s+", " ", " ".join(self.text))


#: A number in scientific notation (5e+05, 1.2E-3), which no cell may show.
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
#: An integer of a million or more without a unit (a raw byte count, 16,296,521,472).
RAW_LARGE = re.compile(r"(?<![$\d,.])(\d{7,}|\d{1,3}(,\d{3}){2,})(?![\d,.]| ?[A-Za-z%])")
