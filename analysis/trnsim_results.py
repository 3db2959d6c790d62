"""Reading trnsim results files (HDF5) into pandas.

The layout is described in docs/results-schema.md. Typical use:

    import trnsim_results as tr
    df = tr.load_summary("results/run.h5")          # one row per run, plus a 'file' column
    meta = tr.load_meta("results/run.h5")           # attributes of /meta and the scenario text
    ops = tr.load_table("results/run.h5", "/step/breakdown")

Every loader checks /meta's schema_version first and raises SchemaVersionError (a ValueError)
when the file was written by a newer, incompatible trnsim. Select columns by name: later schema
versions add columns.
"""

from __future__ import annotations

import os

import h5py
import numpy as np
import pandas as pd

#: The newest schema_version this module understands.
SCHEMA_VERSION = 1

__all__ = [
    "SCHEMA_VERSION",
    "ResultsError",
    "SchemaVersionError",
    "load_summary",
    "load_meta",
    "load_table",
]


class ResultsError(ValueError):
    """The file is not a trnsim results file this module can read."""


class SchemaVersionError(ResultsError):
    """The file's schema_version is newer than SCHEMA_VERSION."""


def _decode(value):
    """bytes -> str, numpy scalars -> Python scalars; anything else unchanged."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.shape == ():
        return _decode(value[()])
    return value


def _open(path) -> h5py.File:
    """Opens a results file read-only after checking that it is one and that its schema
    version is known. Raises FileNotFoundError, ResultsError or SchemaVersionError."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ResultsError(f"{path}: is a directory, not a trnsim results file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ResultsError(f"{path}: not a trnsim results file (not HDF5: {e})") from None
    try:
        meta = f.get("meta")
        if not isinstance(meta, h5py.Group) or "schema_version" not in meta.attrs:
            raise ResultsError(
                f"{path}: not a trnsim results file (no /meta group with a schema_version)"
            )
        version = _decode(meta.attrs["schema_version"])
        if not isinstance(version, int) or version < 1:
            raise ResultsError(f"{path}: not a trnsim results file (schema_version {version!r})")
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{path}: results schema_version {version} is newer than the version this "
                f"reader knows ({SCHEMA_VERSION}); update analysis/trnsim_results.py"
            )
        if not isinstance(f.get("summary"), h5py.Dataset):
            raise ResultsError(f"{path}: not a trnsim results file (no /summary dataset)")
    except BaseException:
        f.close()
        raise
    return f


def _frame(array: np.ndarray) -> pd.DataFrame:
    """A DataFrame from a 1-D compound array, with fixed-width byte strings decoded."""
    if array.dtype.names is None:
        raise ResultsError("not a compound (table) dataset")
    columns = {}
    for name in array.dtype.names:
        col = array[name]
        kind = col.dtype.kind
        if kind == "S":
            # numpy drops the trailing NUL padding of fixed-width strings.
            columns[name] = [v.decode("utf-8", errors="replace") for v in col]
        elif kind == "O":
            columns[name] = [_decode(v) for v in col]
        else:
            columns[name] = col
    return pd.DataFrame(columns, columns=list(array.dtype.names))


def load_table(path, dataset: str) -> pd.DataFrame:
    """Reads any compound dataset of a results file ('/summary', '/step/breakdown',
    '/plan/memory', ...) into a DataFrame, one row per dataset row, byte strings decoded."""
    with _open(path) as f:
        ds = f.get(dataset)
        if not isinstance(ds, h5py.Dataset):
            raise KeyError(f"{os.fspath(path)}: no dataset {dataset}")
        if ds.dtype.names is None or ds.ndim != 1:
            raise ResultsError(f"{os.fspath(path)}: {dataset} is not a table (1-D compound)")
        return _frame(ds[()])


def load_summary(path) -> pd.DataFrame:
    """Reads /summary (one row per run) into a DataFrame with a leading 'file' column holding
    `path` as given."""
    df = load_table(path, "/summary")
    df.insert(0, "file", os.fspath(path))
    return df


def load_meta(path) -> dict:
    """All attributes of /meta (schema_version, trnsim_version, name, seed, threads, and any
    later ones) as Python str/int/float, plus 'scenario': the resolved scenario YAML text."""
    with _open(path) as f:
        meta = f["meta"]
        out = {key: _decode(meta.attrs[key]) for key in meta.attrs}
        if "scenario" in meta:
            out["scenario"] = _decode(meta["scenario"][()])
        return out
