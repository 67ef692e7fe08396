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

**Shipped networks.** The networks the studies train are also kept in the package (``rl/networks/<recipe>/``,
written by ``scripts/ship_networks.py``), keyed by the *recipe* alone (a digest of the config, not of the
code) with the SHA-256 of every file and of the networks' weights, and the code digest they were trained
with. A first run loads them instead of training: :func:`trained_model` asks the cache, then the shipped
networks, and trains only when neither has the recipe. ``WATTSCHED_SHIPPED_NETWORKS=0`` turns the shipped
ones off (every network is trained, as before). Training is deterministic, so a network trained again from its
recipe has the same weights: a slow test retrains one and compares the weights' digest
(``tests/rl/test_shipped_networks.py``), which also tells when a change of the simulator or of the training
makes the shipped networks stale (ship them again).
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

from wattsched._files import cache_dir
from wattsched.rl.dqn import MODEL_FILE, DQNConfig, train

__all__ = [
    "SHIPPED_DIR",
    "CachedModel",
    "cache_dir",
    "model_key",
    "recipe_key",
    "ship",
    "shipped_model",
    "trained_model",
    "weights_digest",
]

_INFO_FILE = "training.json"
#: The recipe, checksums and origin of a shipped network.
RECIPE_FILE = "recipe.json"
#: The networks shipped with the package (module docstring).
SHIPPED_DIR = Path(__file__).with_name("networks")


@dataclass(frozen=True)
class CachedModel:
    """A trained model's file and its training's own figures (the same whichever process asks)."""

    model_path: Path
    wall_s: float
    timesteps: int
    #: Whether this call trained it (``False``: loaded from the cache or shipped).
    trained: bool
    #: Whether it is a network shipped with the package.
    shipped: bool = False


def model_key(config: DQNConfig) -> str:
    """A digest of ``config`` and the package's source code."""
    from wattsched.experiments.store import code_digest

    text = json.dumps(config.to_json(), sort_keys=True, default=str)
    return hashlib.sha256(f"{code_digest()}\n{text}".encode()).hexdigest()[:24]


def recipe_key(config: DQNConfig) -> str:
    """A digest of ``config`` alone: the name of its shipped network."""
    text = json.dumps(config.to_json(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def weights_digest(folder: Path) -> str:
    """SHA-256 of the weights and biases of every network in ``folder`` (``*.zip``, in name order): the same
    for two trainings of one recipe, whatever the zip files' own timestamps."""
    from wattsched.rl.dqn import load_model
    from wattsched.rl.partitioner import QNetwork

    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.zip")):
        network = QNetwork.from_sb3(load_model(path))
        for array in (*network.weights, *network.biases):
            digest.update(array.tobytes())
    return digest.hexdigest()


def shipped_model(config: DQNConfig) -> CachedModel | None:
    """The network shipped for ``config``'s recipe, when there is one whose files match their checksums
    (``None`` otherwise, or with ``WATTSCHED_SHIPPED_NETWORKS=0``)."""
    if os.environ.get("WATTSCHED_SHIPPED_NETWORKS", "1") == "0":
        return None
    folder = SHIPPED_DIR / recipe_key(config)
    try:
        recipe = json.loads((folder / RECIPE_FILE).read_text(encoding="utf-8"))
        files: dict[str, str] = recipe["files"]
        if not all(_file_digest(folder / name) == digest for name, digest in files.items()):
            return None
        return CachedModel(
            folder / MODEL_FILE,
            float(recipe["wall_s"]),
            int(recipe["timesteps"]),
            trained=False,
            shipped=True,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ship(config: DQNConfig, model: CachedModel, into: Path = SHIPPED_DIR) -> Path:
    """Copy a trained network of ``config`` into the shipped networks with its recipe and checksums."""
    from wattsched.experiments.store import code_digest

    source = model.model_path.parent
    folder = into / recipe_key(config)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    names = sorted(p.name for p in source.iterdir() if p.suffix in (".zip", ".json") and p.name != _INFO_FILE)
    for name in names:
        shutil.copy2(source / name, folder / name)
    recipe = {
        "config": config.to_json(),
        "seed": config.seed,
        "wall_s": model.wall_s,
        "timesteps": model.timesteps,
        "trained_with_code": code_digest(),
        "files": {name: _file_digest(folder / name) for name in names},
        "weights_sha256": weights_digest(folder),
    }
    (folder / RECIPE_FILE).write_text(json.dumps(recipe, indent=1, sort_keys=True, default=str), "utf-8")
    return folder


def trained_model(config: DQNConfig) -> CachedModel:
    """The model ``config`` trains: from the cache, shipped with the package, or trained now (and cached) by
    the first to ask."""
    root = cache_dir() / "dqn"
    root.mkdir(parents=True, exist_ok=True)
    key = model_key(config)
    final = root / key
    if not (final / _INFO_FILE).is_file() and (shipped := shipped_model(config)) is not None:
        return shipped
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
