#!/usr/bin/python3
"""Plots and an HTML report of a trnsim results file.

report.py RESULTS.h5 -o DIR writes DIR/index.html and the PNG plots that fit what the file
holds (docs/results-schema.md):

  a run (trnsim run)        the key figures, then the plan, step, throughput, cost and
                            reliability figures in groups with their 95% intervals when the
                            run has replications, the interruptions by cause; the step-time
                            breakdown and the failure timeline (interruptions per day by cause)
  a sweep (trnsim batch)    every point with time to train and cost first (mean +- 95%
                            interval); each swept axis on its own (small multiples); time to
                            train and cost against cluster size and ETTR against the
                            checkpoint interval, one panel per value of another axis when
                            one line per combination would be too many; cost against time
                            to train with the Pareto frontier
  a serving run             (workload.type: inference) the latency, throughput, fleet and cost
                            figures; the CDFs of TTFT, TPOT and end-to-end latency over the
                            requests (/serving/requests) with the SLO's limits; the KV cache
                            in use and the requests in flight over time (/serving/kv)
  a serving sweep           every point with SLO attainment, TTFT and TPOT p99 and cost per
                            million output tokens first; output throughput, TTFT, TPOT, SLO
                            attainment and cost per million output tokens against the load
                            (a swept arrival rate or speed-up, else the fleet size), the
                            other axes as lines or panels; each swept axis on its own
  a plan (trnsim plan)      the best plan, or that no candidate met the constraints and the
                            closest misses; the finalists with time to train and cost first;
                            cost against time to train of every candidate, the best plan per
                            cluster size, ETTR against the checkpoint interval, the best
                            plan's breakdown and failure timeline
  a serving plan            the best fleet, or that none met the SLO objective; the feasible
                            fleets in rank order and the closest misses; cost per million
                            output tokens against TTFT p99 with the Pareto frontier

Figures are written as the command line writes them (analysis/trnsim_format.py, tested equal
to the C++ formatters): 16.8 s, 499K tokens/s, 2.00 GiB, $2,887,234, 99.1%.
Exit status: 0 success, 2 a missing file or a file that is not a trnsim results file.
"""

import argparse
import html
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import trnsim_format as fmt  # noqa: E402
import trnsim_results  # noqa: E402

DAY = 86400.0
HOUR = 3600.0
#: Colours of the data series, in order (the tests look for them in the images).
SERIES_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
                 "#17becf"]
FRONTIER_COLOR = "#ff7f0e"
POINT_COLOR = "#9e9e9e"
DPI = 90
#: At most this many lines in one panel; more combinations get panels or are averaged.
MAX_LINES = 8
#: Lines of several axes share a panel up to this many; beyond, one axis becomes panels.
MAX_LINES_SHARED = 4
#: At most this many panels per row of small multiples.
MAX_FACETS = 6
#: Header colours of the time and cost columns (the Chromium test finds them on screen).
TIME_COLOR = "#fdd9a0"
COST_COLOR = "#c7e9c0"


class ReportError(Exception):
    """A file this report cannot read."""


def fail(message):
    print(f"report.py: error: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Reading


def kind_of(path):
    """'serving_plan', 'fleet_plan', 'plan', 'batch', 'fleet' or 'run' from the datasets the
    file holds."""
    import h5py

    with h5py.File(path, "r") as f:
        if "fleet" in f and "jobs" in f["fleet"]:
            return "fleet"
        if "plan" in f and "fleet" in f["plan"]:
            return "fleet_plan"
        if "plan" in f and "serving" in f["plan"]:
            return "serving_plan"
        if "plan" in f and "candidates" in f["plan"]:
            return "plan"
        if "batch" in f and "points" in f["batch"]:
            return "batch"
    return "run"


def table_or_none(path, name):
    try:
        return trnsim_results.load_table(path, name)
    except KeyError:
        return None


def has_table(path, name):
    return table_or_none(path, name) is not None


def swept_keys(points):
    return [c for c in points.columns if c not in ("point", "replicates", "key")]


def batch_frame(path):
    """/batch/mean joined with the swept values of /batch/points (one row per point), the
    swept keys, and per key its unit and axis (/batch/keys; older files: each key its own
    axis, units guessed from the values)."""
    points = trnsim_results.load_table(path, "/batch/points")
    mean = trnsim_results.load_table(path, "/batch/mean")
    keys = swept_keys(points)
    frame = mean.merge(points[["point"] + keys], on="point", how="left")
    table = table_or_none(path, "/batch/keys")
    units, axes, kinds = {}, {}, {}
    for i, k in enumerate(keys):
        units[k], axes[k], kinds[k] = ("text" if points[k].dtype == object else "real"), i, ""
    if table is not None:
        for _, row in table.iterrows():
            k = row["key"]
            units[k], axes[k], kinds[k] = row["unit"], int(row["axis"]), row["kind"]
    return frame, keys, units, axes, kinds


def short_key(key):
    return ".".join(key.split(".")[-2:])


def frontier(time, cost):
    """Indices (into the given arrays) of the points no other point beats in time and cost."""
    order = sorted(range(len(time)), key=lambda i: (time[i], cost[i], i))
    best = math.inf
    out = []
    for i in order:
        if cost[i] < best:
            out.append(i)
            best = cost[i]
    return out


# ---------------------------------------------------------------------------------------------
# Plots: each returns (file name, caption) or None when the data does not fit.


def plain_ticks(ax, axes="xy"):
    """Tick labels as plain numbers (0.5, 2, 100) on log axes; base-10 axes get ticks at 1, 2
    and 5 times the powers of ten."""
    formatter = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if abs(v) < 1e6
                                                else fmt.count(v))
    for a in axes:
        axis = ax.xaxis if a == "x" else ax.yaxis
        scale = ax.get_xscale() if a == "x" else ax.get_yscale()
        if scale == "log" and getattr(axis.get_transform(), "base", 10) == 10:
            lo, hi = ax.get_xlim() if a == "x" else ax.get_ylim()
            decades = math.log10(hi / lo) if lo > 0 and hi > lo else 10.0
            subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
            axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=subs))
        axis.set_major_formatter(formatter)
        axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def save(fig, directory, name):
    fig.savefig(os.path.join(directory, name), dpi=DPI, bbox_inches="tight",
                pil_kwargs={"optimize": True})
    plt.close(fig)
    return name


def plot_breakdown(path, directory, name="breakdown.png", title=""):
    ops = table_or_none(path, "/step/breakdown")
    if ops is None or ops.empty:
        return None
    summary = trnsim_results.load_summary(path).iloc[0]
    top = ops.sort_values("time_per_step_s", ascending=False).head(15).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = [SERIES_COLORS[4] if c else SERIES_COLORS[0] for c in top["collective"]]
    ax.barh(top["op"], top["time_per_step_s"], color=colors)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: fmt.seconds(v) if v else "0"))
    ax.set_xlabel("time per step on the slowest stage (standalone, overlaps not removed)")
    ax.set_title(f"{title}step {fmt.seconds(summary['step_time_s'])}, MFU "
                 f"{fmt.percent(summary['mfu'])}: largest ops (orange: collectives)",
                 fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    return save(fig, directory, name), ("Step-time breakdown: the ops that take most of a step "
                                        "on the slowest pipeline stage.")


def plot_timeline(path, directory, name="timeline.png"):
    if not has_table(path, "/run/timeline"):
        return None
    import timeline

    timeline.plot(path, os.path.join(directory, name), dpi=DPI)
    return name, ("Failure timeline of the first replication: progress and work kept in "
                  "checkpoints; job interruptions per day by cause (the causes of the "
                  "interruptions table) and component failures per day.")


# --- sweeps: small multiples -----------------------------------------------------------------


class Axes:
    """The swept axes of a sweep frame: keys grouped by axis (zipped keys together), their
    units and kinds (/batch/keys), and how to label a combination of values."""

    def __init__(self, frame, keys, units, axes, kinds=None):
        self.frame = frame
        self.units = units
        self.kinds = kinds or {}
        by_axis = {}
        for k in keys:
            by_axis.setdefault(axes.get(k, len(by_axis)), []).append(k)
        self.groups = [by_axis[a] for a in sorted(by_axis)]

    def varying(self, exclude=()):
        """The axes (lists of keys) with more than one value, without keys in `exclude`."""
        out = []
        for g in self.groups:
            g = [k for k in g if k not in exclude]
            if g and self.frame.groupby(g, dropna=False).ngroups > 1:
                out.append(g)
        return out

    def values(self, group, frame=None):
        frame = self.frame if frame is None else frame
        return frame.groupby(group, dropna=False).ngroups

    def label(self, group_keys, values, short=True):
        """'tp 8, recompute full': the keys' last components (whole paths unless short)
        and the values in their units."""
        parts = []
        for k, v in zip(group_keys, values):
            name = k.split(".")[-1] if short else k
            parts.append(f"{name} {fmt.swept(self.units.get(k), v)}")
        return ", ".join(parts)


def layout(axes, frame, exclude):
    """How to show a metric against one key when the other axes vary too: (facet axis or None,
    line axes, averaged axes). Axes with more values than MAX_LINES (or random samples) are
    averaged over; the rest give one line per combination if there are at most MAX_LINES, else
    the axis with the fewest values (at most MAX_FACETS) gives one panel per value and the
    others lines, averaging the axes with the most values until the lines fit."""
    others = axes.varying(exclude)
    averaged = [g for g in others if axes.values(g, frame) > MAX_LINES or
                axes.kinds.get(g[0]) == "random"]
    rest = [g for g in others if g not in averaged]

    def combos(groups):
        keys = [k for g in groups for k in g]
        return frame.groupby(keys, dropna=False).ngroups if keys else 1

    facet = None
    panels = [g for g in rest if axes.values(g, frame) <= MAX_FACETS]
    if panels and (combos(rest) > MAX_LINES or
                   (len(rest) > 1 and combos(rest) > MAX_LINES_SHARED)):
        facet = min(panels, key=lambda g: (axes.values(g, frame), rest.index(g)))
        rest = [g for g in rest if g is not facet]
        while rest and (combos(rest) > MAX_LINES or
                        (len(rest) > 1 and combos(rest) > MAX_LINES_SHARED)):
            g = max(rest, key=lambda g: (axes.values(g, frame), -rest.index(g)))
            rest.remove(g)
            averaged.append(g)
    return facet, rest, averaged


def grouped(frame, groups):
    """(values tuple, keys, sub-frame) per combination of the axes' keys, in sorted order."""
    keys = [k for g in groups for k in g]
    if not keys:
        return [((), [], frame)]
    out = []
    by = keys if len(keys) > 1 else keys[0]
    for values, sub in frame.groupby(by, sort=True, dropna=False):
        out.append((values if isinstance(values, tuple) else (values,), keys, sub))
    return out


def draw_series(ax, sub, x, y, scale_y, ci, averaged, color, label):
    """A line of y against x: the mean over the averaged axes with their range as a band, or
    the points with their 95% intervals (bars) when nothing is averaged."""
    if averaged:
        stats = sub.groupby(x)[y].agg(["mean", "min", "max"]).sort_index()
        xs = stats.index.to_numpy(dtype=float)
        ax.plot(xs, stats["mean"] / scale_y, color=color, marker="o", ms=3, lw=1.3,
                label=label)
        ax.fill_between(xs, stats["min"] / scale_y, stats["max"] / scale_y, color=color,
                        alpha=0.15, lw=0)
    else:
        sub = sub.sort_values(x)
        err = sub[ci].fillna(0.0) / scale_y if ci in sub else None
        ax.errorbar(sub[x], sub[y] / scale_y, yerr=err, color=color, marker="o", ms=3,
                    lw=1.3, capsize=2, label=label)


def facet_figure(axes, frame, x, metrics, exclude, xlabel, xscale, title, xtick=None):
    """Small multiples of metrics (rows: (column, label, scale, ci column, yscale)) against x:
    one panel per value of the facet axis, one line per combination of the line axes, the
    averaged axes as bands; ticks at the x values (labelled by xtick) when there are few.
    Returns (figure, note on what was averaged)."""
    facet, lines, averaged = layout(axes, frame, exclude)
    panels = grouped(frame, [facet]) if facet else [((), [], frame)]
    if len(panels) > MAX_FACETS:
        panels = panels[:MAX_FACETS]
    ncol = len(panels)
    width = max(8.0, min(3.6 * ncol, 16.0))
    fig, grid = plt.subplots(len(metrics), ncol, figsize=(width, 3.0 * len(metrics) + 0.6),
                             squeeze=False, sharex=True, sharey="row")
    handles = {}
    for c, (fvalues, fkeys, sub) in enumerate(panels):
        for r, (y, ylabel, scale_y, ci, yscale) in enumerate(metrics):
            ax = grid[r][c]
            for i, (values, keys, part) in enumerate(grouped(sub, lines)):
                label = axes.label(keys, values) if keys else (
                    "mean over the other axes" if averaged else "points")
                color = SERIES_COLORS[i % len(SERIES_COLORS)]
                draw_series(ax, part, x, y, scale_y, ci, averaged, color, label)
            ax.set_xscale(xscale)
            if yscale:
                ax.set_yscale(yscale)
            ax.grid(alpha=0.3, which="both")
            if c == 0:
                ax.set_ylabel(ylabel)
            if r == len(metrics) - 1:
                ax.set_xlabel(xlabel)
            if r == 0 and fkeys:
                ax.set_title(axes.label(fkeys, fvalues), fontsize=9)
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
    xs = sorted(frame[x].dropna().unique())
    for r, row in enumerate(grid):
        for ax in row:
            plain_ticks(ax, "xy" if metrics[r][4] == "log" else "x")
            if xtick is not None and len(xs) <= 8:
                ax.set_xticks(xs)
                ax.set_xticklabels([xtick(v) for v in xs], fontsize=8)
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    note = ""
    if averaged:
        names = ", ".join(short_key(k) for g in averaged for k in g)
        note = f"lines: the mean over {names}; bands: their range"
        handles[note] = matplotlib.patches.Patch(color=SERIES_COLORS[0], alpha=0.15)
    else:
        note = "bars: 95% confidence intervals over the replicates"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.0, 1, 0.96))
    if handles:
        fig.legend(list(handles.values()), list(handles.keys()), loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(handles)), fontsize=8,
                   frameon=False)
    return fig, note


