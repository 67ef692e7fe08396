"""Result store: per-study Parquet part files plus a JSON manifest, so a killed sweep resumes.

Layout under ``OUT/raw/``::

    <study>.manifest.json      which cells are stored, in which part file, with each cell's fingerprint
    <study>.parts/part-*.parquet   rows of finished cells (a cell's rows are never split across files)
    <study>.parquet            the consolidated rows of the last completed run, ordered by cell

Every file is written to a temporary name in the same folder and moved into place with ``os.replace``: a part
file is complete before the manifest names it, so a kill at any moment leaves either the old or the new state,
and a cell counts as done only once its rows are on disk. Files the manifest does not name are leftovers of an
interrupted write and are removed when the store is opened.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from wattsched._files import publish
from wattsched.errors import ConfigError

__all__ = [
    "CELL_COLUMN",
    "StudyStore",
    "atomic_write_bytes",
    "atomic_write_text",
    "cell_fingerprint",
    "code_digest",
    "package_version",
]

log = logging.getLogger(__name__)

#: Column added to every stored row: the key of the cell that produced it.
CELL_COLUMN = "cell"
_MANIFEST_FORMAT = 1


def package_version() -> str:
    try:
        return metadata.version("wattsched")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


@functools.cache
def code_digest() -> str:
    """A digest of the package's source: every ``*.py`` and data file under ``src/wattsched`` (relative path
    and bytes, in path order; ``__pycache__`` and compiled files left out). Computed once per process.

    Part of every cell's fingerprint, so a code change without a version bump never reuses stale rows.
    """
    import wattsched

    root = Path(wattsched.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and _source_file(p, root)):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _source_file(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    compiled = path.suffix in (".pyc", ".pyo")
    return "__pycache__" not in parts and not compiled and not path.name.startswith(".")


def cell_fingerprint(cell: Any, version: str | None = None, code: str | None = None) -> str:
    """A digest of everything that defines a cell (its repr: a frozen dataclass), the package version and
    the source that computes it: the package's (:func:`code_digest`) and every plug-in module's loaded in
    this process (:func:`wattsched.plugins.plugins_digest`), unless ``code`` is given. Editing a plug-in
    thus recomputes the rows it produced instead of reusing them."""
    if code is None:
        from wattsched.plugins import plugins_digest

        extra = plugins_digest()
        code = f"{code_digest()}+{extra}" if extra else code_digest()
    text = f"{version or package_version()}\n{code}\n{cell!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        publish(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    table = pa.Table.from_pandas(_arrow_safe(frame), preserve_index=False)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    atomic_write_bytes(path, sink.getvalue().to_pybytes())


def _arrow_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Object columns mixing scalar types (e.g. configuration 3 and "no-mig") become strings. Array columns
    (lists, e.g. repartitions per hour) stay lists; rows without them (NaN after a concat) become nulls."""
    out = frame
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object:
            continue
        present = [v for v in values if not _missing(v)]
        if present and all(isinstance(v, list | tuple | np.ndarray) for v in present):
            if len(present) < len(values):
                out = out if out is not frame else frame.copy()
                out[column] = values.map(lambda v: None if _missing(v) else v)
        elif len({type(v) for v in present}) > 1:
            out = out if out is not frame else frame.copy()
            out[column] = values.map(lambda v: None if _missing(v) else str(v))
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


