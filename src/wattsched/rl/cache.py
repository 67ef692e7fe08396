"""Trained DQNs shared between the processes of one machine: train once, load everywhere.

Training is a pure function of its :class:`~wattsched.rl.dqn.DQNConfig` and the package's code (seeded, no
global random state), so a trained model can be reused wherever the same config is asked for again: the
Table III study scores one DQN in several cells (its own days, then the rollout's blocks on both workers).
:func:`trained_model` keys a model by a digest of the config and the package's source
(:func:`wattsched.experiments.store.code_digest`), so a code change never reuses a stale network. One process
trains while the others wait on a lock file and then load what it saved; the model directory appears whole
(written beside, then renamed) or not at all.

The cache lives in ``$WATTSCHED_CACHE_DIR/dqn`` (default ``$XDG_CACHE_HOME/wattsched``, else
``~/.cache/wattsched``); deleting it only costs the trainings again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from wattsched.rl.dqn import MODEL_FILE, DQNConfig, train

__all__ = ["CachedModel", "cache_dir", "model_key", "trained_model"]

_INFO_FILE = "training.json"


@dataclass(frozen=True)
class CachedModel:
    """A trained model's file and its training's own figures (the same whichever process asks)."""

    model_path: Path
    wall_s: float
    timesteps: int
    #: Whether this call trained it (``False``: loaded from the cache).
    trained: bool


def cache_dir() -> Path:
    """``$WATTSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/wattsched``, else ``~/.cache/wattsched``."""
    given = os.environ.get("WATTSCHED_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wattsched"


def model_key(config: DQNConfig) -> str:
    """A digest of ``config`` and the package's source code."""
    from wattsched.experiments.store import code_digest

    text = json.dumps(config.to_json(), sort_keys=True, default=str)
    return hashlib.sha256(f"{code_digest()}\n{text}".encode()).hexdigest()[:24]


def trained_model(config: DQNConfig) -> CachedModel:
    """The model ``config`` trains: from the cache, or trained now (and cached) by the first to ask."""
    root = cache_dir() / "dqn"
    root.mkdir(parents=True, exist_ok=True)
    key = model_key(config)
    final = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (final / _INFO_FILE).is_file():
            shutil.rmtree(final, ignore_errors=True)  # a directory without its info file is not a model
            staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
            try:
                result = train(config, staging)
                info = {"wall_s": result.wall_s, "timesteps": result.timesteps}
                (staging / _INFO_FILE).write_text(json.dumps(info), encoding="utf-8")
                os.replace(staging, final)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            return CachedModel(final / MODEL_FILE, result.wall_s, result.timesteps, trained=True)
    info = json.loads((final / _INFO_FILE).read_text(encoding="utf-8"))
    return CachedModel(final / MODEL_FILE, float(info["wall_s"]), int(info["timesteps"]), trained=False)