def plot_cluster_size(axes, frame, directory):
    """Time to train and cost against chips; the other axes as lines, panels or bands."""
    if ("chips" not in frame or "time_to_train_s" not in frame or
            frame["chips"].nunique() < 2):
        return None
    exclude = [k for g in axes.groups for k in g if k.startswith("cluster.")]
    metrics = [("time_to_train_s", "time to train (days)", DAY, "ci95_time_to_train_s", "log"),
               ("cost_usd", "cost (million USD)", 1e6, "ci95_cost_usd", None)]
    ok = frame[np.isfinite(frame["time_to_train_s"])]
    if ok.empty:
        return None
    axes.frame = ok
    fig, note = facet_figure(axes, ok, "chips", metrics, exclude, "chips in the job", "log",
                             "Time to train and cost against cluster size",
                             xtick=lambda v: fmt.integer(int(v)))
    axes.frame = frame
    return save(fig, directory, "cluster_size.png"), (
        f"Time to train and cost against the number of chips ({note}).")


def plot_checkpoint(axes, frame, directory):
    """ETTR against the checkpoint interval; the other axes as lines, panels or bands."""
    if "ettr" not in frame or "checkpoint_interval_s" not in frame:
        return None
    finite = frame[np.isfinite(frame["checkpoint_interval_s"])].copy()
    if finite["checkpoint_interval_s"].nunique() < 2:
        return None
    finite["interval_h"] = finite["checkpoint_interval_s"] / HOUR
    axes.frame = finite
    facet, lines, averaged = layout(axes, finite, ["reliability.checkpoint.interval"])
    # Only when the interval varies within a line (not merely between points whose automatic
    # interval differs).
    inner = [k for g in ([facet] if facet else []) + lines for k in g]
    per_line = (finite.groupby(inner)["checkpoint_interval_s"].nunique().max() if inner
                else finite["checkpoint_interval_s"].nunique())
    if per_line < 2:
        axes.frame = frame
        return None
    fig, note = facet_figure(axes, finite, "interval_h",
                             [("ettr", "ETTR", 1.0, "ci95_ettr", None)],
                             ["reliability.checkpoint.interval"],
                             "checkpoint interval (hours of training)", "log",
                             "ETTR against the checkpoint interval",
                             xtick=lambda v: fmt.seconds(v * HOUR))
    axes.frame = frame
    return save(fig, directory, "checkpoint.png"), (
        f"ETTR (effective training time ratio) against the checkpoint interval ({note}).")


def plot_axes(axes, frame, directory, metrics=None):
    """Each swept axis on its own: every point (grey) and the mean per value (line), for time
    to train, cost and (with failures) ETTR, or the given metrics ((column, label, scale);
    points whose first metric is not finite are left out)."""
    groups = axes.varying()
    if not groups:
        return None
    groups = groups[:MAX_FACETS]
    if metrics is None:
        metrics = [("time_to_train_s", "time to train (days)", DAY),
                   ("cost_usd", "cost (million USD)", 1e6)]
        if "ettr" in frame and frame["ettr"].nunique() > 1:
            metrics.append(("ettr", "ETTR", 1.0))
    if metrics[0][0] not in frame:
        return None
    ok = frame[np.isfinite(frame[metrics[0][0]])]
    if ok.empty:
        return None
    fig, grid = plt.subplots(len(metrics), len(groups),
                             figsize=(3.3 * len(groups) + 0.8, 2.6 * len(metrics) + 0.5),
                             squeeze=False, sharey="row")
    for c, g in enumerate(groups):
        values = grouped(ok, [g])
        numeric = len(g) == 1 and axes.units.get(g[0]) not in (None, "text")
        if numeric:
            xs = [float(v[0]) for v, _, _ in values]
            positive = all(x > 0 for x in xs)
            log = positive and max(xs) / min(xs) >= 4
        else:
            xs = list(range(len(values)))
            log = False
        for r, (y, ylabel, scale_y) in enumerate(metrics):
            ax = grid[r][c]
            means = []
            for xpos, (v, keys, sub) in zip(xs, values):
                ax.scatter(np.full(len(sub), xpos), sub[y] / scale_y, s=7, color=POINT_COLOR,
                           zorder=2)
                means.append(sub[y].mean() / scale_y)
            ax.plot(xs, means, color=SERIES_COLORS[0], marker="o", ms=4, lw=1.5, zorder=3)
            if log:
                ax.set_xscale("log")
            ax.grid(alpha=0.3, which="both")
            if c == 0:
                ax.set_ylabel(ylabel)
            if r == len(metrics) - 1:
                ax.set_xlabel(", ".join(short_key(k) for k in g), fontsize=9)
            if numeric:
                unit = axes.units.get(g[0])
                ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
                    lambda v, _, unit=unit: fmt.swept(unit, v)))
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
                if len(xs) <= 6 and axes.kinds.get(g[0]) != "random":
                    ax.set_xticks(xs)
                elif not log:
                    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
            else:
                ax.set_xticks(xs)
                ax.set_xticklabels([axes.label(keys, v).replace(", ", "\n") if len(keys) > 1
                                    else fmt.swept(axes.units.get(keys[0]), v[0])
                                    for v, keys, _ in values], fontsize=7)
            ax.tick_params(axis="x", labelsize=7)
    fig.suptitle("Each swept axis on its own: every point (grey) and the mean over the other "
                 "axes (line)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return save(fig, directory, "axes.png"), (
        "Each swept axis on its own: the points at each of its values (grey dots, whatever "
        "the other axes are) and their mean (line).")


