#!/usr/bin/python3
"""Print the /summary tables of trnsim results files, one row per run."""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pandas as pd  # noqa: E402

import trnsim_format  # noqa: E402
import trnsim_results  # noqa: E402

DEFAULT_COLUMNS = [
    "file",
    "name",
    "chips",
    "ranks",
    "step_time_s",
    "tokens_per_s",
    "mfu",
    "time_to_train_s",
    "cost_usd",
]

EPILOG = f"""\
columns:
  default: {",".join(DEFAULT_COLUMNS)}
  'file' (the path as given) and 'name' (the scenario name, from /meta) come first, then the
  columns of /summary: chips, ranks, tp, pp, dp, step_time_s, tokens_per_s, mfu, hfu, mbu,
  exposed_comm_s, time_to_train_s, instance_hours, cost_usd, ... (see docs/results-schema.md;
  names end in their unit: _s seconds, _bytes bytes, _usd US dollars; mfu, hfu, mbu and
  bubble_fraction are fractions 0..1). 'file' always leads the output.

examples:
  analysis/summary.py results/a.h5 results/b.h5
  analysis/summary.py results/*.h5 --columns tp,pp,dp,mfu,exposed_comm_s
  analysis/summary.py results/*.h5 --csv > summary.csv

exit status: 0 success, 2 bad arguments, a missing file, a file that is not a trnsim results
file (or is newer than this reader), or an unknown column.
"""


def human(df: pd.DataFrame) -> pd.DataFrame:
    """The cells as the command line prints them (analysis/trnsim_format.py): 16.8 s,
    499K tokens/s, 15.2 GiB, $2,887,234, 35.7%; the file and the name as they are."""
    out = pd.DataFrame(index=df.index)
    for c in df.columns:
        if c in ("file", "name"):
            out[c] = df[c]
        else:
            out[c] = [trnsim_format.column(c, v) for v in df[c]]
    return out


def fail(message: str) -> "NoReturn":  # noqa: F821
    print(f"summary.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(paths):
    frames = []
    for path in paths:
        try:
            df = trnsim_results.load_summary(path)
            meta = trnsim_results.load_meta(path)
        except FileNotFoundError:
            fail(f"{path}: no such file")
        except (trnsim_results.ResultsError, OSError, KeyError) as e:
            message = str(e).strip("'\"")
            fail(message if path in message else f"{path}: {message}")
        df.insert(1, "name", meta.get("name", ""))
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def select(df: pd.DataFrame, requested):
    if requested is None:
        return [c for c in DEFAULT_COLUMNS if c in df.columns]
    columns = [c.strip() for c in requested.split(",") if c.strip()]
    if not columns:
        fail("--columns needs at least one column name")
    unknown = [c for c in columns if c not in df.columns]
    if unknown:
        fail(
            f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
            f"available: {', '.join(df.columns)}"
        )
    columns = [c for c in columns if c != "file"]
    return ["file"] + list(dict.fromkeys(columns))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="summary.py",
        description="Print the summary table (one row per run) of one or more trnsim HDF5 "
        "results files.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE.h5", help="trnsim results file")
    parser.add_argument(
        "--columns",
        metavar="a,b,c",
        help="comma-separated columns to show, in this order (default: see below)",
    )
    parser.add_argument(
        "--csv", action="store_true",
        help="print CSV (plain numbers in the columns' units, full precision) instead of an "
        "aligned table in human units (16.8 s, 15.2 GiB, $2,887,234)"
    )
    args = parser.parse_args(argv)

    df = load(args.files)
    df = df[select(df, args.columns)]
    try:
        if args.csv:
            df.to_csv(sys.stdout, index=False)
        else:
            print(human(df).to_string(index=False))
        sys.stdout.flush()
    except BrokenPipeError:
        # Output piped into head(1) and the like: stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
