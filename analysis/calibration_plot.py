#!/usr/bin/python3
"""Plot the calibration of the analytic kernel model against the detailed core model.

Reads the calibration data `trnsim calibrate` writes beside a chip file
(topologies/chips/<chip>.calibration.csv: class, set, shape, detailed_s, analytic_s,
relative_error; one row per simulated shape) and writes a PNG with one panel per kernel class:
the analytic model's time against the detailed model's (log-log), training shapes and held-out
shapes apart, the diagonal and a +-15% band, and the held-out error in the title.
"""

import argparse
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

COLUMNS = ["class", "set", "shape", "detailed_s", "analytic_s", "relative_error"]
# The order of the error table (compute::KernelClass).
CLASSES = [
    "matmul",
    "attention",
    "elementwise",
    "softmax",
    "rms_norm",
    "layer_norm",
    "gather",
    "adamw",
    "reduce",
]
BAND = 0.15

EPILOG = """\
examples:
  analysis/calibration_plot.py topologies/chips/trn2.calibration.csv -o trn2-calibration.png
  analysis/calibration_plot.py /tmp/trn1.calibration.csv --held-out-only

exit status: 0 success, 2 bad arguments, a missing file or a file that is not calibration data.
"""


def fail(message: str) -> "NoReturn":  # noqa: F821
    print(f"calibration_plot.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(path):
    if not os.path.isfile(path):
        fail(f"{path}: no such file")
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as e:
        fail(f"{path}: not calibration data ({e})")
    if list(df.columns) != COLUMNS:
        fail(f"{path}: not calibration data (expected the columns {','.join(COLUMNS)})")
    if df.empty:
        fail(f"{path}: no rows")
    unknown = sorted(set(df["class"]) - set(CLASSES))
    if unknown:
        fail(f"{path}: unknown kernel class {unknown[0]!r}")
    if not set(df["set"]) <= {"train", "held_out"}:
        fail(f"{path}: the set column holds something other than train and held_out")
    if (df["detailed_s"] <= 0).any() or (df["analytic_s"] <= 0).any():
        fail(f"{path}: times must be positive")
    return df


def error_table(df):
    """Held-out MAPE and largest error per class, as `trnsim calibrate` prints them."""
    rows = []
    for cls in CLASSES:
        held = df[(df["class"] == cls) & (df["set"] == "held_out")]
        if held.empty:
            continue
        errors = (held["analytic_s"] / held["detailed_s"] - 1.0).abs()
        rows.append((cls, 100.0 * errors.mean(), 100.0 * errors.max(), len(held)))
    return rows


def plot(df, title, output, held_out_only):
    classes = [c for c in CLASSES if (df["class"] == c).any()]
    columns = 3
    rows = math.ceil(len(classes) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows), squeeze=False)
    table = {cls: (mape, worst) for cls, mape, worst, _ in error_table(df)}
    for ax, cls in zip(axes.flat, classes):
        part = df[df["class"] == cls]
        sets = [("held_out", "held-out", "#d6604d", "o")]
        if not held_out_only:
            sets.insert(0, ("train", "training", "#92c5de", "."))
        for name, label, color, marker in sets:
            points = part[part["set"] == name]
            if points.empty:
                continue
            ax.scatter(points["detailed_s"] * 1e6, points["analytic_s"] * 1e6, s=12, c=color,
                       marker=marker, label=f"{label} ({len(points)})", alpha=0.8)
        lo = 1e6 * min(part["detailed_s"].min(), part["analytic_s"].min()) / 1.5
        hi = 1e6 * max(part["detailed_s"].max(), part["analytic_s"].max()) * 1.5
        ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8)
        ax.fill_between([lo, hi], [lo * (1 - BAND), hi * (1 - BAND)],
                        [lo * (1 + BAND), hi * (1 + BAND)], color="#cccccc", alpha=0.4,
                        label=f"+-{BAND:.0%}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        heading = cls
        if cls in table:
            mape, worst = table[cls]
            heading += f": MAPE {mape:.2f}%, max {worst:.2f}%"
        ax.set_title(heading, fontsize=10)
        ax.set_xlabel("detailed model (us)")
        ax.set_ylabel("analytic model (us)")
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(True, which="major", alpha=0.3)
    for ax in list(axes.flat)[len(classes):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("data", help="calibration data CSV written by trnsim calibrate")
    parser.add_argument("-o", "--output", help="PNG to write (default: DATA with .png)")
    parser.add_argument("--held-out-only", action="store_true",
                        help="plot the held-out shapes only")
    parser.add_argument("--title", help="figure title (default: from the file name)")
    args = parser.parse_args(argv)
    df = load(args.data)
    output = args.output or os.path.splitext(args.data)[0] + ".png"
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        fail(f"{output}: no directory {directory}")
    name = os.path.basename(args.data).split(".")[0]
    title = args.title or f"{name}: analytic kernel model vs detailed core model"
    plot(df, title, output, args.held_out_only)
    for cls, mape, worst, count in error_table(df):
        print(f"{cls}: MAPE {mape:.2f}%, max {worst:.2f}% ({count} held-out shapes)",
              file=sys.stderr)
    print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