def finish_cost_time_axes(ax, xlim, ylim, title):
    """Log axes of cost (million USD) against time to train (days) with the given limits."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    plain_ticks(ax)
    ax.set_xlabel("time to train (days)")
    ax.set_ylabel("cost (million USD)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)


def runnable_candidates(cands):
    """Candidates that can run and were estimated (they may miss the deadline or budget)."""
    return cands[cands["verdict"].isin(["ok", "deadline", "budget"]) &
                 np.isfinite(cands["time_to_train_s"])]


def plot_batch_pareto(frame, directory):
    if "time_to_train_s" not in frame:
        return None
    ok = frame[np.isfinite(frame["time_to_train_s"]) & np.isfinite(frame["cost_usd"])]
    if len(ok) < 2 or ok["time_to_train_s"].nunique() < 2:
        return None
    t = list(ok["time_to_train_s"] / DAY)
    c = list(ok["cost_usd"] / 1e6)
    front = frontier(t, c)
    # The region that matters: up to 3 times the slowest frontier point and at least 10 times
    # the fastest point; the others are counted in the legend.
    right = max(3.0 * max(t[i] for i in front), 10.0 * min(t))
    shown = [i for i in range(len(t)) if t[i] <= right]
    hidden = len(frame) - len(shown)
    fig, ax = plt.subplots(figsize=(8, 5))
    sub = ok.iloc[shown]
    ax.errorbar([t[i] for i in shown], [c[i] for i in shown],
                xerr=sub.get("ci95_time_to_train_s", 0) / DAY,
                yerr=sub.get("ci95_cost_usd", 0) / 1e6, fmt="o", ms=4, color=SERIES_COLORS[0],
                ecolor="#9ecae1", capsize=2,
                label="points (mean, 95% interval)" +
                      (f"; {hidden} slower or never done not shown" if hidden else ""))
    ax.plot([t[i] for i in front], [c[i] for i in front], color=FRONTIER_COLOR, lw=2,
            marker="D", ms=5, label="Pareto frontier")
    for i in front:
        ax.annotate(str(int(ok.iloc[i]["point"])), (t[i], c[i]), fontsize=7,
                    textcoords="offset points", xytext=(4, 4))
    finish_cost_time_axes(ax, (0.8 * min(t), 1.2 * right),
                          (0.8 * min(c), 1.25 * max(c[i] for i in shown)),
                          "Cost against time to train; frontier points labelled by point number")
    fig.tight_layout()
    return save(fig, directory, "pareto.png"), (
        "Cost against time to train of every point; the Pareto frontier joins the points no "
        "other point beats on both.")


def plot_plan_pareto(cands, finalists, limits, directory):
    runnable = runnable_candidates(cands)
    if runnable.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 5.5))
    over = runnable[runnable["verdict"] != "ok"]
    ok = runnable[runnable["verdict"] == "ok"]
    ax.scatter(over["time_to_train_s"] / DAY, over["cost_usd"] / 1e6, s=6, color="#bbbbbb",
               label=f"over the deadline or budget ({fmt.integer(len(over))})")
    ax.scatter(ok["time_to_train_s"] / DAY, ok["cost_usd"] / 1e6, s=8, color=SERIES_COLORS[0],
               label=f"feasible candidates, estimated ({fmt.integer(len(ok))})")
    front = runnable[runnable["frontier"] == 1].sort_values("time_to_train_s")
    ax.plot(front["time_to_train_s"] / DAY, front["cost_usd"] / 1e6, color=FRONTIER_COLOR,
            lw=2, label="estimated Pareto frontier")
    if not finalists.empty:
        ax.scatter(finalists["time_to_train_s"] / DAY, finalists["cost_usd"] / 1e6, marker="*",
                   s=140, color=SERIES_COLORS[1], edgecolor="black", lw=0.5, zorder=5,
                   label="finalists, simulated")
        for _, row in finalists.iterrows():
            ax.annotate(str(int(row["rank"])), (row["time_to_train_s"] / DAY,
                                                 row["cost_usd"] / 1e6),
                        fontsize=7, textcoords="offset points", xytext=(5, 5))
    if np.isfinite(limits["deadline_s"]):
        ax.axvline(limits["deadline_s"] / DAY, color="black", ls="--", lw=1, label="deadline")
    if np.isfinite(limits["budget_usd"]):
        ax.axhline(limits["budget_usd"] / 1e6, color="black", ls=":", lw=1, label="budget")
    # Show the region that matters: up to a few times the slowest frontier point (or the
    # deadline); far slower candidates are counted in the legend.
    near = front if not front.empty else runnable
    right = 3.0 * max(near["time_to_train_s"].max(),
                      limits["deadline_s"] if np.isfinite(limits["deadline_s"]) else 0.0)
    shown = runnable[runnable["time_to_train_s"] <= right]
    finish_cost_time_axes(ax, (0.7 * shown["time_to_train_s"].min() / DAY, right / DAY),
                          (0.8 * shown["cost_usd"].min() / 1e6,
                           1.25 * shown["cost_usd"].max() / 1e6),
                          "Plan search: cost against time to train (finalists by rank)")
    fig.tight_layout()
    return save(fig, directory, "pareto.png"), (
        "Every candidate the planner estimated (closed forms), the estimated Pareto frontier of "
        "cost and time to train, and the finalists' simulated figures (stars, by rank).")


def job_chips(cands, domain):
    """Chips of each candidate's job (spares not counted): /plan/candidates job_chips, or for
    older files chips per domain x domains (spares counted in chips only with failures)."""
    if "job_chips" in cands.columns:
        return cands["job_chips"]
    per_domain = cands["chips"] / (cands[domain] + cands["spares"])
    return (cands[domain] * per_domain).round()


def plot_plan_cluster(cands, finalists, domain, limits, directory):
    runnable = runnable_candidates(cands).copy()
    if runnable[domain].nunique() < 2:
        return None
    runnable["job_chips"] = job_chips(runnable, domain)
    # One line per global batch when the plan searched it (older files have no such column).
    by_batch = "global_batch" in runnable.columns and runnable["global_batch"].nunique() > 1
    colors = [SERIES_COLORS[0]] + SERIES_COLORS[2:]  # the finalists' colour left out
    groups = (sorted(runnable.groupby("global_batch"), key=lambda g: g[0])[:len(colors)]
              if by_batch else [(None, runnable)])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5))
    for i, (batch, rows) in enumerate(groups):
        best_time = rows.groupby("job_chips")["time_to_train_s"].min() / DAY
        best_cost = rows.groupby("job_chips")["cost_usd"].min() / 1e6
        color = colors[i]
        what = f"batch {fmt.integer(int(batch))}: " if by_batch else ""
        left.plot(best_time.index, best_time.values, marker="o", ms=4, color=color,
                  label=f"{what}fastest candidate (estimate)")
        right.plot(best_cost.index, best_cost.values, marker="o", ms=4, color=color,
                   label=f"{what}cheapest candidate (estimate)")
    if not finalists.empty:
        left.scatter(finalists["chips"], finalists["time_to_train_s"] / DAY, marker="*", s=90,
                     color=SERIES_COLORS[1], zorder=5, label="finalists, simulated")
        right.scatter(finalists["chips"], finalists["cost_usd"] / 1e6, marker="*", s=90,
                      color=SERIES_COLORS[1], zorder=5, label="finalists, simulated")
    if np.isfinite(limits["deadline_s"]):
        left.axhline(limits["deadline_s"] / DAY, color="black", ls="--", lw=1, label="deadline")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        plain_ticks(ax)
        ax.set_xlabel("chips in the job (spares not counted)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7 if by_batch else 8)
    left.set_ylabel("time to train (days)")
    right.set_ylabel("cost (million USD)")
    title = "Time to train and cost against cluster size (best candidate per size"
    fig.suptitle(title + (" and global batch, in sequences)" if by_batch else ")"), fontsize=10)
    fig.tight_layout()
    return save(fig, directory, "cluster_size.png"), (
        "The fastest and the cheapest estimated candidate at each cluster size" +
        (" for each global batch" if by_batch else "") + ", and the simulated finalists.")


def plot_plan_checkpoint(cands, finalists, domain, directory):
    if finalists.empty or cands["checkpoint_interval_s"].nunique() < 2:
        return None
    best = cands.loc[int(finalists.iloc[0]["candidate"])]
    same = cands
    for k in (domain, "global_batch", "spares", "tp", "cp", "pp", "dp", "ep", "zero", "microbatch",
              "recompute"):
        if k in same.columns:
            same = same[same[k] == best[k]]
    same = same[np.isfinite(same["checkpoint_interval_s"])].sort_values("checkpoint_interval_s")
    if len(same) < 2:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(same["checkpoint_interval_s"] / HOUR, same["ettr"], marker="o",
            color=SERIES_COLORS[0], label="closed-form estimate")
    sim_x = finalists.get("checkpoint_interval_s")
    if sim_x is not None:
        mine = finalists[finalists["candidate"].isin(same.index)]
        ax.errorbar(mine["checkpoint_interval_s"] / HOUR, mine["sim_ettr"],
                    yerr=mine.get("ci95_ettr", 0), fmt="*", ms=10, color=SERIES_COLORS[1],
                    capsize=3, label="simulated finalists (95% interval)")
    ax.set_xscale("log")
    plain_ticks(ax, "x")
    ax.set_xlabel("checkpoint interval (hours of training)")
    ax.set_ylabel("ETTR")
    ax.set_title(f"ETTR against the checkpoint interval of the best plan's configuration "
                 f"({fmt.integer(int(best[domain]))} {domain}, "
                 f"{fmt.integer(int(best['spares']))} spares)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, directory, "checkpoint.png"), (
        "ETTR against the checkpoint interval for the best plan's cluster, parallelism and "
        "spares: the closed-form estimate, and the simulated finalists with their 95% "
        "intervals.")


# --- serving (workload.type: inference) ------------------------------------------------------

#: Units of the durations in a scenario (docs/scenario-schema.md, Units), in seconds.
DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": HOUR,
                  "d": DAY, "w": 7 * DAY, "y": 365.25 * DAY}


def is_serving(columns):
    """Whether a /summary (or /batch/mean) has the serving columns (docs/results-schema.md,
    "Serving scenarios")."""
    return "ttft_p50_s" in columns and "slo_attainment" in columns


def duration_seconds(text):
    """Seconds of a scenario duration ('1s', '50ms', '2.5min'), None when it is not one."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-z]+)\s*", str(text))
    if not m or m.group(2) not in DURATION_UNITS:
        return None
    return float(m.group(1)) * DURATION_UNITS[m.group(2)]


def serving_slo(path):
    """(ttft, tpot) limits in seconds from the resolved scenario's workload.slo (/meta/scenario);
    None for a limit it does not give."""
    import yaml

    try:
        scenario = yaml.safe_load(trnsim_results.load_meta(path).get("scenario", "")) or {}
        slo = scenario.get("workload", {}).get("slo", {}) or {}
    except (yaml.YAMLError, AttributeError):
        return None, None
    return duration_seconds(slo.get("ttft", "")), duration_seconds(slo.get("tpot", ""))


def seconds_axis(axis):
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda v, _: fmt.seconds(v) if v > 0 else "0"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


#: At most this many points of a CDF are drawn (quantiles evenly spaced in rank).
CDF_POINTS = 4000


def cdf_points(values):
    """(sorted values, fraction of values <= each) of the finite values, thinned to at most
    CDF_POINTS points that keep the smallest and the largest."""
    v = np.sort(values[np.isfinite(values)])
    y = np.arange(1, len(v) + 1) / len(v) if len(v) else np.array([])
    if len(v) > CDF_POINTS:
        keep = np.unique(np.linspace(0, len(v) - 1, CDF_POINTS).round().astype(int))
        v, y = v[keep], y[keep]
    return v, y


def latency_samples(requests):
    """(column, label, values, SLO key) of the three latencies of /serving/requests: TTFT of
    every request, TPOT of the requests with more than one output token (the others have
    none), end to end of every request."""
    multi = requests["output_tokens"].to_numpy() > 1
    return [("ttft_s", "time to first token (TTFT)", requests["ttft_s"].to_numpy(float), 0),
            ("tpot_s", "time per output token (TPOT)",
             requests["tpot_s"].to_numpy(float)[multi], 1),
            ("e2e_s", "end to end (E2E)", requests["e2e_s"].to_numpy(float), None)]


