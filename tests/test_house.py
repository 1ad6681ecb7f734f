"""The test house's own rule: no test module imports another test module.

What several test modules share lives in tests/support/ (on pytest's path, so ``from builders
import make_pod``) and the fixtures in tests/conftest.py; a test module that imported another's
helpers would run the other's module-level code, tie the two together and hide what is shared.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def names_of_test_modules() -> frozenset[str]:
    """The name of every test module (``test_serve``, ...)."""
    return frozenset(path.stem for path in TESTS.rglob("test_*.py"))


def imports_of_test_modules(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, dotted name) of each import in ``source`` that reaches one of the modules
    ``names``: ``import test_x``, ``from e2e.test_x import y``, ``from e2e import test_x``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            dotted = [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
        else:
            continue
        for name in dotted:
            if names.intersection(name.split(".")):
                found.append((node.lineno, name))
    return found


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    want: list[tuple[int, str]]


CASES = [
    Case("a helper from tests/support", "from builders import make_pod", []),
    Case("podium itself", "from podium.cli.bench.process import ServeProcess", []),
    Case(
        "a private helper of another e2e module",
        "from e2e.test_serve import start_daemon",
        [(1, "e2e.test_serve.start_daemon")],
    ),
    Case("a test module as a whole", "import test_lint", [(1, "test_lint")]),
    Case(
        "a test module from its package",
        "import os\nfrom property import test_fuzz_frames",
        [(2, "property.test_fuzz_frames")],
    ),
    Case("relative", "from .test_serve import PODIUM", [(1, "test_serve.PODIUM")]),
    Case("a function named like a test", "from unittest import test_nothing", []),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_the_check_finds_imports_of_test_modules(case: Case) -> None:
    names = frozenset({"test_serve", "test_lint", "test_fuzz_frames"})
    assert imports_of_test_modules(case.source, names) == case.want


def test_no_test_module_conftest_or_support_module_imports_a_test_module() -> None:
    names = names_of_test_modules()
    assert {"test_serve", "test_house"} <= names
    files = [*TESTS.rglob("test_*.py"), *TESTS.rglob("conftest.py"), *TESTS.glob("support/*.py")]
    offences = [
        f"{path.relative_to(TESTS)}:{line}: imports {name}"
        for path in sorted(files)
        for line, name in imports_of_test_modules(path.read_text(), names)
    ]
    assert not offences, "move what they share into tests/support/:\n" + "\n".join(offences)
