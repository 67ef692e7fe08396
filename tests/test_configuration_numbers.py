"""Issue 10's rule: no module outside ``wattsched/hardware/`` names a MIG configuration number.

Code takes configurations from the GPU (``gpu.role("static")``, ``gpu.configuration_ids``), so that any GPU
of the catalogue works and P1's choices live in one place (its catalogue entry). Docstrings may cite P1
("P1's cfg 3"); code, defaults, keyword arguments, comparisons and user-facing strings may not.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "wattsched"
#: Parameter and keyword names that hold a configuration id.
CONFIG_NAMES = {
    "configuration",
    "config",
    "day_configuration",
    "night_configuration",
    "initial",
    "initial_configuration",
    "static_config",
}
#: Text naming a configuration by number: "cfg 3", "cfgs 1, 2", "configuration 4", "static-cfg3", "cfg_b1".
NAMED = re.compile(r"\b(?:cfgs?|configurations?)[ _-]?\d|static-cfg\d|cfg_b\d|_c\d\d\b", re.IGNORECASE)


def _modules() -> list[Path]:
    """Every module but the hardware package (the catalogue) and the DVFS package (no MIG configurations)."""
    skip = {"hardware", "dvfs"}
    return sorted(p for p in PACKAGE.rglob("*.py") if not skip & set(p.relative_to(PACKAGE).parts))


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _number(node: ast.AST | None) -> bool:
    """An int literal or a string of digits (``3``, ``"3"``)."""
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    return isinstance(node.value, int) or (isinstance(node.value, str) and node.value.isdigit())


def _config_subscript(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in CONFIG_NAMES
    )


def violations(source: str) -> list[str]:
    """Where ``source`` names a configuration number (line: what)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.keyword) and node.arg in CONFIG_NAMES and _number(node.value):
            found.append(f"{line}: keyword {node.arg}={ast.unparse(node.value)}")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            with_default = positional[len(positional) - len(arguments.defaults) :]
            pairs = list(zip(with_default, arguments.defaults, strict=True))
            pairs += [
                (a, d)
                for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                if d is not None
            ]
            found += [
                f"{line}: default {a.arg}={ast.unparse(d)}"
                for a, d in pairs
                if a.arg in CONFIG_NAMES and _number(d)
            ]
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names & CONFIG_NAMES and _number(node.value):
                found.append(f"{line}: assignment {ast.unparse(node)}")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_config_subscript(s) for s in sides) and any(_number(s) for s in sides):
                found.append(f"{line}: comparison {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docs
            and NAMED.search(node.value)
        ):
            found.append(f"{line}: text {node.value[:60]!r}")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_configuration_number_outside_hardware(path: Path) -> None:
    assert violations(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "caught"),
    [
        ("StaticPartitioner(configuration=3)", True),
        ("PARTITIONERS.make('static', configuration='3')", True),
        ("def f(configuration=3): pass", True),
        ("def f(*, initial=2): pass", True),
        ("x = frame[frame['config'] == '4']", True),
        ("label = 'static-cfg3'", True),
        ("name = f'cfg_b{block}'", False),  # an f-string placeholder, not a number
        ("text = 'EDF-FS is best on cfgs 3, 4'", True),
        ("def f():\n    '''P1 picked cfg 3.'''\n", False),  # docstrings may cite P1
        ("StaticPartitioner(configuration=gpu.role('static'))", False),
        ("configuration = None", False),
        ("hours = 24", False),
    ],
)
def test_the_check_itself(source: str, caught: bool) -> None:
    assert bool(violations(source)) is caught