def plot_latency_cdf(path, directory):
    """The CDFs of TTFT, TPOT and E2E over the requests, with the SLO's limits."""
    requests = table_or_none(path, "/serving/requests")
    if requests is None or requests.empty:
        return None
    slo = serving_slo(path)
    fig, panels = plt.subplots(1, 3, figsize=(12, 3.9), sharey=True)
    for ax, (col, label, values, which) in zip(panels, latency_samples(requests)):
        v, y = cdf_points(values)
        if not len(v):
            ax.set_title(f"{label}: no requests", fontsize=9)
            continue
        ax.step(v, y, where="post", color=SERIES_COLORS[0], lw=1.6, label="requests")
        limit = slo[which] if which is not None else None
        if limit:
            met = float((values[np.isfinite(values)] <= limit).mean())
            ax.axvline(limit, color=SERIES_COLORS[1], ls="--", lw=1.2,
                       label=f"SLO {fmt.seconds(limit)}: {fmt.percent(met)} within")
        positive = v[v > 0]
        if len(positive) and positive[-1] / positive[0] > 20:
            ax.set_xscale("log")
        seconds_axis(ax.xaxis)
        p50, p99 = np.percentile(values[np.isfinite(values)], [50, 99])
        ax.set_title(f"{label}\np50 {fmt.seconds(p50)}, p99 {fmt.seconds(p99)}", fontsize=9)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 0.9, 1.0])
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, loc="lower right")
    panels[0].set_ylabel("fraction of requests at or below")
    fig.suptitle(f"Latency CDFs over {fmt.integer(len(requests))} requests (/serving/requests)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return save(fig, directory, "latency_cdf.png"), (
        "Cumulative distributions of time to first token, time per output token (requests "
        "with more than one output token) and end-to-end latency over the requests; dashed: "
        "the scenario's SLO limits and the fraction of requests within each.")


def in_flight(requests, times):
    """Requests arrived and not finished at each of `times`."""
    arrived = np.searchsorted(np.sort(requests["arrival_s"].to_numpy(float)), times,
                              side="right")
    finished = np.searchsorted(np.sort(requests["finish_s"].to_numpy(float)), times,
                               side="right")
    return arrived - finished


def plot_kv(path, directory):
    """The fleet's KV cache in use over time (/serving/kv) and, with /serving/requests, the
    requests in flight."""
    kv = table_or_none(path, "/serving/kv")
    if kv is None or len(kv) < 2:
        return None
    requests = table_or_none(path, "/serving/requests")
    rows = 2 if requests is not None and not requests.empty else 1
    fig, panels = plt.subplots(rows, 1, figsize=(9, 2.8 * rows + 0.6), sharex=True,
                               squeeze=False)
    t = kv["time_s"].to_numpy(float)
    unit, scale = ("h", HOUR) if t[-1] > 2 * HOUR else (("min", 60.0) if t[-1] > 120 else
                                                         ("s", 1.0))
    top = panels[0][0]
    top.plot(t / scale, kv["used_fraction"] * 100.0, color=SERIES_COLORS[0], lw=1.4,
             label="KV blocks in use, whole fleet")
    summary = trnsim_results.load_summary(path).iloc[0]
    if "kv_cache_peak_fraction" in summary:
        top.axhline(summary["kv_cache_peak_fraction"] * 100.0, color=SERIES_COLORS[1], ls="--",
                    lw=1, label=f"peak of the fullest replica "
                                f"{fmt.percent(summary['kv_cache_peak_fraction'])}")
    top.set_ylabel("KV cache in use (%)")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    top.legend(fontsize=8, loc="upper right")
    if rows == 2:
        bottom = panels[1][0]
        bottom.plot(t / scale, in_flight(requests, t), color=SERIES_COLORS[2], lw=1.4)
        bottom.set_ylabel("requests in flight")
        bottom.set_ylim(bottom=0)
        bottom.grid(alpha=0.3)
    panels[-1][0].set_xlabel(f"simulated time ({unit})")
    fig.suptitle("KV cache use over time (/serving/kv, every simulation.kv_sample)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    return save(fig, directory, "kv_cache.png"), (
        "The fleet's KV cache blocks in use over time (all replicas together) with the peak "
        "of the fullest replica, and the requests arrived but not finished.")


#: Per-second factors of the rate units of an arrival mapping (20/s, 1200/min).
RATE_UNITS = {"s": 1.0, "min": 1 / 60.0, "h": 1 / HOUR}


def arrival_load(text):
    """(what, value) of a swept arrival mapping as /batch/points writes it: ('rate', requests
    per second) for '{poisson: {rate: 20/s}}' or a gamma process, ('speedup', x) for a trace
    replayed x times faster, ('concurrency', n) for closed-loop clients; None otherwise."""
    import re

    text = str(text)
    m = re.search(r"rate:\s*([0-9]*\.?[0-9]+)\s*/\s*(s|min|h)\b", text)
    if m:
        return "rate", float(m.group(1)) * RATE_UNITS[m.group(2)]
    for what in ("speedup", "concurrency"):
        m = re.search(rf"{what}:\s*([0-9]*\.?[0-9]+)", text)
        if m:
            return what, float(m.group(1))
    return None


#: Axis labels of the loads arrival_load finds.
LOAD_LABELS = {"rate": "arrival rate (requests/s)", "speedup": "trace speed-up",
               "concurrency": "closed-loop clients"}


def load_axis(axes, frame):
    """What the load of a serving sweep is: (x column, label, keys left out of the lines,
    frame) for a swept arrival (a rate, a trace speed-up or a client count, from
    workload.requests.arrival), else the fleet size (instances; a 'fleet' key tells
    UltraServers from plain instances when both are swept); None when neither varies."""
    for g in axes.groups:
        for k in g:
            if not k.startswith("workload.requests.arrival") or frame[k].nunique() < 2:
                continue
            if axes.units.get(k) not in (None, "text"):
                return k, short_key(k), [k], frame
            loads = [arrival_load(v) for v in frame[k]]
            kinds = {x[0] for x in loads if x is not None}
            if None not in loads and len(kinds) == 1:
                frame = frame.copy()
                frame["load"] = [x[1] for x in loads]
                return "load", LOAD_LABELS[kinds.pop()], [k], frame
    if "instances" not in frame or frame["instances"].nunique() < 2:
        return None
    cluster = [k for g in axes.groups for k in g if k == "cluster" or k.startswith("cluster.")]
    if "ultraservers" in frame and (frame["ultraservers"] > 0).any() and \
            (frame["ultraservers"] == 0).any():
        frame = frame.copy()
        frame["fleet"] = np.where(frame["ultraservers"] > 0, "UltraServers", "instances")
        # The fleet kind joins the axis of the cluster key so that it labels the same lines.
        axis = next((i for i, g in enumerate(axes.groups) if set(g) & set(cluster)), None)
        if axis is None:
            axes.groups.append(["fleet"])
        else:
            axes.groups[axis] = axes.groups[axis] + ["fleet"]
        axes.units["fleet"] = "text"
    return "instances", "instances in the fleet", cluster, frame


def plot_serving_load(axes, frame, directory):
    """Output throughput, TTFT and TPOT (p99), SLO attainment and cost per million output
    tokens against the load; the other axes as lines, panels or bands."""
    saved = axes.frame, [list(g) for g in axes.groups], dict(axes.units)
    found = load_axis(axes, frame)
    if found is None:
        return []
    x, xlabel, exclude, frame = found
    axes.frame = frame
    xs = frame[x].to_numpy(float)
    xscale = "log" if xs.min() > 0 and xs.max() / xs.min() >= 4 else "linear"
    tick = ((lambda v: fmt.integer(int(v))) if x == "instances" else
            (lambda v: fmt.swept(axes.units.get(x), v)))
    out = []
    latency = [("output_tokens_per_s", "output tokens/s (thousands)", 1e3,
                "ci95_output_tokens_per_s", None),
               ("ttft_p99_s", "TTFT p99 (s)", 1.0, "ci95_ttft_p99_s", "log"),
               ("tpot_p99_s", "TPOT p99 (ms)", 1e-3, "ci95_tpot_p99_s", None)]
    fig, note = facet_figure(axes, frame, x, latency, exclude, xlabel, xscale,
                             f"Throughput and latency against the load ({xlabel})", xtick=tick)
    out.append((save(fig, directory, "load.png"),
                f"Output throughput, TTFT p99 and TPOT p99 against {xlabel} ({note})."))
    slo_cost = [("slo_attainment", "SLO attainment (%)", 0.01, "ci95_slo_attainment", None),
                ("cost_per_million_output_tokens_usd", "USD per million output tokens", 1.0,
                 "ci95_cost_per_million_output_tokens_usd", None)]
    fig, note = facet_figure(axes, frame, x, slo_cost, exclude, xlabel, xscale,
                             f"SLO attainment and cost per million output tokens against "
                             f"{xlabel}", xtick=tick)
    out.append((save(fig, directory, "slo_cost.png"),
                f"The fraction of requests meeting the SLO and the cost per million output "
                f"tokens against {xlabel} ({note})."))
    axes.frame, axes.groups, axes.units = saved
    return out


SERVING_AXES_METRICS = [("slo_attainment", "SLO attainment", 1.0),
                        ("cost_per_million_output_tokens_usd", "USD per million output tokens",
                         1.0)]


# ---------------------------------------------------------------------------------------------
# HTML


def esc(text):
    return html.escape(str(text), quote=True)


#: Readable names of the /summary columns (docs/results-schema.md), by group.
GROUPS = [
    ("Plan", [("chips", "chips"), ("instances", "instances"), ("ultraservers", "UltraServers"),
              ("ranks", "ranks"), ("tp", "tensor parallel"), ("cp", "context parallel"),
              ("pp", "pipeline stages"), ("dp", "data parallel"), ("ep", "expert parallel"),
              ("microbatches", "microbatches per replica"), ("parameters", "parameters"),
              ("active_parameters", "active parameters"),
              ("memory_per_rank_bytes", "HBM needed per rank"),
              ("hbm_per_rank_bytes", "HBM per rank")]),
    ("Step", [("step_time_s", "step time"), ("exposed_comm_s", "exposed communication"),
              ("bubble_fraction", "pipeline bubble"), ("mfu", "MFU"), ("hfu", "HFU"),
              ("mbu", "MBU")]),
    ("Throughput", [("tokens_per_s", "throughput"), ("tokens_per_step", "tokens per step"),
                    ("steps", "steps"), ("goodput", "goodput (tokens kept)")]),
    ("Time and cost", [("time_to_train_s", "time to train"),
                       ("ideal_time_to_train_s", "without failures or checkpoints"),
                       ("instance_hours", "instance-hours"), ("cost_usd", "cost")]),
    ("Reliability", [("replications", "replications"), ("ettr", "ETTR"),
                     ("wall_time_s", "wall time"), ("interruptions", "interruptions"),
                     ("failures", "component failures"), ("lost_work_s", "work lost"),
                     ("downtime_s", "downtime"), ("checkpoint_overhead_s", "checkpoint stalls"),
                     ("checkpoints", "checkpoints"),
                     ("checkpoint_interval_s", "checkpoint interval"),
                     ("checkpoint_bytes", "checkpoint size"), ("job_mtbf_s", "job MTBF"),
                     ("spare_domains", "spare domains"), ("done", "replications done")]),
]
#: The /summary columns of a serving run (docs/results-schema.md, "Serving scenarios").
SERVING_GROUPS = [
    ("Latency", [("ttft_p50_s", "TTFT p50"), ("ttft_p90_s", "TTFT p90"),
                 ("ttft_p99_s", "TTFT p99"), ("ttft_mean_s", "TTFT mean"),
                 ("tpot_p50_s", "TPOT p50"), ("tpot_p90_s", "TPOT p90"),
                 ("tpot_p99_s", "TPOT p99"), ("tpot_mean_s", "TPOT mean"),
                 ("e2e_p50_s", "end to end p50"), ("e2e_p99_s", "end to end p99")]),
    ("Throughput and SLO", [("requests", "requests finished"),
                            ("output_tokens_per_s", "output throughput"),
                            ("goodput_requests_per_s", "goodput"),
                            ("slo_attainment", "SLO attainment"),
                            ("input_tokens", "input tokens"), ("output_tokens", "output tokens"),
                            ("preempted_requests", "requests preempted"),
                            ("span_s", "first arrival to last finish"),
                            ("simulated_s", "simulated time")]),
    ("Fleet", [("chips", "chips"), ("instances", "instances"), ("ultraservers", "UltraServers"),
               ("replicas", "replicas"), ("prefill_replicas", "of them prefill only"),
               ("tp", "ranks per replica"),
               ("weights_per_rank_bytes", "weights per rank"),
               ("kv_capacity_tokens_per_replica", "KV cache per replica (tokens)"),
               ("kv_cache_peak_fraction", "KV cache peak"),
               ("decode_iteration_s", "decode iteration"), ("mbu", "MBU")]),
    ("Cost", [("instance_hours", "instance-hours"), ("cost_usd", "cost"),
              ("cost_per_million_output_tokens_usd", "per million output tokens")]),
]
#: Columns that identify a row rather than describe the run.
BOOKKEEPING = {"file", "point", "replicate", "seed", "rank", "candidate"}
#: Columns of a plan's /summary that describe the finalist, not its run (the finalists table
#: shows them).
PLAN_COLUMNS = {"meets_constraints", "frontier", "by_objective", "global_batch", "zero",
                "microbatch", "recompute", "est_step_time_s", "est_time_to_train_s",
                "est_cost_usd", "est_ettr", "sim_ettr", "sim_goodput", "misses",
                "chips_with_spares"}
