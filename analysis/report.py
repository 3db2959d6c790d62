#!/usr/bin/python3
"""Plots and an HTML report of a trnsim results file.

report.py RESULTS.h5 -o DIR writes DIR/index.html and the PNG plots that fit what the file
holds (docs/results-schema.md):

  a run (trnsim run)        step-time breakdown; failure timeline (with a reliability section)
  a sweep (trnsim batch)    time to train against cluster size, when the size varies;
                            ETTR against the checkpoint interval with 95% confidence bands,
                            when the interval varies; cost against time to train with the
                            Pareto frontier of the points, when both vary
  a plan (trnsim plan)      cost against time to train of every candidate with the estimated
                            frontier and the simulated finalists; time to train and cost against
                            cluster size (a line per global batch when the plan searched it);
                            estimated ETTR against the checkpoint interval of the
                            best plan's configuration; the best plan's step-time breakdown and
                            failure timeline

The HTML page embeds the plots (by relative file name) under a summary table.
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
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import trnsim_results  # noqa: E402

DAY = 86400.0
HOUR = 3600.0
#: Colours of the data series, in order (the tests look for them in the images).
SERIES_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
                 "#17becf"]
FRONTIER_COLOR = "#ff7f0e"
DPI = 90
MAX_LINES = 8


class ReportError(Exception):
    """A file this report cannot read."""


def fail(message):
    print(f"report.py: error: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Reading


def kind_of(path):
    """'plan', 'batch' or 'run' from the datasets the file holds."""
    import h5py

    with h5py.File(path, "r") as f:
        if "plan" in f and "candidates" in f["plan"]:
            return "plan"
        if "batch" in f and "points" in f["batch"]:
            return "batch"
    return "run"


def has_table(path, name):
    try:
        trnsim_results.load_table(path, name)
        return True
    except KeyError:
        return False


def swept_keys(points):
    return [c for c in points.columns if c not in ("point", "replicates", "key")]


def batch_frame(path):
    """/batch/mean joined with the swept values of /batch/points: one row per point."""
    points = trnsim_results.load_table(path, "/batch/points")
    mean = trnsim_results.load_table(path, "/batch/mean")
    keys = swept_keys(points)
    frame = mean.merge(points[["point"] + keys], on="point", how="left")
    return frame, keys


def label_of(row, keys):
    parts = []
    # Long values (whole mappings) only when nothing shorter tells the groups apart.
    short = [k for k in keys if len(str(row[k])) <= 30]
    for k in short or keys:
        v = row[k]
        if isinstance(v, float) and k.endswith("interval"):
            v = f"{v / HOUR:g} h"
        elif isinstance(v, float) and v == int(v):
            v = int(v)
        parts.append(f"{'.'.join(k.split('.')[-2:])}={v}")
    return ", ".join(parts) if parts else "all points"


def groups_of(frame, keys):
    """(label, sub-frame) per combination of `keys`, at most MAX_LINES of them (else one)."""
    if not keys:
        return [("all points", frame)]
    grouped = list(frame.groupby(keys if len(keys) > 1 else keys[0], sort=True, dropna=False))
    if len(grouped) > MAX_LINES:
        return [(f"{len(grouped)} combinations of {', '.join(keys)}", frame)]
    out = []
    for values, sub in grouped:
        values = values if isinstance(values, tuple) else (values,)
        row = dict(zip(keys, values))
        out.append((label_of(row, keys), sub))
    return out


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
    formatter = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
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
    fig.tight_layout()
    fig.savefig(os.path.join(directory, name), dpi=DPI, pil_kwargs={"optimize": True})
    plt.close(fig)
    return name


def plot_breakdown(path, directory, name="breakdown.png", title=""):
    if not has_table(path, "/step/breakdown"):
        return None
    ops = trnsim_results.load_table(path, "/step/breakdown")
    if ops.empty:
        return None
    summary = trnsim_results.load_summary(path).iloc[0]
    top = ops.sort_values("time_per_step_s", ascending=False).head(15).iloc[::-1]
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = [SERIES_COLORS[4] if c else SERIES_COLORS[0] for c in top["collective"]]
    ax.barh(top["op"], top["time_per_step_s"], color=colors)
    ax.set_xlabel("time per step on the slowest stage (s; standalone, overlaps not removed)")
    ax.set_title(f"{title}step {summary['step_time_s']:.3g} s, MFU {summary['mfu']:.1%}: "
                 "largest ops (orange: collectives)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.tick_params(axis="y", labelsize=8)
    return save(fig, directory, name), ("Step-time breakdown: the ops that take most of a step "
                                        "on the slowest pipeline stage.")


def plot_timeline(path, directory, name="timeline.png"):
    if not has_table(path, "/run/timeline"):
        return None
    import timeline

    timeline.plot(path, os.path.join(directory, name), dpi=DPI)
    return name, ("Failure timeline of the first replication: progress, work kept in "
                  "checkpoints, recoveries (shaded) and cumulative failures by component.")


def plot_cluster_size(frame, keys, directory):
    """Time to train (and cost) against chips, one line per combination of the other keys."""
    if "chips" not in frame or frame["chips"].nunique() < 2:
        return None
    others = [k for k in keys if not k.startswith("cluster.") and frame[k].nunique() > 1]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.5))
    for i, (label, sub) in enumerate(groups_of(frame, others)):
        sub = sub.sort_values("chips")
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        left.errorbar(sub["chips"], sub["time_to_train_s"] / DAY,
                      yerr=sub.get("ci95_time_to_train_s", 0) / DAY, color=color, marker="o",
                      ms=4, capsize=3, label=label)
        right.errorbar(sub["chips"], sub["cost_usd"] / 1e6, yerr=sub.get("ci95_cost_usd", 0) / 1e6,
                       color=color, marker="o", ms=4, capsize=3, label=label)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        plain_ticks(ax, "x")
        ax.set_xlabel("chips in the job")
        ax.grid(alpha=0.3, which="both")
    left.set_ylabel("time to train (days)")
    right.set_ylabel("cost (million USD)")
    left.set_yscale("log")
    plain_ticks(left, "y")
    left.legend(fontsize=7)
    fig.suptitle("Time to train and cost against cluster size (mean and 95% interval)",
                 fontsize=10)
    return save(fig, directory, "cluster_size.png"), (
        "Time to train and cost against the number of chips (means over the replicates, bars "
        "the 95% confidence intervals).")


def plot_checkpoint(frame, keys, directory):
    """ETTR against the checkpoint interval with a 95% band per combination of the others."""
    if "ettr" not in frame or "checkpoint_interval_s" not in frame:
        return None
    finite = frame[np.isfinite(frame["checkpoint_interval_s"])]
    others = [k for k in keys if k != "reliability.checkpoint.interval" and frame[k].nunique() > 1]
    groups = groups_of(finite, others)
    # Only when the interval varies along a line (not merely between points whose automatic
    # interval differs).
    if max((g["checkpoint_interval_s"].nunique() for _, g in groups), default=0) < 2:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (label, sub) in enumerate(groups):
        sub = sub.sort_values("checkpoint_interval_s")
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        x = sub["checkpoint_interval_s"] / HOUR
        y = sub["ettr"]
        ci = sub.get("ci95_ettr", pd.Series(0.0, index=sub.index)).fillna(0.0)
        ax.plot(x, y, color=color, marker="o", ms=4, label=label)
        ax.fill_between(x, y - ci, y + ci, color=color, alpha=0.2, lw=0)
    ax.set_xscale("log")
    plain_ticks(ax, "x")
    ax.set_xlabel("checkpoint interval (hours of training)")
    ax.set_ylabel("ETTR (effective training time ratio)")
    ax.set_title("ETTR against the checkpoint interval (mean, shaded: 95% confidence)",
                 fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return save(fig, directory, "checkpoint.png"), (
        "ETTR against the checkpoint interval: the mean over the replicates with its 95% "
        "confidence band, one line per value of the other swept keys.")


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


def plot_batch_pareto(frame, keys, directory):
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
               label=f"over the deadline or budget ({len(over)})")
    ax.scatter(ok["time_to_train_s"] / DAY, ok["cost_usd"] / 1e6, s=8, color=SERIES_COLORS[0],
               label=f"feasible candidates, estimated ({len(ok)})")
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
    return save(fig, directory, "pareto.png"), (
        "Every candidate the planner estimated (closed forms), the estimated Pareto frontier of "
        "cost and time to train, and the finalists' simulated figures (stars, by rank).")


def plot_plan_cluster(cands, finalists, domain, limits, directory):
    runnable = runnable_candidates(cands).copy()
    if runnable[domain].nunique() < 2:
        return None
    # Chips of the job alone (the table counts job and spare chips).
    per_domain = runnable["chips"] / (runnable[domain] + runnable["spares"])
    runnable["job_chips"] = (runnable[domain] * per_domain).round()
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
        what = f"batch {int(batch):,}: " if by_batch else ""
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
                 f"({int(best[domain])} {domain}, {int(best['spares'])} spares)", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return save(fig, directory, "checkpoint.png"), (
        "ETTR against the checkpoint interval for the best plan's cluster, parallelism and "
        "spares: the closed-form estimate, and the simulated finalists with their 95% "
        "intervals.")


# ---------------------------------------------------------------------------------------------
# Tables


def fmt_value(name, v):
    if isinstance(v, str):
        return v
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "never" if name.endswith("_s") else "inf"
    if name.endswith("time_to_train_s") or name == "wall_time_s":
        return f"{v / DAY:.2f} d"
    if name.endswith("interval_s"):
        return f"{v:.3g} s" if v < 120 else f"{v / 60:.3g} min"
    if name.endswith("_s"):
        return f"{v:.3g} s"
    if name.endswith("cost_usd"):
        return f"${v:,.0f}"
    if name in ("ettr", "mfu", "hfu", "mbu", "sim_ettr", "est_ettr"):
        return f"{v:.1%}"
    if isinstance(v, (int, np.integer)) or (isinstance(v, float) and v == int(v) and abs(v) < 1e15):
        return f"{int(v):,}"
    return f"{v:.4g}"


def html_table(frame, columns, ci=()):
    cols = [c for c in columns if c in frame.columns]
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"]
    for _, row in frame.iterrows():
        cells = []
        for c in cols:
            text = fmt_value(c, row[c])
            if c in ci and f"ci95_{c}" in frame.columns:
                half = row[f"ci95_{c}"]
                if isinstance(half, float) and half > 0 and math.isfinite(half):
                    text += " &plusmn; " + fmt_value(c, half)
            cells.append(f"<td>{html.escape(text) if '&plusmn;' not in text else text}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Reports


def report_run(path, directory):
    plots = [plot_breakdown(path, directory), plot_timeline(path, directory)]
    summary = trnsim_results.load_summary(path).iloc[0]
    names = [c for c in summary.index if c != "file" and not c.startswith("ci95_")]
    frame = pd.DataFrame({"column": names, "value": [fmt_value(c, summary[c]) for c in names]})
    return "One run", html_table(frame, ["column", "value"]), plots


def report_batch(path, directory):
    frame, keys = batch_frame(path)
    plots = [plot_cluster_size(frame, keys, directory), plot_checkpoint(frame, keys, directory),
             plot_batch_pareto(frame, keys, directory)]
    columns = ["point"] + keys + ["replicates", "chips", "time_to_train_s", "cost_usd", "ettr",
                                  "goodput", "checkpoint_interval_s", "mfu"]
    table = html_table(frame, columns, ci=("time_to_train_s", "cost_usd", "ettr", "goodput"))
    return f"Sweep of {len(frame)} points (mean &plusmn; 95% interval)", table, plots


def report_plan(path, directory):
    cands = trnsim_results.load_table(path, "/plan/candidates")
    cands = cands.set_index("candidate", drop=False)
    finalists = trnsim_results.load_summary(path)
    domain = "ultraservers" if "ultraservers" in cands.columns else "instances"
    limits = trnsim_results.load_table(path, "/plan/constraints").iloc[0]
    plots = [plot_plan_pareto(cands, finalists, limits, directory),
             plot_plan_cluster(cands, finalists, domain, limits, directory),
             plot_plan_checkpoint(cands, finalists, domain, directory),
             plot_breakdown(path, directory, title="best plan: "),
             plot_timeline(path, directory)]
    columns = ["rank", domain, "chips", "global_batch", "tp", "cp", "pp", "dp", "zero",
               "microbatch", "recompute",
               "checkpoint_interval_s", "spare_domains", "step_time_s", "sim_ettr",
               "time_to_train_s", "cost_usd", "meets_constraints", "frontier", "est_ettr",
               "est_time_to_train_s", "est_cost_usd"]
    counts = cands["verdict"].value_counts()
    text = ", ".join(f"{n:,} {v}" for v, n in counts.items())
    table = (f"<p>{len(cands):,} candidates: {html.escape(text)}.</p>\n" +
             html_table(finalists, columns, ci=("time_to_train_s", "cost_usd")))
    return "Plan: finalists in rank order", table, plots


def write_report(path, directory):
    if not os.path.isfile(path):
        raise ReportError(f"{path}: no such file")
    try:
        meta = trnsim_results.load_meta(path)
        kind = kind_of(path)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: {e}") from None
    os.makedirs(directory, exist_ok=True)
    builders = {"run": report_run, "batch": report_batch, "plan": report_plan}
    heading, table, plots = builders[kind](path, directory)
    plots = [p for p in plots if p is not None]
    name = meta.get("name", os.path.basename(path))
    parts = [
        "<!DOCTYPE html>",
        "<html><head><meta charset='utf-8'>",
        f"<title>trnsim report: {html.escape(name)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;"
        "padding:2px 6px;text-align:right}th{background:#eee}img{max-width:100%}"
        "figure{margin:1.5em 0}</style>",
        "</head><body>",
        f"<h1>{html.escape(name)}</h1>",
        f"<p>{html.escape(os.path.basename(path))}: a {kind} written by trnsim "
        f"{html.escape(str(meta.get('trnsim_version', '?')))} (results schema "
        f"{meta.get('schema_version')}), seed {meta.get('seed')}.</p>",
        f"<h2>{heading}</h2>",
        table,
    ]
    for file, caption in plots:
        parts.append(f"<figure><img src='{html.escape(file)}' alt='{html.escape(caption)}'>"
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
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
