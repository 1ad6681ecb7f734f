"""The architecture's import rules (STYLE.md "Layout shows the architecture").

protocol/ imports no trio and no other podium package; store/ imports no actor; and no actor
module imports another actor: actors talk only through the messages of actors/mail.py and
store/mail.py, so none can reach into another's state.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ACTORS = ("queue", "cache", "filter_pool", "scorers", "binder", "scheduler", "gateway")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("actor", ACTORS)
def test_no_actor_imports_another(actor: str) -> None:
    imported = _imports(ROOT / "actors" / f"{actor}.py")
    others = {f"podium.actors.{a}" for a in ACTORS if a != actor}
    others.add("podium.actors.supervisor")
    assert not imported & others


@pytest.mark.parametrize("path", sorted((ROOT / "protocol").glob("*.py")), ids=lambda p: p.name)
def test_protocol_is_the_bottom_layer(path: Path) -> None:
    bad = {
        m
        for m in _imports(path)
        if m.split(".")[0] in ("trio", "asyncio", "aiosqlite")
        or m.startswith(("podium.actors", "podium.store"))
    }
    assert not bad


@pytest.mark.parametrize("path", sorted((ROOT / "store").glob("*.py")), ids=lambda p: p.name)
def test_store_does_not_import_actors(path: Path) -> None:
    assert not {m for m in _imports(path) if m.startswith("podium.actors")}