#: Header class of the time and cost columns (coloured; the test looks for them).
KEY_CLASS = {"time_to_train_s": "time", "cost_usd": "cost"}


def replicated(row):
    reps = row.get("replications", row.get("replicates", 1))
    try:
        return int(reps) > 1
    except (TypeError, ValueError):
        return False


def cell(row, name, with_ci=True):
    """The text of column `name` of `row` (a Series or dict), with its 95% interval when the
    row has replications and a ci95_ column."""
    v = row.get(name)
    half = row.get(f"ci95_{name}") if with_ci else None
    if half is not None:
        return fmt.interval(name, v, half, replicated(row))
    return fmt.column(name, v)


class Column:
    def __init__(self, name, header=None, title=None, text=None, cls=None, left=False):
        self.name = name
        self.header = header or name
        self.title = title or name
        self.text = text or (lambda row, n=name: cell(row, n))
        self.cls = cls if cls is not None else KEY_CLASS.get(name)
        self.left = left


def html_table(rows, columns, sticky=1, scroll=False):
    """A table of rows (Series or dicts) and Columns: the header row sticks to the top and the
    first `sticky` column(s) to the left inside a scrolling box."""
    head = []
    for i, c in enumerate(columns):
        classes = [x for x in (c.cls, "s" if i < sticky else None, "l" if c.left else None) if x]
        attr = f" class='{' '.join(classes)}'" if classes else ""
        # Long key paths may break after their dots.
        text = esc(c.header).replace(".", ".<wbr>")
        head.append(f"<th{attr} title='{esc(c.title)}'>{text}</th>")
    out = [f"<div class='wide{' tall' if scroll else ''}'><table>",
           "<thead><tr>" + "".join(head) + "</tr></thead><tbody>"]
    for row in rows:
        cells = []
        for i, c in enumerate(columns):
            classes = [x for x in ("s" if i < sticky else None, "l" if c.left else None) if x]
            attr = f" class='{' '.join(classes)}'" if classes else ""
            cells.append(f"<td{attr}>{esc(c.text(row))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def key_value_table(row, items, caption):
    """A group of figures: name, value (with its interval), column name."""
    lines = [f"<table class='kv'><caption>{esc(caption)}</caption>"]
    for name, label in items:
        cls = f" class='{KEY_CLASS[name]}'" if name in KEY_CLASS else ""
        lines.append(f"<tr><th{cls}>{esc(label)}</th><td>{esc(cell(row, name))}</td>"
                     f"<td class='col'>{esc(name)}</td></tr>")
    lines.append("</table>")
    return "\n".join(lines)


def key_figures(row):
    """The figures a reader looks for first, in one line."""
    parts = [("step time", "step_time_s"), ("throughput", "tokens_per_s"), ("MFU", "mfu"),
             ("time to train", "time_to_train_s"), ("cost", "cost_usd"), ("ETTR", "ettr")]
    if is_serving(row.index):
        parts = [("TTFT p99", "ttft_p99_s"), ("TPOT p99", "tpot_p99_s"),
                 ("SLO met by", "slo_attainment"), ("throughput", "output_tokens_per_s"),
                 ("cost", "cost_usd"),
                 ("per million output tokens", "cost_per_million_output_tokens_usd")]
    shown = [f"<span class='fig'>{esc(label)} <b>{esc(cell(row, name))}</b></span>"
             for label, name in parts if name in row and not _missing(row.get(name))]
    return "<p class='key'>" + " &middot; ".join(shown) + "</p>"


def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


# ---------------------------------------------------------------------------------------------
# Reports


def run_sections(path, row, with_causes=True, skip=()):
    """The grouped figures of one run (a /summary row), and its interruptions by cause."""
    groups = SERVING_GROUPS if is_serving(row.index) else GROUPS
    listed = {name for _, items in groups for name, _ in items} | set(skip)
    parts = [key_figures(row), "<div class='groups'>"]
    for title, items in groups:
        items = [(n, label) for n, label in items if n in row]
        if items:
            parts.append(key_value_table(row, items, title))
    rest = [(n, n) for n in row.index if n not in listed and n not in BOOKKEEPING and
            not n.startswith("ci95_")]
    if rest:
        parts.append(key_value_table(row, rest, "Other columns"))
    parts.append("</div>")
    causes = table_or_none(path, "/run/causes") if with_causes else None
    if causes is not None and not causes.empty:
        # Most interruptions first, ties in /run/causes order (as `trnsim run` lists them).
        causes = causes.sort_values("interruptions", ascending=False, kind="stable")
        parts.append("<h3>Interruptions by cause (means per replication)</h3>")
        parts.append(html_table(
            [r for _, r in causes.iterrows()],
            [Column("cause", left=True), Column("interruptions"),
             Column("failures", header="failures (spares included)"),
             Column("component", left=True), Column("effect", left=True),
             Column("distribution", left=True),
             Column("mtbf_s", header="MTBF of one component",
                    text=lambda r: fmt.column("mtbf_s", r["mtbf_s"])
                    if r["mtbf_s"] > 0 else "-")]))
    return "\n".join(parts)


def report_run(path, directory):
    row = trnsim_results.load_summary(path).iloc[0]
    if is_serving(row.index):
        return report_serving_run(path, row, directory)
    plots = [plot_breakdown(path, directory), plot_timeline(path, directory)]
    reps = int(row.get("replications", 1)) if "replications" in row else 1
    heading = ("One run" + (f", {fmt.integer(reps)} replications (mean &plusmn; 95% interval)"
                            if reps > 1 else ""))
    return heading, run_sections(path, row), plots


def report_serving_run(path, row, directory):
    """A serving run: its figures, the latency CDFs and the KV cache over time."""
    plots = [plot_latency_cdf(path, directory), plot_kv(path, directory)]
    ttft, tpot = serving_slo(path)
    parts = []
    if ttft is not None and tpot is not None:
        parts.append(f"<p>SLO: TTFT &le; {esc(fmt.seconds(ttft))} and TPOT &le; "
                     f"{esc(fmt.seconds(tpot))}, met by "
                     f"<b>{esc(cell(row, 'slo_attainment'))}</b> of the requests.</p>")
    if not has_table(path, "/serving/requests"):
        parts.append("<p>The file has no /serving/requests (output.requests: false): no "
                     "latency CDFs.</p>")
    parts.append(run_sections(path, row, with_causes=False))
    replicas = table_or_none(path, "/serving/replicas")
    if replicas is not None and not replicas.empty and len(replicas) <= 64:
        parts.append("<h3>Replicas</h3>")
        parts.append(html_table(
            [r for _, r in replicas.iterrows()],
            [Column("replica"), Column("unit", header="instance or UltraServer"),
             Column("first_chip", header="first chip"), Column("chips"),
             Column("prefill", text=lambda r: "prefill" if int(r["prefill"]) else "-"),
             Column("kv_peak_fraction", header="KV cache peak")]))
    return "One serving run", "\n".join(parts), plots


#: The /summary columns of a fleet run (docs/results-schema.md, "Fleet scenarios").
FLEET_GROUPS = [
    ("Pool", [("policy", "policy"), ("unit", "domains are"), ("domains", "domains"),
              ("chips", "chips"), ("spares", "spares"), ("busy_fraction", "busy"),
              ("idle_fraction", "idle"), ("fragmented_fraction", "of it fragmented"),
              ("spare_fraction", "spare"), ("down_fraction", "down")]),
    ("Jobs", [("classes", "classes"), ("jobs", "jobs"), ("jobs_started", "started"),
              ("jobs_finished", "finished"), ("mean_wait_s", "first start after submission"),
              ("mean_completion_s", "done after submission"), ("preemptions", "preemptions"),
              ("failures", "interrupted by a failure"), ("lost_s", "work lost"),
              ("end_s", "run's end")]),
]


def day_axis(seconds):
    """Hours or days for a time axis, by the span: (scale, label)."""
    span = float(seconds.max()) if len(seconds) else 0.0
    return (86400.0, "days") if span > 2 * 86400 else (3600.0, "hours")


def plot_fleet_pool(path, directory):
    """The pool's domains in each use over time (/fleet/pool), stacked; one panel a pool when
    the fleet has several (its `pool` column)."""
    table = table_or_none(path, "/fleet/pool")
    if table is None or len(table) < 2:
        return None
    names = list(dict.fromkeys(table["pool"])) if "pool" in table else [None]
    scale, unit = day_axis(table["time_s"])
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 4 if len(names) == 1 else 2.6 * len(names)),
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        pool = table if name is None else table[table["pool"] == name]
        x = pool["time_s"].to_numpy() / scale
        bottom = np.zeros(len(pool))
        for i, use in enumerate(["busy", "idle", "spare", "down"]):
            top = bottom + pool[use].to_numpy()
            ax.fill_between(x, bottom, top, step="post", color=SERIES_COLORS[i],
                            label=use, linewidth=0)
            if use == "idle" and "fragmented" in pool:
                # The fragmented part of the idle band: too few for any waiting job.
                ax.fill_between(x, bottom, bottom + pool["fragmented"].to_numpy(), step="post",
                                facecolor="none", edgecolor="black", hatch="///", linewidth=0,
                                label="idle, fragmented")
            bottom = top
        if len(x) > 1:
            ax.set_xlim(x[0], x[-1])
        ax.set_ylim(0, max(1, bottom.max()))
        ax.set_ylabel("domains")
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title("The pool: domains busy, idle, spare and down" if len(names) == 1
                     else f"Pool {name}: domains busy, idle, spare and down", fontsize=10)
    axes[-1, 0].set_xlabel(unit)
    fig.tight_layout()
    return save(fig, directory, "pool.png"), ("The pool's domains in each use after every "
                                              "change (/fleet/pool)" +
                                              ("." if len(names) == 1
                                               else ", one panel a pool."))


