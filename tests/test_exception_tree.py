"""One exception tree: every exception Podium defines derives from PodiumError, and the tree
drawn in protocol/errors.py's docstring names every one, with its module, its parent and its
code, so neither the code nor the drawing can drift from the other."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from types import ModuleType

from podium.protocol import errors
from podium.protocol.errors import PodiumError

PACKAGES = ("podium.protocol", "podium.store", "podium.actors", "podium.cli")

LOCAL_SIGNALS = {
    ("store/tools.py", "_TooManyRestarts"): "abandons a stepwise backup from its progress "
    "callback; caught by the function that raised it",
    ("actors/plugins/node_prefer_avoid_pods.py", "_Invalid"): "an annotation that does not "
    "decode; caught in the same function, which answers None",
}
"""Private exceptions that never leave their module: control flow, not errors of Podium."""

_ENTRY = re.compile(
    r"^    (?P<indent>[ │├└─]*)(?P<name>_?[A-Z]\w*)\s+(?P<code>[a-z_]+)\s+(?P<module>[\w/]+\.py)"
)


@dataclass(frozen=True)
class Entry:
    name: str
    code: str
    module: str
    parent: str | None


def _source_of(module: ModuleType) -> str:
    """``store/core.py`` for podium.store.core, ``protocol/client/__init__.py`` for a package."""
    parts = module.__name__.split(".")[1:]
    return "/".join(parts) + ("/__init__.py" if hasattr(module, "__path__") else ".py")


def _defined_exceptions() -> dict[tuple[str, str], type[BaseException]]:
    """(module file relative to the repository, class name) -> every exception class defined
    in a module of Podium."""
    found: dict[tuple[str, str], type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package, *(m.name for m in pkgutil.walk_packages(root.__path__, package + "."))]
        for name in names:
            module = importlib.import_module(name)
            for obj in vars(module).values():
                if (
                    inspect.isclass(obj)
                    and issubclass(obj, BaseException)
                    and obj.__module__ == name
                ):
                    found[(_source_of(module), obj.__name__)] = obj
    return found


def _drawn_tree() -> list[Entry]:
    doc = errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    entries: list[Entry] = []
    stack: list[tuple[int, str]] = []
    for line in block.splitlines():
        match = _ENTRY.match(line)
        if match is None:
            continue
        depth = len(match["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        entries.append(Entry(match["name"], match["code"], match["module"], parent))
        stack.append((depth, match["name"]))
    return entries


def test_every_exception_of_podium_derives_from_podium_error() -> None:
    outside = sorted(
        f"{module}: {name}"
        for (module, name), cls in _defined_exceptions().items()
        if not issubclass(cls, PodiumError) and (module, name) not in LOCAL_SIGNALS
    )
    assert outside == []


def test_the_drawn_tree_names_every_exception_with_its_module() -> None:
    defined = {key for key in _defined_exceptions() if key not in LOCAL_SIGNALS}
    drawn = {(e.module, e.name) for e in _drawn_tree()}
    assert sorted(defined - drawn) == [], "defined but not drawn in protocol/errors.py"
    assert sorted(drawn - defined) == [], "drawn in protocol/errors.py but not defined there"


def test_the_drawn_tree_has_the_real_parents_and_codes() -> None:
    defined = _defined_exceptions()
    for entry in _drawn_tree():
        cls = defined[(entry.module, entry.name)]
        podium_bases = [b.__name__ for b in cls.__bases__ if issubclass(b, PodiumError)]
        assert podium_bases == ([entry.parent] if entry.parent else []), entry
        if entry.code != "varies":
            assert cls.code == entry.code, entry


def test_local_signals_stay_private_and_exist() -> None:
    defined = _defined_exceptions()
    for module, name in LOCAL_SIGNALS:
        assert (module, name) in defined, f"{module}: {name} is gone; drop it from the list"
        assert name.startswith("_")
