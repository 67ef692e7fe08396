"""Clusters from files: a public trace's node list (Alibaba 2023) and wattsched's own cluster file.

**Node list** (``openb_node_list_all_node.csv``: ``sn, cpu_milli, memory_mib, gpu, model``): one server per
node with ``gpu`` GPUs; CPU-only nodes (``gpu`` = 0, empty ``model``) are counted and left out. Each GPU
model maps to a catalogue entry by :data:`GPU_MODELS` (``cluster/data/gpu_models.toml``: every model of the
trace is a *declared fallback*, none of them has MIG), overridden by ``mapping`` and, for models in neither,
``fallback``. Unknown models are one error that lists them with their node counts.

**Cluster file** (JSON, written by ``wattsched cluster import``): ``{"format": "wattsched-cluster",
"version": 1, "servers": [{"name", "gpu", "gpus", "model"}, ...], "import": {...}}``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from wattsched._files import publish
from wattsched.cluster.spec import ClusterSpec, ServerSpec
from wattsched.errors import ConfigError, InputError
from wattsched.hardware._toml import read_toml
from wattsched.hardware.catalogue import load_gpu
from wattsched.io import read_table

__all__ = [
    "CLUSTER_FORMAT",
    "NodeImport",
    "gpu_models",
    "read_cluster_file",
    "read_node_list",
    "write_cluster_file",
]

CLUSTER_FORMAT = "wattsched-cluster"
_NODE_COLUMNS = ("sn", "gpu", "model")


def gpu_models() -> dict[str, tuple[str, str, str]]:
    """The packaged model map: ``model -> (catalogue entry, "fallback" | "catalogue", note)``."""
    text = (resources.files("wattsched.cluster") / "data" / "gpu_models.toml").read_text(encoding="utf-8")
    data = read_toml(text, where="gpu_models.toml", is_text=True)
    models = data["models"]
    return {name: (entry["gpu"], entry["kind"], entry.get("note", "")) for name, entry in models.items()}


@dataclass(frozen=True)
class NodeImport:
    """A cluster read from a node list, and what the import did."""

    spec: ClusterSpec
    #: Node model of each server (same order as ``spec.servers``).
    models: tuple[str, ...]
    rows_read: int
    cpu_only_nodes: int
    #: model -> (catalogue entry, how: "catalogue" | "fallback" | "mapped" | "--fallback", GPUs).
    mapping: dict[str, tuple[str, str, int]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read,
            "servers": len(self.spec.servers),
            "gpus": self.spec.gpus,
            "cpu_only_nodes": self.cpu_only_nodes,
            "models": {
                m: {"gpu": g, "how": how, "gpus": n} for m, (g, how, n) in sorted(self.mapping.items())
            },
        }


def read_node_list(
    path: str | Path, mapping: Mapping[str, str] | None = None, fallback: str | None = None
) -> NodeImport:
    """Servers of a node list (see the module docstring); errors name the file, row and column."""
    where = str(path)
    frame = read_table(path, ("csv",))
    frame.columns = [str(c).strip() for c in frame.columns]
    for column in _NODE_COLUMNS:
        if column not in frame.columns:
            raise InputError(
                f"missing column; a node list needs {', '.join(_NODE_COLUMNS)}", path=where, column=column
            )
    if len(frame) == 0:
        raise InputError("the node list has a header but no rows", path=where)
    known = gpu_models()
    chosen: dict[str, tuple[str, str]] = {m: (g, kind) for m, (g, kind, _) in known.items()}
    for model, gpu in (mapping or {}).items():
        chosen[model] = (gpu, "mapped")
    servers: list[ServerSpec] = []
    models: list[str] = []
    cpu_only = 0
    unknown: Counter[str] = Counter()
    for row, (name, count_text, model) in enumerate(
        zip(frame["sn"], frame["gpu"], frame["model"], strict=True), start=1
    ):
        try:
            count = float(str(count_text).strip())
        except ValueError:
            count = math.nan
        if not (math.isfinite(count) and count >= 0 and count == int(count) and count <= 1_000):
            raise InputError(
                f"expected a whole number of GPUs in 0..1000, got {count_text!r}",
                path=where,
                row=row,
                column="gpu",
            )
        model = str(model).strip()
        if int(count) == 0:
            cpu_only += 1
            continue
        if not model:
            raise InputError("a node with GPUs needs a model", path=where, row=row, column="model")
        if model not in chosen:
            if fallback is None:
                unknown[model] += 1
                continue
            chosen[model] = (fallback, "--fallback")
        servers.append(ServerSpec(chosen[model][0], int(count), str(name).strip()))
        models.append(model)
    if unknown:
        listed = ", ".join(f"{m} ({n} node{'s' if n > 1 else ''})" for m, n in sorted(unknown.items()))
        raise InputError(
            f"unknown GPU model(s) {listed}; map them with --map MODEL=GPU or --fallback GPU",
            path=where,
            column="model",
        )
    if not servers:
        raise InputError(
            f"no node has a GPU ({cpu_only} CPU-only nodes): a cluster needs at least one GPU",
            path=where,
            column="gpu",
        )
    for gpu in {server.gpu for server in servers}:
        load_gpu(gpu)  # ConfigError / CatalogueError naming the entry
    gpus_by_model: Counter[str] = Counter()
    for server, model in zip(servers, models, strict=True):
        gpus_by_model[model] += server.gpus
    used = {m: (chosen[m][0], chosen[m][1], n) for m, n in gpus_by_model.items()}
    return NodeImport(ClusterSpec(tuple(servers)), tuple(models), len(frame), cpu_only, used)


def write_cluster_file(nodes: NodeImport, path: str | Path, extra: Mapping[str, Any] | None = None) -> None:
    """Write the cluster file (JSON, atomically)."""
    data = {
        "format": CLUSTER_FORMAT,
        "version": 1,
        "servers": [
            {"name": s.name, "gpu": s.gpu, "gpus": s.gpus, "model": m}
            for s, m in zip(nodes.spec.servers, nodes.models, strict=True)
        ],
        "import": {**nodes.to_dict(), **dict(extra or {})},
    }
    _write_atomic(Path(path), json.dumps(data, indent=1) + "\n")


def _write_atomic(target: Path, text: str) -> None:
    try:
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError("cannot write: the folder does not exist", path=str(target)) from None
    except PermissionError:
        raise InputError("cannot write: permission denied in the folder", path=str(target)) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        publish(temp, target)
    except IsADirectoryError:
        Path(temp).unlink(missing_ok=True)
        raise InputError("cannot write: the path is a directory", path=str(target)) from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def read_cluster_file(path: str | Path) -> ClusterSpec:
    """A cluster file's servers; errors name the file and the field."""
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("file not found", path=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=where) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=where) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON ({exc.msg} at line {exc.lineno})", path=where) from None
    if not isinstance(data, dict) or data.get("format") != CLUSTER_FORMAT:
        raise InputError(f'not a cluster file (expected "format": "{CLUSTER_FORMAT}")', path=where)
    entries = data.get("servers")
    if not isinstance(entries, list) or not entries:
        raise InputError("field 'servers': expected a non-empty list", path=where)
    servers = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("gpu"), str):
            raise InputError(f"field 'servers[{i}].gpu': expected a catalogue name", path=where)
        gpus = entry.get("gpus")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError(f"field 'servers[{i}].gpus': expected an integer >= 1, got {gpus!r}", path=where)
        servers.append(ServerSpec(entry["gpu"], gpus, str(entry.get("name", f"server-{i:04d}"))))
    spec = ClusterSpec(tuple(servers))
    try:
        spec.gpu_models()
    except ConfigError as exc:
        raise InputError(str(exc), path=where) from None
    return spec
