#!/usr/bin/python3
"""Plot a run simulation over time: training progress, recoveries and interruptions by cause.

Reads /run/timeline, /run/events and /run/causes of a trnsim results file (a scenario with a
reliability section; the first replication) and writes a PNG with two panels:
  - progress: work done and work saved in a checkpoint (days of failure-free training) against
    wall time; with few interruptions (at most 50) the recovery states are shaded and each
    interruption marked, with more they would cover the panel, so they are left to the panel
    below;
  - interruptions per day (per hour for runs shorter than 3 days) stacked by cause, with the
    cause names of /run/causes, as `trnsim run` prints them ("interrupts ... faulty_gpu 65.6,
    hbm 32.4, ..."), and the component failures anywhere in the cluster (spares included) per
    day as a line.
"""

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

import trnsim_format  # noqa: E402
import trnsim_results  # noqa: E402

DAY = 86400.0
HOUR = 3600.0
PROGRESS_COLOR = "#2166ac"
COMMITTED_COLOR = "#4dac26"
FAILURES_COLOR = "#000000"
RECOVERY_COLORS = {
    "detecting": "#f4a582",
    "restarting": "#d6604d",
    "loading": "#b2182b",
    "waiting_for_spare": "#878787",
    "running_degraded": "#fddbc7",
}
#: Colours of the causes, most interruptions first; the rest share OTHER_COLOR.
CAUSE_COLORS = ["#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                "#7f7f7f"]
OTHER_COLOR = "#c7c7c7"
#: Up to this many interruptions, each is marked and the recoveries are shaded.
MAX_MARKED = 50


def fail(message: str) -> "NoReturn":  # noqa: F821
    print(f"timeline.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    try:
        meta = trnsim_results.load_meta(path)
        timeline = trnsim_results.load_table(path, "/run/timeline")
        events = trnsim_results.load_table(path, "/run/events")
        summary = trnsim_results.load_summary(path).iloc[0]
    except KeyError:
        fail(f"{path}: no /run/timeline: the scenario had no reliability section")
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    try:
        causes = list(trnsim_results.load_table(path, "/run/causes")["cause"])
    except KeyError:
        causes = []
    return meta, timeline, events, summary, causes


def shade_states(ax, timeline):
    """Spans of the recovery states (consecutive rows: a state lasts until the next row)."""
    times = list(timeline["time_s"] / DAY)
    states = list(timeline["state"])
    labelled = set()
    for i in range(len(states) - 1):
        color = RECOVERY_COLORS.get(states[i])
        if color is None or times[i + 1] <= times[i]:
            continue
        label = states[i].replace("_", " ") if states[i] not in labelled else None
        labelled.add(states[i])
        ax.axvspan(times[i], times[i + 1], color=color, alpha=0.6, lw=0, label=label)


def bin_width(span_s):
    """(seconds, name) of the bins: a day from 3 days of wall time, else an hour."""
    return (DAY, "day") if span_s >= 3 * DAY else (HOUR, "hour")


def interruptions_by_cause(events, causes, span_s, max_causes=len(CAUSE_COLORS)):
    """The events per bin: (edges in seconds, bin name, [(cause, counts per bin, total)] most
    interruptions first (ties in /run/causes order; beyond max_causes merged into 'other
    causes'), failures per bin)."""
    width, name = bin_width(span_s)
    bins = max(1, int(math.ceil(span_s / width)))
    edges = np.arange(bins + 1) * width
    interruptions = events[events["kind"] == "interruption"]
    order = {c: i for i, c in enumerate(causes)}
    totals = interruptions["cause"].value_counts()
    names = sorted(totals.index, key=lambda c: (-int(totals[c]), order.get(c, len(order)), c))
    rows = []
    for c in names:
        times = interruptions.loc[interruptions["cause"] == c, "time_s"].to_numpy()
        rows.append((c, np.histogram(np.minimum(times, edges[-1]), bins=edges)[0],
                     int(totals[c])))
    if len(rows) > max_causes:
        kept, rest = rows[:max_causes - 1], rows[max_causes - 1:]
        merged = sum(r[1] for r in rest)
        rows = kept + [(f"{len(rest)} other causes", merged, int(sum(r[2] for r in rest)))]
    failures = events.loc[events["kind"] == "failure", "time_s"].to_numpy()
    per_bin = np.histogram(np.minimum(failures, edges[-1]), bins=edges)[0]
    return edges, name, rows, per_bin


def plot(path, output, dpi=110):
    meta, timeline, events, summary, causes = load(path)
    if timeline.empty:
        fail(f"{path}: /run/timeline is empty")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    t = timeline["time_s"] / DAY
    interruptions = events[events["kind"] == "interruption"]
    marked = len(interruptions) <= MAX_MARKED
    if marked:
        shade_states(top, timeline)
        for x in interruptions["time_s"] / DAY:
            top.axvline(x, color="#b2182b", lw=0.4, alpha=0.5)
    top.plot([0, t.max()], [0, t.max()], color="#999999", lw=0.8, ls=":",
             label="without failures or checkpoints")
    top.plot(t, timeline["progress_s"] / DAY, color=PROGRESS_COLOR, lw=1.2, label="work done")
    top.plot(t, timeline["committed_s"] / DAY, color=COMMITTED_COLOR, lw=1.0, ls="--",
             label="work in the newest checkpoint")
    top.set_ylabel("training progress (days)")
    ettr = summary.get("ettr", float("nan"))
    name = meta.get("name", os.path.basename(path))
    top.set_title(f"{name}: {trnsim_format.integer(len(interruptions))} interruptions in the "
                  f"first replication; ETTR {trnsim_format.percent(ettr)} (mean over "
                  f"{trnsim_format.integer(int(summary.get('replications', 1)))} replications)",
                  fontsize=10)
    top.legend(loc="upper left", fontsize=8)
    top.grid(alpha=0.3)

    span = max(float(timeline["time_s"].max()),
               float(events["time_s"].max()) if len(events) else 0.0, 1.0)
    edges, unit, rows, failures = interruptions_by_cause(events, causes, span)
    width = (edges[1] - edges[0]) / DAY
    left = edges[:-1] / DAY
    base = np.zeros(len(left))
    for i, (cause, counts, total) in enumerate(rows):
        color = OTHER_COLOR if cause.endswith(" other causes") else CAUSE_COLORS[i]
        bottom.bar(left, counts, width=width, bottom=base, align="edge", color=color, lw=0,
                   label=f"{cause} ({trnsim_format.integer(total)})")
        base = base + counts
    if len(failures) and failures.sum() > 0:
        bottom.step(np.append(left, left[-1] + width), np.append(failures, failures[-1]),
                    where="post", color=FAILURES_COLOR, lw=0.9,
                    label=f"component failures, spares included "
                          f"({trnsim_format.integer(int(failures.sum()))})")
    bottom.set_xlabel("wall time (days)")
    bottom.set_ylabel(f"per {unit}")
    bottom.set_title(f"Job interruptions per {unit} by cause (first replication)", fontsize=9)
    bottom.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    bottom.grid(alpha=0.3)
    if rows or failures.sum() > 0:
        bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(output, dpi=dpi)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: analysis/timeline.py results/llama3-405b-reliability.h5 -o timeline.png\n"
               "exit status: 0 success, 2 a missing file or a results file without a run "
               "simulation",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="trnsim results file (.h5)")
    parser.add_argument("-o", "--output", help="PNG to write (default: RESULTS with .png)")
    args = parser.parse_args(argv)
    output = args.output or os.path.splitext(args.results)[0] + ".png"
    plot(args.results, output)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
