#!/usr/bin/python3
"""Plot a run simulation over time: training progress, recoveries and failures.

Reads /run/timeline and /run/events of a trnsim results file (a scenario with a reliability
section; the first replication) and writes a PNG with two panels:
  - progress: work done and work saved in a checkpoint (days of failure-free training) against
    wall time, with the recovery states shaded and interruptions marked;
  - failures: cumulative component failures by class, anywhere in the cluster (spares
    included), and the interruptions of the job.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import trnsim_results  # noqa: E402

DAY = 86400.0
PROGRESS_COLOR = "#2166ac"
COMMITTED_COLOR = "#4dac26"
RECOVERY_COLORS = {
    "detecting": "#f4a582",
    "restarting": "#d6604d",
    "loading": "#b2182b",
    "waiting_for_spare": "#878787",
    "running_degraded": "#fddbc7",
}


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
    return meta, timeline, events, summary


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


def plot(path, output, dpi=110):
    meta, timeline, events, summary = load(path)
    if timeline.empty:
        fail(f"{path}: /run/timeline is empty")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    t = timeline["time_s"] / DAY
    shade_states(top, timeline)
    top.plot(t, timeline["progress_s"] / DAY, color=PROGRESS_COLOR, lw=1.2, label="work done")
    top.plot(t, timeline["committed_s"] / DAY, color=COMMITTED_COLOR, lw=1.0, ls="--",
             label="work in the newest checkpoint")
    interruptions = events[events["kind"] == "interruption"]
    for x in interruptions["time_s"] / DAY:
        top.axvline(x, color="#b2182b", lw=0.4, alpha=0.5)
    top.set_ylabel("training progress (days)")
    ettr = summary.get("ettr", float("nan"))
    top.set_title(f"{meta.get('name', os.path.basename(path))}: {len(interruptions)} "
                  f"interruptions, ETTR {ettr:.1%} (mean over replications); first replication")
    top.legend(loc="upper left", fontsize=8)
    top.grid(alpha=0.3)

    failures = events[events["kind"] == "failure"]
    for component, group in failures.groupby("component", sort=True):
        times = sorted(group["time_s"] / DAY)
        bottom.step(times, range(1, len(times) + 1), where="post", lw=1.0,
                    label=f"{component} ({len(times)})")
    if len(interruptions):
        times = sorted(interruptions["time_s"] / DAY)
        bottom.step(times, range(1, len(times) + 1), where="post", color="black", lw=1.6,
                    label=f"job interruptions ({len(times)})")
    bottom.set_xlabel("wall time (days)")
    bottom.set_ylabel("cumulative failures")
    bottom.grid(alpha=0.3)
    if len(failures) or len(interruptions):
        bottom.legend(loc="upper left", fontsize=8, ncol=2)
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