def plot_fleet_queue(path, directory):
    """Jobs waiting for their first start and jobs started and not finished, over time, from
    /fleet/jobs (a job sent back to the queue counts as started)."""
    jobs = table_or_none(path, "/fleet/jobs")
    if jobs is None or jobs.empty:
        return None
    end = float(trnsim_results.load_summary(path).iloc[0]["end_s"])
    scale, unit = day_axis(pd.Series([end]))
    times = np.linspace(0.0, end, 400)
    submit = jobs["submit_s"].to_numpy()
    start = jobs["first_start_s"].fillna(np.inf).to_numpy()
    done = jobs["end_s"].fillna(np.inf).to_numpy()
    waiting = [int(((submit <= t) & (start > t)).sum()) for t in times]
    running = [int(((start <= t) & (done > t)).sum()) for t in times]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(times / scale, waiting, color=SERIES_COLORS[1], label="waiting for a first start")
    ax.plot(times / scale, running, color=SERIES_COLORS[0], label="started, not finished")
    ax.set_xlabel(unit)
    ax.set_ylabel("jobs")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title("The queue", fontsize=10)
    fig.tight_layout()
    return save(fig, directory, "queue.png"), ("Jobs waiting for their first start and jobs "
                                               "started and not yet finished (/fleet/jobs).")


#: Services whose load and capacity the report draws (the first ones; the table lists all).
FLEET_SERVICE_PLOTS = 6


def plot_fleet_services(path, directory):
    """Each service's load against its ready domains' capacity within the SLO over time
    (/fleet/service_samples, /fleet/services), one panel per service."""
    services = table_or_none(path, "/fleet/services")
    samples = table_or_none(path, "/fleet/service_samples")
    if services is None or samples is None or services.empty:
        return None
    shown = services.head(FLEET_SERVICE_PLOTS)
    scale, unit = day_axis(samples["time_s"])
    fig, axes = plt.subplots(len(shown), 1, figsize=(8, 2.6 * len(shown)), squeeze=False)
    for ax, (_, svc) in zip(axes[:, 0], shown.iterrows()):
        mine = samples[samples["service"] == svc["service"]]
        x = mine["time_s"].to_numpy() / scale
        ax.step(x, mine["load_per_s"], where="pre", color=SERIES_COLORS[1],
                label="load (mean over each interval)")
        ax.step(x, mine["ready"] * svc["capacity_per_s"], where="post", color=SERIES_COLORS[0],
                label="ready domains x capacity within the SLO")
        ax.set_ylabel("requests/s")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{svc['service']}: SLO met by {100 * svc['slo_attainment']:.1f}%",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel(unit)
    fig.tight_layout()
    more = len(services) - len(shown)
    caption = ("Each service's load and what its ready domains serve within the SLO "
               "(/fleet/service_samples)")
    caption += f"; the first {len(shown)} of {len(services)} services." if more else "."
    return save(fig, directory, "services.png"), caption


def report_fleet(path, directory):
    """A fleet run: the pool's use, the jobs' waits, each class, the pool and queue over time."""
    row = trnsim_results.load_summary(path).iloc[0]
    parts = ["<div class='groups'>"]
    for caption, items in FLEET_GROUPS:
        parts.append(key_value_table(row, [(n, l) for n, l in items if n in row], caption))
    parts.append("</div>")
    classes = table_or_none(path, "/fleet/classes")
    if classes is not None and not classes.empty:
        parts.append("<h3>Job classes</h3>")
        parts.append(html_table(
            [r for _, r in classes.iterrows()],
            [Column("class", left=True), Column("tenant", left=True), Column("gang"),
             Column("count"), Column("priority"), Column("tp"), Column("pp"), Column("dp"),
             Column("step_s", header="step time"), Column("steps"),
             Column("checkpoint_steps", header="steps between checkpoints"),
             Column("finished"), Column("mean_wait_s", header="first start after"),
             Column("mean_completion_s", header="done after")]))
    services = table_or_none(path, "/fleet/services")
    if services is not None and not services.empty:
        parts.append("<h3>Services</h3>")
        parts.append(html_table(
            [r for _, r in services.iterrows()],
            [Column("service", left=True), Column("tenant", left=True), Column("priority"),
             Column("replicas_per_domain", header="replicas a domain"),
             Column("capacity_per_s", header="capacity within the SLO (1/s)"),
             Column("throughput_per_s", header="at most (1/s)"),
             Column("model_load_s", header="model load"),
             Column("requests"), Column("slo_attainment", header="SLO met"),
             Column("peak_domains", header="most domains"), Column("failures"),
             Column("cost_usd", header="cost"),
             Column("cost_per_million_output_tokens_usd",
                    header="per million output tokens")]))
    windows = table_or_none(path, "/fleet/service_windows")
    if windows is not None and not windows.empty:
        w = windows.iloc[0]
        parts.append(f"<h3>At request level, {esc(fmt.seconds(w['from_s']))} to "
                     f"{esc(fmt.seconds(w['to_s']))}</h3>")
        parts.append(html_table(
            [r for _, r in windows.iterrows()],
            [Column("service", left=True), Column("rate_per_s", header="requests/s"),
             Column("domains", header="domains at most"), Column("changes"),
             Column("requests"), Column("slo_attainment", header="SLO met"),
             Column("rate_level_attainment", header="SLO met at rate level",
                    text=lambda r: fmt.percent(r["rate_level_attainment"])),
             Column("ttft_p50_s", header="TTFT p50"), Column("ttft_p99_s", header="TTFT p99"),
             Column("tpot_p99_s", header="TPOT p99"), Column("retried"),
             Column("unfinished")]))
    plots = [plot_fleet_pool(path, directory), plot_fleet_queue(path, directory),
             plot_fleet_services(path, directory)]
    title = "A fleet of training jobs" if services is None or services.empty else \
        "A fleet of training jobs and services"
    return title, "\n".join(parts), plots


def report_batch(path, directory):
    frame, keys, units, axes_of, kinds = batch_frame(path)
    axes = Axes(frame, keys, units, axes_of, kinds)
    if is_serving(frame.columns):
        return report_serving_batch(path, directory, frame, keys, units, axes, kinds)
    plots = [plot_axes(axes, frame, directory), plot_cluster_size(axes, frame, directory),
             plot_checkpoint(axes, frame, directory), plot_batch_pareto(frame, directory)]
    first = (("time_to_train_s", "time to train"), ("cost_usd", "cost"), ("ettr", "ETTR"),
             ("goodput", "goodput"))
    last = (("replicates", "runs"), ("chips", "chips"),
            ("checkpoint_interval_s", "checkpoint interval"), ("mfu", "MFU"))
    heading, table = sweep_table(frame, keys, units, axes, kinds, first, last)
    return heading, table, plots


def report_serving_batch(path, directory, frame, keys, units, axes, kinds):
    """A sweep of serving scenarios: figures against the load, each axis on its own, and the
    points with SLO attainment, latency and cost first."""
    plots = plot_serving_load(axes, frame, directory)
    plots.append(plot_axes(axes, frame, directory, SERVING_AXES_METRICS))
    first = (("slo_attainment", "SLO met"), ("ttft_p99_s", "TTFT p99"),
             ("tpot_p99_s", "TPOT p99"),
             ("cost_per_million_output_tokens_usd", "per million output tokens"),
             ("output_tokens_per_s", "output throughput"))
    last = (("replicates", "runs"), ("instances", "instances"), ("chips", "chips"),
            ("replicas", "replicas"), ("prefill_replicas", "prefill replicas"),
            ("ttft_p50_s", "TTFT p50"), ("tpot_p50_s", "TPOT p50"), ("cost_usd", "cost"))
    heading, table = sweep_table(frame, keys, units, axes, kinds, first, last)
    return heading, table, plots


def sweep_table(frame, keys, units, axes, kinds, first, last):
    """(heading, the sweep's axes and its table of points): `first` columns, the swept keys,
    then `last`."""
    cols = [Column("point")]
    for name, header in first:
        if name in frame:
            cols.append(Column(name, header=header))
    for k in keys:
        cols.append(Column(k, header=k, left=units.get(k) == "text",
                           text=lambda r, k=k: fmt.swept(units.get(k), r[k])))
    for name, header in last:
        if name in frame:
            cols.append(Column(name, header=header,
                               text=(lambda r, n=name: cell(r, n, with_ci=False))))
    reps = frame["replicates"].max() if len(frame) else 0
    runs = int(frame["replicates"].sum()) if len(frame) else 0
    described = []
    for g in axes.groups:
        values = sorted({tuple(v) for v in frame[g].itertuples(index=False)},
                        key=lambda t: [(0, x, "") if isinstance(x, (int, float)) else
                                       (1, 0, str(x)) for x in t])
        shown = [", ".join(fmt.swept(units.get(k), x) for k, x in zip(g, v))
                 for v in values[:8]]
        more = f", ... ({fmt.integer(len(values))} values)" if len(values) > 8 else ""
        kind = " (random samples)" if kinds.get(g[0]) == "random" else ""
        described.append(f"<li><code>{esc(', '.join(g))}</code>{kind}: "
                         f"{esc('; '.join(shown))}{esc(more)}</li>")
    per_point = (f" ({fmt.integer(int(reps))} per point; mean &plusmn; 95% interval)"
                 if reps > 1 else "")
    intro = (f"<p>{fmt.integer(len(frame))} points, {fmt.integer(runs)} runs{per_point}. "
             f"Swept axes:</p><ul>{''.join(described)}</ul>")
    table = intro + html_table([r for _, r in frame.iterrows()], cols, sticky=1,
                               scroll=len(frame) > 25)
    return f"Sweep of {fmt.integer(len(frame))} points", table


def counted_spares(c, domain):
    """The spare domains a candidate's chips count: its spares with a reliability section, 0
    without (the planner's rule; `trnsim plan` prints the same)."""
    if c["job_chips"] <= 0:
        return 0
    return int(round((c["chips"] - c["job_chips"]) * c[domain] / c["job_chips"]))


def describe_candidate(c, domain_name):
    """As `trnsim plan` describes its closest misses and best plan."""
    spares = counted_spares(c, domain_name[1])
    return (f"{fmt.integer(int(c[domain_name[1]]))} {domain_name[0]} "
            f"({fmt.integer(int(c['job_chips']))} chips) + {fmt.integer(spares)} spare, batch "
            f"{fmt.integer(int(c['global_batch']))}, tp {int(c['tp'])} cp {int(c['cp'])} "
            f"pp {int(c['pp'])} dp {fmt.integer(int(c['dp']))}")