class StudyStore:
    """The stored rows of one study under ``raw_dir``."""

    def __init__(self, raw_dir: Path, study: str, scale: str) -> None:
        self.raw_dir = Path(raw_dir)
        self.study = study
        self.scale = scale
        self.version = package_version()
        self.manifest_path = self.raw_dir / f"{study}.manifest.json"
        self.parts_dir = self.raw_dir / f"{study}.parts"
        self.result_path = self.raw_dir / f"{study}.parquet"
        self._parts: list[dict[str, Any]] = []
        self._next_part = 1
        self._load()

    # -- manifest -------------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.manifest_path.exists():
            try:
                data = json.loads(self.manifest_path.read_text(encoding="utf-8"))
                if data.get("format") != _MANIFEST_FORMAT or data.get("study") != self.study:
                    raise ValueError("manifest of another format or study")
                self._parts = [p for p in data["parts"] if (self.parts_dir / p["file"]).is_file()]
                self._next_part = int(data["next_part"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"{self.manifest_path}: unreadable result manifest ({exc}); "
                    "delete it to start this study afresh"
                ) from None
        named = {p["file"] for p in self._parts}
        if self.parts_dir.is_dir():
            for leftover in self.parts_dir.iterdir():
                if leftover.name not in named:  # an interrupted write
                    leftover.unlink(missing_ok=True)

    def _save(self, cells_hash: str | None = None) -> None:
        data = {
            "format": _MANIFEST_FORMAT,
            "study": self.study,
            "scale": self.scale,
            "package_version": self.version,
            "config_hash": cells_hash,
            "next_part": self._next_part,
            "cells_done": sorted(k for p in self._parts for k in p["cells"]),
            "parts": self._parts,
        }
        atomic_write_text(self.manifest_path, json.dumps(data, indent=1, sort_keys=True) + "\n")

    # -- queries --------------------------------------------------------------------------------------
    def done(self, fingerprints: Mapping[str, str]) -> set[str]:
        """Keys of ``fingerprints`` whose rows are stored for exactly that fingerprint."""
        stored = {k: fp for p in self._parts for k, fp in p["cells"].items()}
        return {key for key, fp in fingerprints.items() if stored.get(key) == fp}

    # -- writes ---------------------------------------------------------------------------------------
    def append(self, finished: Sequence[tuple[str, str, list[dict[str, Any]]]]) -> None:
        """Store finished cells ``(key, fingerprint, rows)`` as one new part file, then name it."""
        if not finished:
            return
        name = f"part-{self._next_part:06d}.parquet"
        _write_parquet(_rows_frame(finished), self.parts_dir / name)
        keys = {key for key, _, _ in finished}
        for part in self._parts:  # a re-run cell replaces its old rows
            part["cells"] = {k: fp for k, fp in part["cells"].items() if k not in keys}
        self._parts.append({"file": name, "cells": {key: fp for key, fp, _ in finished}})
        self._next_part += 1
        self._save()

    def load(self, keys: Iterable[str]) -> pd.DataFrame:
        """Rows of ``keys`` in that order; the rows of one cell keep the order the cell returned them in."""
        wanted = list(keys)
        frames = []
        for part in self._parts:
            if set(part["cells"]) & set(wanted):
                frame = pq.read_table(self.parts_dir / part["file"]).to_pandas()
                frames.append(frame[frame[CELL_COLUMN].isin(part["cells"])])
        if not frames:
            return pd.DataFrame({CELL_COLUMN: pd.Series([], dtype=object)})
        rows = pd.concat(frames, ignore_index=True)
        rank = {key: i for i, key in enumerate(wanted)}
        rows = rows[rows[CELL_COLUMN].isin(rank)]
        order = rows[CELL_COLUMN].map(rank).to_numpy()
        return rows.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)

    def finalize(self, fingerprints: Mapping[str, str]) -> pd.DataFrame:
        """Write ``<study>.parquet`` for the cells of ``fingerprints``, in that order; compact the parts."""
        keys = list(fingerprints)
        missing = set(keys) - self.done(fingerprints)
        if missing:
            raise RuntimeError(f"{self.study}: {len(missing)} cells are not stored yet")
        rows = self.load(keys)
        _write_parquet(rows, self.result_path)
        self._compact(
            hashlib.sha256("\n".join(f"{k}={fingerprints[k]}" for k in keys).encode()).hexdigest()[:16]
        )
        return rows

    def _compact(self, cells_hash: str) -> None:
        """Merge every part into one file (kept as the resume cache, stale scales included)."""
        if len(self._parts) > 1:
            all_keys = [k for p in self._parts for k in p["cells"]]
            merged = self.load(all_keys)
            name = f"part-{self._next_part:06d}.parquet"
            _write_parquet(merged, self.parts_dir / name)
            old = [p["file"] for p in self._parts]
            self._parts = [
                {"file": name, "cells": {k: fp for p in self._parts for k, fp in p["cells"].items()}}
            ]
            self._next_part += 1
            self._save(cells_hash)
            for file in old:
                (self.parts_dir / file).unlink(missing_ok=True)
        else:
            self._save(cells_hash)


def _rows_frame(finished: Sequence[tuple[str, str, list[dict[str, Any]]]]) -> pd.DataFrame:
    records = []
    for key, _, rows in finished:
        for row in rows:
            records.append({**row, CELL_COLUMN: key})
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    if CELL_COLUMN not in frame.columns:
        frame[CELL_COLUMN] = pd.Series([], dtype=object)
    return frame
