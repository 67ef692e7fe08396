"""Ship the DQNs the studies train: a first run loads them instead of training (``wattsched.rl.cache``).

Trains (or takes from the cache) every DQN of Table III's cells at the given scales, with the shipped networks
turned off, and copies each into ``src/wattsched/rl/networks/<recipe>/`` with its recipe, the SHA-256 of its
files and of its weights, and the code digest it was trained with. Run it again after a change to the
simulator or the training (the slow test ``tests/rl/test_shipped_networks.py`` says when one is stale).

    .venv/bin/python scripts/ship_networks.py [--scale quick paper] [--prune]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", nargs="+", choices=("quick", "paper"), default=["quick"])
    parser.add_argument("--prune", action="store_true", help="remove shipped networks no cell asks for")
    parser.add_argument(
        "--from-cache",
        action="store_true",
        help="take a cached network whose saved config is the recipe even if an earlier code trained it",
    )
    args = parser.parse_args()
    os.environ["WATTSCHED_SHIPPED_NETWORKS"] = "0"  # train (or take from the cache), never copy onto itself
    from wattsched.rl.cache import SHIPPED_DIR, recipe_key, ship, trained_model
    from wattsched.studies.table3 import Table3Cell, Table3Study, dqn_config

    wanted = set()
    for scale in args.scale:
        for cell in Table3Study().cells(scale):
            method = getattr(cell, "method", None)
            if not (
                isinstance(cell, Table3Cell) and method and method.kind == "dynamic" and not method.rollout
            ):
                continue
            config = dqn_config(cell)
            model = (_cached(config) if args.from_cache else None) or trained_model(config)
            folder = ship(config, model)
            wanted.add(recipe_key(config))
            size = sum(p.stat().st_size for p in folder.iterdir())
            took = f"trained in {model.wall_s:.0f} s"
            sys.stdout.write(f"{scale} {cell.key}: {folder.name} ({size / 1024:.0f} KiB, {took})\n")
    if args.prune:
        for folder in SHIPPED_DIR.iterdir():
            if folder.is_dir() and folder.name not in wanted:
                shutil.rmtree(folder)
                sys.stdout.write(f"removed {folder.name}\n")
    return 0


def _cached(config: object) -> object:
    """A cached model whose config sidecar is ``config`` (any code digest), or ``None``."""
    import json

    from wattsched.rl.cache import CachedModel, cache_dir
    from wattsched.rl.dqn import MODEL_FILE

    wanted = json.loads(json.dumps(config.to_json(), default=str))  # type: ignore[attr-defined]
    for folder in sorted((cache_dir() / "dqn").glob("*")):
        sidecar = folder / "dqn_model.json"
        info = folder / "training.json"
        if sidecar.is_file() and info.is_file() and json.loads(sidecar.read_text()) == wanted:
            figures = json.loads(info.read_text())
            return CachedModel(folder / MODEL_FILE, figures["wall_s"], figures["timesteps"], trained=False)
    return None


if __name__ == "__main__":
    sys.exit(main())
