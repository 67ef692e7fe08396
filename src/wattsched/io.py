"""Table files shared by readers and writers: CSV or Parquet by suffix, read defensively, written atomically.

:func:`read_table` reads a CSV with every cell as text (nothing silently turned into NaN, a repeated header
name refused) or a Parquet file whose text is validated in full (pyarrow decodes strings lazily, so a cell
that is not UTF-8 would otherwise fail later, far from the reader). Every failure is one
:class:`~wattsched.errors.InputError` naming the file. :func:`numeric_column` turns one column into float64
and reports its first cell that is not a finite number (booleans are not numbers). :func:`write_table` writes
through a temporary file in the target folder and ``os.replace``; errors name the target, never the temp file.
"""

from __future__ import annotations

import csv
import math
import os
import re
import tempfile
import warnings
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from wattsched._files import publish
from wattsched.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CSV_SUFFIXES",
    "PARQUET_SUFFIXES",
    "cell_text",
    "file_format",
    "numeric_column",
    "read_table",
    "write_table",
]

CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet", ".pq")
FloatArray = npt.NDArray[np.float64]


def file_format(path: str | Path, formats: tuple[str, ...] = ("csv", "parquet")) -> str:
    """``"csv"`` or ``"parquet"`` from the suffix; another suffix (or a format not in ``formats``) is an
    InputError naming the file."""
    if Path(path).is_dir():
        expected = " or ".join({"csv": "CSV", "parquet": "Parquet"}.get(f, f) for f in formats)
        raise InputError(f"is a directory, expected a {expected} file", path=str(path))
    suffix = Path(path).suffix.lower()
    kind = "csv" if suffix in CSV_SUFFIXES else "parquet" if suffix in PARQUET_SUFFIXES else None
    if kind is None or kind not in formats:
        allowed = [
            *(CSV_SUFFIXES if "csv" in formats else ()),
            *(PARQUET_SUFFIXES if "parquet" in formats else ()),
        ]
        raise InputError(
            f"unsupported file suffix '{Path(path).suffix}'; use {', '.join(allowed)}", path=str(path)
        )
    return kind


def read_table(path: str | Path, formats: tuple[str, ...] = ("csv", "parquet")) -> pd.DataFrame:
    """Read a CSV (cells as text) or Parquet table; any failure is an InputError naming the file."""
    import pandas as pd

    where = str(path)
    kind = file_format(path, formats)
    if kind == "parquet":
        return _read_parquet(Path(path), where)
    try:
        with warnings.catch_warnings():
            # A first row longer than the header would silently become an index or lose cells.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path, dtype=str, keep_default_na=False, na_filter=False, encoding="utf-8", index_col=False
            )
        _refuse_duplicate_header(path, where)
        return frame
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("file not found", path=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=where) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=where) from None
    except pd.errors.EmptyDataError:
        raise InputError("empty file: no header and no rows", path=where) from None
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError, OSError) as exc:
        message = " ".join(str(exc).split())
        line = re.search(r"Expected \d+ fields in line (\d+)", message)
        row = int(line.group(1)) - 1 if line else None  # file line 1 is the header
        raise InputError(f"cannot parse csv file: {message}", path=where, row=row) from None


def _read_parquet(path: Path, where: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    if not path.exists():
        raise InputError("file not found", path=where)
    if path.is_dir():  # pyarrow would read a folder as a partitioned dataset
        raise InputError("is a directory, not a file", path=where)
    try:
        names = pq.read_schema(path).names
        for i, name in enumerate(names):
            if name in names[:i]:  # pyarrow would refuse it with a page-long message
                raise InputError("the header names this column twice", path=where, column=name)
        table = pq.read_table(path)
        table.validate(full=True)  # e.g. text cells that are not UTF-8, which pyarrow would decode lazily
        return table.to_pandas()
    except InputError:
        raise
    except Exception as exc:  # a damaged file can fail anywhere in pyarrow or in pandas' metadata handling
        message = " ".join(str(exc).split())
        message = message if len(message) <= 200 else message[:197] + "..."
        raise InputError(f"cannot parse parquet file: {type(exc).__name__}: {message}", path=where) from None


def _refuse_duplicate_header(path: str | Path, where: str) -> None:
    """pandas renames a repeated column ``x`` to ``x.1``; a repeated header name is an error instead."""
    with open(path, encoding="utf-8", newline="") as stream:
        header = next(csv.reader(stream), [])
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise InputError("the header names this column twice", path=where, column=name)
        seen.add(name)


def numeric_column(frame: pd.DataFrame, column: str) -> tuple[FloatArray, int | None]:
    """Column as float64 and the index of its first cell that is not a finite number (None if all are).

    Text is parsed by Python's ``float`` (correctly rounded); booleans, lists and junk count as bad cells.
    """
    import pandas as pd

    series = frame[column]
    if pd.api.types.is_bool_dtype(series.dtype):  # True is not a number
        return np.full(len(series), np.nan), (0 if len(series) else None)
    if pd.api.types.is_numeric_dtype(series.dtype):
        values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        values = np.array([_as_float(v) for v in series.to_numpy(dtype=object)], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    return values, (int(bad[0]) if bad.size else None)


def _as_float(value: object) -> float:
    """``float(value)`` for a scalar number or numeric text, NaN for anything else (lists, bools, junk)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, str | int | float | Decimal | np.number):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def cell_text(frame: pd.DataFrame, column: str, index: int) -> str:
    """``repr`` of one cell, shortened so that an error message stays one short line."""
    text = repr(frame[column].iloc[index])
    return text if len(text) <= 60 else text[:57] + "..."


def write_table(frame: pd.DataFrame, path: str | Path, formats: tuple[str, ...] = ("csv", "parquet")) -> None:
    """Write a table as CSV (floats in round-trip ``repr``) or Parquet by suffix, via a temp file + rename."""
    import pandas as pd

    kind = file_format(path, formats)
    target = Path(path)
    if kind == "csv":
        frame = frame.copy()
        for column in frame.columns:
            if pd.api.types.is_float_dtype(frame[column].dtype):
                frame[column] = [repr(v) for v in frame[column].tolist()]
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("cannot write: the folder does not exist", path=str(path)) from None
    except PermissionError:
        raise InputError("cannot write: permission denied in the folder", path=str(path)) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            if kind == "csv":
                stream.write(frame.to_csv(index=False, lineterminator="\n").encode("utf-8"))
            else:
                frame.to_parquet(stream, index=False)
        publish(temp, target)
    except IsADirectoryError:
        Path(temp).unlink(missing_ok=True)
        raise InputError("cannot write: the path is a directory", path=str(path)) from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