def plan_constraints_text(limits):
    parts = [str(limits["objective"])]
    if np.isfinite(limits["deadline_s"]):
        parts.append(f"deadline {fmt.seconds(limits['deadline_s'])}")
    if np.isfinite(limits["budget_usd"]):
        parts.append(f"budget {fmt.money(limits['budget_usd'])}")
    if np.isfinite(limits["max_chips"]):
        parts.append(f"at most {fmt.integer(int(limits['max_chips']))} chips")
    if limits["min_ettr"] > 0:
        parts.append(f"ETTR at least {fmt.percent(limits['min_ettr'])}")
    if limits["hbm_headroom"] > 0:
        parts.append(f"HBM headroom {fmt.percent(limits['hbm_headroom'])}")
    return "; ".join(parts)


def closest(cands):
    """(fastest, cheapest) candidate indexes among those that run (verdict ok, deadline or
    budget), the first on ties (the planner's rule), -1 for none."""
    run = runnable_candidates(cands).reset_index(drop=True)
    if run.empty:
        return -1, -1
    return (int(run.sort_values(["time_to_train_s", "candidate"]).iloc[0]["candidate"]),
            int(run.sort_values(["cost_usd", "candidate"]).iloc[0]["candidate"]))


def report_plan(path, directory):
    cands = trnsim_results.load_table(path, "/plan/candidates")
    cands = cands.set_index("candidate", drop=False)
    finalists = trnsim_results.load_summary(path)
    domain = "ultraservers" if "ultraservers" in cands.columns else "instances"
    domain_name = ("UltraServers" if domain == "ultraservers" else "instances", domain)
    cands["job_chips"] = job_chips(cands, domain)
    limits = trnsim_results.load_table(path, "/plan/constraints").iloc[0]
    search = table_or_none(path, "/plan/search")
    verdicts = table_or_none(path, "/plan/verdicts")
    plots = [plot_plan_pareto(cands, finalists, limits, directory),
             plot_plan_cluster(cands, finalists, domain, limits, directory),
             plot_plan_checkpoint(cands, finalists, domain, directory),
             plot_breakdown(path, directory, title="best plan: "),
             plot_timeline(path, directory)]
    parts = [f"<p>Objective and constraints: {esc(plan_constraints_text(limits))}.</p>"]
    if verdicts is not None:
        counts = [(str(r["verdict"]), int(r["candidates"]), str(r["example"]))
                  for _, r in verdicts.iterrows()]
    else:
        counts = [(v, int(n), "") for v, n in cands["verdict"].value_counts().items()]
    feasible = sum(n for v, n, _ in counts if v == "ok")
    rejected = ", ".join(f"{fmt.integer(n)} {v}" for v, n, _ in counts if v != "ok")
    parts.append(f"<p>{fmt.integer(len(cands))} candidates estimated: "
                 f"{fmt.integer(feasible)} feasible"
                 f"{esc('; rejected: ' + rejected) if rejected else ''}.</p>")
    examples = [(v, e) for v, _, e in counts if e]
    if examples:
        parts.append("<ul class='why'>" + "".join(
            f"<li>e.g. <b>{esc(v)}</b>: {esc(e)}</li>" for v, e in examples) + "</ul>")
    if finalists.empty or "rank" not in finalists or not len(finalists):
        if search is not None:
            fastest, cheapest = int(search.iloc[0]["fastest"]), int(search.iloc[0]["cheapest"])
        else:
            fastest, cheapest = closest(cands)
        parts.append("<div class='none'><p><b>No candidate met the constraints</b>: nothing was "
                     "simulated. The closest estimates (closed forms):</p>")
        rows = []
        for which, i in (("fastest", fastest), ("cheapest", cheapest)):
            if i >= 0 and not (which == "cheapest" and i == fastest):
                c = cands.loc[i]
                rows.append({"which": which, "time_to_train_s": c["time_to_train_s"],
                             "cost_usd": c["cost_usd"], "misses": c["verdict"],
                             "ettr": c["ettr"], "config": describe_candidate(
                                 c, domain_name), "candidate": i})
            elif i >= 0:
                rows[0]["which"] = "fastest and cheapest"
        if rows:
            parts.append(html_table(rows, [
                Column("which", header="", left=True),
                Column("time_to_train_s", header="time to train (estimate)",
                       text=lambda r: fmt.column("time_to_train_s", r["time_to_train_s"])),
                Column("cost_usd", header="cost (estimate)",
                       text=lambda r: fmt.column("cost_usd", r["cost_usd"])),
                Column("misses", header="misses", text=lambda r: r["misses"], left=True),
                Column("ettr", header="ETTR (estimate)",
                       text=lambda r: fmt.column("ettr", r["ettr"])),
                Column("config", header="configuration", text=lambda r: r["config"], left=True),
                Column("candidate", text=lambda r: fmt.integer(r["candidate"]))]))
        else:
            parts.append("<p>No candidate could run at all: every one was rejected before "
                         "its time was estimated (see the reasons above).</p>")
        parts.append("</div>")
        return "Plan: no candidate met the constraints", "\n".join(parts), plots

    best = finalists.iloc[0]
    c = cands.loc[int(best["candidate"])]
    if int(best["meets_constraints"]):
        parts.append(f"<p class='key'>Best plan: <b>{esc(describe_candidate(c, domain_name))}"
                     f"</b>: time to train <b>{esc(cell(best, 'time_to_train_s'))}</b>, cost "
                     f"<b>{esc(cell(best, 'cost_usd'))}</b> (simulated).</p>")
    else:
        parts.append("<p class='key'><b>No finalist meets every constraint once simulated</b>; "
                     "see the notes column.</p>")
    finalists = finalists.copy()
    finalists["chips_with_spares"] = [int(cands.loc[int(i)]["chips"])
                                      for i in finalists["candidate"]]

    def notes(r):
        out = []
        if int(r.get("frontier", 0)):
            out.append("pareto")
        if not int(r.get("meets_constraints", 1)):
            miss = r.get("misses", "")
            out.append("misses " + (miss if isinstance(miss, str) and miss else "a constraint"))
        return "; ".join(out) or "-"

    finalists["spares"] = [counted_spares(cands.loc[int(i)], domain)
                           for i in finalists["candidate"]]
    cols = [Column("rank"),
            Column("time_to_train_s", header="time to train"),
            Column("cost_usd", header="cost"),
            Column("sim_ettr", header="ETTR",
                   text=lambda r: fmt.interval("sim_ettr", r["sim_ettr"], r.get("ci95_ettr"),
                                               replicated(r))),
            Column("step_time_s", header="step"),
            Column("notes", text=notes, left=True),
            Column(domain, header=domain_name[0]),
            Column("chips", header="job chips", title="chips of the job (/summary chips)"),
            Column("chips_with_spares", header="chips with spares",
                   title="job and spare chips (/plan/candidates chips; the chips column of "
                         "trnsim plan's table)"),
            Column("spares", header="spares",
                   title="spare domains (counted only with a reliability section)"),
            Column("global_batch", header="batch"),
            Column("tp"), Column("cp"), Column("pp"), Column("dp"), Column("ep"),
            Column("zero"), Column("microbatch", header="mb"), Column("recompute"),
            Column("checkpoint_interval_s", header="checkpoint interval"),
            Column("est_time_to_train_s", header="time (estimate)"),
            Column("est_cost_usd", header="cost (estimate)"),
            Column("est_ettr", header="ETTR (estimate)")]
    cols = [c for c in cols if c.name in finalists.columns or c.name == "notes"]
    parts.append(f"<h3>Finalists in rank order ({fmt.integer(len(finalists))}, simulated)</h3>")
    parts.append(html_table([r for _, r in finalists.iterrows()], cols, sticky=1))
    parts.append("<h3>The best plan's run</h3>")
    parts.append(run_sections(path, best, skip=PLAN_COLUMNS))
    return "Plan: the best plan and the finalists", "\n".join(parts), plots


def plot_serving_plan_pareto(cands, directory):
    """Cost per million output tokens against TTFT p99 of every simulated serving candidate
    (at the objective's rate, or at the rate found), with the Pareto frontier."""
    sim = cands[(cands["simulations"] > 0) & np.isfinite(cands["ttft_p99_s"])
                & np.isfinite(cands["cost_per_million_output_tokens_usd"])]
    if sim.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for verdict, color, label in (("slo", "#bbbbbb", "misses the SLO objective"),
                                  ("ok", SERIES_COLORS[0], "meets it")):
        sub = sim[sim["verdict"] == verdict]
        ax.scatter(sub["ttft_p99_s"], sub["cost_per_million_output_tokens_usd"], s=18,
                   color=color, label=f"{label} ({fmt.integer(len(sub))})")
    front = sim[sim["pareto"] == 1].sort_values("ttft_p99_s")
    ax.plot(front["ttft_p99_s"], front["cost_per_million_output_tokens_usd"],
            color=FRONTIER_COLOR, lw=2, marker="o", label="Pareto frontier")
    for _, r in sim[sim["rank"] > 0].sort_values("rank").head(10).iterrows():
        ax.annotate(str(int(r["rank"])), (r["ttft_p99_s"], r["cost_per_million_output_tokens_usd"]),
                    fontsize=7, textcoords="offset points", xytext=(5, 5))
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_ticks(ax)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: fmt.seconds(v)))
    ax.set_xlabel("TTFT p99")
    ax.set_ylabel("cost per million output tokens (USD)")
    ax.set_title("Serving plan: cost against TTFT p99 (feasible fleets by rank)")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return save(fig, directory, "pareto.png"), (
        "Every simulated fleet's cost per million output tokens against its TTFT p99 (at the "
        "objective's rate, or at the highest rate it serves for max_rate); the Pareto frontier "
        "joins the fleets no other beats on both.")


def report_serving_plan(path, directory):
    cands = trnsim_results.load_table(path, "/plan/serving")
    obj = trnsim_results.load_table(path, "/plan/objective").iloc[0]
    verdicts = table_or_none(path, "/plan/verdicts")
    max_rate = str(obj["objective"]) == "max_rate"
    trace = bool(int(obj["trace"]))

    def rate(v):
        if not np.isfinite(v):
            return "-"
        return (f"x{v:.4g}" if trace else f"{v:.4g}/s")

    goal = (f"{obj['objective']}: SLO (TTFT <= {fmt.seconds(obj['ttft_slo_s'])}, TPOT <= "
            f"{fmt.seconds(obj['tpot_slo_s'])}) met by {fmt.percent(obj['slo_attainment'])} of "
            f"{fmt.integer(int(obj['requests']))} requests")
    goal += (f", the highest rate in [{rate(obj['rate_range_low'])}, "
             f"{rate(obj['rate_range_high'])}]" if max_rate else f" at {rate(obj['rate'])}")
    parts = [f"<p>Objective: {esc(goal)}.</p>"]
    if verdicts is not None:
        counts = [(str(r["verdict"]), int(r["candidates"]), str(r["example"]))
                  for _, r in verdicts.iterrows()]
        rejected = ", ".join(f"{fmt.integer(n)} {v}" for v, n, _ in counts if v != "ok")
        feasible = sum(n for v, n, _ in counts if v == "ok")
        parts.append(f"<p>{fmt.integer(len(cands))} candidates: {fmt.integer(feasible)} "
                     f"feasible{esc('; rejected: ' + rejected) if rejected else ''}.</p>")
        examples = [(v, e) for v, _, e in counts if e and v not in ("ok", "slo")]
        if examples:
            parts.append("<ul class='why'>" + "".join(
                f"<li>e.g. <b>{esc(v)}</b>: {esc(e)}</li>" for v, e in examples) + "</ul>")
    cols = [Column("rank", text=lambda r: str(int(r["rank"])) if r["rank"] > 0 else "-"),
            Column("cost_per_hour_usd", header="$/hour"),
            Column("rate", header="rate found" if max_rate else "rate",
                   text=lambda r: rate(r["rate"])),
            Column("slo_attainment", header="SLO met"),
            Column("ttft_p99_s", header="TTFT p99"),
            Column("tpot_p99_s", header="TPOT p99"),
            Column("cost_per_million_output_tokens_usd", header="per million output tokens"),
            Column("pareto", text=lambda r: "pareto" if int(r["pareto"]) else "", left=True),
            Column("chip", text=lambda r: str(r["chip"]), left=True),
            Column("instances"), Column("ultraservers", header="UltraServers"),
            Column("chips"), Column("tp"), Column("max_batch", header="batch"),
            Column("replicas"), Column("prefill_replicas", header="prefill")]
    if max_rate:
        cols.insert(3, Column("rate_high", header="misses at", text=lambda r: rate(r["rate_high"])
                              if np.isfinite(r["rate_high"]) else "above the range"))
    ranked = cands[cands["rank"] > 0].sort_values("rank")
    # The closest miss of each chip first, then the next closest, up to three (as trnsim plan
    # prints them).
    slo = cands[cands["verdict"] == "slo"].sort_values("slo_attainment", ascending=False,
                                                       kind="stable")
    first = slo.drop_duplicates("chip")
    misses = pd.concat([first, slo.drop(first.index)]).head(max(3, len(first)))
    if ranked.empty:
        parts.append("<div class='none'><p><b>No candidate met the SLO objective</b>. The "
                     "closest misses:</p>")
        parts.append(html_table([r for _, r in misses.iterrows()], cols) if len(misses)
                     else "<p>No candidate could be built (see the reasons above).</p>")
        parts.append("</div>")
        return ("Serving plan: no fleet met the SLO objective", "\n".join(parts),
                [plot_serving_plan_pareto(cands, directory)])
    b = ranked.iloc[0]
    parts.append(f"<p class='key'>Best fleet: <b>{esc(str(int(b['instances'])))} {esc(b['chip'])} "
                 f"instances, {int(b['replicas'])} replicas of tp {int(b['tp'])}</b>: "
                 f"<b>{esc(fmt.column('cost_per_hour_usd', b['cost_per_hour_usd']))}</b> an hour"
                 f"{', ' + esc(rate(b['rate'])) if max_rate else ''}, SLO met by "
                 f"{esc(fmt.percent(b['slo_attainment']))}.</p>")
    parts.append(f"<h3>Feasible fleets in rank order ({fmt.integer(len(ranked))})</h3>")
    parts.append(html_table([r for _, r in ranked.head(50).iterrows()], cols))
    if len(misses):
        parts.append("<h3>Closest misses</h3>")
        parts.append(html_table([r for _, r in misses.iterrows()], cols))
    return ("Serving plan: the best fleet", "\n".join(parts),
            [plot_serving_plan_pareto(cands, directory)])


def plot_fleet_plan(cands, unit, directory):
    """Each fleet run's missed deadlines and lowest SLO attainment against the pool's size."""
    ran = cands[np.isfinite(cands["end_s"])]
    if ran.empty:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    twin = ax.twinx()
    for i, (spares, group) in enumerate(ran.groupby("spares")):
        group = group.sort_values(unit)
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        name = f"{int(spares)} spare{'' if int(spares) == 1 else 's'}"
        ax.plot(group[unit], group["deadlines_missed"], "o-", color=color,
                label=f"{name}: jobs late")
        if np.isfinite(group["worst_slo_attainment"]).any():
            twin.plot(group[unit], 100 * group["worst_slo_attainment"], "s--", color=color,
                      alpha=0.6, label=f"{name}: lowest SLO attainment")
    ax.set_xlabel(unit)
    ax.set_ylabel("jobs that missed their deadline")
    twin.set_ylabel("lowest service SLO attainment (%)")
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=8, loc="upper right")
    ax.set_title("Fleet plan: what each pool size misses", fontsize=10)
    fig.tight_layout()
    return save(fig, directory, "fleet_plan.png"), (
        "Every fleet run of the plan (/plan/fleet): the jobs that missed their deadline and the "
        "lowest SLO attainment among the services, against the pool's size, a line per spares "
        "value.")


def report_fleet_plan(path, directory):
    cands = trnsim_results.load_table(path, "/plan/fleet")
    unit = "ultraservers" if "ultraservers" in cands else "instances"
    shown = "UltraServers" if unit == "ultraservers" else "instances"
    fewest = table_or_none(path, "/plan/fewest")
    parts = [f"<p>{fmt.integer(len(cands))} fleets run ({fmt.integer(int(cands['bisection'].sum()))}"
             f" by bisection); each is feasible when every job ends within its deadline and "
             f"every service meets its SLO attainment.</p>"]
    if fewest is not None and len(fewest):
        items = []
        for _, w in fewest.iterrows():
            d = int(w[unit])
            n = int(w["spares"])
            items.append(f"{n} spare{'' if n == 1 else 's'}: " + ("none in the range" if d < 0 else
                         ("at most " if int(w["at_low_end"]) else "") + f"{fmt.integer(d)} {shown}"))
        parts.append("<p class='key'>Fewest: " + esc("; ".join(items)) + ".</p>")
    cols = [Column("rank", text=lambda r: str(int(r["rank"])) if r["rank"] > 0 else "-"),
            Column("spares"), Column(unit, header=shown), Column("chips"),
            Column("verdict", text=lambda r: str(r["verdict"]), left=True),
            Column("cost_per_hour_usd", header="$/hour"),
            Column("jobs_finished", header="jobs done"), Column("jobs"),
            Column("deadlines_missed", header="late"),
            Column("mean_wait_s", header="wait (mean)"),
            Column("worst_slo_attainment", header="lowest SLO attainment"),
            Column("busy_fraction", header="busy"),
            Column("fragmented_fraction", header="fragmented"),
            Column("bisection", text=lambda r: "bisection" if int(r["bisection"]) else "",
                   left=True),
            Column("reason", text=lambda r: str(r["reason"]), left=True)]
    rows = cands.sort_values(["spares", unit], kind="stable")
    parts.append(html_table([r for _, r in rows.iterrows()], cols))
    return ("Fleet plan: the fewest " + shown, "\n".join(parts),
            [plot_fleet_plan(cands, unit, directory)])


STYLE = """
body{font-family:sans-serif;margin:1.5em auto;max-width:1400px;padding:0 1em;color:#222}
h2{margin-top:1.2em}
.wide{overflow-x:auto;max-width:100%;margin:0.5em 0}
.wide.tall{max-height:80vh;overflow-y:auto}
table{border-collapse:separate;border-spacing:0;font-size:0.85em}
td,th{border-bottom:1px solid #ddd;border-right:1px solid #eee;padding:2px 6px;
 text-align:right;white-space:nowrap}
th{background:#eee;position:sticky;top:0;z-index:2;white-space:normal;max-width:9em;
 vertical-align:bottom}
td.s,th.s{position:sticky;left:0;z-index:1;background:#fff;border-right:1px solid #bbb}
th.s{z-index:3;background:#eee}
th.time{background:TIME_COLOR}
th.cost{background:COST_COLOR}
.l{text-align:left}
.groups{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
table.kv caption{font-weight:bold;text-align:left;padding:2px 0}
table.kv th{position:static;text-align:left;font-weight:normal;max-width:none;
 white-space:nowrap}
table.kv td.col{color:#888;font-family:monospace;font-size:0.9em;text-align:left}
p.key{font-size:1.1em}
.fig{white-space:nowrap}
.none{border:2px solid #d62728;background:#fff5f5;padding:0.2em 1em 0.8em}
ul.why{font-size:0.85em;color:#444}
img{max-width:100%}
figure{margin:1.5em 0}
"""


def write_report(path, directory):
    if not os.path.isfile(path):
        raise ReportError(f"{path}: no such file")
    try:
        meta = trnsim_results.load_meta(path)
        kind = kind_of(path)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: {e}") from None
    os.makedirs(directory, exist_ok=True)
    builders = {"run": report_run, "batch": report_batch, "plan": report_plan,
                "serving_plan": report_serving_plan, "fleet": report_fleet,
                "fleet_plan": report_fleet_plan}
    heading, body, plots = builders[kind](path, directory)
    plots = [p for p in plots if p is not None]
    name = meta.get("name", os.path.basename(path))
    parts = [
        "<!DOCTYPE html>",
        "<html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width'>",
        f"<title>trnsim report: {esc(name)}</title>",
        "<style>" + STYLE.replace("\n", "").replace("TIME_COLOR", TIME_COLOR)
        .replace("COST_COLOR", COST_COLOR) + "</style>",
        "</head><body>",
        f"<h1>{esc(name)}</h1>",
        f"<p>{esc(os.path.basename(path))}: a {kind} written by trnsim "
        f"{esc(meta.get('trnsim_version', '?'))} (results schema "
        f"{esc(meta.get('schema_version'))}), seed {esc(meta.get('seed'))}.</p>",
        f"<h2>{heading}</h2>",
        body,
    ]
    for file, caption in plots:
        parts.append(f"<figure><img src='{esc(file)}' alt='{esc(caption)}'>"
                     f"<figcaption>{esc(caption)}</figcaption></figure>")
    parts.append("</body></html>")
    index = os.path.join(directory, "index.html")
    with open(index, "w", encoding="utf-8") as out:
        out.write("\n".join(parts) + "\n")
    return index, [p[0] for p in plots]


def main(argv=None):
    global DPI
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: analysis/report.py results/study.h5 -o report/\n"
               "exit status: 0 success, 2 a missing file or not a trnsim results file",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="trnsim results file (.h5)")
    parser.add_argument("-o", "--output", help="directory to write (default: RESULTS without .h5)")
    parser.add_argument("--dpi", type=int, default=DPI,
                        help=f"resolution of the PNGs (default {DPI}; 70 keeps them small)")
    args = parser.parse_args(argv)
    DPI = args.dpi
    directory = args.output or os.path.splitext(args.results)[0]
    try:
        index, plots = write_report(args.results, directory)
    except ReportError as e:
        fail(str(e))
    print(index)
    for p in plots:
        print(os.path.join(directory, p))
    return 0


if __name__ == "__main__":
    sys.exit(main())
